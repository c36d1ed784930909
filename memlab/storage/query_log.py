"""The query log's table and every statement on it: served queries, recorded when a memory's `QueryLog` is on
(memlab.events.query_log decides what is recorded; this module only stores, reads and deletes).

Every read and every erasure names app and user in its WHERE clause; only the retention purge and the list of
users with logged queries (ids only, for sampling) span users. A row's `sessions` are all the sessions its hits
came from; `forget_session` deletes every row of the user whose hits touched the session (the log does not
know which session asked)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg.types.json import Jsonb

from memlab.storage.erasures import Name, guard

QUERY_LOG_TABLE = "memlab_query_log"
KINDS = ("events", "facts")

QUERY_LOG_DDL = f"""
CREATE TABLE IF NOT EXISTS {QUERY_LOG_TABLE} (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_name     text        NOT NULL,
    user_id      text        NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('events', 'facts')),
    layer        text        NOT NULL,
    query_text   text        NOT NULL,
    asked_at     timestamptz NOT NULL,
    recorded_at  timestamptz NOT NULL DEFAULT now(),
    settings     jsonb       NOT NULL,
    unit_ids     text[]      NOT NULL,
    distances    float8[]    NOT NULL,
    hit_sessions text[]      NOT NULL,
    sessions     text[]      NOT NULL,
    memory_size  bigint
);
CREATE INDEX IF NOT EXISTS {QUERY_LOG_TABLE}_scope ON {QUERY_LOG_TABLE} (app_name, user_id, asked_at);
CREATE INDEX IF NOT EXISTS {QUERY_LOG_TABLE}_recorded ON {QUERY_LOG_TABLE} (recorded_at);
"""


@dataclass(frozen=True)
class LoggedQuery:
    """One served query as recorded: who asked, which memory answered, the question, when, with what settings,
    and what came back (unit ids best first, their distances, each hit's session, every session a hit touched)."""

    app_name: str
    user_id: str
    kind: str
    layer: str
    text: str
    asked_at: datetime
    recorded_at: datetime
    settings: dict
    unit_ids: tuple[str, ...]
    distances: tuple[float, ...]
    hit_sessions: tuple[str, ...]
    sessions: tuple[str, ...]
    memory_size: int | None

    @property
    def empty(self) -> bool:
        """The search returned nothing."""
        return not self.unit_ids


_COLUMNS = ("app_name, user_id, kind, layer, query_text, asked_at, recorded_at, settings, unit_ids, distances, "
            "hit_sessions, sessions, memory_size")  # fmt: skip


def marker_user(app_name: str, user_id: str) -> Name:
    """The erasure marker (memlab.storage.erasures) a forget_user leaves for queries being recorded meanwhile."""
    return ("queries", app_name, user_id)


def marker_session(app_name: str, user_id: str, session_id: str) -> Name:
    """The erasure marker a forget_session leaves for queries being recorded meanwhile."""
    return ("queries", app_name, user_id, session_id)


def generation(conn: psycopg.Connection, app_name: str, user_id: str) -> int:
    """The erasure generation a search starts at, read (not drawn) under the user's shared guard: an erasure of
    the user draws its generation while holding the guard exclusively, so one that drew before this read has
    committed, and one that draws later gets a higher number. A read writes no WAL, so its commit waits for no
    disk flush (drawing with nextval, as an add's plan does, cost a flush per search)."""
    with conn.transaction():
        guard(conn, [(app_name, user_id)], exclusive=False)
        last, called = conn.execute("SELECT last_value, is_called FROM memlab_erasure_generation").fetchone()
    return int(last) if called else int(last) - 1


def create_table(conn: psycopg.Connection) -> None:
    """Create the table and its indexes if missing (the caller holds the schema lock)."""
    conn.execute(QUERY_LOG_DDL)


def insert(conn: psycopg.Connection, row: LoggedQuery) -> None:
    """Write one recorded query (`recorded_at` is the server's clock, whatever the row says), in the caller's
    transaction. The commit does not wait for the WAL flush (synchronous_commit off, this transaction only): a
    search pays no disk flush for its log row, and a server crash may lose the last fraction of a second of rows,
    never corrupt the table."""
    conn.execute("SET LOCAL synchronous_commit = off")
    conn.execute(
        f"INSERT INTO {QUERY_LOG_TABLE} (app_name, user_id, kind, layer, query_text, asked_at, settings, unit_ids, "
        "distances, hit_sessions, sessions, memory_size) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        [row.app_name, row.user_id, row.kind, row.layer, row.text, row.asked_at, Jsonb(row.settings),
         list(row.unit_ids), list(row.distances), list(row.hit_sessions), list(row.sessions), row.memory_size],
    )  # fmt: skip


def previous_query(conn: psycopg.Connection, app_name: str, user_id: str, asked_at: datetime) -> str | None:
    """The text of the user's query asked last up to `asked_at` (any memory), or None: the turn a new query may be
    the reply to. Read backwards along the scope index, one row."""
    row = conn.execute(
        f"SELECT query_text FROM {QUERY_LOG_TABLE} WHERE app_name = %s AND user_id = %s AND asked_at <= %s "
        "ORDER BY asked_at DESC, id DESC LIMIT 1",
        [app_name, user_id, asked_at],
    ).fetchone()
    return None if row is None else row[0]


def user_queries(conn: psycopg.Connection, app_name: str, user_id: str, kind: str | None = None) -> list[LoggedQuery]:
    """The user's logged queries, oldest first (optionally of one memory kind)."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM {QUERY_LOG_TABLE} WHERE app_name = %s AND user_id = %s "
        "AND (%s::text IS NULL OR kind = %s) ORDER BY asked_at, id",
        [app_name, user_id, kind, kind],
    ).fetchall()
    return [LoggedQuery(*r[:8], tuple(r[8]), tuple(r[9]), tuple(r[10]), tuple(r[11]), r[12]) for r in rows]


def logged_users(conn: psycopg.Connection, app_name: str | None = None) -> list[tuple[str, str]]:
    """(app, user) of every user with logged queries (of one app, or all): ids only, for sampling user by user."""
    rows = conn.execute(
        f"SELECT DISTINCT app_name, user_id FROM {QUERY_LOG_TABLE} WHERE (%s::text IS NULL OR app_name = %s) "
        "ORDER BY app_name, user_id",
        [app_name, app_name],
    ).fetchall()
    return [(a, u) for a, u in rows]


def delete_user(conn: psycopg.Connection, app_name: str, user_id: str) -> int:
    """Erase every logged query of the user (all memories); returns rows deleted."""
    return conn.execute(
        f"DELETE FROM {QUERY_LOG_TABLE} WHERE app_name = %s AND user_id = %s", [app_name, user_id]
    ).rowcount


def delete_sessions(conn: psycopg.Connection, app_name: str, user_id: str, session_ids: Sequence[str]) -> int:
    """Erase the user's logged queries whose hits touched any of `session_ids`; returns rows deleted."""
    return conn.execute(
        f"DELETE FROM {QUERY_LOG_TABLE} WHERE app_name = %s AND user_id = %s AND sessions && %s::text[]",
        [app_name, user_id, list(session_ids)],
    ).rowcount


def purge(conn: psycopg.Connection, recorded_before: datetime, app_name: str | None = None) -> int:
    """Retention: delete rows recorded before `recorded_before` (every user, or one app's); returns rows deleted."""
    return conn.execute(
        f"DELETE FROM {QUERY_LOG_TABLE} WHERE recorded_at < %s AND (%s::text IS NULL OR app_name = %s)",
        [recorded_before, app_name, app_name],
    ).rowcount
