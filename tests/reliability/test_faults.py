"""Faults in the middle of an ingest leave nothing half-written: after the embedded postmaster is SIGKILLed
mid-ingest (a private server with its own MEMLAB_HOME, the `own_home` fixture), the next call brings the server
back and re-ingesting gives exactly the state of one clean ingest (same unit ids, event ids, bodies, counts and
facts); an embedder that raises on its Nth call leaves each session either whole or absent.

The checks are the faults family of `memlab check reliability` (memlab.lab.reliability.probes), at the ci run's size:
the
tests run its parts and assert its figures, so the report and the tests share one source of truth."""

from __future__ import annotations

from memlab import lab
from memlab.lab.reliability import probes
from memlab.lab.reliability.probes.faults import embedder_faults, faults_figures, sigkill_faults

TIMEOUT = 5.0  # own_store's database timeout
SIZE = lab.reliability.RELIABILITY_SIZES["ci"]  # 4 users x 3 sessions of 5 events each
USERS = [f"user-{u}" for u in range(SIZE.fault_users)]


def test_sigkill_of_the_postmaster_mid_ingest_then_reingest_equals_one_clean_ingest(own_store, own_home, embedder):
    family = faults_figures()
    sigkill_faults(family, own_store, own_home, embedder, SIZE)
    assert family.failures() == [], family.found
    figures = family.figures
    assert figures["kills"] == 2, f"both kills (inside a write, at a random moment) cut an ingest: {family.notes}"
    assert figures["recovered"] == 2, "each time the next call started a new server"
    assert figures["cut_mid_ingest"] >= 1, "the kill inside a write left some sessions written, some not"
    assert figures["sessions_checked"] > 0 and figures["facts_compared"] > 0, "the sessions yield facts"
    reingested = probes.units(probes.memories(own_store, embedder), "faults-inside-a-write", USERS)
    assert len(reingested) == SIZE.fault_users * SIZE.fault_sessions * (5 + 2)  # 5 events and 2 chunks a session


def test_an_embedder_raising_mid_batch_writes_no_part_of_a_session(store, embedder, app_name):
    family = faults_figures()
    embedder_faults(family, store, embedder, SIZE, app_name)
    assert family.failures() == [], family.found
    assert family.figures["embedder_failures"] == 4, "each layer: a batched ingest and a single add failed"
    assert family.figures["embedder_failures_mid_ingest"] == 2, "the batches before the failure were written"
    assert family.figures["sessions_checked"] > 0
