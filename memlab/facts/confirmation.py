"""An explicit confirmation: the app asked the user whether a stale fact still holds and got a yes.

It is folded in as what it is, the user stating the same value again at that time, so consolidation, `why()`,
`forget_session` and `forget_user` treat it like any other observation: `confirmed_at` / `confirmed_by` move,
the trail shows "confirmed by the user on <date> in session <id>", and erasing the session (or the user)
takes the confirmation with it and re-derives the key from what is left."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime

import psycopg

import memlab.facts.stored as stored
import memlab.storage.fact_tables as tables
from memlab.facts.decide import decide
from memlab.facts.registry import Predicate
from memlab.facts.types import Candidate, Fact
from memlab.types import InputError

CONFIRM_ACTION = "confirm"
CONFIRM_QUOTE = "(yes: the user confirmed this value when asked)"


def parse_key(key: object) -> tuple[str, str]:
    """A key as (subject, predicate): `"home_city"` (about the user), `"user.daughter/allergy"` (the
    `subject/predicate` form of a question's `fact_key`) or a (subject, predicate) pair."""
    if isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) and k for k in key):
        return key[0], key[1]
    if isinstance(key, str) and key.strip():
        subject, _, predicate = key.rpartition("/")
        return subject or "user", predicate
    raise InputError(f"key={key!r} must name a fact key: a predicate ('home_city'), 'subject/predicate' "
                     "('user.daughter/allergy') or a (subject, predicate) pair")  # fmt: skip


def confirmation_reason(session_id: str, at: datetime) -> str:
    return f"confirmed by the user on {at:%Y-%m-%d} in session {session_id}"


def confirm_key(conn: psycopg.Connection, app: str, user: str, subject: str, predicate: Predicate,
                session_id: str, at: datetime) -> list[Fact]:  # fmt: skip
    """Confirm every current value of the key at `at` (a many-valued key has several); the current rows after.
    InputError when the key has no current value: there is nothing the user could have said yes to."""
    tables.lock_fact_key(conn, app, user, subject, predicate.name)
    rows = stored.key_facts(conn, app, user, subject, predicate.name)
    values = sorted(r.value for r in rows if r.status == "current")
    if not values:
        history = f" (its {len(rows)} stored value(s) are superseded or retracted)" if rows else ""
        raise InputError(f"no current fact {subject} {predicate.name} to confirm{history}. Fix: confirm a key "
                         "FactMemory.current(app, user) lists; a new value is stored by ingesting the session "
                         "that states it", app_name=app, user_id=user)  # fmt: skip
    reason = confirmation_reason(session_id, at)
    for value in values:
        digest = hashlib.sha1("\x1f".join((subject, predicate.name, value, at.isoformat())).encode()).hexdigest()
        cand = Candidate(subject, predicate.name, value, CONFIRM_QUOTE, basis="stated",
                         event_id=f"confirm-{digest[:16]}", event_time=at, session_id=session_id)  # fmt: skip
        if stored.observed(conn, app, user, cand):
            continue  # the same confirmation recorded twice
        decision = decide(cand, rows, predicate.cardinality)
        after = [replace(r, sensitivity=predicate.sensitivity, cardinality=predicate.cardinality)
                 for r in decision.rows]  # fmt: skip
        stored.write_facts(conn, app, user, rows, after)
        stored.log_candidate(conn, app, user, cand, CONFIRM_ACTION, reason)
        rows = stored.key_facts(conn, app, user, subject, predicate.name)
    return [r for r in rows if r.status == "current"]
