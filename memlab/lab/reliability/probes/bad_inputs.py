"""Bad inputs: how each malformed input ended (memlab error, counted skip, stored)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import memlab
from memlab.lab.reliability.probes.concurrency import T0
from memlab.lab.reliability.probes.family import Family

# -- bad inputs -------------------------------------------------------------------------------------------------

GOOD_TEXT = "Our payments service runs in eu-west-1 and we deploy it with Argo CD."
FAR = datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
FAR_WEST = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5)))  # year 10000 in UTC


def _ended(value: Any) -> tuple[str, str]:
    """How a call ended (memlab error, listed as failed, counted skip, stored, ...) and the detail."""
    if isinstance(value, BaseException):
        kind = "memlab error" if isinstance(value, memlab.MemlabError) else "other error"
        return kind, f"{type(value).__name__}: {str(value).splitlines()[0][:160] if str(value) else ''}"
    if isinstance(value, memlab.IngestReport):
        skips = ", ".join(f"{k} {v}" for k, v in sorted(value.skipped.items()))
        if value.failed:
            refused = len(value.failed)
            return "listed as failed", f"{refused} session(s) refused, {value.added} unit(s) of the others stored"
        if value.skipped and value.added:
            return "stored + counted skip", f"{value.added} stored; skipped: {skips}"
        if value.skipped:
            return "counted skip", skips
        return ("stored", f"{value.added} stored") if value.added else ("nothing new", "already stored")
    if isinstance(value, memlab.facts.FactIngestReport):
        return "stored", f"{value.inserted} fact(s)"
    return "returned", type(value).__name__


ENDINGS = {"memlab error": "memlab_errors", "listed as failed": "listed_as_failed", "counted skip": "counted_skips",
           "stored": "stored", "stored + counted skip": "stored"}  # how a bad input may end -> its figure


def bad_inputs_family(db: memlab.Store, embedder: memlab.Embedder) -> Family:
    family = Family("bad_inputs", {"cases": 0, "memlab_errors": 0, "listed_as_failed": 0, "counted_skips": 0,
                                   "stored": 0, "other_endings": 0, "not_as_documented": 0, "poisoned_users": 0},
                    must_be_zero=["other_endings", "not_as_documented", "poisoned_users"])  # fmt: skip
    mem = memlab.EventMemory(db, embedder)
    facts = memlab.FactMemory(db, embedder, extractor=memlab.RuleExtractor())
    app = "bad-inputs"

    def ev(eid: Any = "e1", text: Any = GOOD_TEXT, at: Any = T0, author: Any = "user", **kw) -> memlab.Event:
        return memlab.Event(eid, author, at, text, **kw)

    def add(user: str, *events: memlab.Event, sid: Any = "s1") -> memlab.IngestReport:
        return mem.add_session(memlab.Session(app, user, sid, list(events)))

    cases: list[tuple[str, str, Callable[[], Any]]] = [
        ("NUL character in the text", "memlab error", lambda: add("u-nul-text", ev(text=f"{GOOD_TEXT} \x00"))),
        ("NUL character in the user id", "memlab error", lambda: add("u-nul\x00", ev())),
        ("NUL character in the event id", "memlab error", lambda: add("u-nul-eid", ev("e\x001"))),
        ("NUL character in the author", "memlab error", lambda: add("u-nul-author", ev(author="us\x00er"))),
        ("lone surrogate in the text", "memlab error", lambda: add("u-sur-text", ev(text=f"{GOOD_TEXT} \ud800"))),
        ("lone surrogate in the session id", "memlab error", lambda: add("u-sur-sid", ev(), sid="s\udfff")),
        ("int user id", "memlab error", lambda: memlab.Session(app, 5, "s1", [ev()])),
        ("int session id", "memlab error", lambda: memlab.Session(app, "u-int-sid", 7, [ev()])),
        ("int event id", "memlab error", lambda: add("u-int-eid", ev(eid=7))),
        ("int text", "memlab error", lambda: add("u-int-text", ev(text=42))),
        ("None timestamp", "memlab error", lambda: add("u-none-ts", ev(at=None))),
        ("naive timestamp", "memlab error", lambda: add("u-naive", ev(at=datetime(2026, 1, 1)))),
        ("year-9999 timestamp (UTC)", "memlab error", lambda: add("u-9999", ev(at=FAR))),
        ("year-9999 timestamp at UTC-5 (year 10000 in UTC)", "memlab error",
         lambda: add("u-9999-west", ev(at=FAR_WEST))),
        ("timestamp before 1970", "memlab error", lambda: add("u-1969", ev(at=datetime(1969, 7, 20, tzinfo=UTC)))),
        ("duplicate event ids in one session", "stored + counted skip",
         lambda: add("u-dup", ev("e1"), ev("e1", text=GOOD_TEXT + " Again."), ev("e2", text=GOOD_TEXT + " Two."))),
        ("the same event id in two sessions", "stored",
         lambda: (add("u-dup2", ev("e1"), sid="s1"), add("u-dup2", ev("e1", text=GOOD_TEXT + " B"), sid="s2"))[1]),
        ("empty text", "counted skip", lambda: add("u-empty", ev(text=""))),
        ("None text with a tool call", "counted skip",
         lambda: add("u-tool", ev(text=None, function_calls=(memlab.FunctionCall("lookup"),)))),
        ("a 300-byte user id", "memlab error", lambda: add("u" * 300, ev())),
        ("a 100 kB text", "stored", lambda: add("u-long", ev(text=GOOD_TEXT + " x" * 50_000))),
        ("None query", "memlab error", lambda: mem.search(app, "u-long", None)),
        ("int user id in a search", "memlab error", lambda: mem.search(app, 5, "payments")),
        ("empty user id in a search", "memlab error", lambda: mem.search(app, "", "payments")),
        ("session of the reserved user _domain into fact memory", "memlab error",
         lambda: facts.add_session(memlab.Session(app, memlab.facts.DOMAIN_USER, "s1",
                                                  [ev(text="I live in Berlin now.")]))),
        ("a bad session among good ones (add_sessions)", "listed as failed",
         lambda: mem.add_sessions([memlab.Session(app, "u-batch", "ok1", [ev()]),
                                   memlab.Session(app, "u-batch", "bad", [ev(at=FAR)]),
                                   memlab.Session(app, "u-batch", "ok2", [ev()])])),
    ]  # fmt: skip
    rows = []
    for name, expected, call in cases:
        try:
            value = call()
        except BaseException as exc:  # classified below; KeyboardInterrupt still stops the run
            if isinstance(exc, KeyboardInterrupt):
                raise
            value = exc
        ended, detail = _ended(value)
        family.add("cases")
        family.add(ENDINGS.get(ended, "other_endings"))
        if ended != expected:
            family.problem("not_as_documented", f"{name}: ended as {ended} ({detail}), documented: {expected}")
        rows.append({"input": name, "ended": ended, "documented": expected, "detail": detail})
    for user in ("u-nul-text", "u-9999", "u-dup", "u-dup2", "u-long", "u-batch"):
        try:
            mem.search(app, user, "payments region")
            facts.search(app, user, "payments region")
        except BaseException as exc:
            family.problem("poisoned_users", f"{user}: {exc!r}")
    family.figures["table"] = rows
    return family



