"""SQL of fact memory: value rows, the observation log, per-session watermarks.

Keys are (app_name, user_id, subject, predicate); every unique key includes user_id (shardable by user).
A partial unique index allows at most one current row per single-valued key, so even two concurrent
ingests can never leave two current values; the store also locks the key for the whole decision.

Rows go in and out as tuples in the order of FACT_COLUMNS and OBSERVATION_COLUMNS; memlab.facts.stored turns
them into facts and back. Functions take a connection so the caller decides the transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import psycopg

FACTS_DDL = """
CREATE TABLE IF NOT EXISTS semantic_fact (
    id             bigserial,
    app_name       text        NOT NULL,
    user_id        text        NOT NULL,
    subject        text        NOT NULL,
    predicate      text        NOT NULL,
    value          text        NOT NULL,
    status         text        NOT NULL CHECK (status IN ('current', 'superseded', 'disputed', 'retracted')),
    basis          text        NOT NULL CHECK (basis IN ('stated', 'inferred')),
    confidence     real        NOT NULL,
    source_session text        NOT NULL,
    source_ts      timestamptz NOT NULL,
    source_quote   text        NOT NULL,
    confirmed_at   timestamptz NOT NULL,
    confirmed_by   text,
    sensitivity    text        NOT NULL DEFAULT 'normal' CHECK (sensitivity IN ('normal', 'personal', 'health')),
    cardinality    text        NOT NULL CHECK (cardinality IN ('one', 'many')),
    last_stated_at   timestamptz,
    last_inferred_at timestamptz,
    retracted_at     timestamptz,
    retracted_by     text,
    sessions       text[]      NOT NULL DEFAULT '{}',
    PRIMARY KEY (app_name, user_id, subject, predicate, value)
);
CREATE UNIQUE INDEX IF NOT EXISTS semantic_fact_one_current
    ON semantic_fact (app_name, user_id, subject, predicate)
    WHERE status = 'current' AND cardinality = 'one';
CREATE TABLE IF NOT EXISTS semantic_fact_observation (
    app_name    text        NOT NULL,
    user_id     text        NOT NULL,
    session_id  text        NOT NULL,
    event_id    text        NOT NULL,
    subject     text        NOT NULL,
    predicate   text        NOT NULL,
    value       text        NOT NULL,
    negated     boolean     NOT NULL,
    basis       text        NOT NULL,
    event_time  timestamptz NOT NULL,
    quote       text        NOT NULL,
    action      text        NOT NULL,
    reason      text        NOT NULL,
    ingested_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_name, user_id, session_id, event_id, subject, predicate, value, negated)
);
CREATE TABLE IF NOT EXISTS fact_watermark (
    app_name      text        NOT NULL,
    user_id       text        NOT NULL,
    session_id    text        NOT NULL,
    last_event_ts timestamptz NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id)
);
"""



def readable_time(column: str) -> str:
    """`column` clamped to the years Python can read (1..9999 UTC), NULL kept. FactMemory refuses other times
    on the way in; a row stored before it did is clamped on the way out, so one such row cannot make every read
    of its user (and the app's preload block) fail."""
    return (f"CASE WHEN {column} IS NULL THEN NULL ELSE LEAST(GREATEST({column}, '0001-01-01 00:00:00+00'), "
            f"'9999-12-31 23:59:59.999999+00') END")  # fmt: skip


# A value row as read (key_rows, user_rows) and, without its id, as written (write_rows).
FACT_COLUMNS = ("subject", "predicate", "value", "status", "basis", "confidence", "source_session", "source_ts",
                "source_quote", "confirmed_at", "confirmed_by", "sensitivity", "cardinality", "last_stated_at",
                "last_inferred_at", "retracted_at", "retracted_by", "sessions", "id")  # fmt: skip
WRITTEN_COLUMNS = FACT_COLUMNS[:-1]
# An observation as logged (log_observation); its first six columns are its key (observation_exists).
OBSERVATION_COLUMNS = ("session_id", "event_id", "subject", "predicate", "value", "negated", "basis", "event_time",
                       "quote")  # fmt: skip
_TIME_COLUMNS = {"source_ts", "confirmed_at", "last_stated_at", "last_inferred_at", "retracted_at"}
_FACT_COLUMNS = ", ".join(readable_time(c) if c in _TIME_COLUMNS else c for c in FACT_COLUMNS)


FACT_TABLES = ("semantic_fact", "semantic_fact_observation", "fact_watermark")  # what a read-only store checks


def ensure_schema(conn: psycopg.Connection) -> None:
    conn.execute(FACTS_DDL)


def lock_fact_key(conn: psycopg.Connection, app: str, user: str, subject: str, predicate: str) -> None:
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", ["\x1f".join(("fact", app, user, subject, predicate))]
    )


def key_rows(conn: psycopg.Connection, app: str, user: str, subject: str, predicate: str) -> list[tuple]:
    """Every row (current and history) of one key (FACT_COLUMNS), locked for update."""
    return conn.execute(
        f"SELECT {_FACT_COLUMNS} FROM semantic_fact WHERE app_name = %s AND user_id = %s AND subject = %s "
        "AND predicate = %s ORDER BY value FOR UPDATE",
        [app, user, subject, predicate],
    ).fetchall()


def user_rows(
    conn: psycopg.Connection, app: str, users: Sequence[str], *, statuses: Sequence[str] | None = None
) -> list[tuple]:
    """(user_id, *FACT_COLUMNS) rows of one app for the given users, optionally only some statuses."""
    query = f"SELECT user_id, {_FACT_COLUMNS} FROM semantic_fact WHERE app_name = %s AND user_id = ANY(%s)"
    params: list = [app, list(users)]
    if statuses is not None:
        query += " AND status = ANY(%s)"
        params.append(list(statuses))
    return conn.execute(query + " ORDER BY user_id, subject, predicate, value", params).fetchall()


def write_rows(conn: psycopg.Connection, app: str, user: str, rows: Sequence[Sequence]) -> None:
    """Upsert value rows (WRITTEN_COLUMNS), in the order given (the caller puts rows leaving 'current' first)."""
    for row in rows:
        conn.execute(
            "INSERT INTO semantic_fact (app_name, user_id, subject, predicate, value, status, basis, confidence, "
            "source_session, source_ts, source_quote, confirmed_at, confirmed_by, sensitivity, cardinality, "
            "last_stated_at, last_inferred_at, retracted_at, retracted_by, sessions) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (app_name, user_id, subject, predicate, value) DO UPDATE SET status = EXCLUDED.status, "
            "basis = EXCLUDED.basis, confidence = EXCLUDED.confidence, source_session = EXCLUDED.source_session, "
            "source_ts = EXCLUDED.source_ts, source_quote = EXCLUDED.source_quote, "
            "confirmed_at = EXCLUDED.confirmed_at, confirmed_by = EXCLUDED.confirmed_by, "
            "sensitivity = EXCLUDED.sensitivity, cardinality = EXCLUDED.cardinality, "
            "last_stated_at = EXCLUDED.last_stated_at, last_inferred_at = EXCLUDED.last_inferred_at, "
            "retracted_at = EXCLUDED.retracted_at, retracted_by = EXCLUDED.retracted_by, sessions = EXCLUDED.sessions",
            [app, user, *row],
        )


def observation_exists(conn: psycopg.Connection, app: str, user: str, key: Sequence) -> bool:
    """Whether the observation with this key (the first six OBSERVATION_COLUMNS) is logged."""
    row = conn.execute(
        "SELECT 1 FROM semantic_fact_observation WHERE app_name = %s AND user_id = %s AND session_id = %s "
        "AND event_id = %s AND subject = %s AND predicate = %s AND value = %s AND negated = %s",
        [app, user, *key],
    ).fetchone()
    return row is not None


def log_observation(conn: psycopg.Connection, app: str, user: str, row: Sequence, action: str, reason: str) -> None:
    """Log one observation (OBSERVATION_COLUMNS) with the action taken and why; a logged one is left as it is."""
    conn.execute(
        "INSERT INTO semantic_fact_observation (app_name, user_id, session_id, event_id, subject, predicate, value, "
        "negated, basis, event_time, quote, action, reason) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        [app, user, *row, action, reason],
    )


def observations(conn: psycopg.Connection, app: str, user: str, subject: str, predicate: str) -> list[tuple]:
    return conn.execute(
        f"SELECT value, negated, basis, session_id, event_id, {readable_time('event_time')}, quote, action, reason, "
        f"{readable_time('ingested_at')} "
        "FROM semantic_fact_observation WHERE app_name = %s AND user_id = %s AND subject = %s AND predicate = %s "
        "ORDER BY event_time, session_id, event_id",
        [app, user, subject, predicate],
    ).fetchall()


def cited_events(conn: psycopg.Connection, app: str, user: str) -> list[tuple]:
    """Every event one user's fact observations cite: (session id, event id, basis, time, quotes joined by
    " / "), in session and time order."""
    return conn.execute(
        f"SELECT session_id, event_id, min(basis), min({readable_time('event_time')}), "
        "string_agg(DISTINCT quote, ' / ') FROM semantic_fact_observation WHERE app_name = %s AND user_id = %s "
        "GROUP BY session_id, event_id ORDER BY session_id, min(event_time), event_id",
        [app, user],
    ).fetchall()


def provenance_events(
    conn: psycopg.Connection, app: str, users: Sequence[str]
) -> dict[tuple, list[tuple[str, str]]]:
    """(user, subject, predicate, value) -> (session id, event id) of the events that asserted it (for
    event-level relevance labels: an event id is unique within its session only)."""
    rows = conn.execute(
        "SELECT user_id, subject, predicate, value, array_agg(session_id ORDER BY event_time, session_id), "
        "array_agg(event_id ORDER BY event_time, session_id) "
        "FROM semantic_fact_observation WHERE app_name = %s AND user_id = ANY(%s) AND NOT negated "
        "GROUP BY user_id, subject, predicate, value",
        [app, list(users)],
    ).fetchall()
    return {(r[0], r[1], r[2], r[3]): list(zip(r[4], r[5], strict=True)) for r in rows}


def get_watermark(conn: psycopg.Connection, app: str, user: str, session_id: str) -> datetime | None:
    row = conn.execute(
        f"SELECT {readable_time('last_event_ts')} FROM fact_watermark "
        "WHERE app_name = %s AND user_id = %s AND session_id = %s",
        [app, user, session_id],
    ).fetchone()
    return row[0] if row else None


def set_watermark(conn: psycopg.Connection, app: str, user: str, session_id: str, ts: datetime) -> None:
    conn.execute(
        "INSERT INTO fact_watermark (app_name, user_id, session_id, last_event_ts) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (app_name, user_id, session_id) DO UPDATE "
        "SET last_event_ts = GREATEST(fact_watermark.last_event_ts, EXCLUDED.last_event_ts)",
        [app, user, session_id, ts],
    )


def delete_value(conn: psycopg.Connection, app: str, user: str, subject: str, predicate: str, value: str) -> int:
    """Remove one value of a key with its observations (the user asked to forget it)."""
    params = [app, user, subject, predicate, value]
    conn.execute(
        "DELETE FROM semantic_fact_observation WHERE app_name = %s AND user_id = %s AND subject = %s "
        "AND predicate = %s AND value = %s",
        params,
    )
    return conn.execute(
        "DELETE FROM semantic_fact WHERE app_name = %s AND user_id = %s AND subject = %s AND predicate = %s "
        "AND value = %s",
        params,
    ).rowcount


def delete_values(
    conn: psycopg.Connection, app: str, user: str, subject: str, predicate: str, values: Sequence[str]
) -> int:
    """Remove value rows of one key (their evidence is gone); observations are left to the caller."""
    if not values:
        return 0
    return conn.execute(
        "DELETE FROM semantic_fact WHERE app_name = %s AND user_id = %s AND subject = %s AND predicate = %s "
        "AND value = ANY(%s)",
        [app, user, subject, predicate, list(values)],
    ).rowcount


def _evidence_filter(event_ids: Sequence[str] | None, session_id: str | None) -> tuple[str, list]:
    if event_ids is None and session_id is None:
        raise ValueError("name the events or the session whose observations go")
    sql, params = "", []
    if event_ids is not None:
        sql += " AND event_id = ANY(%s)"
        params.append(list(event_ids))
    if session_id is not None:
        sql += " AND session_id = %s"
        params.append(session_id)
    return sql, params


def observation_keys(
    conn: psycopg.Connection, app: str, user: str, *, event_ids: Sequence[str] | None = None,
    session_id: str | None = None,
) -> list[tuple[str, str]]:  # fmt: skip
    """(subject, predicate) keys observed in these events / this session, sorted (the order keys are locked)."""
    where, params = _evidence_filter(event_ids, session_id)
    rows = conn.execute(
        f"SELECT DISTINCT subject, predicate FROM semantic_fact_observation WHERE app_name = %s AND user_id = %s"
        f"{where} ORDER BY subject, predicate",
        [app, user, *params],
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def delete_observations(
    conn: psycopg.Connection, app: str, user: str, *, event_ids: Sequence[str] | None = None,
    session_id: str | None = None,
) -> list[tuple[str, str]]:  # fmt: skip
    """Delete the observations of these events / this session; the (subject, predicate) of each deleted row."""
    where, params = _evidence_filter(event_ids, session_id)
    rows = conn.execute(
        f"DELETE FROM semantic_fact_observation WHERE app_name = %s AND user_id = %s{where} "
        "RETURNING subject, predicate",
        [app, user, *params],
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def fact_count(conn: psycopg.Connection, app_name: str, user_id: str) -> int:
    """The user's current facts (a fact memory's size, recorded with each query it serves)."""
    return conn.execute(
        "SELECT count(*) FROM semantic_fact WHERE app_name = %s AND user_id = %s AND status = 'current'",
        [app_name, user_id],
    ).fetchone()[0]


def forget_user(conn: psycopg.Connection, app: str, user: str) -> dict[str, int]:
    counts = {}
    for table in ("semantic_fact", "semantic_fact_observation", "fact_watermark"):
        counts[table] = conn.execute(f"DELETE FROM {table} WHERE app_name = %s AND user_id = %s", [app, user]).rowcount
    return counts
