"""An erasure that commits while an add of the same memory is in flight (planned, not yet written) wins: the add
writes nothing it erased and says so in its report. Deterministic: the add is held inside its slow phase (the
embedder's `embed_documents`, or fact memory's extractor) by a gate the test opens only once the erasure has
returned, so every run exercises the same interleaving; no sleep decides anything."""

from __future__ import annotations

import pytest

import memlab
from memlab.events.filters import DELETED
from memlab.lab.reliability.probes import GatedEmbedder, GatedExtractor, race
from memlab.lab.reliability.probes.races import FACT_TEXTS, TEXTS
from tests.conftest import make_session


def stored(store, app: str, user: str) -> list[tuple[str, str, list[str]]]:
    with store.connection() as conn:
        return conn.execute(
            "SELECT session_id, unit_id, event_ids FROM memory_unit WHERE app_name = %s AND user_id = %s "
            "ORDER BY unit_id",
            [app, user],
        ).fetchall()


ERASED_DURING_INGEST = "erased_during_ingest"  # the skip reason an add reports for what was erased meanwhile
GRANULARITIES = {"event": {}, "chunk": {"chunk_size": 2, "chunk_overlap": 0}}


@pytest.mark.parametrize("granularity", sorted(GRANULARITIES))
def test_delete_memory_during_an_add_keeps_the_memory_deleted(store, embedder, app_name, granularity):
    gated = GatedEmbedder(embedder)
    mem = memlab.EventMemory(store, gated, granularity, **GRANULARITIES[granularity])
    session = make_session(app_name, "u", "s1", TEXTS)
    deleted, report = race(gated, lambda: mem.add_session(session), lambda: mem.delete_memory(app_name, "u", "s1-e0"))
    assert deleted == 0  # nothing was stored yet: the add was embedding
    rows = stored(store, app_name, "u")
    assert rows and all("s1-e0" not in ids for _, _, ids in rows), rows
    assert report.skipped[DELETED] == 1, report
    hits = mem.search(app_name, "u", "What is my cat called?", memlab.SearchSettings(top_k=10))
    assert all("s1-e0" not in h.event_ids for h in hits)
    # and a later re-add still refuses it (the tombstone stands; chunks are cut again without it)
    again = mem.add_session(session)
    assert again.skipped[DELETED] == 1 and all("s1-e0" not in ids for _, _, ids in stored(store, app_name, "u"))


@pytest.mark.parametrize("granularity", sorted(GRANULARITIES))
def test_forget_session_during_an_add_leaves_nothing_of_the_session(store, embedder, app_name, granularity):
    gated = GatedEmbedder(embedder)
    mem = memlab.EventMemory(store, gated, granularity, **GRANULARITIES[granularity])
    session = make_session(app_name, "u", "s1", TEXTS)
    report_f, report = race(gated, lambda: mem.add_session(session),
                            lambda: mem.forget_session(app_name, "u", "s1"))  # fmt: skip
    assert report_f.units == 0
    assert stored(store, app_name, "u") == []
    assert report.added == 0 and report.skipped[ERASED_DURING_INGEST] == len(TEXTS), report
    assert not mem.search(app_name, "u", "What is my cat called?")
    # forget_session is no tombstone: an add that starts after it stores the session again
    assert mem.add_session(session).added > 0


@pytest.mark.parametrize("granularity", sorted(GRANULARITIES))
def test_forget_user_during_an_add_leaves_nothing_of_the_user(store, embedder, app_name, granularity):
    gated = GatedEmbedder(embedder)
    mem = memlab.EventMemory(store, gated, granularity, **GRANULARITIES[granularity])
    other = make_session(app_name, "v", "s9", TEXTS[:2])
    sessions = [make_session(app_name, "u", "s1", TEXTS), other]
    forgotten, report = race(gated, lambda: mem.add_sessions(sessions),
                             lambda: mem.forget_user(app_name, "u"))  # fmt: skip
    assert forgotten == 0
    assert stored(store, app_name, "u") == []
    assert report.skipped[ERASED_DURING_INGEST] == len(TEXTS), report
    assert stored(store, app_name, "v"), "another user's units of the same batch are written"
    assert not mem.search(app_name, "u", "Who lives in Lisbon?")


def test_fact_forget_user_during_an_add_resurrects_no_fact(store, embedder, app_name):
    gated = GatedExtractor()
    facts = memlab.FactMemory(store, embedder, extractor=gated)
    session = make_session(app_name, "u", "s1", FACT_TEXTS)
    counts, report = race(gated, lambda: facts.add_session(session), lambda: facts.forget_user(app_name, "u"))
    assert counts["semantic_fact"] == 0
    assert facts.rows(app_name, "u") == []
    assert report.inserted == 0 and report.dropped[ERASED_DURING_INGEST] > 0, report
    with store.connection() as conn:
        left = conn.execute(
            "SELECT (SELECT count(*) FROM semantic_fact_observation WHERE app_name = %s AND user_id = %s) + "
            "(SELECT count(*) FROM fact_watermark WHERE app_name = %s AND user_id = %s)",
            [app_name, "u"] * 2,
        ).fetchone()[0]
    assert left == 0


@pytest.mark.parametrize("how", ["session", "events"])
def test_fact_forget_session_or_events_during_an_add_resurrects_no_fact(store, embedder, app_name, how):
    gated = GatedExtractor()
    facts = memlab.FactMemory(store, embedder, extractor=gated)
    session = make_session(app_name, "u", "s1", FACT_TEXTS)
    if how == "session":
        erase = lambda: facts.forget_session(app_name, "u", "s1")  # noqa: E731
    else:
        erase = lambda: facts.forget_events(app_name, "u", ["s1-e0", "s1-e2"], session_id="s1")  # noqa: E731
    _, report = race(gated, lambda: facts.add_session(session), erase)
    assert facts.rows(app_name, "u") == []
    assert report.inserted == 0 and report.dropped[ERASED_DURING_INGEST] == 2, report


class OtherModel(GatedEmbedder):
    """The real model under another model id: a migration target whose embedding the test holds."""

    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.model_id = f"{inner.model_id}-race-copy"


def test_forget_user_during_a_migration_copies_nothing_back(scratch_store, embedder, app_name):
    mem = memlab.EventMemory(scratch_store, embedder)
    mem.add_session(make_session(app_name, "u", "s1", TEXTS))
    mem.add_session(make_session(app_name, "v", "s1", TEXTS[:2]))
    target = OtherModel(embedder)
    forgotten, report = race(target, lambda: mem.migrate_embeddings(embedder.model_id, target),
                             lambda: mem.forget_user(app_name, "u"))  # fmt: skip
    assert forgotten == len(TEXTS)
    assert stored(scratch_store, app_name, "u") == []
    assert report.rows_read == len(TEXTS) + 2 and report.rows_added == 2, report
