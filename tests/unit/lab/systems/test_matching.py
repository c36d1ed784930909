"""Matching a black box's returned entries back to labelled events (memlab.lab.systems.matching), and the config
of black-box systems: pure, no server or model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memlab.errors import ConfigError
from memlab.lab.datasets.model import Dataset, UserHistory
from memlab.lab.systems.kinds import system_from_config
from memlab.lab.systems.matching import EventMatcher, Returned
from memlab.lab.systems.services import AdkSystem, Mem0System
from memlab.types import Event, Session

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _matcher() -> EventMatcher:
    def ev(ident: str, text: str, minutes: int) -> Event:
        return Event(ident, "user", T0 + timedelta(minutes=minutes), text)

    sessions = [
        Session("app", "u1", "s1", [ev("e1", "I live in Lyon.", 0), ev("e2", "My cat is Tom.", 1)]),
        Session("app", "u1", "s2", [ev("e1", "I moved to  Paris.", 60), ev("e3", "My cat is Tom.", 61)]),
        Session("app", "u2", "s1", [ev("e1", "I live in Lyon.", 0)]),
    ]
    users = [UserHistory("app", u, [s for s in sessions if s.user_id == u]) for u in ("u1", "u2")]
    return EventMatcher.of(Dataset("d", users, []))


def test_metadata_ids_come_first_and_carry_their_session():
    m = _matcher()
    assert m.match("app", "u1", Returned("anything", event_ids=("e1",), session_id="s2")) == (("s2", "e1"),)
    assert m.match("app", "u1", Returned("anything", event_ids=("e2", "e3"))) == (("s1", "e2"), ("s2", "e3"))


def test_an_entry_id_shared_by_two_sessions_is_told_apart_by_its_text():
    m = _matcher()
    assert m.match("app", "u1", Returned("I moved to Paris.", entry_id="e1")) == (("s2", "e1"),)
    assert m.match("app", "u1", Returned("I live in Lyon.", entry_id="e1")) == (("s1", "e1"),)
    assert m.match("app", "u1", Returned("Something else.", entry_id="e1")) == ()


def test_text_matches_within_the_user_only_and_time_picks_among_equal_texts():
    m = _matcher()
    assert m.match("app", "u2", Returned("My cat is Tom.")) == (), "another user's text is not this user's event"
    later = Returned("My cat is Tom.", timestamp=T0 + timedelta(minutes=61))
    assert m.match("app", "u1", later) == (("s2", "e3"),)
    assert m.match("app", "u1", Returned("  My cat   is Tom. ")) == (("s1", "e2"),), "whitespace is not a rewrite"
    assert m.match("app", "u1", Returned("my cat is tom.")) == (), "any other change is"


def test_black_box_entries_parse_to_their_kind():
    adk = system_from_config({"name": "a", "kind": "adk", "service": "google.adk.memory:InMemoryMemoryService",
                              "options": {"x": 1}})  # fmt: skip
    assert adk == AdkSystem("a", "google.adk.memory:InMemoryMemoryService", (("x", 1),))
    assert adk.reference() is None
    assert system_from_config({"name": "m", "kind": "mem0", "threshold": 0.0}) == Mem0System("m", threshold=0.0)


@pytest.mark.parametrize(("entry", "message"), [
    ({"name": "a", "kind": "vectordb"}, "kind 'vectordb' is unknown"),
    ({"name": "a", "kind": "adk"}, "needs `service"),
    ({"name": "a", "kind": "adk", "service": "nocolon"}, "needs `service"),
    ({"name": "a", "kind": "adk", "service": "x:y", "strategy": "exact"}, "strategy"),
    ({"name": "m", "kind": "mem0", "threshold": 2}, "threshold"),
])  # fmt: skip
def test_a_bad_black_box_entry_is_refused_by_name(entry, message):
    with pytest.raises(ConfigError, match=message):
        system_from_config(entry)
