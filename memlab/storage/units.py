"""Writes and searches on the memory-unit table: staged binary COPY writes, scoped search (vector, exact,
lexical), EXPLAIN. The table and its indexes are in unit_table.py, the kept counts in unit_counts.py, deletes,
erasure and migration reads in unit_housekeeping.py; callers reach the first two through this module too.

Every read filters by app_name and user_id in SQL (and by model and layer): no row of another user can
reach Python. Functions take a connection so the caller decides the transaction."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import psycopg
from psycopg import sql

from memlab.storage.schema import PRIMARY_KEY, SCOPE_INDEX, UNITS_TABLE, ModelInfo
from memlab.storage.unit_counts import (
    COUNTS_TABLE as COUNTS_TABLE,
)
from memlab.storage.unit_counts import (
    ScopeFacts as ScopeFacts,
)
from memlab.storage.unit_counts import (
    create_counts as create_counts,
)
from memlab.storage.unit_counts import (
    fold_counts as fold_counts,
)
from memlab.storage.unit_counts import (
    large_scopes as large_scopes,
)
from memlab.storage.unit_counts import (
    layer_index_state as layer_index_state,
)
from memlab.storage.unit_counts import (
    scope_facts as scope_facts,
)
from memlab.storage.unit_counts import (
    users_holding as users_holding,
)
from memlab.storage.unit_lexical import (
    _LEXICAL as _LEXICAL,
)
from memlab.storage.unit_lexical import (
    TERMS_TABLE as TERMS_TABLE,
)
from memlab.storage.unit_lexical import (
    create_terms as create_terms,
)
from memlab.storage.unit_lexical import (
    lexical_search as lexical_search,
)
from memlab.storage.unit_lexical import (
    lexical_statement as lexical_statement,
)
from memlab.storage.unit_lexical import (
    vacuum_postings as vacuum_postings,
)
from memlab.storage.unit_table import (
    _COLUMNS as _COLUMNS,
)
from memlab.storage.unit_table import (
    _COPY_TYPES as _COPY_TYPES,
)
from memlab.storage.unit_table import (
    BUILD_MEMORY_ENV as BUILD_MEMORY_ENV,
)
from memlab.storage.unit_table import (
    BUILD_MEMORY_MAX_ENV as BUILD_MEMORY_MAX_ENV,
)
from memlab.storage.unit_table import (
    BUILD_WORKERS_ENV as BUILD_WORKERS_ENV,
)
from memlab.storage.unit_table import (
    LEXICAL_INDEX as LEXICAL_INDEX,
)
from memlab.storage.unit_table import (
    MAX_BUILD_MB as MAX_BUILD_MB,
)
from memlab.storage.unit_table import (
    READABLE_TIME,
)
from memlab.storage.unit_table import (
    TEXT_SEARCH_CONFIG as TEXT_SEARCH_CONFIG,
)
from memlab.storage.unit_table import (
    BuildSettings as BuildSettings,
)
from memlab.storage.unit_table import (
    Scope as Scope,
)
from memlab.storage.unit_table import (
    analyze as analyze,
)
from memlab.storage.unit_table import (
    build_settings as build_settings,
)
from memlab.storage.unit_table import (
    count_layer as count_layer,
)
from memlab.storage.unit_table import (
    create_table as create_table,
)
from memlab.storage.unit_table import (
    create_tenant_index as create_tenant_index,
)
from memlab.storage.unit_table import (
    create_vector_index as create_vector_index,
)
from memlab.storage.unit_table import (
    drop_index as drop_index,
)
from memlab.storage.unit_table import (
    hnsw_graph_bytes as hnsw_graph_bytes,
)
from memlab.storage.unit_table import (
    hnsw_indexes as hnsw_indexes,
)
from memlab.storage.unit_table import (
    index_exists as index_exists,
)
from memlab.storage.unit_table import (
    index_name_for as index_name_for,
)
from memlab.storage.unit_table import (
    memory_mb as memory_mb,
)
from memlab.storage.unit_table import (
    missing_tables as missing_tables,
)
from memlab.storage.unit_table import (
    planned_rows as planned_rows,
)
from memlab.storage.unit_table import (
    table_bytes as table_bytes,
)
from memlab.storage.unit_table import (
    tenant_index_name as tenant_index_name,
)
from memlab.types import Hit, SearchSettings

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
    statistics it may run as a nested loop over the whole layer, many times slower than the probes)."""
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
    return Deleted(units=len(rows), text_keys={(m, k) for m, k, _ in rows}, body_keys={r[-1] for r in rows})


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


def copy_new_rows(conn: psycopg.Connection, rows: Sequence[tuple]) -> int:
    """`copy_rows` for rows known to be new (a first load, its keys locked and checked in this transaction): one
    binary COPY straight into the table, each row written once instead of staged and moved. A key already stored
    raises `psycopg.errors.UniqueViolation` (the caller falls back to `copy_rows`). Returns rows added."""
    if not rows:
        return 0
    cols = sql.SQL(", ").join(map(sql.Identifier, _COLUMNS))
    with conn.cursor() as cur:
        with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT BINARY)").format(
                sql.Identifier(UNITS_TABLE), cols)) as copy:  # fmt: skip
            copy.set_types(_COPY_TYPES)
            for row in rows:
                copy.write_row(row)
        return cur.rowcount


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


_READABLE_TIME = READABLE_TIME
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
#   user holds a tenth of it, so the same user's exact search costs more in a smaller table than in one ten times
#   its size (memlab bench shows it).
STRATEGY_PLANNER_SETTINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "hnsw": (("enable_sort", "off"),),
    "exact": (("enable_seqscan", "off"),),
}


def search_knobs(settings: SearchSettings) -> list[tuple[str, str]]:
    """The settings a search SETs LOCAL: the index knobs and the strategy's planner settings. Plans are always
    custom plans, so the planner sees the bound model, layer, app and user and can prove the partial-index
    predicates, whatever the server's plan_cache_mode."""
    return [("hnsw.ef_search", str(settings.ef_search)), ("hnsw.iterative_scan", settings.iterative_scan),
            ("hnsw.max_scan_tuples", str(settings.max_scan_tuples)), ("plan_cache_mode", "force_custom_plan"),
            *STRATEGY_PLANNER_SETTINGS.get(settings.strategy, ())]  # fmt: skip


def apply_settings(conn: psycopg.Connection, settings: SearchSettings) -> None:
    """SET LOCAL `search_knobs` for this transaction only, in one round trip (set_config(..., true) == SET LOCAL)."""
    knobs = search_knobs(settings)
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
) -> tuple[str, str, int]:
    """(plan text, access path, rows the scope filter removed) of the search; with `analyze` the query really
    runs (EXPLAIN ANALYZE, BUFFERS), without it there is no text and no count (0)."""
    query, params = _search_call(scope, vector, settings, literal)
    opts = "ANALYZE, BUFFERS, " if analyze else ""
    plan_json = conn.execute(sql.SQL("EXPLAIN (" + opts + "FORMAT JSON) ") + query, params).fetchone()[0]
    plan = plan_json[0] if isinstance(plan_json, list) else json.loads(plan_json)[0]
    path = plan_access_path(plan, scope.index_name)
    if not analyze:
        return "", path, 0
    text_rows = conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + query, params).fetchall()
    return shorten_plan("\n".join(r[0] for r in text_rows)), path, rows_removed_by_filter(plan["Plan"])


_VECTOR_LITERAL = re.compile(r"'\[[-0-9.e, ]+\]'")


def shorten_plan(text: str) -> str:
    """Replace the query vector literal in a plan with its dimension, so plans stay readable."""
    return _VECTOR_LITERAL.sub(lambda m: f"'[{m.group(0).count(',') + 1} dims]'", text)


# The SHA-256 of a body as the embedding cache keys it (memlab.embedding.cache.text_key), then of the plain body
# (what searches return as Hit.text, so what a model may have been sent): deletes return both so the caller can
# drop the cached vectors and model replies of what it erased without reading the texts back.
_BODY_KEY = (
    "encode(sha256(convert_to(coalesce(rendered, body), 'UTF8')), 'hex'), "
    "encode(sha256(convert_to(body, 'UTF8')), 'hex')"
)


@dataclass
class Deleted:
    """What a delete removed: units, tombstones, per-tenant indexes, and the (model id, text hash) of every
    deleted body (the embedding cache's keys)."""

    units: int = 0
    tombstones: int = 0
    tenant_indexes: int = 0
    text_keys: set[tuple[str, str]] = field(default_factory=set)
    body_keys: set[str] = field(default_factory=set)  # text_key of each deleted plain body (see _BODY_KEY)

    def merge(self, other: Deleted) -> Deleted:
        self.units += other.units
        self.tombstones += other.tombstones
        self.tenant_indexes += other.tenant_indexes
        self.text_keys |= other.text_keys
        self.body_keys |= other.body_keys
        return self

    def model_refs(self) -> set[str]:
        """The refs of the deleted texts as model-cache entries record them (memlab.models.refs.text_refs)."""
        return {k for _, k in self.text_keys} | self.body_keys
