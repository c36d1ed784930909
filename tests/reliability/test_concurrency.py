"""The same sessions written at once from 8 threads and 2 processes (spawned, each opening its own store on the
same database), in a short loop, sometimes a session's first half before the whole of it: the result is exactly
one clean sequential ingest. No unit is stored twice or lost (the `added` of every writer sums to the rows
stored), a single-valued fact key never has two current values, and a fact's confidence counts each session
once. And under a busy pool, no `SET LOCAL` of a search ever outlives its transaction.

The checks are the concurrency family of `memlab check reliability` (memlab.lab.reliability.probes), at the ci run's
size:
the tests run its parts and assert its figures, plus what a clean ingest of the script must give."""

from __future__ import annotations

import pytest

import memlab
from memlab import lab
from memlab.lab.reliability import probes
from memlab.lab.reliability.probes.concurrency import (
    SCRIPT,
    concurrency_figures,
    concurrent_ingest,
    fact_rows,
    late_snapshot,
    script_sessions,
    server_defaults,
    settings_leaks,
)

SIZE = lab.reliability.RELIABILITY_SIZES["ci"]  # 8 threads, 2 processes, 2 rounds, 3 users ("ana", "Ana", "bo")


def test_eight_threads_and_two_processes_ingest_like_one_clean_ingest(store, embedder, app_name):
    family = concurrency_figures(SIZE)
    mems = concurrent_ingest(family, store, embedder, SIZE, app_name)
    assert family.failures() == [], family.found
    assert not [n for n in family.notes if "writer processes embedded" in n], "writer_vectors missed a text"
    users = sorted({s.user_id for s in script_sessions(app_name, SIZE.users)})
    assert family.figures["units"] == len(probes.units(mems, app_name, users)) > 0
    events = [r for r in probes.units(mems, app_name, users) if r[1] == "event"]
    assert len(events) == SIZE.users * sum(len(s) for s in SCRIPT)
    assert family.figures["adds"] >= (SIZE.threads + SIZE.processes) * SIZE.rounds * len(users) * len(SCRIPT)

    rows = fact_rows(mems, app_name, users)
    registry = memlab.facts.default_registry()
    current = [(r[0], r[1], r[2]) for r in rows if r[4] == "current" and registry.get(r[2]).cardinality == "one"]
    assert len(current) == len(set(current)), "a single-valued key has two current values"
    for user in users:
        now = {(f.predicate, f.value): (f.confidence, f.sessions) for f in mems["facts"].current(app_name, user)}
        assert now[("diet", "vegetarian")] == (pytest.approx(0.97), ("s0", "s2")), "reinforced once per session"
        assert now[("home_city", "Berlin")] == (pytest.approx(0.97), ("s0", "s1"))
        assert now[("deploy_tool", "Argo CD")] == (pytest.approx(0.95), ("s1",))
        assert ("diet", "pescatarian") not in now


def test_search_settings_never_leak_into_a_later_use_of_a_pooled_connection(store, embedder, app_name):
    defaults = server_defaults(store.dsn)
    assert defaults["hnsw.ef_search"] == "40" and defaults["hnsw.iterative_scan"] == "off"
    probes.memories(store, embedder)["event"].add_sessions(script_sessions(app_name, 1))
    family = concurrency_figures(SIZE)
    settings_leaks(family, store, embedder, app_name, SIZE)
    assert family.failures() == [], family.found
    assert family.figures["setting_checks"] == SIZE.threads * SIZE.searches + 2  # and both pooled connections


def test_a_late_older_snapshot_of_a_session_does_not_roll_its_chunks_back(store, embedder, app_name):
    family = concurrency_figures(SIZE)
    late_snapshot(family, store, embedder, app_name)
    assert family.figures["late_snapshot_chunks_rolled_back"] == 0
    chunks = probes.units(probes.memories(store, embedder), app_name, ["ana"])
    assert chunks and chunks == probes.units(probes.memories(store, embedder), f"{app_name}-clean", ["ana"])
