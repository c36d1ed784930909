"""The memory-unit table's DDL, its HNSW, per-tenant and full-text indexes and how their builds are sized.
SQL naming the table lives in the four `storage/unit*.py` modules only (a test checks).

Every read filters by app_name and user_id in SQL (and by model and layer): no row of another user can
reach Python. Functions take a connection so the caller decides the transaction.

Design notes:
- `embedding` is an untyped `vector`, so several embedding models (even of different dimensions) live side
  by side during a migration. Each (model, layer) pair gets its own *partial expression* HNSW index,
  `(embedding::vector(dim)) WHERE embed_model = '<model>' AND layer = '<layer>'`. One index per layer keeps
  each graph dense in rows a search can use: in a shared index, a user's chunks sit among everyone's
  events and an iterative scan runs out of its budget before reaching them.
- Every unique key starts with (app_name, user_id): the table can be distributed by user (Citus) or
  hash-partitioned on user_id without changing a key.
- A unit is identified by (app, user, layer, session, unit id, model): ADK event ids are unique within a
  session, not across a user's sessions, so the session is part of the key and two sessions may each hold an
  event `e1`. The unit id of an event unit stays the event id (what hits, ADK memory ids and labels show).
- No statement mixes `sql.Literal` with placeholders (a test checks): a literal that happened to contain
  `%(q)s` would be taken for a placeholder. Statements either bind every value (the default) or inline
  every value and run with no parameters at all (DDL, and searches with `literal=True`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from psycopg import sql

from memlab.errors import ConfigError
from memlab.storage.schema import PRIMARY_KEY, SCOPE_INDEX, UNITS_TABLE, ModelInfo

LEXICAL_INDEX = "memory_unit_terms_lexemes"  # the GIN index of full-text search (on unit_lexical.TERMS_TABLE)
TEXT_SEARCH_CONFIG = "english"  # stemming and stop words for full-text search over rendered text

# Python reads timestamps of years 1..9999 (UTC) only; EventMemory refuses others on the way in, and a row
# stored before it did is clamped when read, so one such row cannot make every search of its user fail.
READABLE_TIME = "LEAST(GREATEST(occurred_at, '0001-01-01 00:00:00+00'), '9999-12-31 23:59:59.999999+00')"

BUILD_MEMORY = "1GB"  # maintenance_work_mem for an HNSW build: a graph that fits builds many times faster

# Model/layer HNSW builds size maintenance_work_mem from the rows they index (see `build_settings`).
BUILD_MEMORY_ENV = "MEMLAB_BUILD_MEMORY"  # a fixed maintenance_work_mem for every such build, e.g. "2GB"
BUILD_MEMORY_MAX_ENV = "MEMLAB_BUILD_MEMORY_MAX"  # the ceiling of the sized value (default 4GB, <= 1/4 of RAM)
BUILD_WORKERS_ENV = "MEMLAB_BUILD_WORKERS"  # max_parallel_maintenance_workers (default: cores - 1, at most 7)
MIN_BUILD_MB = 64  # PostgreSQL's default; a parallel build also needs 32 MB per process
MAX_BUILD_MB = 4096
GRAPH_HEADROOM = 1.3  # the estimate below is a floor: allocator overhead and level spread come on top

# Needs memlab_embedding_model (schema.MODELS_DDL) to exist first.
UNITS_DDL = f"""
CREATE TABLE IF NOT EXISTS {UNITS_TABLE} (
    app_name     text        NOT NULL,
    user_id      text        NOT NULL,
    session_id   text        NOT NULL,
    layer        text        NOT NULL,
    unit_id      text        NOT NULL,
    event_ids    text[]      NOT NULL,
    author       text,
    occurred_at  timestamptz NOT NULL,
    body         text        NOT NULL,
    rendered     text,
    embed_model  text        NOT NULL REFERENCES memlab_embedding_model (model_id),
    embedding    vector      NOT NULL,
    CONSTRAINT {PRIMARY_KEY} PRIMARY KEY (app_name, user_id, layer, session_id, unit_id, embed_model)
);
ALTER TABLE {UNITS_TABLE} ALTER COLUMN embedding SET STORAGE PLAIN;
CREATE INDEX IF NOT EXISTS {SCOPE_INDEX} ON {UNITS_TABLE} (app_name, user_id, occurred_at DESC);
-- The text embedded when it differs from the body (a rendering), and full-text search over that same text.
ALTER TABLE {UNITS_TABLE} ADD COLUMN IF NOT EXISTS rendered text;
-- Their lexemes feed the side table full-text search reads (unit_lexical.TERMS_TABLE, with its GIN index).
ALTER TABLE {UNITS_TABLE} ADD COLUMN IF NOT EXISTS lexemes tsvector
    GENERATED ALWAYS AS (to_tsvector('{TEXT_SEARCH_CONFIG}', coalesce(rendered, body))) STORED;
DO $$
BEGIN
    -- A table made before the session was part of a unit's identity: rebuild its key once.
    IF NOT EXISTS (
        SELECT 1 FROM pg_constraint c
         WHERE c.conrelid = '{UNITS_TABLE}'::regclass AND c.conname = '{PRIMARY_KEY}'
           AND (SELECT a.attnum FROM pg_attribute a
                 WHERE a.attrelid = c.conrelid AND a.attname = 'session_id') = ANY (c.conkey)
    ) THEN
        ALTER TABLE {UNITS_TABLE} DROP CONSTRAINT IF EXISTS {PRIMARY_KEY},
            ADD CONSTRAINT {PRIMARY_KEY} PRIMARY KEY (app_name, user_id, layer, session_id, unit_id, embed_model);
    END IF;
END $$;
"""

_COLUMNS = (
    "app_name",
    "user_id",
    "session_id",
    "layer",
    "unit_id",
    "event_ids",
    "author",
    "occurred_at",
    "body",
    "rendered",
    "embed_model",
    "embedding",
)
_COPY_TYPES = [
    "text", "text", "text", "text", "text", "text[]", "text", "timestamptz", "text", "text", "text", "vector",
]  # fmt: skip


@dataclass(frozen=True)
class Scope:
    """Whose memory, in which layer, embedded by which model: the filter of every read and write."""

    app_name: str
    user_id: str
    layer: str
    model: ModelInfo

    @property
    def index_name(self) -> str:
        """The HNSW index that serves this scope's model and layer."""
        return index_name_for(self.model.model_id, self.layer)


# -- the table and its indexes ----------------------------------------------------------------------------


def create_table(conn: psycopg.Connection) -> None:
    """Create the unit table and its scope index if missing (idempotent)."""
    conn.execute(UNITS_DDL)


def index_name_for(model_id: str, layer: str) -> str:
    """A stable, SQL-safe index name for any model id and layer (ids may hold '/', '@', spaces)."""
    return f"memory_unit_hnsw_{hashlib.sha1(f'{model_id}|{layer}'.encode()).hexdigest()[:12]}"


def hnsw_index_ddl(model: ModelInfo, layer: str, *, m: int = 16, ef_construction: int = 64) -> sql.Composed:
    """The partial expression HNSW index (cosine) that serves searches of one model and layer."""
    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw ((embedding::{vtype}) vector_cosine_ops) "
        "WITH (m = {m}, ef_construction = {efc}) WHERE embed_model = {model} AND layer = {layer}"
    ).format(
        name=sql.Identifier(index_name_for(model.model_id, layer)),
        layer=sql.Literal(layer),
        table=sql.Identifier(UNITS_TABLE),
        vtype=model.vector_type(),
        m=sql.Literal(m),
        efc=sql.Literal(ef_construction),
        model=sql.Literal(model.model_id),
    )


def _build_memory(conn: psycopg.Connection) -> None:
    """Raise maintenance_work_mem for the rest of the caller's transaction (no effect outside one)."""
    conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", [BUILD_MEMORY])


_MEMORY = re.compile(r"^\s*(\d+)\s*(kB|MB|GB|TB)?\s*$")
_MB_PER_UNIT = {"kB": 1 / 1024, "MB": 1, "GB": 1024, "TB": 1024 * 1024, None: 1 / 1024}  # bare = kB, as in PG


def memory_mb(text: str, *, source: str) -> int:
    """'2GB' -> 2048: a PostgreSQL memory setting in MB (units kB, MB, GB, TB; a bare number is kB)."""
    match = _MEMORY.match(str(text))
    if not match:
        raise ConfigError(f"{source}={text!r} is not a memory size: give e.g. 512MB or 2GB.")
    return max(1, math.ceil(int(match.group(1)) * _MB_PER_UNIT[match.group(2)]))


def hnsw_graph_bytes(rows: int, dimension: int, m: int = 16) -> int:
    """pgvector's in-memory graph during a build, estimated per row: the vector (8 + 4 x dimension bytes),
    its neighbour lists (2m candidates of 16 bytes on the ground layer, about m/(m-1) more above it) and
    about 200 bytes of element header, heap ids, lock and pointers."""
    per_row = 8 + 4 * dimension + 16 * (2 * m + m / max(m - 1, 1)) + 200
    return math.ceil(rows * per_row)


def _machine_memory_mb() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20
    except (AttributeError, ValueError, OSError):
        return None


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container narrows; else every core)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@dataclass(frozen=True)
class BuildSettings:
    """What one HNSW build runs with (SET LOCAL in its transaction) and why."""

    rows: int
    graph_bytes: int
    maintenance_work_mem: str
    max_parallel_maintenance_workers: int


def build_settings(
    rows: int, dimension: int, m: int = 16, *, maintenance_work_mem: str | None = None, workers: int | None = None
) -> BuildSettings:
    """The settings of an HNSW build over `rows` rows: an explicit argument, else the environment
    (MEMLAB_BUILD_MEMORY, MEMLAB_BUILD_WORKERS), else sized here.

    pgvector builds many times faster while the graph fits in maintenance_work_mem (it warns and goes on
    disk when it stops fitting), but a parallel build reserves all of maintenance_work_mem as shared memory
    up front: so the graph estimate x 1.3, at least 64 MB, at most MEMLAB_BUILD_MEMORY_MAX (default 4GB and
    never above a quarter of this machine's RAM). Workers: one per core besides the leader (1 on 2 cores;
    more processes than cores only contend), at most 7. The core and RAM counts are this machine's: right
    for the embedded server; for another server set the environment variables."""
    graph = hnsw_graph_bytes(rows, dimension, m)
    memory = maintenance_work_mem or os.environ.get(BUILD_MEMORY_ENV, "").strip()
    if memory:
        memory_mb(memory, source=BUILD_MEMORY_ENV if maintenance_work_mem is None else "maintenance_work_mem")
    else:
        raw_cap = os.environ.get(BUILD_MEMORY_MAX_ENV, "").strip()
        if raw_cap:
            cap = memory_mb(raw_cap, source=BUILD_MEMORY_MAX_ENV)
        else:
            ram = _machine_memory_mb()
            cap = min(MAX_BUILD_MB, ram // 4) if ram else MAX_BUILD_MB
        memory = f"{max(MIN_BUILD_MB, min(cap, math.ceil(graph * GRAPH_HEADROOM / 2**20)))}MB"
    if workers is None:
        raw = os.environ.get(BUILD_WORKERS_ENV, "").strip()
        if raw:
            try:
                workers = int(raw)
            except ValueError:
                workers = -1
            if workers < 0:
                raise ConfigError(f"{BUILD_WORKERS_ENV}={raw!r} is not a worker count: give 0 or more.")
        else:
            workers = max(0, min(7, usable_cores() - 1))
    if workers < 0:
        raise ConfigError(f"workers={workers!r}: give 0 (no parallel build) or more.")
    return BuildSettings(
        rows=rows, graph_bytes=graph, maintenance_work_mem=memory, max_parallel_maintenance_workers=int(workers)
    )


def count_layer(conn: psycopg.Connection, model_id: str, layer: str) -> int:
    """Rows of one model and layer over every app and user: what its HNSW index holds."""
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {} WHERE embed_model = %s AND layer = %s").format(sql.Identifier(UNITS_TABLE)),
        [model_id, layer],
    ).fetchone()
    return int(row[0])


def _one_builder(conn: psycopg.Connection, name: str) -> None:
    """Hold off every other builder of index `name` until the caller's transaction ends. Two builders of the same
    missing index (two first loads into a new layer, two processes opening it, two `maintain` calls) would both
    pass CREATE INDEX IF NOT EXISTS and the second fail on the catalog's unique name; the second now waits for the
    first to commit and finds the index there."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"hnsw-index\x1f{name}"])


def _apply_build_settings(conn: psycopg.Connection, settings: BuildSettings) -> None:
    """SET LOCAL the build's memory and workers: they end with the caller's transaction (no effect outside one)."""
    conn.execute(
        "SELECT set_config('maintenance_work_mem', %s, true), set_config('max_parallel_maintenance_workers', %s, true)",
        [settings.maintenance_work_mem, str(settings.max_parallel_maintenance_workers)],
    )


def create_vector_index(
    conn: psycopg.Connection,
    model: ModelInfo,
    layer: str,
    *,
    m: int = 16,
    ef_construction: int = 64,
    maintenance_work_mem: str | None = None,
    workers: int | None = None,
) -> BuildSettings | None:
    """Build the HNSW index of a model and layer if it is missing, with `build_settings` sized from the rows
    it will hold; returns those settings, or None if the index was already there (nothing built, no count)."""
    _one_builder(conn, index_name_for(model.model_id, layer))
    if index_exists(conn, index_name_for(model.model_id, layer)):
        return None
    settings = build_settings(
        count_layer(conn, model.model_id, layer),
        model.dimension,
        m,
        maintenance_work_mem=maintenance_work_mem,
        workers=workers,
    )
    _apply_build_settings(conn, settings)
    conn.execute(hnsw_index_ddl(model, layer, m=m, ef_construction=ef_construction))
    return settings


def tenant_index_name(model_id: str, layer: str, app_name: str, user_id: str) -> str:
    """A deterministic, SQL-safe name for one tenant's partial index: a SHA-1 of the unambiguous JSON of
    (model, layer, app, user), the same in every process (unlike Python's salted hash())."""
    key = json.dumps([model_id, layer, app_name, user_id], ensure_ascii=False)
    return f"memlab_tenant_{hashlib.sha1(key.encode()).hexdigest()[:16]}"


def create_tenant_index(
    conn: psycopg.Connection,
    model: ModelInfo,
    layer: str,
    app_name: str,
    user_id: str,
    *,
    m: int = 16,
    ef_construction: int = 64,
) -> str:
    """A partial HNSW index over one tenant's rows of a model and layer (the graph is dense in rows the filter
    keeps), if missing, then ANALYZE so the planner sees it. Only searches with the app and user inlined as
    literals can use it (`run_search(..., literal=True)`). Returns the index name."""
    name = tenant_index_name(model.model_id, layer, app_name, user_id)
    _one_builder(conn, name)
    _build_memory(conn)
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw ((embedding::{vtype}) vector_cosine_ops) "
            "WITH (m = {m}, ef_construction = {efc}) "
            "WHERE embed_model = {model} AND layer = {layer} AND app_name = {app} AND user_id = {user}"
        ).format(
            name=sql.Identifier(name),
            table=sql.Identifier(UNITS_TABLE),
            vtype=model.vector_type(),
            m=sql.Literal(m),
            efc=sql.Literal(ef_construction),
            model=sql.Literal(model.model_id),
            layer=sql.Literal(layer),
            app=sql.Literal(app_name),
            user=sql.Literal(user_id),
        )
    )
    analyze(conn)
    return name


def drop_index(conn: psycopg.Connection, name: str) -> None:
    conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))


def index_exists(conn: psycopg.Connection, name: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [name]).fetchone()
    return bool(row and row[0])


def analyze(conn: psycopg.Connection) -> None:
    """Refresh the table's planner statistics (the `planner` strategy and partial indexes depend on them)."""
    conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(UNITS_TABLE)))


def vacuum_analyze(conn: psycopg.Connection) -> None:
    """VACUUM (ANALYZE) the table after a bulk load (autocommit connection): statistics as `analyze`, and the
    fresh rows marked all-visible now, unthrottled. Otherwise autovacuum does it later, throttled, and after a
    load whose HNSW build held off autovacuum (the build's lock conflicts with it) that is right when the first
    searches run: seconds for a 1M-row table here, against minutes of throttled background work."""
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE or not conn.autocommit:
        raise ValueError("VACUUM must run on an autocommit connection outside a transaction")
    conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(UNITS_TABLE)))




# -- the catalog's view of the table (read-only: the live probe's index health and a read-only store's check) --


def missing_tables(conn: psycopg.Connection, others: Sequence[str] = ()) -> list[str]:
    """Which of the unit table and `others` the database lacks (a read-only store creates none of them)."""
    names = (UNITS_TABLE, *others)
    return [t for t in names if conn.execute("SELECT to_regclass(%s)", [t]).fetchone()[0] is None]


def hnsw_indexes(conn: psycopg.Connection) -> list[tuple[str, int, bool, int]]:
    """(name, bytes, valid, scans) of every HNSW index on the unit table."""
    return conn.execute(
        "SELECT c.relname, pg_relation_size(c.oid), i.indisvalid, coalesce(s.idx_scan, 0) FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
        "LEFT JOIN pg_stat_user_indexes s ON s.indexrelid = i.indexrelid "
        "WHERE i.indrelid = to_regclass(%s) AND a.amname = 'hnsw' ORDER BY c.relname",
        [UNITS_TABLE],
    ).fetchall()


def planned_rows(conn: psycopg.Connection) -> int:
    """The planner's estimate of the table's rows (what `auto` reads for its walk rule)."""
    row = conn.execute("SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = to_regclass(%s)",
                       [UNITS_TABLE]).fetchone()  # fmt: skip
    return int(row[0] or 0) if row else 0


def table_bytes(conn: psycopg.Connection) -> int:
    """The table's size on disk: heap and TOAST, without its indexes."""
    return int(conn.execute("SELECT pg_table_size(to_regclass(%s))", [UNITS_TABLE]).fetchone()[0] or 0)
