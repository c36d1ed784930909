"""The memory-unit table has one home for its SQL (memlab/storage/units.py), and the helpers there (per-tenant
partial index, layer delete, transaction-local search settings) work against the real embedded PostgreSQL."""

from __future__ import annotations

import ast
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import psycopg
import pytest

import memlab
import memlab.storage.unit_housekeeping as housekeeping
import memlab.storage.units as sqlu
from memlab.events.units import Unit
from memlab.storage.schema import UNITS_TABLE, ModelInfo

PACKAGE = Path(memlab.__file__).resolve().parent
ROOT = PACKAGE.parent
# The unit table's SQL lives in storage/units.py and the modules split from it along its sections.
OWNERS = ("memlab/storage/units.py", "memlab/storage/unit_table.py", "memlab/storage/unit_counts.py",
          "memlab/storage/unit_housekeeping.py", "memlab/storage/unit_lexical.py")
DEFINITION = "memlab/storage/schema.py"  # may define the UNITS_TABLE name, nothing more
# Still holds its own unit-table SQL; its replacement (units.delete_layer / Store.create_tenant_index) is
# applied by whoever owns memlab/lab/. Remove the entry once it is.
PENDING: set[str] = set()

_TABLE = re.compile(r"\bmemory_unit\b")
_SQL_WORD = re.compile(
    r"\b(select|insert|update|delete|create|alter|drop|analyze|vacuum|truncate|copy|from|into|join|table|index)\b",
    re.IGNORECASE,
)


def unit_table_sql(source: str, *, may_define: bool = False) -> list[str]:
    """Places in `source` that write SQL naming the unit table: any use of the UNITS_TABLE constant (it only
    exists to be composed into SQL), or a string literal naming memory_unit that reads as SQL or is passed
    to a call (e.g. sql.Identifier("memory_unit")). Docstrings and plain names (a dict key) are not SQL."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: list[str] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name) and node.id == "UNITS_TABLE":
            if not (may_define and isinstance(node.ctx, ast.Store)):
                found.append(f"{line}: uses UNITS_TABLE")
        elif isinstance(node, ast.Attribute) and node.attr == "UNITS_TABLE":
            found.append(f"{line}: uses .UNITS_TABLE")
        elif isinstance(node, ast.ImportFrom) and any(a.name == "UNITS_TABLE" for a in node.names):
            found.append(f"{line}: imports UNITS_TABLE")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _TABLE.search(node.value):
            parent = parents.get(node)
            if isinstance(parent, ast.JoinedStr):  # an f-string piece: judge the whole f-string's text
                parent = parents.get(parent)
            if isinstance(parent, ast.Expr):  # a docstring or bare string
                continue
            if _SQL_WORD.search(node.value) or isinstance(parent, ast.Call):
                found.append(f"{line}: SQL string naming memory_unit: {node.value.strip()[:60]!r}")
    return found


def test_only_units_module_writes_unit_table_sql():
    offenders: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in OWNERS or rel in PENDING:
            continue
        hits = unit_table_sql(path.read_text(encoding="utf-8"), may_define=rel == DEFINITION)
        if hits:
            offenders[rel] = hits
    assert not offenders, f"SQL on the {UNITS_TABLE} table belongs in {OWNERS}: {offenders}"


def test_owner_and_pending_files_exist():
    """The exclusions name real files, so a rename cannot silently widen or empty the check."""
    assert (ROOT / DEFINITION).is_file()
    for owner in OWNERS:
        assert (ROOT / owner).is_file()
        assert unit_table_sql((ROOT / owner).read_text(encoding="utf-8")), f"{owner} should hold the SQL"
    for rel in PENDING:
        assert (ROOT / rel).is_file(), f"{rel} is gone: drop it from PENDING"


@pytest.mark.parametrize(
    "source",
    [
        "from memlab.storage.schema import UNITS_TABLE\n",
        "q = sql.SQL('DELETE FROM {}').format(sql.Identifier(schema.UNITS_TABLE))\n",
        "conn.execute('ANALYZE memory_unit')\n",
        "q = f'SELECT count(*) FROM memory_unit WHERE layer = {layer}'\n",
        "q = sql.SQL('TRUNCATE {}').format(sql.Identifier('memory_unit'))\n",
        "UNITS_TABLE = 'memory_unit'\n",  # defining it anywhere but schema.py is a second source of truth
    ],
)
def test_checker_catches_unit_table_sql(source):
    assert unit_table_sql(source)


@pytest.mark.parametrize(
    "source",
    [
        'counts["memory_unit"] = 3\n',
        'def f():\n    """Deletes from memory_unit."""\n',
        "name = 'memory_unit_scope'\n",
        "row['memory_units'] = 1\n",
    ],
)
def test_checker_ignores_what_is_not_sql(source):
    assert not unit_table_sql(source)


def test_checker_allows_the_definition_in_schema():
    assert not unit_table_sql("UNITS_TABLE = 'memory_unit'\n", may_define=True)


# -- the workbench helpers on a real database ---------------------------------------------------------------

MODEL = "m-units-sql"
DIM = 4
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _load(store, model, rows: list[tuple[str, str, str, int]]) -> None:
    """(app, user, layer, n units) -> n rows with small random unit vectors."""
    rng = np.random.default_rng(0)
    out = []
    for app, user, layer, n in rows:
        scope = sqlu.Scope(app, user, layer, model)
        for i in range(n):
            unit = Unit(f"{user}-s", f"{user}-{i}", (f"{user}-e{i}",), "user", T0 + timedelta(minutes=i), f"row {i}")
            vector = rng.normal(size=DIM).astype(np.float32)
            out.append(sqlu.unit_row(scope, unit, vector / np.linalg.norm(vector)))
    with store.transaction() as conn:
        assert sqlu.copy_rows(conn, out) == len(out)


def _counts(store) -> dict[tuple[str, str], int]:
    with store.connection() as conn:
        rows = conn.execute("SELECT app_name, layer, count(*) FROM memory_unit GROUP BY 1, 2").fetchall()
    return {(a, layer): n for a, layer, n in rows}


def _unit_indexes(store) -> dict[str, str]:
    with store.connection() as conn:
        rows = conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memory_unit'").fetchall()
    return dict(rows)


def test_tenant_index_name_is_stable_and_distinct():
    name = sqlu.tenant_index_name("m", "event", "app", "alice")
    assert name == "memlab_tenant_bd5bd7c336f2e101", "the name must not change between processes or releases"
    assert re.fullmatch(r"memlab_tenant_[0-9a-f]{16}", name) and len(name) <= 63
    others = {
        sqlu.tenant_index_name("m", "event", "app", "bob"),
        sqlu.tenant_index_name("m", "chunk:4:1", "app", "alice"),
        sqlu.tenant_index_name("m2", "event", "app", "alice"),
        sqlu.tenant_index_name("m", "event", "app2", "alice"),
        sqlu.tenant_index_name("m", "event", "app|alice", ""),  # no separator ambiguity
    }
    assert name not in others and len(others) == 5


def test_create_tenant_index_is_partial_and_idempotent(scratch_store):
    model = scratch_store.register_model(MODEL, DIM)
    _load(scratch_store, model, [("app", "alice", "event", 30), ("app", "bob", "event", 5)])
    before = _unit_indexes(scratch_store)

    with scratch_store.transaction() as conn:
        name = sqlu.create_tenant_index(conn, model, "event", "app", "alice")
    assert name == sqlu.tenant_index_name(MODEL, "event", "app", "alice")
    after = _unit_indexes(scratch_store)
    assert set(after) - set(before) == {name}
    indexdef = after[name]
    assert "USING hnsw" in indexdef and f"vector({DIM})" in indexdef and "vector_cosine_ops" in indexdef
    for condition in (f"embed_model = '{MODEL}'", "layer = 'event'", "app_name = 'app'", "user_id = 'alice'"):
        assert condition in indexdef, indexdef

    # A second call (function or Store method) creates nothing and names the same index.
    with scratch_store.transaction() as conn:
        assert sqlu.create_tenant_index(conn, model, "event", "app", "alice") == name
    assert scratch_store.create_tenant_index(MODEL, "event", "app", "alice") == name
    assert _unit_indexes(scratch_store) == after

    # Statistics were refreshed by the call (ANALYZE), so the planner knows the table's size.
    with scratch_store.connection() as conn:
        analyzed = conn.execute(
            "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'memory_unit'"
        ).fetchone()[0]
    assert analyzed

    # Another tenant gets its own index.
    other = scratch_store.create_tenant_index(MODEL, "event", "app", "bob")
    assert other != name and other in _unit_indexes(scratch_store)


def test_delete_layer_removes_one_app_in_one_layer(scratch_store):
    model = scratch_store.register_model(MODEL, DIM)
    _load(
        scratch_store,
        model,
        [
            ("app", "alice", "event", 4),
            ("app", "bob", "event", 3),
            ("app", "alice", "chunk:4:1", 2),
            ("other-app", "alice", "event", 5),
        ],
    )
    with scratch_store.transaction() as conn:
        assert housekeeping.delete_layer(conn, "app", "event") == 7
    assert _counts(scratch_store) == {("app", "chunk:4:1"): 2, ("other-app", "event"): 5}

    with scratch_store.transaction() as conn:
        assert housekeeping.delete_layer(conn, "app", "event") == 0  # nothing left to delete
    assert scratch_store.delete_layer("other-app", "event") == 5
    assert _counts(scratch_store) == {("app", "chunk:4:1"): 2}


def test_tombstones_are_read_per_user_only_for_users_holding_any(scratch_store):
    """Users without a tombstone are left out before their ids are sent; the others are matched on their own app,
    user and session as before, never on another user's tombstone of the same event id."""
    with scratch_store.transaction() as conn:
        housekeeping.delete_memory(conn, "app", "a", "e1")  # found nowhere: tombstoned in every session of a
        housekeeping.delete_memory(conn, "app", "c", "e2", session_id="s1")
        wanted = {("app", "a", "s1"): ["e1", "e2"], ("app", "b", "s1"): ["e1", "e2"], ("other", "a", "s1"): ["e1"],
                  ("app", "c", "s1"): ["e1", "e2"], ("app", "c", "s2"): ["e2"]}  # fmt: skip
        assert housekeeping.tombstoned_of(conn, wanted) == {("app", "a", "s1", "e1"), ("app", "c", "s1", "e2")}
        assert housekeeping.tombstoned_of(conn, {("app", "b", "s1"): ["e1"]}) == set()
        assert housekeeping.tombstoned_of(conn, {}) == set()


def test_settings_are_in_effect_inside_the_transaction_and_do_not_leak(store):
    settings = memlab.SearchSettings(strategy="hnsw", ef_search=123, iterative_scan="strict_order", max_scan_tuples=777)
    with store.connection() as conn:
        conn.execute("SELECT '[1]'::vector")  # pgvector's settings exist once its library is loaded in the backend
        with conn.transaction():
            sqlu.apply_settings(conn, settings)
            inside = conn.execute(
                "SELECT current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan'), "
                "current_setting('hnsw.max_scan_tuples'), current_setting('enable_sort')"
            ).fetchone()
        after = conn.execute(
            "SELECT current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan'), "
            "current_setting('enable_sort')"
        ).fetchone()
    assert inside == ("123", "strict_order", "777", "off")
    assert after == ("40", "off", "on")
    with store.connection() as conn, conn.transaction():  # exact reads the scope index; one round trip sets all
        sqlu.apply_settings(conn, memlab.SearchSettings(strategy="exact"))
        assert conn.execute("SELECT current_setting('enable_seqscan'), current_setting('enable_sort'), "
                            "current_setting('plan_cache_mode')").fetchone() == ("off", "on", "force_custom_plan")
    with store.connection() as conn:
        assert conn.execute("SELECT current_setting('enable_seqscan')").fetchone()[0] == "on"


def test_settings_roll_back_when_the_search_fails(store):
    with store.connection() as conn:
        conn.execute("SELECT '[1]'::vector")
        with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
            sqlu.apply_settings(conn, memlab.SearchSettings(ef_search=99))
            conn.execute("SELECT 1/0")
        assert conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0] == "40"


# -- no statement mixes literals with placeholders -----------------------------------------------------------

_PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[sbt]")


def _is_literal_call(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Attribute) and func.attr == "Literal") or (
        isinstance(func, ast.Name) and func.id == "Literal"
    )


def _is_placeholder(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(_PLACEHOLDER.search(node.value))
    return (isinstance(node, ast.Attribute) and node.attr == "Placeholder") or (
        isinstance(node, ast.Name) and node.id == "Placeholder"
    )


def literal_and_placeholder_mixes(source: str) -> list[str]:
    """Functions (and module bodies) that build SQL with `sql.Literal` and also hold a placeholder (`%s`,
    `%(name)s`, `sql.Placeholder`): a literal holding `%(q)s` would then be read as a placeholder."""
    tree = ast.parse(source)
    scopes: list[tuple[str, list[ast.AST]]] = [("<module>", [])]
    own: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            scopes.append((f"{node.lineno}: {node.name}", []))
            for child in ast.walk(node):
                own[id(child)] = scopes[-1][0]  # innermost wins: inner functions are walked later
    by_name = dict(scopes)
    for node in ast.walk(tree):
        by_name[own.get(id(node), "<module>")].append(node)
    found = []
    for name, nodes in by_name.items():
        if any(_is_literal_call(n) for n in nodes) and any(_is_placeholder(n) for n in nodes):
            found.append(name)
    return found


def test_no_sql_in_memlab_mixes_literals_and_placeholders():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        hits = literal_and_placeholder_mixes(path.read_text(encoding="utf-8"))
        if hits:
            offenders[path.relative_to(ROOT).as_posix()] = hits
    assert not offenders, f"sql.Literal next to placeholders: {offenders}"


@pytest.mark.parametrize(
    "source",
    [
        "def f(app):\n    return sql.SQL('WHERE app = {} AND q = %(q)s').format(sql.Literal(app))\n",
        "def f(n):\n    return sql.SQL('SELECT 1 WHERE a = %s LIMIT {}').format(sql.Literal(n))\n",
        "def f(a):\n    return sql.SQL('{} {}').format(sql.Literal(a), sql.Placeholder('q'))\n",
        "from psycopg.sql import Literal, Placeholder\nq = SQL('{} {}').format(Literal(1), Placeholder())\n",
    ],
)
def test_mix_checker_catches_literals_beside_placeholders(source):
    assert literal_and_placeholder_mixes(source)


@pytest.mark.parametrize(
    "source",
    [
        "def ddl(m):\n    return sql.SQL('CREATE INDEX ... WHERE model = {}').format(sql.Literal(m))\n",
        "def q():\n    return sql.SQL('SELECT 1 WHERE a = %s')\n",
        "def f():\n    return sql.SQL('a = %s')\ndef g(m):\n    return sql.Literal(m)\n",
    ],
)
def test_mix_checker_ignores_literal_only_or_placeholder_only_sql(source):
    assert not literal_and_placeholder_mixes(source)


HOSTILE = ["%(q)s", "$1", "%s", "%(app)s", "o'brien %% 100%"]


def test_users_named_like_placeholders_get_only_their_own_rows(scratch_store):
    model = scratch_store.register_model(MODEL, DIM)
    scratch_store.ensure_vector_index(MODEL, "event")
    _load(scratch_store, model, [("app", user, "event", 6) for user in [*HOSTILE, "alice"]])
    query = np.array([1, 0, 0, 0], dtype=np.float32)
    for user in [*HOSTILE, "alice"]:
        scope = sqlu.Scope("app", user, "event", model)
        own = {f"{user}-{i}" for i in range(6)}
        for strategy in ("exact", "hnsw", "planner"):
            settings = memlab.SearchSettings(top_k=10, strategy=strategy)
            found = {}
            for literal in (False, True):
                with scratch_store.transaction() as conn:
                    sqlu.apply_settings(conn, settings)
                    hits = sqlu.run_search(conn, scope, query, settings, literal=literal)
                    plan = sqlu.explain_json(conn, scope, query, settings, literal=literal)
                assert {h.unit_id for h in hits} == own, (user, strategy, literal)
                assert plan["Actual Rows"] == 6, (user, strategy, literal)
                found[literal] = [(h.unit_id, round(h.distance, 6)) for h in hits]
            assert found[True] == found[False], "the inlined vector is the same vector"


def test_a_literal_search_inlines_every_value_and_takes_no_parameters(store):
    model = ModelInfo(MODEL, DIM)
    scope = sqlu.Scope("a%(q)s", "u%s", "event", model)
    vector = np.array([0.1, -0.2, 3e-8, 1.0], dtype=np.float32)
    query = sqlu.search_sql(model, "event", "exact", literal_scope=scope, vector=vector, top_k=7)
    with store.connection() as conn:
        text = query.as_string(conn)
    assert "'a%(q)s'" in text and "'u%s'" in text and "LIMIT 7" in text
    assert sqlu.vector_text(vector) in text
    np.testing.assert_array_equal(np.asarray(json.loads(sqlu.vector_text(vector)), dtype=np.float32), vector)
    with pytest.raises(ValueError, match="vector and top_k"):
        sqlu.search_sql(model, "event", "exact", literal_scope=scope)
    with pytest.raises(ValueError, match="NaN"):
        sqlu.vector_text(np.array([np.nan, 0, 0, 0], dtype=np.float32))


# -- a unit's identity includes its session; older tables are brought up to date --------------------------------

OLD_DDL = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE memlab_embedding_model (model_id text PRIMARY KEY, dimension integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE memory_unit (
    app_name text NOT NULL, user_id text NOT NULL, session_id text NOT NULL, layer text NOT NULL,
    unit_id text NOT NULL, event_ids text[] NOT NULL, author text, occurred_at timestamptz NOT NULL,
    body text NOT NULL, embed_model text NOT NULL REFERENCES memlab_embedding_model (model_id),
    embedding vector NOT NULL,
    CONSTRAINT memory_unit_once PRIMARY KEY (app_name, user_id, layer, unit_id, embed_model));
CREATE TABLE memory_tombstone (app_name text NOT NULL, user_id text NOT NULL, event_id text NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (app_name, user_id, event_id));
INSERT INTO memlab_embedding_model VALUES ('m-old', 4);
INSERT INTO memory_unit VALUES ('app', 'u', 's1', 'event', 'e1', '{e1}', 'user', '2026-01-01', 'first body',
    'm-old', '[1,0,0,0]');
INSERT INTO memory_tombstone (app_name, user_id, event_id) VALUES ('app', 'u', 'e9');
"""


def _key_columns(conn, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT a.attname FROM pg_constraint c CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(num, pos) "
        "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.num "
        "WHERE c.conrelid = %s::regclass AND c.contype = 'p' ORDER BY k.pos",
        [table],
    ).fetchall()
    return [r[0] for r in rows]


def test_tables_of_the_old_shape_get_the_session_into_their_keys(store, scratch_db):
    dsn = psycopg.conninfo.make_conninfo(store.dsn, dbname=scratch_db)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(OLD_DDL)
    with memlab.open_store(dsn=dsn) as upgraded, memlab.open_store(dsn=dsn):  # a second open changes nothing
        with upgraded.connection() as conn:
            assert _key_columns(conn, "memory_unit") == [
                "app_name", "user_id", "layer", "session_id", "unit_id", "embed_model"
            ]  # fmt: skip
            assert _key_columns(conn, "memory_tombstone") == ["app_name", "user_id", "event_id", "session_id"]
            assert conn.execute("SELECT session_id FROM memory_tombstone").fetchall() == [("",)]
        model = upgraded.model("m-old")
        unit = Unit("s2", "e1", ("e1",), "user", T0, "same id, other session")
        with upgraded.transaction() as conn:
            assert (
                sqlu.copy_rows(conn, [sqlu.unit_row(sqlu.Scope("app", "u", "event", model), unit, np.eye(4)[1])]) == 1
            )
            found = housekeeping.tombstoned_of(conn, {("app", "u", "s5"): ["e9", "e1"]})
            assert found == {("app", "u", "s5", "e9")}, "an old tombstone: any session"


def test_a_row_stored_with_an_unreadable_timestamp_cannot_break_its_users_searches(scratch_store):
    """EventMemory refuses such timestamps now; a row written before it did (year 10000 in UTC) is clamped."""
    model = scratch_store.register_model(MODEL, DIM)
    scope = sqlu.Scope("app", "u", "event", model)
    far = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5)))
    rows = [
        sqlu.unit_row(scope, Unit("s", "far", ("far",), "user", far, "from the far future"), np.eye(DIM)[0]),
        sqlu.unit_row(scope, Unit("s", "now", ("now",), "user", T0, "from now"), np.eye(DIM)[1]),
    ]
    with scratch_store.transaction() as conn:
        sqlu.copy_rows(conn, rows)
    settings = memlab.SearchSettings(strategy="exact")
    with scratch_store.transaction() as conn:
        hits = sqlu.run_search(conn, scope, np.eye(DIM)[0].astype(np.float32), settings)
    assert [h.unit_id for h in hits] == ["far", "now"]
    assert hits[0].timestamp == datetime.max.replace(tzinfo=UTC) and hits[1].timestamp == T0
