"""A deletion request across both memories: the session's units, their cached vectors and the facts it produced
go; the keys those facts touched are re-evaluated from what is left."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import memlab
from memlab.adk import EventMemoryService
from tests.conftest import T0, make_session


def _two_moves(app: str, user: str):
    s1 = make_session(app, user, "s1", [f"I live in Berlin and I work as a nurse there ({user})."])
    s2 = make_session(app, user, "s2", [f"I moved to Madrid last month, I live in Madrid now ({user})."],
                      start=T0 + timedelta(days=30))  # fmt: skip
    return s1, s2


def _cached(embedder, text: str) -> bool:
    cache = embedder.cache
    return bool(cache.get_many(embedder.model_id, [text]))


def test_forget_session_erases_units_cache_and_facts_and_restores_the_older_value(store, embedder, app_name):
    events = memlab.EventMemory(store, embedder)
    facts = memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor())
    s1, s2 = _two_moves(app_name, "u")
    o1, o2 = _two_moves(app_name, "other")
    for s in (s1, s2, o1, o2):
        events.add_session(s)
        facts.add_session(s)
    assert {f.value for f in facts.current(app_name, "u") if f.predicate == "home_city"} == {"Madrid"}
    madrid = s2.events[0].text
    assert _cached(embedder, madrid)
    report = memlab.forget_session(app_name, "u", "s2", events=events, facts=facts)
    assert report.events.units == 1 and report.facts.observations >= 1
    assert {f.value for f in facts.current(app_name, "u") if f.predicate == "home_city"} == {"Berlin"}
    hits = events.search(app_name, "u", "where do I live?")
    assert [h.session_id for h in hits] == ["s1"], "the forgotten session's units are gone, the other stays"
    assert not _cached(embedder, madrid), "the cached vector of the forgotten text is removed"
    assert _cached(embedder, o2.events[0].text), "another user's cached vectors stay"
    assert events.count(app_name, "other") == 2
    assert {f.value for f in facts.current(app_name, "other") if f.predicate == "home_city"} == {"Madrid"}


def test_erasure_needs_a_memory():
    import pytest

    with pytest.raises(memlab.ConfigError, match="pass events="):
        memlab.forget_session("a", "u", "s")


def test_adk_event_delete_also_forgets_the_facts_read_from_that_event(store, embedder, app_name):
    events = memlab.EventMemory(store, embedder)
    facts = memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor())
    s1, s2 = _two_moves(app_name, "u")
    for s in (s1, s2):
        events.add_session(s)
        facts.add_session(s)
    service = EventMemoryService(events, facts=facts)
    asyncio.run(service.delete_memory(app_name=app_name, user_id="u", memory_id=s2.events[0].id))
    assert {f.value for f in facts.current(app_name, "u") if f.predicate == "home_city"} == {"Berlin"}
    assert all(h.session_id == "s1" for h in events.search(app_name, "u", "where do I live?"))
