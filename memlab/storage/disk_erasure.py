"""What an erasure leaves on disk, level by level, and the steps that remove it.

A DELETE only hides rows: their bytes stay in the table's heap pages, in its TOAST table, in every index
(b-tree leaves and pivot keys, the full-text GIN index's entry keys), in the planner's statistics
(`pg_statistic`: most-common values and histograms sample real values) and in the write-ahead log. The levels
(the `vacuum=` argument of every forget path of both memories):

- `False`: rows deleted and invisible to SQL; every byte stays on disk until PostgreSQL happens to reuse it.
- `True`: VACUUM (ANALYZE) of every table that holds users' rows: dead rows pruned, index entries pointing at
  them removed, statistics resampled, and the statistics of a table left empty cleared (ANALYZE keeps the old
  sample of an empty table, so `pg_stats` would still show the erased values). Pruned bytes may stay in pages'
  free space, b-tree pivot keys and GIN entry keys until overwritten: not a byte-level guarantee.
- `"full"`: VACUUM (FULL, ANALYZE) of those tables (each rewritten with its TOAST table and indexes rebuilt,
  the old files truncated at once and unlinked at the next checkpoint) and of `pg_statistic` (its dead rows
  held the old samples). No file of the data folder other than the WAL holds the bytes afterwards.
- `"wal"`: `"full"`, then `purge_wal`: the WAL segments that recorded the rows are removed.

`"full"` takes an ACCESS EXCLUSIVE lock on each table while it is rewritten (every user's reads and writes
wait) and needs free disk for a copy of the largest table; rewriting `pg_statistic` and purging the WAL need a
superuser (the embedded server's user is one). Copies outside the data folder (backups, WAL archives,
replicas, the file system's free blocks) are out of reach of any level.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass

import psycopg
from psycopg import sql

from memlab.errors import ConfigError
from memlab.storage.store import Store

log = logging.getLogger(__name__)

LEVELS: tuple[bool | str, ...] = (False, True, "full", "wal")
# Every table of memlab that holds a user's rows (a test checks that each table with a user_id column is here).
USER_TABLES = (
    "memory_unit",
    "memory_tombstone",
    "memory_unit_count",
    "memory_unit_terms",
    "memory_unit_postings",  # no user_id column, but the lexemes of the user's texts
    "semantic_fact",
    "semantic_fact_observation",
    "fact_watermark",
    "memlab_query_log",
)
SEGMENT = re.compile(r"[0-9A-F]{24}")  # a WAL segment file's name (timeline, log, segment)
RELOAD_PAUSE = 0.5  # seconds for the checkpointer to read wal_recycle=off before the first purge checkpoint


def check_level(vacuum: object) -> None:
    """Refuse an unknown level before anything is deleted."""
    if isinstance(vacuum, bool) or vacuum in ("full", "wal"):
        return
    raise ConfigError(
        f"vacuum must be False, True, 'full' or 'wal', got {vacuum!r}. False only deletes rows; True VACUUMs; "
        "'full' rewrites the tables so no deleted byte stays in their files; 'wal' also purges the WAL."
    )


def _autocommit(conn: psycopg.Connection) -> None:
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE or not conn.autocommit:
        raise ValueError("VACUUM must run on an autocommit connection outside a transaction")


def existing_tables(conn: psycopg.Connection, names: tuple[str, ...] = USER_TABLES) -> tuple[str, ...]:
    """The tables of `names` that exist in the current schema (fact tables exist once a FactMemory was opened)."""
    rows = conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename = ANY(%s)", [list(names)]
    ).fetchall()
    found = {r[0] for r in rows}
    return tuple(n for n in names if n in found)


def _is_superuser(conn: psycopg.Connection) -> bool:
    return conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]


def _may_rewrite_statistics(conn: psycopg.Connection) -> bool:
    """VACUUM FULL of pg_statistic needs the MAINTAIN privilege on it (PostgreSQL 17+), else a superuser."""
    if conn.info.server_version >= 170000:
        return conn.execute("SELECT has_table_privilege('pg_catalog.pg_statistic', 'MAINTAIN')").fetchone()[0]
    return _is_superuser(conn)


def clear_stale_statistics(conn: psycopg.Connection, tables: tuple[str, ...]) -> tuple[str, ...]:
    """Clear the column statistics of each empty table: ANALYZE leaves an empty table's old sample in place,
    and `pg_stats` would go on showing the erased values. Returns the tables cleared."""
    cleared = []
    has_clear = conn.execute("SELECT to_regprocedure('pg_clear_attribute_stats(text,text,text,boolean)')").fetchone()
    for table in tables:
        if conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(sql.Identifier(table))).fetchone()[0]:
            continue
        if has_clear[0] is not None:  # PostgreSQL 18+: the table's owner may clear its statistics
            conn.execute(
                "SELECT pg_clear_attribute_stats(current_schema(), %s, s.attname, s.inherited) FROM pg_stats s "
                "WHERE s.schemaname = current_schema() AND s.tablename = %s",
                [table, table],
            )
        elif _is_superuser(conn):
            conn.execute("DELETE FROM pg_statistic WHERE starelid = %s::regclass", [table])
        else:
            log.warning("statistics of the empty table %s may still sample erased values: clearing them needs "
                        "PostgreSQL 18 or a superuser", table)  # fmt: skip
            continue
        cleared.append(table)
    return tuple(cleared)


def vacuum_tables(conn: psycopg.Connection, level: bool | str) -> tuple[str, ...]:
    """Run the table part of an erasure level (see the module docstring) on an autocommit connection; returns
    what was vacuumed (tables, and `pg_statistic` when it was rewritten)."""
    check_level(level)
    if not level:
        return ()
    _autocommit(conn)
    tables = existing_tables(conn)
    full = level in ("full", "wal")
    options = sql.SQL("FULL, ANALYZE" if full else "ANALYZE")
    conn.execute(sql.SQL("VACUUM ({}) {}").format(options, sql.SQL(", ").join(map(sql.Identifier, tables))))
    clear_stale_statistics(conn, tables)
    if not full:
        return tables
    if not _may_rewrite_statistics(conn):
        log.warning("pg_statistic not rewritten (needs a superuser or pg_maintain): its dead rows may still hold "
                    "sampled values of the erased rows")  # fmt: skip
        return tables
    conn.execute("VACUUM FULL pg_catalog.pg_statistic")  # the old samples were replaced or cleared above
    return (*tables, "pg_statistic")


@dataclass(frozen=True)
class WalPurge:
    """What `purge_wal` did: the segment files present before, the rounds (switch + checkpoint) it took, and
    the segments of before still present (empty when the purge is complete)."""

    segments_before: int
    rounds: int
    left: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return not self.left


def _segments(conn: psycopg.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM pg_ls_waldir()").fetchall() if SEGMENT.fullmatch(r[0])}


def _holders(conn: psycopg.Connection) -> list[str]:
    """What keeps old WAL segments alive whatever a checkpoint does (the purge cannot complete while one does)."""
    out = []
    if conn.execute("SHOW archive_mode").fetchone()[0] != "off":
        out.append("archive_mode is on: segments wait for (and are kept in) the archive")
    if conn.execute("SELECT pg_size_bytes(current_setting('wal_keep_size')) > 0").fetchone()[0]:
        out.append("wal_keep_size > 0 keeps that much old WAL")
    if conn.execute("SELECT count(*) FROM pg_replication_slots").fetchone()[0]:
        out.append("a replication slot holds old WAL")
    return out


def purge_wal(store: Store, *, max_rounds: int | None = None) -> WalPurge:
    """Remove every WAL segment file that existed when the call began, so bytes an erasure deleted (a row's
    insert, the full-page images its DELETE and VACUUM logged) leave `pg_wal` too.

    A checkpoint removes or *recycles* the segments before its redo point; a recycled segment is renamed to a
    future name with its old bytes intact, and a switch into it overwrites only its first pages. So the purge
    turns `wal_recycle` off (ALTER SYSTEM, restored afterwards), then repeats `pg_switch_wal()` + CHECKPOINT
    until none of the segments present at the start is left (the pre-recycled future ones are each used and
    then removed; new segments are created zero-filled). Needs a superuser; each round costs a checkpoint.
    Raises ConfigError when archiving, `wal_keep_size` or a replication slot holds the old segments."""
    with store.connection() as conn:
        _autocommit(conn)
        if not _is_superuser(conn):
            raise ConfigError("purge_wal needs a superuser connection (ALTER SYSTEM, pg_switch_wal, CHECKPOINT); "
                              "the erased rows are deleted, only the WAL purge was not done.")  # fmt: skip
        held = _holders(conn)
        if held:
            raise ConfigError("purge_wal cannot remove old WAL segments: " + "; ".join(held) + ". Turn that off "
                              "(or purge the archive yourself); the erased rows are deleted either way.")  # fmt: skip
        before = _segments(conn)
        saved = conn.execute("SELECT setting FROM pg_file_settings WHERE name = 'wal_recycle' AND applied "
                             "AND sourcefile LIKE '%postgresql.auto.conf'").fetchone()  # fmt: skip
        conn.execute("ALTER SYSTEM SET wal_recycle = off")
        conn.execute("SELECT pg_reload_conf()")
        time.sleep(RELOAD_PAUSE)  # the checkpointer reads the new setting at its next wake-up
        rounds, left = 0, set(before)
        try:
            while left and rounds < (max_rounds or len(before) + 4):
                rounds += 1
                conn.execute("CHECKPOINT")  # something to switch away from, even on an idle server
                conn.execute("SELECT pg_switch_wal()")
                conn.execute("CHECKPOINT")  # removes the segments before its redo point (none is recycled)
                left = before & _segments(conn)
        finally:
            if saved is None:
                conn.execute("ALTER SYSTEM RESET wal_recycle")
            else:
                conn.execute(sql.SQL("ALTER SYSTEM SET wal_recycle = {}").format(sql.Literal(saved[0])))
            conn.execute("SELECT pg_reload_conf()")
    return WalPurge(segments_before=len(before), rounds=rounds, left=tuple(sorted(left)))


def after_erasure(store: Store, level: bool | str) -> tuple[str, ...]:
    """The vacuum step of a forget path, after its delete committed: the tables (and `pg_wal` when purged)."""
    check_level(level)
    if not level:
        return ()
    with store.connection() as conn:  # autocommit: VACUUM cannot run inside a transaction
        done = vacuum_tables(conn, level)
    if level != "wal":
        return done
    purge = purge_wal(store)
    if not purge.complete:
        raise ConfigError(
            f"purge_wal left {len(purge.left)} old WAL segment(s) after {purge.rounds} rounds; "
            "run store checkpoints again or check what holds old WAL (replication, archiving)."
        )
    return (*done, "pg_wal")
