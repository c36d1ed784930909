"""Facts as rows of the fact tables (whose SQL is memlab.storage.fact_tables): rows read become `Fact`s, and of
a key's rows only those a decision changed are written back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import psycopg

import memlab.storage.fact_tables as tables
from memlab.facts.types import Candidate, Fact


def fact_of(row: Sequence) -> Fact:
    """The fact of one value row (tables.FACT_COLUMNS)."""
    (subject, predicate, value, status, basis, confidence, source_session, source_ts, quote, confirmed_at,
     confirmed_by, sensitivity, cardinality, last_stated, last_inferred, retracted_at, retracted_by, sessions,
     row_id) = row  # fmt: skip
    return Fact(
        subject=subject, predicate=predicate, value=value, status=status, basis=basis, confidence=float(confidence),
        source_session=source_session, source_ts=source_ts, quote=quote, confirmed_at=confirmed_at,
        confirmed_by=confirmed_by, sensitivity=sensitivity, cardinality=cardinality, last_stated_at=last_stated,
        last_inferred_at=last_inferred, retracted_at=retracted_at, retracted_by=retracted_by,
        sessions=tuple(sessions), id=row_id,
    )  # fmt: skip


def key_facts(conn: psycopg.Connection, app: str, user: str, subject: str, predicate: str) -> list[Fact]:
    """Every fact (current and history) of one key, locked for update."""
    return [fact_of(r) for r in tables.key_rows(conn, app, user, subject, predicate)]


def user_facts(
    conn: psycopg.Connection, app: str, users: Sequence[str], *, statuses: Sequence[str] | None = None
) -> list[tuple[str, Fact]]:
    """(user_id, fact) of one app for the given users, optionally only some statuses."""
    return [(r[0], fact_of(r[1:])) for r in tables.user_rows(conn, app, users, statuses=statuses)]


def write_facts(conn: psycopg.Connection, app: str, user: str, before: Sequence[Fact], after: Sequence[Fact]) -> None:
    """Upsert the facts that changed; rows leaving 'current' go first so the one-current index never trips."""
    old = {r.value: r for r in before}
    changed = [r for r in after if _differs(old.get(r.value), r)]
    changed.sort(key=lambda r: (r.status == "current", r.value))
    tables.write_rows(conn, app, user, [
        (r.subject, r.predicate, r.value, r.status, r.basis, r.confidence, r.source_session, r.source_ts, r.quote,
         r.confirmed_at, r.confirmed_by, r.sensitivity, r.cardinality, r.last_stated_at, r.last_inferred_at,
         r.retracted_at, r.retracted_by, list(r.sessions))
        for r in changed
    ])  # fmt: skip


def _differs(old: Fact | None, new: Fact) -> bool:
    if old is None:
        return True
    return old != replace(new, id=old.id)


def observed(conn: psycopg.Connection, app: str, user: str, c: Candidate) -> bool:
    """Whether this candidate, from this event, is logged already."""
    return tables.observation_exists(conn, app, user, (c.session_id, c.event_id, c.subject, c.predicate, c.value,
                                                       c.negated))  # fmt: skip


def log_candidate(conn: psycopg.Connection, app: str, user: str, c: Candidate, action: str, reason: str) -> None:
    """Log the candidate as observed, with the action taken on it and why."""
    tables.log_observation(conn, app, user, (c.session_id, c.event_id, c.subject, c.predicate, c.value, c.negated,
                                             c.basis, c.event_time, c.quote), action, reason)  # fmt: skip
