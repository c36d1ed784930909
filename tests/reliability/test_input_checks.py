"""One input check serves both memories and the ADK services: ids, texts, timestamps and lengths that cannot be
stored (or read back) are refused up front with a memlab error naming the limit and the fix, nothing is
written, and neither the user nor the app's other users are left unreadable ("poisoned")."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

import memlab
from memlab import InputLimits
from memlab.facts import Candidate
from tests.conftest import T0, make_session
from tests.support.facts import ScriptedExtractor

FAR = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5)))  # year 10000 in UTC
Y2999 = datetime(2999, 1, 1, tzinfo=UTC)
NOW = datetime.now(UTC)


class CountingEmbedder:
    """The real embedder, counting the texts it is asked to embed (to prove a refusal came before the model)."""

    def __init__(self, inner: memlab.Embedder) -> None:
        self.inner, self.texts = inner, 0
        self.model_id, self.dimension = inner.model_id, inner.dimension

    def embed_documents(self, texts):
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        self.texts += 1
        return self.inner.embed_query(text)


@pytest.fixture
def facts(store, embedder):
    return memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor())


def _said(app, user, sid, text, at):
    return memlab.Session(app, user, sid, [memlab.Event(f"{sid}-e1", "user", at, text)])


def _readable(facts: memlab.FactMemory, app: str, *users: str) -> None:
    """Every read of every user still works (no DataError from a timestamp Python cannot hold)."""
    for user in users:
        facts.current(app, user)
        facts.rows(app, user)
        facts.search(app, user, "what do I eat?")
        facts.preload_block(app, user, "what do I eat?")


# -- 5. fact memory checks its input like event memory ----------------------------------------------------------


@pytest.mark.parametrize("at", [FAR, Y2999], ids=["year-10000-utc", "year-2999"])
def test_a_fact_stated_at_an_implausible_time_is_refused_and_nobody_is_poisoned(facts, app_name, at):
    facts.add_session(_said(app_name, "bob", "b1", "I'm vegetarian.", T0))
    with pytest.raises(memlab.InputError, match=r"outside the accepted window 1970-01-01.*FactMemory\(timestamps="):
        facts.add_session(_said(app_name, "alice", "a1", "I'm vegan.", at))
    assert facts.rows(app_name, "alice") == [], "nothing was stored"
    _readable(facts, app_name, "alice", "bob")
    assert [f.value for f in facts.current(app_name, "bob")] == ["vegetarian"]
    with pytest.raises(memlab.InputError, match="timestamp"):
        facts.add_domain_session(_said(app_name, "admin", "d1", "The payments team deploys with Argo CD.", at))
    with pytest.raises(memlab.InputError, match=r"outside the accepted window"):
        facts.add_domain_fact(app_name, "team:payments", "deploy_tool", "Argo CD", at=at)
    assert facts.rows(app_name, memlab.facts.DOMAIN_USER) == []
    _readable(facts, app_name, "alice", "bob", memlab.facts.DOMAIN_USER)


def test_the_fact_timestamp_window_is_configurable(store, embedder, app_name):
    old = datetime(1950, 6, 1, tzinfo=UTC)
    wide = memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor(),
                             timestamps=memlab.TimestampWindow(earliest=datetime(1900, 1, 1, tzinfo=UTC)))  # fmt: skip
    assert wide.add_session(_said(app_name, "alice", "a1", "I'm vegetarian.", old)).inserted == 1
    assert wide.add_domain_fact(app_name, "team:payments", "deploy_tool", "Argo CD", at=old).inserted == 1
    with pytest.raises(memlab.ConfigError, match="TimestampWindow"):
        memlab.FactMemory(store, embedder, timestamps="1970..2100")


@pytest.mark.parametrize("bad", ["\x00", "\ud800", "x" * 300, 5, None], ids=["nul", "surrogate", "long", "int", "none"])
def test_every_fact_entry_point_refuses_an_unstorable_user_id_with_a_memlab_error(facts, app_name, bad):
    facts.add_session(_said(app_name, "bob", "b1", "I'm vegetarian.", T0))
    user = f"u{bad}" if isinstance(bad, str) else bad
    calls = {
        "current": lambda: facts.current(app_name, user),
        "rows": lambda: facts.rows(app_name, user),
        "search": lambda: facts.search(app_name, user, "diet"),
        "preload_block": lambda: facts.preload_block(app_name, user, "diet"),
        "why": lambda: facts.why(app_name, user, "user", "diet"),
        "delete_fact": lambda: facts.delete_fact(app_name, user, "user", "diet", "vegetarian"),
        "forget_events": lambda: facts.forget_events(app_name, user, ["e1"]),
        "forget_session": lambda: facts.forget_session(app_name, user, "s1"),
        "forget_user": lambda: facts.forget_user(app_name, user),
        "app current": lambda: facts.current(user, "bob"),
    }
    for name, call in calls.items():
        with pytest.raises(memlab.InputError, match=r"app_name|user_id") as caught:
            call()
        assert caught.value.problem, name
    if isinstance(bad, str):
        with pytest.raises(memlab.InputError):
            facts.add_session(_said(app_name, user, "s1", "I'm vegan.", T0))
    _readable(facts, app_name, "bob")
    assert [f.value for f in facts.current(app_name, "bob")] == ["vegetarian"]


def test_fact_texts_and_values_are_checked_and_bounded(store, embedder, app_name):
    s = _said(app_name, "alice", "a1", "We deploy with Argo CD.", T0)
    long_value = "Argo CD " * 200
    script = {"a1": [Candidate("user", "deploy_tool", long_value, "We deploy with Argo CD.", event_id="a1-e1"),
                     Candidate("user", "deploy_tool", "Ar\x00go", "We deploy with Argo CD.", event_id="a1-e1"),
                     Candidate("team:" + "p" * 400, "deploy_tool", "Argo CD", "We deploy with Argo CD.",
                               event_id="a1-e1")]}  # fmt: skip
    facts = memlab.FactMemory(store, embedder, extractor=ScriptedExtractor(script))
    report = facts.add_session(s)
    assert report.inserted == 0 and sum(report.dropped.values()) == 3, report
    assert any("bytes" in n for n in report.notes) and any("NUL" in n for n in report.notes), report.notes
    with pytest.raises(memlab.InputError, match=r"value .*1,?000 bytes"):
        facts.add_domain_fact(app_name, "team:payments", "deploy_tool", long_value, at=T0)
    with pytest.raises(memlab.InputError, match="NUL"):
        facts.add_domain_fact(app_name, "team:payments", "deploy_tool", "Argo", quote="x\x00y", at=T0)
    with pytest.raises(memlab.InputError, match="surrogate"):
        facts.add_domain_fact(app_name + "\ud800", "team:payments", "deploy_tool", "Argo", at=T0)
    with pytest.raises(memlab.InputError, match="at="):
        facts.add_domain_fact(app_name, "team:payments", "deploy_tool", "Argo", at="2026-01-01")
    assert facts.rows(app_name, "alice") == [] and facts.rows(app_name, memlab.facts.DOMAIN_USER) == []


def test_fact_search_parameters_are_checked(facts, app_name):
    facts.add_session(_said(app_name, "bob", "b1", "I'm vegetarian.", T0))
    for kwargs, field in (({"limit": 0}, "limit"), ({"limit": 2**63}, "limit"), ({"limit": 2.5}, "limit"),
                          ({"limit": True}, "limit"), ({"threshold": math.nan}, "threshold"),
                          ({"threshold": 1.5}, "threshold"), ({"threshold": "0.7"}, "threshold"),
                          ({"now": datetime(2026, 1, 1)}, "now"), ({"allow": "personal"}, "allow"),
                          ({"include_domain": "no"}, "include_domain")):  # fmt: skip
        with pytest.raises(memlab.ConfigError, match=field):
            facts.search(app_name, "bob", "diet", **kwargs)
    with pytest.raises(memlab.InputError, match="query"):
        facts.search(app_name, "bob", None)
    assert len(facts.search(app_name, "bob", "diet", limit=1, threshold=0.0)) == 1


# -- 6. over-long texts are refused before anything is embedded -------------------------------------------------


def test_an_over_long_event_is_refused_before_embedding_naming_the_limit(store, embedder, app_name):
    counting = CountingEmbedder(embedder)
    mem = memlab.EventMemory(store, counting)
    huge = "lorem ipsum dolor sit amet " * 200_000  # 5.4 MB
    with pytest.raises(memlab.InputError, match=r"1,000,000 bytes.*InputLimits\(text_bytes="):
        mem.add_session(make_session(app_name, "u1", "s1", ["A normal first turn about payments.", huge]))
    assert counting.texts == 0, "refused before the model ran"
    assert mem.count(app_name, "u1") == 0
    report = mem.add_sessions([make_session(app_name, "u1", "s1", ["x" + huge]),
                               make_session(app_name, "u2", "s2", ["We deploy payments with Argo CD."])])  # fmt: skip
    assert report.added == 1 and [f.user_id for f in report.failed] == ["u1"]
    assert "text_bytes" in report.failed[0].reason
    with pytest.raises(memlab.InputError, match=r"query .*bytes"):
        mem.search(app_name, "u2", huge)
    assert len(mem.search(app_name, "u2", "payments")) == 1


def test_a_chunk_over_the_limit_is_refused_though_each_event_fits(store, embedder, app_name):
    limits = InputLimits(text_bytes=2_000)
    mem = memlab.EventMemory(store, embedder, "chunk", chunk_size=4, chunk_overlap=1, limits=limits)
    texts = [f"turn {i} " + "payments deploy notes " * 40 for i in range(4)]  # ~900 bytes each
    with pytest.raises(memlab.InputError, match=r"chunk.*2,000 bytes"):
        mem.add_session(make_session(app_name, "u1", "s1", texts))
    assert mem.count(app_name, "u1") == 0
    assert mem.add_session(make_session(app_name, "u1", "s2", texts[:2])).added == 1


def test_a_rendering_over_the_limit_is_refused_though_each_event_fits(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder, rendering="context", limits=InputLimits(text_bytes=2_000))
    texts = [f"turn {i} " + "payments deploy notes " * 60 for i in range(2)]  # ~1,300 bytes each
    with pytest.raises(memlab.InputError, match=r"rendered text .*2,000 bytes"):
        mem.add_session(make_session(app_name, "u1", "s1", texts))
    assert mem.count(app_name, "u1") == 0
    assert mem.add_session(make_session(app_name, "u1", "s2", texts[:1])).added == 1


def test_the_limits_are_configurable_within_what_postgresql_can_index():
    assert InputLimits().text_bytes == 1_000_000 and InputLimits().query_bytes == 65_536
    assert InputLimits(text_bytes=10).text_bytes == 10
    with pytest.raises(memlab.ConfigError, match=r"text_bytes .*1,048,575"):
        InputLimits(text_bytes=5_000_000)
    with pytest.raises(memlab.ConfigError, match="query_bytes"):
        InputLimits(query_bytes=0)


def test_a_long_fact_query_is_refused(facts, app_name):
    with pytest.raises(memlab.InputError, match="query"):
        facts.search(app_name, "bob", "diet " * 100_000)


# -- 7. search settings are checked field by field ---------------------------------------------------------------


def test_top_k_above_hnsw_reach_names_ef_search_and_the_way_out():
    with pytest.raises(memlab.ConfigError, match=r"top_k=1001.*1\.\.1,000.*ef_search.*strategy='exact'"):
        memlab.SearchSettings(top_k=1001, exact_below=0)
    assert memlab.SearchSettings(top_k=5000, strategy="exact").top_k == 5000
    with pytest.raises(memlab.ConfigError, match=r"candidates=2000.*1\.\.1,000"):
        memlab.SearchSettings(candidates=2000, mode="hybrid")


@pytest.mark.parametrize(
    ("field", "value"),
    [("top_k", 2**63), ("top_k", 10.0), ("top_k", True), ("top_k", "10"), ("ef_search", "1e9"), ("ef_search", 1e9),
     ("max_scan_tuples", 2**40), ("exact_below", 2**63), ("exact_below", 1.5), ("rrf_k", 2**70), ("rrf_k", "60"),
     ("candidates", 0), ("vector_weight", "1"), ("time_weight", math.inf), ("author_margin", math.nan),
     ("max_distance", math.nan), ("max_distance", "0.5"), ("per_session", 1.5), ("strategy", ["exact"]),
     ("mode", None), ("query_rendering", 3), ("prefer_author", 5)],
)  # fmt: skip
def test_every_search_setting_is_checked_with_a_message_naming_field_and_value(field, value):
    with pytest.raises(memlab.ConfigError) as caught:
        memlab.SearchSettings(**{field: value})
    assert field in str(caught.value) and repr(value)[:12] in str(caught.value), str(caught.value)


def test_settings_that_passed_construction_search_without_a_raw_error(event_memory, app_name):
    event_memory.add_session(make_session(app_name, "u1", "s1", [f"payments note {i}" for i in range(30)]))
    for settings in (memlab.SearchSettings(top_k=1000, exact_below=0),
                     memlab.SearchSettings(top_k=1000, mode="hybrid", candidates=1000, exact_below=0),
                     memlab.SearchSettings(top_k=2**31 - 1, strategy="exact")):  # fmt: skip
        assert len(event_memory.search(app_name, "u1", "payments", settings)) == 30


def test_settings_of_the_wrong_type_get_a_memlab_error(event_memory, app_name):
    vector = np.zeros(event_memory.model.dimension, dtype=np.float32)
    for call in (lambda: event_memory.search(app_name, "u1", "payments", {"top_k": 3}),
                 lambda: event_memory.search_vector(app_name, "u1", vector, {"top_k": 3}),
                 lambda: event_memory.explain(app_name, "u1", "payments", "exact")):  # fmt: skip
        with pytest.raises(memlab.ConfigError, match=r"must be a memlab\.SearchSettings"):
            call()


# -- event memory: every entry point checks ids ------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["\x00", "\ud800", "x" * 300, 5], ids=["nul", "surrogate", "long", "int"])
def test_every_event_entry_point_refuses_an_unstorable_id_with_a_memlab_error(event_memory, app_name, bad):
    user = f"u{bad}" if isinstance(bad, str) else bad
    vector = np.zeros(event_memory.model.dimension, dtype=np.float32)
    calls = [
        lambda: event_memory.search(app_name, user, "payments"),
        lambda: event_memory.search_vector(app_name, user, vector),
        lambda: event_memory.explain(app_name, user, "payments"),
        lambda: event_memory.count(app_name, user),
        lambda: event_memory.forget_user(app_name, user),
        lambda: event_memory.forget_session(app_name, user, "s1"),
        lambda: event_memory.forget_session(app_name, "u1", user),
        lambda: event_memory.delete_memory(app_name, user, "e1"),
        lambda: event_memory.delete_memory(app_name, "u1", "e1", session_id=user),
        lambda: event_memory.purge_before(NOW, app_name=app_name, user_id=user),
        lambda: event_memory.maintain(user),
    ]
    for call in calls:
        with pytest.raises(memlab.InputError):
            call()


# -- the ADK services go through the same checks -----------------------------------------------------------------


def test_adk_services_refuse_implausible_times_and_ids_and_keep_the_app_readable(store, embedder, app_name):
    pytest.importorskip("google.adk")
    from google.adk.events import Event as AdkEvent
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    from memlab.adk import EventMemoryService, FactMemoryService

    facts = memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor())
    fact_service = FactMemoryService(facts)
    event_service = EventMemoryService(memlab.EventMemory(store, embedder))
    facts.add_session(_said(app_name, "bob", "b1", "I'm vegetarian.", NOW - timedelta(hours=1)))

    def entry(text, when):
        return MemoryEntry(content=types.Content(parts=[types.Part(text=text)]), timestamp=when)

    async def scenario():
        for service in (fact_service, event_service):
            for when in (FAR.isoformat(), "2999-01-01T00:00:00+00:00", "not a time"):
                with pytest.raises(memlab.InputError, match="timestamp"):
                    await service.add_memory(app_name=app_name, user_id="alice", memories=[entry("I'm vegan.", when)])
            with pytest.raises(memlab.InputError, match="timestamp"):
                await service.add_events_to_memory(app_name=app_name, user_id="alice", events=[AdkEvent(
                    author="user", timestamp=1e20, content=types.Content(parts=[types.Part(text="I'm vegan.")]))])
            with pytest.raises(memlab.InputError, match="NUL"):
                await service.search_memory(app_name=app_name, user_id="al\x00ice", query="diet")
            with pytest.raises(memlab.InputError, match="bytes"):
                await service.add_memory(app_name=app_name, user_id="alice",
                                         memories=[entry("vegan " * 300_000, None)])  # fmt: skip
        with pytest.raises(memlab.InputError, match="fact id"):
            await fact_service.delete_memory(app_name=app_name, user_id="bob", memory_id="not-a-fact-id")
        return [(await fact_service.search_memory(app_name=app_name, user_id=u, query="diet")).memories
                for u in ("alice", "bob")]  # fmt: skip

    alice, bob = asyncio.run(scenario())
    assert alice == [] and [m.content.parts[0].text.split(" (")[0] for m in bob] == ["diet = vegetarian"]
    assert facts.rows(app_name, "alice") == [] and event_service.memory.count(app_name, "alice") == 0
