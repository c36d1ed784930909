"""Malformed input gets a memlab error naming the session and event (or a counted skip), before anything is
embedded or written; one bad session never sinks the others; a timestamp can never poison a user."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import psycopg
import pytest

import memlab
from tests.conftest import T0, make_session

TEXTS = [
    "Our payments service runs in eu-west-1 and we deploy it with Argo CD.",
    "The nightly billing export job writes CSV files to an S3 bucket at 2am.",
]
# Year 9999 in a negative UTC offset is year 10000 in UTC: PostgreSQL stores it, Python cannot read it back.
FAR = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5)))


@pytest.fixture
def mem(store, embedder):
    return memlab.EventMemory(store, embedder)


def _event(eid="e1", author="user", at=T0, text=TEXTS[0]):
    return memlab.Event(eid, author, at, text)


def test_a_far_future_timestamp_is_refused_and_the_user_stays_searchable(mem, app_name):
    mem.add_session(make_session(app_name, "u1", "s1", TEXTS))
    bad = memlab.Session(app_name, "u1", "s-far", [_event("e-ok", text=TEXTS[1]), _event("e-far", at=FAR)])
    with pytest.raises(
        memlab.ConfigError, match=r"session 's-far', event 'e-far': timestamp 9999-12-31T23:00:00-05:00"
    ):
        mem.add_session(bad)
    assert mem.count(app_name, "u1") == 2, "nothing of the refused session was written"
    assert len(mem.search(app_name, "u1", "payments region")) == 2
    assert mem.add_session(make_session(app_name, "u1", "s2", TEXTS, start=T0 + timedelta(days=1))).added == 2


def test_the_timestamp_window_has_plausible_defaults_and_is_configurable(store, embedder, mem, app_name):
    now = datetime.now(UTC)
    for at in (datetime(1969, 12, 31, 23, 59, tzinfo=UTC), now + timedelta(days=2)):
        with pytest.raises(memlab.InputError, match=r"outside the accepted window 1970-01-01T00:00:00\+00:00"):
            mem.add_session(memlab.Session(app_name, "u1", "s1", [_event(at=at)]))
    for i, at in enumerate((datetime(1970, 1, 2, tzinfo=UTC), now + timedelta(hours=1))):
        assert mem.add_session(memlab.Session(app_name, "u1", f"ok{i}", [_event(at=at)])).added == 1
    wide = memlab.EventMemory(
        store,
        embedder,
        timestamps=memlab.TimestampWindow(earliest=datetime(1900, 1, 1, tzinfo=UTC), ahead=timedelta(days=30)),
    )
    old, soon = datetime(1950, 6, 1, tzinfo=UTC), now + timedelta(days=2)
    assert (
        wide.add_session(memlab.Session(app_name, "u2", "s1", [_event("e1", at=old), _event("e2", at=soon)])).added == 2
    )
    with pytest.raises(memlab.InputError, match="timestamp"):  # even the widest window stops at year 9999 in UTC
        memlab.EventMemory(store, embedder, timestamps=memlab.TimestampWindow(ahead=timedelta.max)).add_session(
            memlab.Session(app_name, "u3", "s1", [_event(at=FAR)])
        )
    with pytest.raises(memlab.ConfigError, match="timezone-aware"):
        memlab.TimestampWindow(earliest=datetime(1900, 1, 1))


@pytest.mark.parametrize("bad", ["\x00", "\ud800"], ids=["nul", "lone-surrogate"])
@pytest.mark.parametrize("field", ["text", "author", "event id", "session id", "user id"])
def test_unstorable_characters_get_a_memlab_error_naming_session_and_event(mem, app_name, field, bad):
    eid = f"e{bad}1" if field == "event id" else "e1"
    event = memlab.Event(
        eid,
        f"us{bad}er" if field == "author" else "user",
        T0,
        f"{TEXTS[0]} {bad} more" if field == "text" else TEXTS[0],
    )
    sid = f"s{bad}1" if field == "session id" else "s1"
    user = f"u{bad}1" if field == "user id" else "u1"
    session = memlab.Session(app_name, user, sid, [event, _event("e2", text=TEXTS[1])])
    with pytest.raises(memlab.InputError) as caught:
        mem.add_session(session)
    message = str(caught.value)
    assert f"session {sid!r}" in message and f"user {user!r}" in message, message
    if field in ("text", "author", "event id"):
        assert f"event {eid!r}" in message and field.split()[0] in message, message
    assert ("NUL" if bad == "\x00" else "surrogate") in message
    assert caught.value.session_id == sid and caught.value.problem
    assert mem.count(app_name, "u1") == 0, "nothing of the session was written"


def test_one_bad_session_never_sinks_the_others(mem, app_name):
    good = [make_session(app_name, f"user{i}", f"s{i}", TEXTS) for i in range(5)]
    nul = memlab.Session(app_name, "bad1", "s-nul", [_event("e1", text="a NUL \x00 in the middle of a long text")])
    far = memlab.Session(app_name, "bad2", "s-far", [_event("e1", at=FAR)])
    report = mem.add_sessions([good[0], nul, *good[1:3], far, *good[3:]])
    assert report.added == 10 and not report.ok
    assert [(f.user_id, f.session_id) for f in report.failed] == [("bad1", "s-nul"), ("bad2", "s-far")]
    assert "event 'e1'" in report.failed[0].reason and "NUL" in report.failed[0].reason
    assert "timestamp" in report.failed[1].reason
    assert [mem.count(app_name, f"user{i}") for i in range(5)] == [2] * 5
    assert mem.count(app_name, "bad1") == mem.count(app_name, "bad2") == 0
    assert mem.add_sessions(good).ok


def test_a_batch_postgresql_refuses_is_retried_session_by_session(mem, app_name, monkeypatch):
    """The last line of defence: if PostgreSQL refuses data the checks let through, only that session fails."""
    monkeypatch.setattr(mem, "check", lambda session: None)
    good = [make_session(app_name, f"user{i}", f"s{i}", TEXTS) for i in range(3)]
    bad = memlab.Session(app_name, "bad", "s-bad", [_event("e1", text="a NUL \x00 in the middle of a long text")])
    report = mem.add_sessions([good[0], bad, *good[1:]])
    assert report.added == 6
    assert [(f.user_id, f.session_id) for f in report.failed] == [("bad", "s-bad")]
    with pytest.raises(psycopg.DataError):
        mem.add_session(bad)


def test_wrong_types_get_memlab_errors_not_attribute_or_sql_errors(mem, app_name):
    mem.add_session(make_session(app_name, "u1", "s1", TEXTS))
    with pytest.raises(memlab.ConfigError, match=r"user_id 5 is a int"):
        memlab.Session(app_name, 5, "s1", [_event()])
    with pytest.raises(memlab.ConfigError, match="timestamp None is not a datetime"):
        memlab.Event("e1", "user", None, TEXTS[0])
    with pytest.raises(memlab.ConfigError, match="text must be a string"):
        memlab.Event("e1", "user", T0, 42)
    with pytest.raises(memlab.ConfigError, match=r"Event\.id 7"):
        memlab.Event(7, "user", T0, TEXTS[0])
    with pytest.raises(memlab.ConfigError, match="user_id 5 is a int"):
        mem.search(app_name, 5, "payments")
    with pytest.raises(memlab.ConfigError, match="query None is a NoneType"):
        mem.search(app_name, "u1", None)
    with pytest.raises(memlab.ConfigError, match="query None is a NoneType"):
        mem.explain(app_name, "u1", None)
    with pytest.raises(memlab.ConfigError, match="NUL"):
        mem.search(app_name, "u\x001", "payments")
    with pytest.raises(memlab.ConfigError, match="memory_id None"):
        mem.delete_memory(app_name, "u1", None)
    assert mem.count(app_name, "u1") == 2
