"""Every SQL statement on the memory-unit table: its DDL and indexes, staged binary COPY writes, scoped
search, EXPLAIN, deletes, migration reads. No other module writes SQL that names the table (a test checks).

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import psycopg
from psycopg import sql

from memlab.errors import ConfigError
from memlab.storage.schema import ANY_SESSION, PRIMARY_KEY, SCOPE_INDEX, UNITS_TABLE, ModelInfo
from memlab.types import Hit, SearchSettings

LEXICAL_INDEX = "memory_unit_lexemes"
TEXT_SEARCH_CONFIG = "english"  # stemming and stop words for full-text search over rendered text

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
ALTER TABLE {UNITS_TABLE} ADD COLUMN IF NOT EXISTS lexemes tsvector
    GENERATED ALWAYS AS (to_tsvector('{TEXT_SEARCH_CONFIG}', coalesce(rendered, body))) STORED;
CREATE INDEX IF NOT EXISTS {LEXICAL_INDEX} ON {UNITS_TABLE} USING gin (lexemes);
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


def _cores() -> int:
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
            workers = max(0, min(7, _cores() - 1))
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


# -- writes -------------------------------------------------------------------------------------------------




def lock_keys(conn: psycopg.Connection, keys: Iterable[Sequence[str]]) -> None:
    """Serialise writers of the same keys (e.g. sessions) until the transaction ends: one round trip, the locks
    taken in sorted order (two writers never deadlock)."""
    joined = sorted({"\x1f".join(parts) for parts in keys})
    if joined:
        conn.execute(
            "SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS t(k, n)",
            [joined],
        )


SessionKey = tuple[str, str, str]  # (app_name, user_id, session_id)


def _unnest_keys(wanted: Mapping[SessionKey, Iterable[str]]) -> list[list[str]]:
    """Four parallel arrays (apps, users, sessions, ids) of every (session key, id) pair in `wanted`."""
    columns: list[list[str]] = [[], [], [], []]
    for (app, user, session), ids in wanted.items():
        for item in dict.fromkeys(ids):
            for column, value in zip(columns, (app, user, session, item), strict=True):
                column.append(value)
    return columns


def existing_units_of(
    conn: psycopg.Connection, layer: str, model_id: str, wanted: Mapping[SessionKey, Iterable[str]]
) -> dict[SessionKey, dict[str, tuple[str, ...]]]:
    """Stored units of many sessions (of any users) in one round trip: session key -> unit_id -> stored event
    ids. Every row is matched on its own app, user and session, so no user sees another's units. Each key is one
    primary-key probe (the LIMIT keeps the planner from turning the probes into a join, which with stale
    statistics it ran as a nested loop over the whole layer: 0.3 s instead of 5 ms for 1,800 keys)."""
    columns = _unnest_keys(wanted)
    if not columns[0]:
        return {}
    rows = conn.execute(
        sql.SQL(
            "SELECT k.app_name, k.user_id, k.session_id, k.unit_id, u.event_ids "
            "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) AS k(app_name, user_id, session_id, unit_id) "
            "CROSS JOIN LATERAL (SELECT event_ids FROM {} WHERE app_name = k.app_name AND user_id = k.user_id "
            "AND layer = %s AND session_id = k.session_id AND unit_id = k.unit_id AND embed_model = %s LIMIT 1) u"
        ).format(sql.Identifier(UNITS_TABLE)),
        [*columns, layer, model_id],
    ).fetchall()
    out: dict[SessionKey, dict[str, tuple[str, ...]]] = {}
    for app, user, session, unit_id, event_ids in rows:
        out.setdefault((app, user, session), {})[unit_id] = tuple(event_ids)
    return out




def delete_units(conn: psycopg.Connection, scope: Scope, session_id: str, unit_ids: Sequence[str]) -> Deleted:
    """Delete units of one session in this scope (a chunk being replaced)."""
    rows = conn.execute(
        sql.SQL(
            "DELETE FROM {} WHERE app_name = %s AND user_id = %s AND layer = %s AND session_id = %s "
            "AND embed_model = %s AND unit_id = ANY(%s) RETURNING embed_model, " + _BODY_KEY
        ).format(sql.Identifier(UNITS_TABLE)),
        [scope.app_name, scope.user_id, scope.layer, session_id, scope.model.model_id, list(unit_ids)],
    ).fetchall()
    return Deleted(units=len(rows), text_keys={(m, k) for m, k in rows})


def copy_rows(conn: psycopg.Connection, rows: Sequence[tuple]) -> int:
    """Write rows (in `_COLUMNS` order) with binary COPY into a staging table, then insert the new ones.

    COPY cannot skip duplicates, so it fills a temporary table and one INSERT ... ON CONFLICT DO NOTHING
    moves the rows; the return value counts rows really added.
    """
    if not rows:
        return 0
    cols = sql.SQL(", ").join(map(sql.Identifier, _COLUMNS))
    conn.execute(
        sql.SQL(
            "CREATE TEMP TABLE IF NOT EXISTS memlab_stage (LIKE {} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
        ).format(sql.Identifier(UNITS_TABLE))
    )
    with conn.cursor() as cur:
        with cur.copy(sql.SQL("COPY memlab_stage ({}) FROM STDIN WITH (FORMAT BINARY)").format(cols)) as copy:
            copy.set_types(_COPY_TYPES)
            for row in rows:
                copy.write_row(row)
        added = cur.execute(
            sql.SQL("INSERT INTO {} ({}) SELECT {} FROM memlab_stage ON CONFLICT DO NOTHING").format(
                sql.Identifier(UNITS_TABLE), cols, cols
            )
        ).rowcount
        cur.execute("TRUNCATE memlab_stage")
    return added


def insert_rows(conn: psycopg.Connection, rows: Sequence[tuple]) -> int:
    """`copy_rows`' rows written with one INSERT ... ON CONFLICT DO NOTHING per row (`executemany`): the
    slow path COPY replaces, kept so benchmarks can show by how much. Returns rows added."""
    if not rows:
        return 0
    cols = sql.SQL(", ").join(map(sql.Identifier, _COLUMNS))
    marks = sql.SQL(", ").join(sql.Placeholder() * len(_COLUMNS))
    with conn.cursor() as cur:
        cur.executemany(
            sql.SQL("INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING").format(
                sql.Identifier(UNITS_TABLE), cols, marks
            ),
            rows,
        )
        return cur.rowcount


def unit_row(scope: Scope, unit, vector: np.ndarray) -> tuple:
    """One row for `copy_rows` from a `Unit` and its vector."""
    return (
        scope.app_name,
        scope.user_id,
        unit.session_id,
        scope.layer,
        unit.unit_id,
        list(unit.event_ids),
        unit.author,
        unit.occurred_at,
        unit.body,
        getattr(unit, "rendered", None),
        scope.model.model_id,
        vector,
    )


# -- search ---------------------------------------------------------------------------------------------


# Python reads timestamps of years 1..9999 (UTC) only; EventMemory refuses others on the way in, and a row
# stored before it did is clamped here, so one such row cannot make every search of its user fail.
_READABLE_TIME = "LEAST(GREATEST(occurred_at, '0001-01-01 00:00:00+00'), '9999-12-31 23:59:59.999999+00')"
_SEARCH = (
    "WITH ranked AS MATERIALIZED ("
    " SELECT unit_id, body, author, " + _READABLE_TIME + " AS occurred_at, session_id, event_ids, {dist} AS distance"
    " FROM {table}"
    " WHERE app_name = {app} AND user_id = {user} AND embed_model = {model} AND layer = {layer}"
    " ORDER BY {order} LIMIT {k})"
    " SELECT unit_id, body, author, occurred_at, session_id, event_ids, distance"
    " FROM ranked ORDER BY distance + 0"
)


def _search_statement(model: ModelInfo, strategy: str, values: dict[str, sql.Composable]) -> sql.Composed:
    """The k-NN statement with `values` (app, user, model, layer, q, k) composed in: all placeholders or all
    literals, never a mix."""
    dist = sql.SQL("(embedding::{vt} <=> {q}::{vt})").format(vt=model.vector_type(), q=values["q"])
    order = sql.SQL("{} + 0").format(dist) if strategy == "exact" else dist
    others = {name: v for name, v in values.items() if name != "q"}
    return sql.SQL(_SEARCH).format(dist=dist, order=order, table=sql.Identifier(UNITS_TABLE), **others)


def vector_text(vector: np.ndarray) -> str:
    """pgvector's text form of a vector, exact for float32 values (Python's float repr round-trips)."""
    values = np.asarray(vector, dtype=np.float32).reshape(-1)
    if not np.isfinite(values).all():
        raise ValueError("a query vector with NaN or infinite values cannot be searched")
    return "[" + ",".join(repr(float(x)) for x in values) + "]"


def _literal_values(scope: Scope, vector: np.ndarray, top_k: int) -> dict[str, sql.Composable]:
    """Every value of a search inlined as a literal, for a statement run with no parameters at all."""
    return {
        "app": sql.Literal(scope.app_name),
        "user": sql.Literal(scope.user_id),
        "model": sql.Literal(scope.model.model_id),
        "layer": sql.Literal(scope.layer),
        "q": sql.Literal(vector_text(vector)),
        "k": sql.Literal(int(top_k)),
    }


_PLACEHOLDERS = {name: sql.Placeholder(name) for name in ("app", "user", "model", "layer", "q", "k")}


def search_sql(
    model: ModelInfo,
    layer: str,
    strategy: str,
    *,
    literal_scope: Scope | None = None,
    vector: np.ndarray | None = None,
    top_k: int | None = None,
) -> sql.Composed:
    """The scoped k-NN query. `exact` orders by an expression no index can serve, so every row of the user
    is scored; `hnsw`/`planner` order by the indexed expression. The outer ORDER BY re-sorts results that
    a relaxed iterative scan returned slightly out of order (a MATERIALIZED CTE keeps PostgreSQL from
    folding it away).

    By default every value is a placeholder (run it with `search_params`). With `literal_scope` (and then
    `vector` and `top_k`) every value is inlined as a literal and the statement must run with no parameters:
    the planner sees constant app and user and can match a per-tenant partial index even under a generic
    plan, and no inlined value can ever be read as a placeholder."""
    if literal_scope is None:
        if vector is not None or top_k is not None:
            raise ValueError("search_sql: vector and top_k are inlined only with literal_scope")
        return _search_statement(model, strategy, _PLACEHOLDERS)
    if vector is None or top_k is None:
        raise ValueError("search_sql: a literal search inlines every value; pass vector and top_k too")
    if literal_scope.model != model or literal_scope.layer != layer:
        raise ValueError("search_sql: literal_scope names another model or layer than the query")
    return _search_statement(model, strategy, _literal_values(literal_scope, vector, top_k))


# Planner settings one strategy needs, set with the index knobs for its transaction only.
# - hnsw: with sorting priced out, the only way to produce rows in distance order is the HNSW index, even for a
#   tiny user where the planner would rather read the scope index and sort.
# - exact: the user's rows are read through the scope index. Left alone, the planner reads the whole table once a
#   user holds a tenth of it: in a 10,000-row table the 1,000-row user's exact search cost 8.3 ms at p95 against
#   3.4 ms for the same user in a 100,000-row table (memlab bench).
STRATEGY_PLANNER_SETTINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "hnsw": (("enable_sort", "off"),),
    "exact": (("enable_seqscan", "off"),),
}


def apply_settings(conn: psycopg.Connection, settings: SearchSettings) -> None:
    """SET LOCAL the index knobs (and the strategy's planner settings) for this transaction only, in one round
    trip (set_config(..., true) == SET LOCAL). Plans are always custom plans, so the planner sees the bound
    model, layer, app and user and can prove the partial-index predicates, whatever the server's
    plan_cache_mode."""
    knobs = [("hnsw.ef_search", str(settings.ef_search)), ("hnsw.iterative_scan", settings.iterative_scan),
             ("hnsw.max_scan_tuples", str(settings.max_scan_tuples)), ("plan_cache_mode", "force_custom_plan"),
             *STRATEGY_PLANNER_SETTINGS.get(settings.strategy, ())]  # fmt: skip
    conn.execute("SELECT " + ", ".join("set_config(%s, %s, true)" for _ in knobs), [v for kv in knobs for v in kv])


def search_params(scope: Scope, vector: np.ndarray, top_k: int) -> dict:
    return {
        "q": vector,
        "app": scope.app_name,
        "user": scope.user_id,
        "model": scope.model.model_id,
        "layer": scope.layer,
        "k": top_k,
    }


def _search_call(
    scope: Scope, vector: np.ndarray, settings: SearchSettings, literal: bool
) -> tuple[sql.Composed, dict | None]:
    """(statement, parameters) of a search: bound parameters, or every value inlined and no parameters."""
    model, layer, strategy, k = scope.model, scope.layer, settings.strategy, settings.top_k
    if literal:
        return search_sql(model, layer, strategy, literal_scope=scope, vector=vector, top_k=k), None
    return search_sql(model, layer, strategy), search_params(scope, vector, k)


def run_search(
    conn: psycopg.Connection, scope: Scope, vector: np.ndarray, settings: SearchSettings, *, literal: bool = False
) -> list[Hit]:
    """Run the search inside the caller's transaction (settings must already be applied). `literal` inlines
    every value (app, user, vector, ...) and runs with no parameters, so a per-tenant partial index can serve
    the query even under a generic plan."""
    query, params = _search_call(scope, vector, settings, literal)
    rows = conn.execute(query, params)
    return [
        Hit(
            unit_id=r[0],
            text=r[1],
            author=r[2],
            timestamp=r[3],
            session_id=r[4],
            event_ids=tuple(r[5]),
            distance=float(r[6]),
        )
        for r in rows.fetchall()
    ]


# Full-text search, ranked by BM25 over the rendered text's lexemes (PostgreSQL's ts_rank_cd has no inverse
# document frequency, so a common word ranks like a rare name). `terms` are the query's lexemes; a unit is a
# candidate when it holds any of them (`anyq`: conversational questions rarely share every word with the turn
# that answers them); units holding every word (`websearch_to_tsquery`) rank first, then by BM25 (k1 = 1.2,
# b = 0.75) with document frequencies and lengths taken over the user's own units of this layer and model.
# `coverage` is the share of the query's IDF mass a unit holds: a question about a name memory never heard of
# covers little, however near its vector lands (a feature of the answerability gate). A query word no unit
# holds weighs as a word one unit holds: "called" or "many" must not outweigh the name that was found.
# Every hit carries its cosine distance too, so `max_distance` means the same in every mode.
# Cost is linear in the user's hits whatever the planner's estimates: the user's N and mean document length come
# from the kept counts (COUNTS_TABLE, O(1): no pass over the user's units), one scan for the hits (materialized;
# each hit's lexemes are read once, into `marked`: the query's lexemes get weight A, so `ts_filter` keeps just
# them, with no unnest of whole texts), grouped once per unit; the k rows returned are fetched by their row address
# (ctid, of this statement's snapshot), not joined to the user's units. No join pairs two row sets that grow with
# the user: the ranked rows carry `every_word` themselves, and idf holds one row per query word.
# (The old form joined the hits back to their scores; on a user with stale statistics the planner estimated a
# handful of hits and chose a nested loop, hits x hits: 14 s at 8,000 units.)
_SCOPE = "app_name = %(app)s AND user_id = %(user)s AND embed_model = %(model)s AND layer = %(layer)s"
_M_SCOPE = "m.app_name = %(app)s AND m.user_id = %(user)s AND m.embed_model = %(model)s AND m.layer = %(layer)s"
_LEXICAL = (
    "WITH q AS (SELECT websearch_to_tsquery({cfg}, %(text)s) AS web,"
    " ARRAY(SELECT DISTINCT l FROM unnest(tsvector_to_array(to_tsvector({cfg}, %(text)s))) AS l"
    "  WHERE l !~ '[''\\\\]') AS terms),"
    " qq AS MATERIALIZED (SELECT web, terms, to_tsquery('simple', coalesce(array_to_string("
    "  ARRAY(SELECT quote_literal(t) FROM unnest(terms) AS t), ' | '), '')) AS anyq FROM q),"
    " stats AS MATERIALIZED (SELECT coalesce(sum(delta), 0)::float8 AS n,"
    "  coalesce(sum(doc_length) / nullif(sum(delta), 0), 1)::float8 AS avgdl FROM {counts} WHERE " + _SCOPE + "),"
    " hit AS MATERIALIZED (SELECT m.ctid AS row, m.session_id, m.unit_id, length(x.marked)::float8 AS dl,"
    "  (x.marked @@ qq.web AND numnode(qq.web) > 0) AS every_word, ts_filter(x.marked, '{{a}}') AS found"
    "  FROM {table} m CROSS JOIN qq"
    "  CROSS JOIN LATERAL (SELECT setweight(m.lexemes, 'A', qq.terms) AS marked OFFSET 0) AS x"
    "  WHERE " + _M_SCOPE + " AND m.lexemes @@ (SELECT anyq FROM qq)),"
    " tf AS MATERIALIZED (SELECT h.row, h.session_id, h.unit_id, h.every_word, h.dl, u.lexeme,"
    "  greatest(cardinality(u.positions), 1)::float8 AS tf FROM hit h, unnest(h.found) AS u),"
    " df AS (SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme),"
    " idf AS MATERIALIZED (SELECT t AS lexeme,"
    "  ln(1 + (s.n - coalesce(df.df, 1) + 0.5) / (coalesce(df.df, 1) + 0.5)) AS idf"
    "  FROM qq, unnest(qq.terms) AS t LEFT JOIN df ON df.lexeme = t, stats s),"
    " total AS MATERIALIZED (SELECT nullif(sum(idf), 0) AS idf FROM idf),"
    " bm25 AS (SELECT tf.row, tf.session_id, tf.unit_id, tf.every_word, sum(idf.idf"
    "  * tf.tf * 2.2 / (tf.tf + 1.2 * (0.25 + 0.75 * tf.dl / s.avgdl))) AS score,"
    "  sum(idf.idf) / max(total.idf) AS coverage"
    "  FROM tf JOIN idf USING (lexeme), stats s, total GROUP BY tf.row, tf.session_id, tf.unit_id, tf.every_word),"
    " ranked AS (SELECT row, session_id, unit_id, every_word, score, coverage FROM bm25"
    "  ORDER BY every_word DESC, score DESC, unit_id LIMIT %(k)s)"
    " SELECT m.unit_id, m.body, m.author, " + _READABLE_TIME.replace("occurred_at", "m.occurred_at")
    + " AS occurred_at, m.session_id, m.event_ids, (m.embedding::{vt} <=> %(q)s::{vt}) AS distance, r.score,"
    " r.coverage, r.every_word FROM ranked r CROSS JOIN LATERAL (SELECT * FROM {table} m WHERE " + _M_SCOPE
    + " AND m.ctid = r.row AND m.session_id = r.session_id AND m.unit_id = r.unit_id OFFSET 0) AS m"
    " ORDER BY r.every_word DESC, r.score DESC, m.unit_id"
)


def lexical_statement(
    conn: psycopg.Connection, scope: Scope, text: str, vector: np.ndarray, top_k: int, *, explain: bool = False
) -> tuple[sql.Composed, dict]:
    """The lexical search statement and its parameters; with `explain`, its EXPLAIN (ANALYZE, FORMAT JSON), so the
    plan checks count the rows of exactly what `lexical_search` runs."""
    conn.execute("SELECT set_config('client_min_messages', 'warning', true)")  # no NOTICE for stop-word queries
    query = sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) " + _LEXICAL if explain else _LEXICAL).format(
        cfg=sql.Literal(TEXT_SEARCH_CONFIG),
        vt=scope.model.vector_type(),
        table=sql.Identifier(UNITS_TABLE),
        counts=sql.Identifier(COUNTS_TABLE),
    )
    return query, {**search_params(scope, vector, top_k), "text": text}


def lexical_search(conn: psycopg.Connection, scope: Scope, text: str, vector: np.ndarray, top_k: int) -> list[Hit]:
    """The user's units ranked by full-text match of `text` (see `_LEXICAL`), at most `top_k`, each with its
    cosine distance to `vector`, its BM25 score in `Hit.lexical` and its share of the query's IDF mass in
    `Hit.coverage`."""
    rows = conn.execute(*lexical_statement(conn, scope, text, vector, top_k)).fetchall()
    return [
        Hit(unit_id=r[0], text=r[1], author=r[2], timestamp=r[3], session_id=r[4], event_ids=tuple(r[5]),
            distance=float(r[6]), lexical=float(r[7]), coverage=float(r[8]) if r[8] is not None else None)
        for r in rows
    ]  # fmt: skip


_INDEX_NAMES = {SCOPE_INDEX: "scope_index", PRIMARY_KEY: "primary_key"}


def plan_access_path(plan: dict, hnsw_index: str) -> str:
    """Name the access path of a JSON plan: 'hnsw' if the model's HNSW index is used anywhere, else the
    first of 'scope_index', 'primary_key', 'index:<name>' or 'seq_scan' found."""
    found: list[str] = []

    def walk(node: dict) -> None:
        index = node.get("Index Name")
        if index == hnsw_index:
            found.append("hnsw")
        elif index is not None:
            found.append(_INDEX_NAMES.get(index, f"index:{index}"))
        elif node.get("Node Type") == "Seq Scan" and node.get("Relation Name") == UNITS_TABLE:
            found.append("seq_scan")
        for child in node.get("Plans", []):
            walk(child)

    walk(plan.get("Plan", plan))
    return "hnsw" if "hnsw" in found else (found[0] if found else "unknown")


def explain_json(
    conn: psycopg.Connection, scope: Scope, vector: np.ndarray, settings: SearchSettings, *, literal: bool = False
) -> dict:
    """EXPLAIN (ANALYZE, FORMAT JSON) of the search: the top plan node and its children."""
    query, params = _search_call(scope, vector, settings, literal)
    out = conn.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + query, params)
    plan_json = out.fetchone()[0]
    return (plan_json[0] if isinstance(plan_json, list) else json.loads(plan_json)[0])["Plan"]


def rows_removed_by_filter(plan: dict) -> int:
    """Rows the scan read and the app/user filter threw away, over the whole plan."""
    return int(plan.get("Rows Removed by Filter", 0)) + sum(rows_removed_by_filter(p) for p in plan.get("Plans", []))


def explain_search(
    conn: psycopg.Connection,
    scope: Scope,
    vector: np.ndarray,
    settings: SearchSettings,
    *,
    analyze: bool,
    literal: bool = False,
) -> tuple[str, str]:
    """(plan text, access path) of the search; with `analyze` the query really runs (EXPLAIN ANALYZE, BUFFERS)."""
    query, params = _search_call(scope, vector, settings, literal)
    opts = "ANALYZE, BUFFERS, " if analyze else ""
    plan_json = conn.execute(sql.SQL("EXPLAIN (" + opts + "FORMAT JSON) ") + query, params).fetchone()[0]
    plan = plan_json[0] if isinstance(plan_json, list) else json.loads(plan_json)[0]
    path = plan_access_path(plan, scope.index_name)
    if not analyze:
        return "", path
    text_rows = conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + query, params).fetchall()
    return shorten_plan("\n".join(r[0] for r in text_rows)), path


# -- reads for baselines and housekeeping ---------------------------------------------------------------


def scoped_vectors(
    conn: psycopg.Connection, model: ModelInfo, layer: str, app_name: str | None = None, user_id: str | None = None
) -> list[tuple[str, str, str, str, list[str], np.ndarray]]:
    """(app, user, unit_id, body, event_ids, vector) of every unit of a model and layer, optionally one scope."""
    where = [sql.SQL("embed_model = %s"), sql.SQL("layer = %s")]
    params: list = [model.model_id, layer]
    if app_name is not None:
        where.append(sql.SQL("app_name = %s"))
        params.append(app_name)
    if user_id is not None:
        where.append(sql.SQL("user_id = %s"))
        params.append(user_id)
    query = sql.SQL(
        "SELECT app_name, user_id, unit_id, body, event_ids, embedding::{vt} FROM {} WHERE {} "
        "ORDER BY app_name, user_id, unit_id, session_id"
    ).format(sql.Identifier(UNITS_TABLE), sql.SQL(" AND ").join(where), vt=model.vector_type())
    return [(*r[:5], _as_array(r[5])) for r in conn.execute(query, params).fetchall()]


def _as_array(value) -> np.ndarray:
    """pgvector hands back `Vector` objects or arrays depending on the wire format; unify to float32."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


def units_to_migrate(
    conn: psycopg.Connection,
    old_model_id: str,
    new_model_id: str,
    app_name: str | None = None,
    layers: Sequence[str] | None = None,
) -> list[tuple]:
    """(app, user, session, layer, unit_id, event_ids, author, occurred_at, body, rendered) of every unit stored under
    the old model that has no row under the new one yet, optionally one app and some layers."""
    layer_list = list(layers) if layers is not None else None
    return conn.execute(
        sql.SQL(
            "SELECT o.app_name, o.user_id, o.session_id, o.layer, o.unit_id, o.event_ids, o.author, "
            "o.occurred_at, o.body, o.rendered FROM {t} o WHERE o.embed_model = %s AND NOT EXISTS (SELECT 1 FROM {t} n "
            "WHERE n.app_name = o.app_name AND n.user_id = o.user_id AND n.layer = o.layer "
            "AND n.session_id = o.session_id AND n.unit_id = o.unit_id AND n.embed_model = %s) "
            "AND (%s::text IS NULL OR o.app_name = %s) AND (%s::text[] IS NULL OR o.layer = ANY(%s)) "
            "ORDER BY o.app_name, o.user_id, o.unit_id, o.session_id"
        ).format(t=sql.Identifier(UNITS_TABLE)),
        [old_model_id, new_model_id, app_name, app_name, layer_list, layer_list],
    ).fetchall()


_VECTOR_LITERAL = re.compile(r"'\[[-0-9.e, ]+\]'")


def shorten_plan(text: str) -> str:
    """Replace the query vector literal in a plan with its dimension, so plans stay readable."""
    return _VECTOR_LITERAL.sub(lambda m: f"'[{m.group(0).count(',') + 1} dims]'", text)


# The SHA-256 of a body as the embedding cache keys it (memlab.embedding.cache.text_key): deletes return it so
# the caller can drop the cached vectors of what it erased without reading the texts back.
_BODY_KEY = "encode(sha256(convert_to(coalesce(rendered, body), 'UTF8')), 'hex')"


@dataclass
class Deleted:
    """What a delete removed: units, tombstones, per-tenant indexes, and the (model id, text hash) of every
    deleted body (the embedding cache's keys)."""

    units: int = 0
    tombstones: int = 0
    tenant_indexes: int = 0
    text_keys: set[tuple[str, str]] = field(default_factory=set)

    def merge(self, other: Deleted) -> Deleted:
        self.units += other.units
        self.tombstones += other.tombstones
        self.tenant_indexes += other.tenant_indexes
        self.text_keys |= other.text_keys
        return self


def delete_memory(
    conn: psycopg.Connection, app_name: str, user_id: str, memory_id: str, session_id: str | None = None
) -> Deleted:
    """Delete one memory: the unit with that id and every unit holding that event, in every layer and model
    (only in `session_id` when given, else in every session of the user), and leave a tombstone for each
    (session, event id) involved so a later re-ingest does not bring them back. A memory found nowhere is
    tombstoned in advance: in `session_id`, or in every session."""
    rows = conn.execute(
        sql.SQL(
            "DELETE FROM {} WHERE app_name = %s AND user_id = %s AND (unit_id = %s OR %s = ANY(event_ids)) "
            "AND (%s::text IS NULL OR session_id = %s) RETURNING session_id, event_ids, embed_model, " + _BODY_KEY
        ).format(sql.Identifier(UNITS_TABLE)),
        [app_name, user_id, memory_id, memory_id, session_id, session_id],
    ).fetchall()
    if rows:
        events = {(s, e) for s, ids, _, _ in rows for e in ids if e == memory_id or len(ids) == 1}
    else:
        events = {(ANY_SESSION if session_id is None else session_id, memory_id)}
    stones = 0
    for session, event_id in sorted(events):
        stones += conn.execute(
            "INSERT INTO memory_tombstone (app_name, user_id, session_id, event_id) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            [app_name, user_id, session, event_id],
        ).rowcount
    return Deleted(units=len(rows), tombstones=stones, text_keys={(m, k) for _, _, m, k in rows})




def tombstoned_of(
    conn: psycopg.Connection, wanted: Mapping[SessionKey, Iterable[str]]
) -> set[tuple[str, str, str, str]]:
    """(app, user, session, event id) of the events deleted on purpose, in their session or in every session of
    the user, for many sessions (of any users) in one round trip; each matched on its own app and user."""
    columns = _unnest_keys(wanted)
    if not columns[0]:
        return set()
    rows = conn.execute(
        "SELECT k.app_name, k.user_id, k.session_id, k.event_id "
        "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) AS k(app_name, user_id, session_id, event_id) "
        "CROSS JOIN LATERAL (SELECT 1 FROM memory_tombstone t WHERE t.app_name = k.app_name AND t.user_id = k.user_id "
        "AND t.event_id = k.event_id AND t.session_id IN (k.session_id, %s) LIMIT 1) t",
        [*columns, ANY_SESSION],
    ).fetchall()
    return {tuple(r) for r in rows}


def _drop_tenant_indexes(conn: psycopg.Connection, app_name: str, user_id: str, pairs: set[tuple[str, str]]) -> int:
    """Drop the per-tenant indexes of a user for these (model, layer) pairs (their definitions name the user)."""
    names = [tenant_index_name(model, layer, app_name, user_id) for model, layer in sorted(pairs)]
    found = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ANY(%s)", [names]
    ).fetchall()
    for (name,) in found:
        drop_index(conn, name)
    return len(found)


def erase_user(conn: psycopg.Connection, app_name: str, user_id: str) -> Deleted:
    """Every unit of the user (all layers, all models), the user's tombstones (nothing is left to guard) and
    the user's per-tenant indexes."""
    stones = conn.execute(
        "DELETE FROM memory_tombstone WHERE app_name = %s AND user_id = %s", [app_name, user_id]
    ).rowcount
    rows = conn.execute(
        sql.SQL(
            "DELETE FROM {} WHERE app_name = %s AND user_id = %s RETURNING layer, embed_model, " + _BODY_KEY
        ).format(sql.Identifier(UNITS_TABLE)),
        [app_name, user_id],
    ).fetchall()
    pairs = {(m, layer) for layer, m, _ in rows}
    pairs |= set(conn.execute("SELECT model_id, layer FROM memlab_vector_index").fetchall())
    dropped = _drop_tenant_indexes(conn, app_name, user_id, pairs)
    return Deleted(units=len(rows), tombstones=stones, tenant_indexes=dropped, text_keys={(m, k) for _, m, k in rows})


def delete_user(conn: psycopg.Connection, app_name: str, user_id: str) -> int:
    """`erase_user`, returning the number of units deleted."""
    return erase_user(conn, app_name, user_id).units


def erase_session(
    conn: psycopg.Connection, app_name: str, user_id: str, session_id: str, model_id: str | None = None
) -> Deleted:
    """Every unit of one session (all layers; one model when given), and the session's own tombstones once no
    unit of the session is left in any model (while one is, they still guard its re-ingest)."""
    rows = conn.execute(
        sql.SQL(
            "DELETE FROM {} WHERE app_name = %s AND user_id = %s AND session_id = %s "
            "AND (%s::text IS NULL OR embed_model = %s) RETURNING embed_model, " + _BODY_KEY
        ).format(sql.Identifier(UNITS_TABLE)),
        [app_name, user_id, session_id, model_id, model_id],
    ).fetchall()
    left = conn.execute(
        sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE app_name = %s AND user_id = %s AND session_id = %s)").format(
            sql.Identifier(UNITS_TABLE)
        ),
        [app_name, user_id, session_id],
    ).fetchone()[0]
    stones = 0
    if not left:
        stones = conn.execute(
            "DELETE FROM memory_tombstone WHERE app_name = %s AND user_id = %s AND session_id = %s",
            [app_name, user_id, session_id],
        ).rowcount
    return Deleted(units=len(rows), tombstones=stones, text_keys={(m, k) for m, k in rows})


ERASURE_TABLES = (UNITS_TABLE, "memory_tombstone")


def vacuum(conn: psycopg.Connection, *, full: bool = False) -> tuple[str, ...]:
    """VACUUM (and ANALYZE, so no statistic still samples a deleted value) the unit and tombstone tables after
    an erasure; `full` rewrites them (ACCESS EXCLUSIVE lock) so no deleted byte stays in their files. Needs an
    autocommit connection (VACUUM cannot run inside a transaction). Returns the tables vacuumed."""
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE or not conn.autocommit:
        raise ValueError("VACUUM must run on an autocommit connection outside a transaction")
    options = sql.SQL("FULL, ANALYZE" if full else "ANALYZE")
    conn.execute(sql.SQL("VACUUM ({}) {}").format(options, sql.SQL(", ").join(map(sql.Identifier, ERASURE_TABLES))))
    return ERASURE_TABLES


def delete_before(
    conn: psycopg.Connection, cutoff: datetime, app_name: str | None = None, user_id: str | None = None
) -> int:
    """Retention: delete units that occurred before `cutoff`, optionally only for one app or user."""
    return erase_before(conn, cutoff, app_name, user_id).units


def erase_before(
    conn: psycopg.Connection, cutoff: datetime, app_name: str | None = None, user_id: str | None = None
) -> Deleted:
    """`delete_before`, with the (model, text hash) of every deleted body."""
    where = [sql.SQL("occurred_at < %s")]
    params: list = [cutoff]
    if app_name is not None:
        where.append(sql.SQL("app_name = %s"))
        params.append(app_name)
    if user_id is not None:
        where.append(sql.SQL("user_id = %s"))
        params.append(user_id)
    rows = conn.execute(
        sql.SQL("DELETE FROM {} WHERE {} RETURNING embed_model, " + _BODY_KEY).format(
            sql.Identifier(UNITS_TABLE), sql.SQL(" AND ").join(where)
        ),
        params,
    ).fetchall()
    return Deleted(units=len(rows), text_keys={(m, k) for m, k in rows})


def delete_layer(conn: psycopg.Connection, app_name: str, layer: str) -> int:
    """Every unit of one app in one layer: all users, all models (e.g. a benchmark corpus before a reload)."""
    return conn.execute(
        sql.SQL("DELETE FROM {} WHERE app_name = %s AND layer = %s").format(sql.Identifier(UNITS_TABLE)),
        [app_name, layer],
    ).rowcount


def delete_model(conn: psycopg.Connection, model_id: str) -> int:
    """Every unit stored with a model, in every app, user and layer (the end of a migration)."""
    return conn.execute(
        sql.SQL("DELETE FROM {} WHERE embed_model = %s").format(sql.Identifier(UNITS_TABLE)), [model_id]
    ).rowcount


# -- kept counts: what `strategy="auto"` reads instead of counting a user's units per search ----------------
# Append-only deltas (one row per scope per written statement), so concurrent writers never wait on one hot
# counter row; a read sums the user's few rows and folds them into one once they pile up. When a scope's last
# unit is deleted its count rows go too: no row keeps a user id after erasure. Beside the count, the summed
# document length (lexemes per unit, as full-text search counts them) gives BM25 its N and mean length in O(1).
COUNTS_TABLE = "memory_unit_count"
FOLD_AFTER = 32  # delta rows of one scope before a read folds them into one
_KEY = "app_name, user_id, layer, embed_model"
COUNTS_DDL = f"""
CREATE OR REPLACE FUNCTION memlab_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {COUNTS_TABLE} ({_KEY}, delta, doc_length)
    SELECT {_KEY}, count(*), coalesce(sum(length(lexemes)), 0) FROM added GROUP BY {_KEY};
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION memlab_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {COUNTS_TABLE} ({_KEY}, delta, doc_length)
    SELECT {_KEY}, -count(*), -coalesce(sum(length(lexemes)), 0) FROM removed GROUP BY {_KEY};
    -- a scope left with no unit keeps no count row (a user id is personal data)
    DELETE FROM {COUNTS_TABLE} c USING (SELECT DISTINCT {_KEY} FROM removed) r
     WHERE (c.app_name, c.user_id, c.layer, c.embed_model) = (r.app_name, r.user_id, r.layer, r.embed_model)
       AND NOT EXISTS (SELECT 1 FROM {UNITS_TABLE} u
                        WHERE (u.app_name, u.user_id, u.layer, u.embed_model)
                            = (r.app_name, r.user_id, r.layer, r.embed_model));
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION memlab_count_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {COUNTS_TABLE};
    RETURN NULL;
END $$;
DO $$
BEGIN
    IF to_regclass('{COUNTS_TABLE}') IS NULL THEN
        CREATE TABLE {COUNTS_TABLE} (
            app_name text NOT NULL, user_id text NOT NULL, layer text NOT NULL, embed_model text NOT NULL,
            delta bigint NOT NULL, doc_length bigint NOT NULL DEFAULT 0
        );
        CREATE INDEX {COUNTS_TABLE}_scope ON {COUNTS_TABLE} ({_KEY});
        CREATE TRIGGER memlab_count_insert AFTER INSERT ON {UNITS_TABLE} REFERENCING NEW TABLE AS added
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_count_added();
        CREATE TRIGGER memlab_count_delete AFTER DELETE ON {UNITS_TABLE} REFERENCING OLD TABLE AS removed
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_count_removed();
        CREATE TRIGGER memlab_count_update_old AFTER UPDATE ON {UNITS_TABLE} REFERENCING OLD TABLE AS removed
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_count_removed();
        CREATE TRIGGER memlab_count_update_new AFTER UPDATE ON {UNITS_TABLE} REFERENCING NEW TABLE AS added
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_count_added();
        CREATE TRIGGER memlab_count_truncate AFTER TRUNCATE ON {UNITS_TABLE}
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_count_truncated();
        -- a table from before the counts: count it once
        INSERT INTO {COUNTS_TABLE} ({_KEY}, delta, doc_length)
        SELECT {_KEY}, count(*), coalesce(sum(length(lexemes)), 0) FROM {UNITS_TABLE} GROUP BY {_KEY};
    ELSIF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '{COUNTS_TABLE}'::regclass
                       AND attname = 'doc_length' AND NOT attisdropped) THEN
        -- counts from before the document lengths: recount once, writers held off meanwhile
        LOCK TABLE {UNITS_TABLE} IN SHARE MODE;
        ALTER TABLE {COUNTS_TABLE} ADD COLUMN IF NOT EXISTS doc_length bigint NOT NULL DEFAULT 0;
        DELETE FROM {COUNTS_TABLE};
        INSERT INTO {COUNTS_TABLE} ({_KEY}, delta, doc_length)
        SELECT {_KEY}, count(*), coalesce(sum(length(lexemes)), 0) FROM {UNITS_TABLE} GROUP BY {_KEY};
    END IF;
END $$;
"""


def create_counts(conn: psycopg.Connection) -> None:
    """The count table and the unit table's triggers that keep it (idempotent; after the unit table)."""
    conn.execute(COUNTS_DDL)


_COUNT_SCOPE = "app_name = %s AND user_id = %s AND layer = %s AND embed_model = %s"


@dataclass(frozen=True)
class ScopeFacts:
    """What `auto` decides from, read in one round trip."""

    units: int  # the user's units of this layer and model (kept counts)
    tenant_index: bool  # the user's own partial HNSW index exists
    table_rows: int  # the planner's estimate of the whole table's rows


def scope_facts(conn: psycopg.Connection, scope: Scope) -> ScopeFacts:
    """The user's kept unit count, whether their per-tenant index exists, and the table's estimated rows, in
    one statement (a search pays one round trip for its strategy, not three); folds the counts when needed."""
    name = tenant_index_name(scope.model.model_id, scope.layer, scope.app_name, scope.user_id)
    params = [scope.app_name, scope.user_id, scope.layer, scope.model.model_id, name, UNITS_TABLE]
    total, rows, indexed, table_rows = conn.execute(
        sql.SQL(
            "SELECT coalesce(sum(delta), 0), count(*), to_regclass(%s) IS NOT NULL, "
            "(SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = to_regclass(%s)) "
            "FROM {} WHERE " + _COUNT_SCOPE
        ).format(sql.Identifier(COUNTS_TABLE)),
        params[4:] + params[:4],
    ).fetchone()
    if rows > FOLD_AFTER:
        fold_counts(conn, scope.app_name, scope.user_id, scope.layer, scope.model.model_id)
    return ScopeFacts(int(total), bool(indexed), int(table_rows or 0))


def fold_counts(conn: psycopg.Connection, app_name: str, user_id: str, layer: str, model_id: str) -> None:
    """Replace a scope's delta rows (counts and document lengths) by their sums (one statement: a concurrent fold
    sees the rows gone)."""
    conn.execute(
        sql.SQL(
            "WITH gone AS (DELETE FROM {t} WHERE " + _COUNT_SCOPE + " RETURNING delta, doc_length) "
            "INSERT INTO {t} (" + _KEY + ", delta, doc_length) SELECT %s, %s, %s, %s, sum(delta), sum(doc_length) "
            "FROM gone "
            "HAVING sum(delta) IS NOT NULL AND sum(delta) <> 0"
        ).format(t=sql.Identifier(COUNTS_TABLE)),
        [app_name, user_id, layer, model_id] * 2,
    )


def large_scopes(
    conn: psycopg.Connection, layer: str, model_id: str, at_least: int, app_name: str | None = None
) -> list[tuple[str, str]]:
    """(app, user) of every user of a layer and model with at least `at_least` units, from the kept counts."""
    rows = conn.execute(
        sql.SQL(
            "SELECT app_name, user_id FROM {} WHERE layer = %s AND embed_model = %s "
            "AND (%s::text IS NULL OR app_name = %s) GROUP BY app_name, user_id HAVING sum(delta) >= %s "
            "ORDER BY app_name, user_id"
        ).format(sql.Identifier(COUNTS_TABLE)),
        [layer, model_id, app_name, app_name, at_least],
    ).fetchall()
    return [(a, u) for a, u in rows]


def user_rows(conn: psycopg.Connection, app_name: str, user_id: str) -> list[tuple[str, str | None, list[str]]]:
    """(body, rendered, event ids) of every unit of one user in every layer and model: what the reliability
    probes search byte by byte for what must not have been stored."""
    query = sql.SQL("SELECT body, rendered, event_ids FROM {} WHERE app_name = %s AND user_id = %s").format(
        sql.Identifier(UNITS_TABLE)
    )
    return [(r[0], r[1], list(r[2])) for r in conn.execute(query, [app_name, user_id]).fetchall()]
