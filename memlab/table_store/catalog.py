"""What PostgreSQL's catalog says about a user's table, read without touching it: the vector extension, the table
and its columns, the embedding column's dimension, its vector indexes (method, operator class and so the distance
it serves, build parameters, size, validity) and the planner's row estimate. `bind` checks a `Layout` against it
and composes every field as SQL from identifiers and literals (psycopg.sql), never from the text given.

Everything here reads pg_catalog views every role may read; the table itself is read only by `count_rows`."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from memlab.errors import ConfigError, ExtensionError
from memlab.table_store.layout import FIELDS, AppNames, Layout, Source, table_parts

# pgvector's distance operators by name, and the operator classes of its indexes by the distance they serve.
DISTANCES: dict[str, str] = {"cosine": "<=>", "l2": "<->", "inner_product": "<#>", "l1": "<+>"}
OPCLASS_DISTANCE: dict[str, str] = {
    f"{kind}_{ops}_ops": name
    for kind in ("vector", "halfvec")
    for ops, name in (("cosine", "cosine"), ("l2", "l2"), ("ip", "inner_product"), ("l1", "l1"))
}
VECTOR_TYPES = ("vector", "halfvec")
INDEX_METHODS = ("hnsw", "ivfflat")
BUILD_DEFAULTS = {"hnsw": {"m": 16, "ef_construction": 64}, "ivfflat": {"lists": 100}}  # pgvector's defaults
TEXT_TYPES = ("text", "character varying", "character", "name")
JSON_TYPES = ("json", "jsonb")
INPUT_CHECK_SINCE = 160000  # pg_input_is_valid came with PostgreSQL 16
ISO_TIME = r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?\s*(Z|[+-]\d{2}(:?\d{2})?)?$"
# An expression index over a cast of the embedding column, as pg_get_expr prints it: (embedding)::halfvec(384).
_CAST_EXPR = re.compile(r'^\(*\s*\(?\s*("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)\s*\)?'
                        r"::(vector|halfvec)\((\d+)\)\s*\)*$")


@dataclass(frozen=True)
class VectorIndex:
    """One hnsw or ivfflat index on the embedding column. `distance` is what its operator class serves
    (None for one pgvector does not map: bit or sparse vectors); `cast` the type its expression casts the column
    to (`halfvec(384)` for an index on `(embedding::halfvec(384))`), None for the plain column; `params` the
    build parameters (m and ef_construction, or lists), pgvector's defaults where the index sets none;
    `predicate` a partial index's WHERE (None: every row); `valid` False while a build is unfinished or failed."""

    name: str
    method: str
    opclass: str
    distance: str | None
    params: dict[str, int]
    size_bytes: int | None
    valid: bool
    predicate: str | None = None
    cast: str | None = None
    definition: str = ""

    def serves(self, distance: str) -> bool:
        """Whether a search by `distance` over every row can walk this index (else the planner ignores it)."""
        return self.valid and self.predicate is None and self.distance == distance


@dataclass(frozen=True)
class AppTable:
    """A layout's AppNames found in the catalog: the table (`schema`, `table`) and its `name` and `key` columns."""

    schema: str
    table: str
    name: str
    key: str


@dataclass
class TableCatalog:
    """The catalog's facts about the table (see the module docstring). `declared_dimension` is the column's own
    (vector(384): 384; None for a plain `vector`), `dimension` that, else the most common one `count_rows` found; a
    column without a declared dimension is read only where a row's size is the query's. The row counts (`rows`,
    `null_embeddings`, `other_dimension`, `dimensions`) are None until `TableStore.count_rows()` reads them (a
    full scan), except where the column's type rules them out (vector(N) NOT NULL: both 0)."""

    schema: str
    table: str
    kind: str
    vector_version: str
    embedding_type: str
    declared_dimension: int | None
    dimension: int | None
    indexes: list[VectorIndex]
    estimated_rows: int | None
    column_types: dict[str, str] = field(default_factory=dict)
    server_version: int = 0  # server_version_num: 180001 for 18.1
    app_names: AppTable | None = None
    rows: int | None = None
    null_embeddings: int | None = None
    other_dimension: int | None = None
    dimensions: dict[int, int] | None = None

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.table}"

    def index_for(self, distance: str) -> VectorIndex | None:
        """The index a search by `distance` over all rows can use (hnsw before ivfflat), or None."""
        usable = [i for i in self.indexes if i.serves(distance)]
        return sorted(usable, key=lambda i: INDEX_METHODS.index(i.method))[0] if usable else None

    def index_used_for(self, distance: str) -> bool:
        """Whether an index serves `distance` (cosine, l2, inner_product, l1). False means a search by it scans
        every row of the scope: an index built with another operator class is ignored by the planner."""
        check_distance(distance)
        return self.index_for(distance) is not None

    @property
    def default_distance(self) -> str:
        """The distance the table's index serves (its first usable one), else cosine."""
        for index in self.indexes:
            if index.valid and index.predicate is None and index.distance:
                return index.distance
        return "cosine"


def check_distance(distance: object) -> str:
    if distance not in DISTANCES:
        raise ConfigError(f"distance {distance!r} is unknown; use one of {', '.join(DISTANCES)} "
                          "(cosine <=>, l2 <->, inner_product <#>, l1 <+>).")  # fmt: skip
    return distance  # type: ignore[return-value]


# -- reading -------------------------------------------------------------------------------------------------------


def vector_version(conn: psycopg.Connection, shown: str) -> str:
    """The vector extension's version in this database; ExtensionError when it is not installed (memlab never
    creates it: a read-only connection creates nothing)."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is None:
        raise ExtensionError(
            f"the pgvector extension 'vector' is not installed in the database of {shown}, so no table there can "
            "hold a vector column. memlab only reads this database and never creates an extension. Fix: point the "
            "DSN at the database that holds your memory table (dbname=...), or have its owner run "
            "CREATE EXTENSION vector there.")  # fmt: skip
    return str(row[0])


def find_table(conn: psycopg.Connection, table: str, *, schema: str | None = None) -> tuple[int, str, str, str]:
    """(oid, schema, name, relkind) of `table` (schema-qualified, else in `schema` when given, else the first match
    on search_path)."""
    given, name = table_parts(table)
    schema = given or schema
    row = conn.execute(
        "SELECT c.oid, n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relname = %(name)s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
        "   AND (n.nspname = %(schema)s OR (%(schema)s::text IS NULL AND n.nspname = ANY (current_schemas(false))))"
        " ORDER BY array_position(current_schemas(false), n.nspname) NULLS LAST LIMIT 1",
        {"name": name, "schema": schema},
    ).fetchone()
    if row is not None:
        return int(row[0]), str(row[1]), str(row[2]), str(row[3])
    visible = [r[0] for r in conn.execute(
        "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
        "   AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%' ORDER BY 1 LIMIT 1000").fetchall()]
    names = {form: v for v in visible for form in (v.lower(), v.split(".", 1)[1].lower())}
    near = [names[n] for n in difflib.get_close_matches(table.lower(), list(names), n=3, cutoff=0.6)]
    where = f"schema {schema!r}" if schema else "the schemas on the search_path"
    hint = f" Near names: {', '.join(dict.fromkeys(near))}." if near else ""
    raise ConfigError(f"table {table!r} is not in {where} of this database (or this role may not see it).{hint} "
                      "Fix: give the table as schema.name, exactly as created (names are case-sensitive; "
                      "a mixed-case name goes in double quotes).")  # fmt: skip


def read_columns(conn: psycopg.Connection, oid: int) -> dict[str, tuple[str, str, bool]]:
    """column -> (type as format_type prints it, base type name, NOT NULL)."""
    rows = conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), t.typname, a.attnotnull"
        " FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
        " WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        [oid],
    ).fetchall()
    return {str(r[0]): (str(r[1]), str(r[2]), bool(r[3])) for r in rows}


def read_indexes(conn: psycopg.Connection, oid: int, column: str) -> list[VectorIndex]:
    """The hnsw/ivfflat indexes whose first key is `column` or a cast of it."""
    rows = conn.execute(
        "SELECT ic.relname, am.amname, opc.opcname, a.attname, pg_get_expr(i.indexprs, i.indrelid),"
        "       pg_get_expr(i.indpred, i.indrelid), ic.reloptions, pg_relation_size(i.indexrelid),"
        "       i.indisvalid AND i.indisready, pg_get_indexdef(i.indexrelid)"
        " FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam"
        " JOIN pg_opclass opc ON opc.oid = i.indclass[0]"
        " LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] AND i.indkey[0] > 0"
        " WHERE i.indrelid = %s AND am.amname = ANY (%s) ORDER BY ic.relname",
        [oid, list(INDEX_METHODS)],
    ).fetchall()
    found = []
    for name, method, opclass, key, expression, predicate, options, size, valid, definition in rows:
        cast = None
        if key is None:  # an expression index: only a cast of the embedding column counts
            match = _CAST_EXPR.match(expression or "")
            if not match or match.group(1).strip('"').replace('""', '"') != column:
                continue
            cast = f"{match.group(2)}({int(match.group(3))})"
        elif key != column:
            continue
        params = dict(BUILD_DEFAULTS.get(method, {}))
        for option in options or []:
            key_name, _, value = str(option).partition("=")
            if value.isdigit():
                params[key_name] = int(value)
        found.append(VectorIndex(name=str(name), method=str(method), opclass=str(opclass),
                                 distance=OPCLASS_DISTANCE.get(str(opclass)), params=params,
                                 size_bytes=None if size is None else int(size), valid=bool(valid),
                                 predicate=predicate, cast=cast, definition=str(definition)))  # fmt: skip
    return found


def read_catalog(conn: psycopg.Connection, layout: Layout, shown: str) -> tuple[TableCatalog, int]:
    """The catalog of `layout.table` and its oid; ConfigError for a missing table or embedding column, one that
    is not a vector, or a role without SELECT on it."""
    version = vector_version(conn, shown)
    oid, schema, name, kind = find_table(conn, layout.table)
    _check_select(conn, oid, f"{schema}.{name}", schema, "")
    columns = read_columns(conn, oid)
    embedding = layout.columns.source("embedding").column
    assert embedding is not None
    _check_column(columns, "embedding", layout.columns.source("embedding"), f"{schema}.{name}")
    shown_type, base_type, not_null = columns[embedding]
    if base_type not in VECTOR_TYPES:
        raise ConfigError(f"columns.embedding = {embedding!r} is of type {shown_type} in {schema}.{name}; memlab "
                          "searches a pgvector vector or halfvec column. Fix: map embedding to that column.")
    declared = re.search(r"\((\d+)\)", shown_type)
    dimension = int(declared.group(1)) if declared else None
    estimate = conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s", [oid]).fetchone()[0]
    catalog = TableCatalog(
        schema=schema, table=name, kind=kind, vector_version=version, embedding_type=base_type,
        declared_dimension=dimension, dimension=dimension,
        indexes=read_indexes(conn, oid, embedding) if kind in ("r", "p", "m") else [],
        estimated_rows=None if estimate is None or estimate < 0 else int(estimate),
        column_types={c: t[0] for c, t in columns.items()})  # fmt: skip
    if dimension is not None and not_null:
        catalog.null_embeddings, catalog.other_dimension = 0, 0
    for name_ in FIELDS:
        _check_column(columns, name_, layout.columns.source(name_), f"{schema}.{name}")
    catalog.server_version = int(conn.execute("SELECT current_setting('server_version_num')").fetchone()[0])
    if layout.app_names is not None:
        app = layout.columns.source("app").column
        assert app is not None  # Layout checks that app_names comes with a plain app column
        catalog.app_names = read_app_table(conn, layout.app_names, schema, columns[app][0])
    return catalog, oid


def _check_select(conn: psycopg.Connection, oid: int, qualified: str, schema: str, why: str) -> None:
    if not conn.execute("SELECT has_table_privilege(%s::oid, 'SELECT')", [oid]).fetchone()[0]:
        role = conn.execute("SELECT current_user").fetchone()[0]
        raise ConfigError(f"the role {role!r} may not SELECT from {qualified}{why}. Fix: GRANT SELECT ON "
                          f"{qualified} TO {role}; (and USAGE on schema {schema}); memlab needs nothing more.")


def read_app_table(conn: psycopg.Connection, names: AppNames, schema: str, app_type: str) -> AppTable:
    """The table naming the apps (in `schema`, the main table's, unless qualified), checked: it exists, the role
    may read it, it has the `name` and `key` columns and `key` is of the app column's type (`app_type`)."""
    oid, found_schema, table, _ = find_table(conn, names.table, schema=schema)
    qualified = f"{found_schema}.{table}"
    _check_select(conn, oid, qualified, found_schema, " (it names the apps: the layout's app_names)")
    columns = read_columns(conn, oid)
    for part in ("name", "key"):
        _check_column(columns, f"app_names.{part}", Source(column=names.column(part)), qualified, prefix="")
    key_type = columns[names.column("key")][0]
    if key_type != app_type:
        raise ConfigError(f"app_names.key {names.column('key')!r} of {qualified} is of type {key_type} and the "
                          f"table's app column of type {app_type}: the app column must hold that table's keys. Fix: "
                          "map app_names.key to the column the app column refers to.")  # fmt: skip
    return AppTable(found_schema, table, names.column("name"), names.column("key"))


def _check_column(columns: dict[str, tuple[str, str, bool]], name: str, source: Source, table: str, *,
                  prefix: str = "columns.") -> None:  # fmt: skip
    if source.column is None:
        return
    if source.column not in columns:
        near = [c for c in columns if c.lower() == source.column.lower()] or difflib.get_close_matches(
            source.column, list(columns), n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ConfigError(f"{prefix}{name} = {str(source)!r}: {table} has no column {source.column!r}{hint}; its "
                          f"columns are {', '.join(columns)}.")  # fmt: skip
    if source.path and columns[source.column][1] not in JSON_TYPES:
        raise ConfigError(f"{prefix}{name} = {str(source)!r}: {source.column} is of type {columns[source.column][0]}, "
                          "not json or jsonb, so it has no JSON path. Fix: map the field to the column itself.")


# -- binding -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """A layout checked against the catalog: each field as an SQL expression (identifiers and literals composed
    by psycopg.sql), `table` the qualified identifier, `present` the fields the table has (column or constant),
    `app_match` the condition that a row is of the app %(app)s (None: the table is one app)."""

    table: sql.Composable
    fields: dict[str, sql.Composable]
    present: frozenset[str]
    catalog: TableCatalog
    app_match: sql.Composable | None = None

    def expr(self, name: str) -> sql.Composable:
        return self.fields[name]

    def as_text(self, name: str) -> sql.Composable:
        """The field as text (ids and texts of any column type come back as str)."""
        return sql.SQL("({})::text").format(self.fields[name])


def field_sql(source: Source) -> sql.Composable:
    if source.column is None:
        return sql.SQL("NULL::text") if source.constant is None else sql.SQL("{}::text").format(
            sql.Literal(source.constant))
    expr: sql.Composable = sql.Identifier(source.column)
    for i, key in enumerate(source.path):
        op = sql.SQL("->>" if i == len(source.path) - 1 else "->")
        expr = sql.SQL("{}{}{}").format(expr, op, sql.Literal(key))
    return sql.SQL("({})").format(expr) if source.path else expr


def time_sql(source: Source, catalog: TableCatalog) -> sql.Composable:
    """The time field: as stored when it is a column of another type than text (timestamptz, date ...); text (a
    JSON path, a text column: ISO-8601 as JSON keeps times) read as timestamptz. A value PostgreSQL cannot read as
    a time (an empty string, an epoch number) is NULL rather than an error that would end every read of the table;
    servers before pg_input_is_valid (PostgreSQL 16) cast only ISO-8601 shapes."""
    expr = field_sql(source)
    if source.column is None:
        return expr
    if not source.path and re.sub(r"\(.*\)", "", catalog.column_types[source.column]) not in TEXT_TYPES:
        return expr
    if catalog.server_version >= INPUT_CHECK_SINCE:
        valid = sql.SQL("pg_input_is_valid({}, 'timestamptz')").format(expr)
    else:
        valid = sql.SQL("{} ~ {}").format(expr, sql.Literal(ISO_TIME))
    return sql.SQL("(CASE WHEN {} THEN ({})::timestamptz END)").format(valid, expr)


def app_match(catalog: TableCatalog, app: sql.Composable) -> sql.Composable:
    """`app = %(app)s`, or with app names in another table: the app column in that table's keys of the name
    %(app)s (or of the key %(app)s, as text)."""
    names = catalog.app_names
    if names is None:
        return sql.SQL("{} = %(app)s").format(app)
    key, name = sql.Identifier(names.key), sql.Identifier(names.name)
    return sql.SQL("{app} IN (SELECT {key} FROM {t} WHERE ({name})::text = %(app)s OR ({key})::text = %(app)s)").format(
        app=app, key=key, name=name, t=sql.Identifier(names.schema, names.table))


def bind(layout: Layout, catalog: TableCatalog) -> Bound:
    sources = {name: layout.columns.source(name) for name in FIELDS}
    fields = {name: field_sql(src) for name, src in sources.items()}
    fields["time"] = time_sql(sources["time"], catalog)
    present = frozenset(n for n, s in sources.items() if s.column is not None or s.constant is not None)
    return Bound(
        table=sql.Identifier(catalog.schema, catalog.table), fields=fields, present=present, catalog=catalog,
        app_match=app_match(catalog, fields["app"]) if "app" in present else None,
    )


def count_rows(conn: psycopg.Connection, bound: Bound) -> None:
    """Fill the catalog's row counts: rows, NULL embeddings, rows of each dimension (one full scan)."""
    emb = bound.expr("embedding")
    rows = conn.execute(sql.SQL("SELECT vector_dims({e}), count(*) FROM {t} GROUP BY 1").format(
        e=emb, t=bound.table)).fetchall()  # fmt: skip
    catalog = bound.catalog
    dims = {int(d): int(n) for d, n in rows if d is not None}
    catalog.rows = sum(int(n) for _, n in rows)
    catalog.null_embeddings = sum(int(n) for d, n in rows if d is None)
    catalog.dimensions = dims
    if catalog.dimension is None and dims:
        catalog.dimension = max(dims, key=lambda d: dims[d])
    catalog.other_dimension = sum(n for d, n in dims.items() if d != catalog.dimension)
