"""The same sessions written at once from 8 threads and 2 processes (spawned, each opening the store on the same
MEMLAB_HOME), in a short loop, sometimes a session's first half before the whole of it: the result is exactly
one clean sequential ingest. No unit is stored twice or lost (the `added` of every writer sums to the rows
stored), a single-valued fact key never has two current values, and a fact's confidence counts each session
once. And under a busy pool, no `SET LOCAL` of a search ever outlives its transaction."""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import threading
from collections import Counter
from dataclasses import replace
from datetime import timedelta

import pytest

import memlab
from tests.conftest import T0

USERS = ["ana", "Ana", "bo"]
SCRIPT = [  # one session per entry: user lines at even positions, the model's answers at odd ones
    ["I am vegetarian these days.", "Noted, I will suggest vegetarian recipes from now on.",
     "I live in Berlin now.", "Berlin is lovely in spring, enjoy the parks there.",
     "I program in Rust and Go.", "Rust and Go are both great choices for backend services."],
    ["I went pescatarian last month.", "Great, fish dishes it is for your meal plans then.",
     "I live in Berlin now.", "Still Berlin, got it, thanks for confirming that again.",
     "We deploy with Argo CD.", "Argo CD works well for GitOps style deployments."],
    ["I am vegetarian these days.", "Back to vegetarian meals, I have updated your plans.",
     "I program in Rust and Go.", "Good to know you still write Rust and Go every day."],
]  # fmt: skip
THREADS, PROCESSES, ROUNDS = 8, 2, 2


def sessions(app: str) -> list[memlab.Session]:
    return [
        memlab.Session(app, user, f"s{k}", [
            memlab.Event(f"e{i}", "user" if i % 2 == 0 else "model", T0 + timedelta(days=k, minutes=i), text)
            for i, text in enumerate(lines)
        ])
        for user in USERS
        for k, lines in enumerate(SCRIPT)
    ]  # fmt: skip


def memories(store, embedder) -> dict:
    return {
        "event": memlab.EventMemory(store, embedder),
        "chunk": memlab.EventMemory(store, embedder, "chunk", chunk_size=3, chunk_overlap=1),
        "facts": memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor()),
    }


def ingest_rounds(mems: dict, todo: list[memlab.Session], rounds: int, seed: int) -> Counter:
    """Add every session `rounds` times in a shuffled order, half the time its first four events first (a trailing
    chunk then grows)."""
    rng = random.Random(seed)
    totals: Counter = Counter()
    for _ in range(rounds):
        order = list(todo)
        rng.shuffle(order)
        for session in order:
            versions = [replace(session, events=session.events[:4]), session] if rng.random() < 0.5 else [session]
            for version in versions:
                for name in ("event", "chunk"):
                    report = mems[name].add_session(version)
                    totals[f"{name}_added"] += report.added
                    totals[f"{name}_replaced"] += report.replaced
                rep = mems["facts"].add_session(version)
                totals["facts_consolidated"] += len(rep.actions)
                totals["facts_duplicates"] += rep.duplicates
    return totals


def _process_writer(home: str, todo, rounds: int, seed: int, ready, go, results) -> None:
    """A second writer process: its own store and model on the same MEMLAB_HOME."""
    try:
        store = memlab.open_store(home=home)
        mems = memories(store, memlab.default_embedder(home=home))
        ready.put(os.getpid())
        go.wait(120)
        results.put(("ok", dict(ingest_rounds(mems, todo, rounds, seed))))
        store.close()
    except BaseException as exc:  # reported to the parent, which fails the test with it
        ready.put(-1)
        results.put(("error", repr(exc)))


def stored_units(store, app: str) -> list[tuple]:
    with store.connection() as conn:
        return conn.execute(
            "SELECT user_id, layer, session_id, unit_id, event_ids, body FROM memory_unit WHERE app_name = %s "
            "ORDER BY 1, 2, 3, 4",
            [app],
        ).fetchall()


def fact_rows(store, app: str) -> list[tuple]:
    with store.connection() as conn:
        return conn.execute(
            "SELECT user_id, subject, predicate, value, status, confidence, sessions FROM semantic_fact "
            "WHERE app_name = %s ORDER BY 1, 2, 3, 4",
            [app],
        ).fetchall()


def observations(store, app: str) -> list[tuple]:
    with store.connection() as conn:
        return conn.execute(
            "SELECT user_id, session_id, event_id, subject, predicate, value, negated FROM semantic_fact_observation "
            "WHERE app_name = %s ORDER BY 1, 2, 3, 4, 5, 6",
            [app],
        ).fetchall()


def test_eight_threads_and_two_processes_ingest_like_one_clean_ingest(store, embedder, memlab_home, app_name):
    todo = sessions(app_name)
    ctx = multiprocessing.get_context("spawn")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_process_writer, args=(str(memlab_home), todo, ROUNDS, 100 + i, ready, go, results))
             for i in range(PROCESSES)]  # fmt: skip
    for p in procs:
        p.start()
    totals: list[Counter] = []
    errors: list[BaseException] = []
    mems = memories(store, embedder)  # shared by the threads: one EventMemory serves many threads
    try:
        assert all(ready.get(timeout=120) > 0 for _ in procs), "a writer process could not start"
        barrier = threading.Barrier(THREADS + 1)

        def thread_writer(seed: int) -> None:
            barrier.wait()
            try:
                totals.append(ingest_rounds(mems, todo, ROUNDS, seed))
            except BaseException as exc:  # re-raised below
                errors.append(exc)

        threads = [threading.Thread(target=thread_writer, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        go.set()
        barrier.wait()
        for t in threads:
            t.join(timeout=180)
        for _ in procs:
            try:
                status, value = results.get(timeout=180)
            except queue.Empty:
                pytest.fail("a writer process did not report")
            assert status == "ok", f"a writer process failed: {value}"
            totals.append(Counter(value))
    finally:
        go.set()
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    assert not errors, errors
    assert len(totals) == THREADS + PROCESSES
    total = sum(totals, Counter())

    reference = f"{app_name}-ref"
    ref_report = ingest_rounds(memories(store, embedder), sessions(reference), 1, seed=0)
    got, want = stored_units(store, app_name), stored_units(store, reference)
    assert got == want, "the concurrent ingest differs from one clean sequential ingest"
    for layer, name in (("event", "event"), ("chunk:3:1", "chunk")):
        rows = [r for r in got if r[1] == layer]
        assert total[f"{name}_added"] == len(rows), f"{name}: writers report {total[f'{name}_added']} added"
        assert len({(r[0], r[2], tuple(r[4])) for r in rows}) == len(rows), f"{name}: a unit is stored twice"
    assert len([r for r in got if r[1] == "event"]) == len(USERS) * sum(len(s) for s in SCRIPT)

    facts, ref_facts = fact_rows(store, app_name), fact_rows(store, reference)
    assert facts == ref_facts, "facts differ from one clean sequential ingest"
    assert observations(store, app_name) == observations(store, reference)
    assert ref_report["facts_consolidated"] == len(observations(store, reference))
    assert total["facts_consolidated"] == ref_report["facts_consolidated"], "each candidate consolidated once"
    assert total["facts_duplicates"] == 0
    current = Counter((r[0], r[1], r[2]) for r in facts if r[4] == "current")
    registry = memlab.default_registry()
    assert all(n == 1 for (_, _, predicate), n in current.items() if registry.get(predicate).cardinality == "one")
    for user in USERS:
        now = {(f.predicate, f.value): (f.confidence, f.sessions) for f in mems["facts"].current(app_name, user)}
        assert now[("diet", "vegetarian")] == (pytest.approx(0.97), ("s0", "s2")), "reinforced once per session"
        assert now[("home_city", "Berlin")] == (pytest.approx(0.97), ("s0", "s1"))
        assert now[("deploy_tool", "Argo CD")] == (pytest.approx(0.95), ("s1",))
        assert ("diet", "pescatarian") not in now


SETTINGS = ("hnsw.ef_search", "hnsw.iterative_scan", "hnsw.max_scan_tuples", "enable_sort", "enable_seqscan",
            "plan_cache_mode", "maintenance_work_mem")  # fmt: skip


def _settings(conn) -> dict[str, str | None]:
    return {name: conn.execute("SELECT current_setting(%s, true)", [name]).fetchone()[0] for name in SETTINGS}


def test_search_settings_never_leak_into_a_later_use_of_a_pooled_connection(store, embedder, app_name):
    import psycopg

    with psycopg.connect(store.dsn, autocommit=True) as fresh:
        fresh.execute("SELECT '[1]'::vector")  # loads pgvector, which defines its settings with their defaults
        defaults = _settings(fresh)
    assert defaults["hnsw.ef_search"] == "40" and defaults["hnsw.iterative_scan"] == "off"
    mem = memlab.EventMemory(store, embedder)
    mem.add_sessions(sessions(app_name)[:3])
    leaks: list[tuple] = []
    errors: list[BaseException] = []
    with memlab.open_store(dsn=store.dsn, pool_size=2) as small:  # 8 threads on 2 connections: constant reuse
        busy = memlab.EventMemory(small, embedder)
        barrier = threading.Barrier(THREADS)

        def searcher(seed: int) -> None:
            rng = random.Random(seed)
            barrier.wait()
            try:
                for i in range(12):
                    look = memlab.SearchSettings(
                        top_k=rng.randint(1, 20), strategy=rng.choice(["auto", "exact", "hnsw", "planner"]),
                        ef_search=rng.randint(1, 999), iterative_scan=rng.choice(["strict_order", "relaxed_order"]),
                        max_scan_tuples=rng.randint(1, 50_000), exact_below=rng.choice([0, 2000]),
                    )  # fmt: skip
                    if i % 3 == 2:
                        busy.explain(app_name, "ana", "what do I eat?", look)
                    else:
                        busy.search(app_name, "ana", "what do I eat?", look)
                    with small.connection() as conn:  # a plain use of a pooled connection right after
                        seen = _settings(conn)
                    if any(seen[k] not in (None, v) for k, v in defaults.items()):
                        leaks.append((look, seen))
            except BaseException as exc:  # re-raised below
                errors.append(exc)

        threads = [threading.Thread(target=searcher, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        with small.connection() as a, small.connection() as b:  # both pooled connections, side by side
            for conn in (a, b):
                seen = _settings(conn)
                assert all(seen[k] in (None, v) for k, v in defaults.items()), seen
    assert not errors, errors
    assert not leaks, leaks[:3]


def test_a_late_older_snapshot_of_a_session_does_not_roll_its_chunks_back(store, embedder, app_name):
    mem = memories(store, embedder)["chunk"]
    whole = sessions(app_name)[0]
    mem.add_session(whole)
    before = stored_units(store, app_name)
    mem.add_session(replace(whole, events=whole.events[:4]))  # an older snapshot, delivered late
    assert stored_units(store, app_name) == before
