"""Recording served queries (memlab.QueryLog): off by default, on by a setting, through the secret filter,
scoped per user, erased with the user or session, purged by retention, and never failing a search."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

import memlab
from memlab.adk import EventMemoryService, FactMemoryService
from tests.conftest import T0, make_session

ON = memlab.QueryLog(enabled=True, retention=timedelta(days=30))
TEXTS = ["We deploy the payments service with Argo CD every Tuesday.", "Noted, Argo CD on Tuesdays.",
         "My dog is called Pixel and she loves the beach.", "Pixel sounds lovely."]  # fmt: skip
QUESTION = "How do we deploy payments?"
SECRET_QUERIES = ["is this key still valid AKIAIOSFODNN7EXAMPLE for the bucket",
                  "token ghp_1234567890abcdefghijABCDEFGHIJ123456 for the CI"]  # fmt: skip


@pytest.fixture(scope="module")
def recording(store, embedder):
    return memlab.EventMemory(store, embedder, query_log=ON)


@pytest.fixture(scope="module")
def recording_facts(store, embedder):
    return memlab.FactMemory(store, embedder, query_log=ON)


def _facts(facts, app: str) -> None:
    """A fact the rule extractor finds (job_title, normal sensitivity), stated an hour ago so it is served."""
    facts.add_session(make_session(app, "u1", "f1", ["I work as a nurse at the hospital.", "Nice."],
                                   start=datetime.now(UTC) - timedelta(hours=1)))  # fmt: skip


def _fill(memory, app: str, user: str = "u1") -> None:
    memory.add_session(make_session(app, user, "s1", TEXTS[:2]))
    memory.add_session(make_session(app, user, "s2", TEXTS[2:], start=T0 + timedelta(days=1)))


def test_recording_is_off_by_default(event_memory, store, app_name):
    _fill(event_memory, app_name)
    assert event_memory.query_log.enabled is False
    assert event_memory.search(app_name, "u1", QUESTION)
    assert memlab.events.logged_queries(store, app_name, "u1") == []
    assert memlab.events.query_log_users(store, app_name) == []


def test_a_search_writes_one_row_with_the_ids_and_distances_returned(recording, store, app_name):
    _fill(recording, app_name)
    asked = datetime(2026, 3, 5, 12, 0, tzinfo=UTC)
    settings = memlab.SearchSettings(top_k=3)
    hits = recording.search(app_name, "u1", QUESTION, settings, asked_at=asked)
    [row] = memlab.events.logged_queries(store, app_name, "u1")
    assert (row.kind, row.layer, row.text, row.asked_at) == ("events", recording.layer, QUESTION, asked)
    assert list(row.unit_ids) == hits.unit_ids and len(hits) == 3
    assert list(row.distances) == pytest.approx([h.distance for h in hits])
    assert list(row.hit_sessions) == [h.session_id for h in hits] and set(row.sessions) == {"s1", "s2"}
    assert row.settings["top_k"] == 3 and row.settings["gate"] is False and row.memory_size == 4
    assert not row.empty and recording.query_log.counts["recorded"] >= 1


def test_search_fused_is_recorded_and_an_empty_result_too(recording, store, embedder, app_name):
    _fill(recording, app_name)
    settings = memlab.SearchSettings(mode="lexical", top_k=2, max_distance=0.01)
    vector = memlab.embedding.embed_queries(embedder, ["zebra migration patterns"])[0]
    hits = recording.search_fused(app_name, "u1", "zebra migration patterns", vector, settings)
    recording.search_vector(app_name, "u1", vector)  # no text: never recorded
    [row] = memlab.events.logged_queries(store, app_name, "u1")
    assert len(hits) == 0 and row.empty and row.settings["mode"] == "lexical"


def test_a_query_holding_a_credential_is_not_recorded_and_is_counted(recording, store, app_name):
    _fill(recording, app_name)
    before = recording.query_log.counts.get("secret", 0)
    for query in SECRET_QUERIES:
        recording.search(app_name, "u1", query)
    assert memlab.events.logged_queries(store, app_name, "u1") == []
    assert recording.query_log.counts["secret"] == before + len(SECRET_QUERIES)


def test_reads_are_scoped_to_the_user(recording, store, app_name):
    _fill(recording, app_name, "u1")
    _fill(recording, app_name, "u2")
    recording.search(app_name, "u1", QUESTION)
    recording.search(app_name, "u2", "Who is Pixel?")
    assert [r.text for r in memlab.events.logged_queries(store, app_name, "u1")] == [QUESTION]
    assert [r.text for r in memlab.events.logged_queries(store, app_name, "u2")] == ["Who is Pixel?"]
    assert memlab.events.logged_queries(store, app_name + "-other", "u1") == []
    assert memlab.events.query_log_users(store, app_name) == [(app_name, "u1"), (app_name, "u2")]


def test_forget_user_and_forget_session_remove_the_rows(recording, store, app_name):
    for user in ("u1", "u2"):
        _fill(recording, app_name, user)
        recording.search(app_name, user, QUESTION, memlab.SearchSettings(top_k=1))  # hits s1 only
        recording.search(app_name, user, "Who is Pixel?", memlab.SearchSettings(top_k=1))  # hits s2 only
    report = recording.forget_session(app_name, "u1", "s2")
    assert report.queries == 1
    assert [r.text for r in memlab.events.logged_queries(store, app_name, "u1")] == [QUESTION]
    assert recording.forget_user(app_name, "u1") == 2
    assert memlab.events.logged_queries(store, app_name, "u1") == []
    assert len(memlab.events.logged_queries(store, app_name, "u2")) == 2, "another user's rows stay"
    memlab.forget_session(app_name, "u2", "s1", events=recording)  # the cross-memory erasure covers it too
    assert [r.text for r in memlab.events.logged_queries(store, app_name, "u2")] == ["Who is Pixel?"]


def test_retention_purge_removes_rows_older_than_the_retention(recording, store, app_name):
    _fill(recording, app_name)
    recording.search(app_name, "u1", QUESTION)
    assert recording.purge_queries(now=datetime.now(UTC) + timedelta(days=29), app_name=app_name) == 0
    assert recording.purge_queries(now=datetime.now(UTC) + timedelta(days=31), app_name=app_name) == 1
    assert memlab.events.logged_queries(store, app_name, "u1") == []
    recording.search(app_name, "u1", QUESTION)
    assert memlab.events.purge_query_log(store, timedelta(days=1), now=datetime.now(UTC) + timedelta(days=2),
                                         app_name=app_name) == 1  # fmt: skip
    recording.search(app_name, "u1", QUESTION)
    recording.search(app_name, "u1", "Who is Pixel?")
    with psycopg.connect(store.dsn, autocommit=True) as conn:  # one row recorded 31 days ago
        conn.execute("UPDATE memlab_query_log SET recorded_at = now() - interval '31 days' WHERE app_name = %s "
                     "AND query_text = %s", [app_name, QUESTION])  # fmt: skip
    recording.maintain(app_name)  # runs the purge with the memory's retention (30 days): the fresh row stays
    assert [r.text for r in memlab.events.logged_queries(store, app_name, "u1")] == ["Who is Pixel?"]


def test_a_failed_recording_does_not_fail_the_search(scratch_store, embedder, app_name, caplog):
    memory = memlab.EventMemory(scratch_store, embedder, query_log=ON)
    _fill(memory, app_name)
    with psycopg.connect(scratch_store.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE memlab_query_log")
    with caplog.at_level(logging.WARNING, logger="memlab.events.query_log"):
        hits = memory.search(app_name, "u1", QUESTION)
    assert hits and memory.query_log.counts == {"failed": 1}
    assert "was not recorded" in caplog.text and QUESTION not in caplog.text


class ErasingEmbedder:
    """The real embedder; while it embeds the next query, `erase` runs (a forget that lands mid-search)."""

    def __init__(self, inner) -> None:
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self.erase = None

    def embed_documents(self, texts):
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        erase, self.erase = self.erase, None
        if erase is not None:
            erase()
        return self.inner.embed_query(text)


def test_a_user_forgotten_while_a_search_runs_gets_no_row(store, embedder, app_name):
    erasing = ErasingEmbedder(embedder)
    memory = memlab.EventMemory(store, erasing, query_log=ON)
    facts = memlab.FactMemory(store, erasing, query_log=ON)
    for forget, search in ((memory, memory.search), (facts, facts.search), (facts, memory.search)):
        _fill(memory, app_name)
        _facts(facts, app_name)  # served facts: the fact search embeds its query
        erasing.erase = lambda forget=forget: forget.forget_user(app_name, "u1")
        search(app_name, "u1", QUESTION)
        assert memlab.events.logged_queries(store, app_name, "u1") == [], "the search began before the erasure returned"
    assert memory.query_log.counts["erased_during_search"] == 2 and facts.query_log.counts == {
        "erased_during_search": 1}
    memory.search(app_name, "u1", QUESTION)  # a search after the erasure is recorded
    assert len(memlab.events.logged_queries(store, app_name, "u1")) == 1


def test_query_log_settings_are_checked(store, embedder):
    with pytest.raises(memlab.ConfigError, match="retention"):
        memlab.QueryLog(enabled=True, retention=timedelta(0))
    with pytest.raises(memlab.ConfigError, match="query_log"):
        memlab.EventMemory(store, embedder, query_log=True)


def test_fact_memory_records_its_searches(recording_facts, store, app_name):
    _facts(recording_facts, app_name)
    hits = recording_facts.search(app_name, "u1", "What is my job?")
    assert len(hits) == 1
    recording_facts.search(app_name, "u1", SECRET_QUERIES[0])
    [row] = memlab.events.logged_queries(store, app_name, "u1")
    assert (row.kind, row.layer, row.memory_size) == ("facts", "facts", 1)
    assert list(row.unit_ids) == [h.unit_id for h in hits] and row.sessions == ("f1",)
    assert recording_facts.forget_session(app_name, "u1", "f1").queries == 1
    recording_facts.search(app_name, "u1", "What is my job?")
    assert recording_facts.forget_user(app_name, "u1")["memlab_query_log"] == 1


def test_both_adk_services_record_through_their_memories(recording, recording_facts, store, app_name):
    _fill(recording, app_name)
    _facts(recording_facts, app_name)
    events = EventMemoryService(recording, max_results=2)
    facts = FactMemoryService(recording_facts)
    asyncio.run(events.search_memory(app_name=app_name, user_id="u1", query=QUESTION))
    asyncio.run(facts.search_memory(app_name=app_name, user_id="u1", query="What is my job?"))
    rows = memlab.events.logged_queries(store, app_name, "u1")
    assert [(r.kind, r.text) for r in rows] == [("events", QUESTION), ("facts", "What is my job?")]
    assert rows[0].settings["max_distance"] == pytest.approx(0.75) and rows[0].asked_at.tzinfo is not None
