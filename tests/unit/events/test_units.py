"""Chunking is pure: windows cover every kept event, respect size and overlap, and stay stable as a session grows."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

import memlab
from memlab.events.units import chunk_units, event_units, layer_name, window_starts

T = datetime(2026, 1, 1, tzinfo=UTC)


def session_of(n: int) -> memlab.Session:
    events = [
        memlab.Event(f"e{i}", "user" if i % 2 == 0 else "model", T + timedelta(minutes=i), f"line {i}")
        for i in range(n)
    ]
    return memlab.Session("a", "u", "s", events)


@given(n=st.integers(0, 60), size=st.integers(1, 8), data=st.data())
def test_windows_cover_everything_with_the_given_overlap(n, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    starts = window_starts(n, size, overlap)
    covered = set()
    for a, b in itertools.pairwise(starts):
        assert b - a == size - overlap
    for s in starts:
        covered.update(range(s, min(s + size, n)))
    assert covered == set(range(n))
    if n:
        assert starts[0] == 0 and starts[-1] + size >= n
        # no window is wholly contained in the previous one
        assert all(min(s + size, n) > min(p + size, n) for p, s in itertools.pairwise(starts))


@given(n=st.integers(1, 40), grow=st.integers(1, 20))
def test_chunk_ids_are_stable_when_a_session_grows(n, grow):
    before = {u.unit_id: u.event_ids for u in chunk_units(session_of(n), list(session_of(n).events), 4, 1)}
    longer = session_of(n + grow)
    after = {u.unit_id: u.event_ids for u in chunk_units(longer, list(longer.events), 4, 1)}
    changed = [uid for uid in before if after.get(uid) != before[uid]]
    assert len(changed) <= 1, "only the trailing window may change"


def test_chunk_text_and_metadata():
    s = session_of(5)
    units = chunk_units(s, list(s.events), 3, 1)
    assert [u.event_ids for u in units] == [("e0", "e1", "e2"), ("e2", "e3", "e4")]
    assert units[0].body == "user: line 0\nmodel: line 1\nuser: line 2"
    assert units[0].occurred_at == s.events[2].timestamp and units[0].author == "model,user"
    assert [u.unit_id for u in event_units(s, list(s.events))] == ["e0", "e1", "e2", "e3", "e4"]


def test_layer_names_and_bad_chunk_settings():
    assert layer_name("event") == "event"
    assert layer_name("chunk", 4, 1) == "chunk:4:1"
    with pytest.raises(memlab.ConfigError, match="chunk_overlap"):
        layer_name("chunk", 3, 3)
    with pytest.raises(memlab.ConfigError, match="granularity"):
        layer_name("sentence")


def test_types_refuse_naive_timestamps_and_bad_settings():
    with pytest.raises(memlab.ConfigError, match="no timezone"):
        memlab.Event("e1", "user", datetime(2026, 1, 1), "hello there, this is long enough")
    with pytest.raises(memlab.ConfigError, match="strategy"):
        memlab.SearchSettings(strategy="ivfflat")
    with pytest.raises(memlab.ConfigError, match="iterative_scan"):
        memlab.SearchSettings(iterative_scan="on")
    with pytest.raises(memlab.ConfigError, match="ef_search"):
        memlab.SearchSettings(ef_search=0)
    with pytest.raises(memlab.ConfigError, match="max_distance"):
        memlab.SearchSettings(max_distance=3.0)
