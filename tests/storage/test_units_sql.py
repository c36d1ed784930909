"""The memory-unit table has one home for its SQL (memlab/storage/units.py), and the helpers there (per-tenant
partial index, layer delete, transaction-local search settings) work against the real embedded PostgreSQL."""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import psycopg
import pytest

import memlab
import memlab.storage.units as sqlu
from memlab.events.units import Unit
from memlab.storage.schema import UNITS_TABLE

PACKAGE = Path(memlab.__file__).resolve().parent
ROOT = PACKAGE.parent
OWNER = "memlab/storage/units.py"
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
        if rel == OWNER or rel in PENDING:
            continue
        hits = unit_table_sql(path.read_text(encoding="utf-8"), may_define=rel == DEFINITION)
        if hits:
            offenders[rel] = hits
    assert not offenders, f"SQL on the {UNITS_TABLE} table belongs in {OWNER}: {offenders}"


def test_owner_and_pending_files_exist():
    """The exclusions name real files, so a rename cannot silently widen or empty the check."""
    assert (ROOT / OWNER).is_file() and (ROOT / DEFINITION).is_file()
    assert unit_table_sql((ROOT / OWNER).read_text(encoding="utf-8")), "the owner module should hold the SQL"
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
        assert sqlu.delete_layer(conn, "app", "event") == 7
    assert _counts(scratch_store) == {("app", "chunk:4:1"): 2, ("other-app", "event"): 5}

    with scratch_store.transaction() as conn:
        assert sqlu.delete_layer(conn, "app", "event") == 0  # nothing left to delete
    assert scratch_store.delete_layer("other-app", "event") == 5
    assert _counts(scratch_store) == {("app", "chunk:4:1"): 2}


def test_settings_are_in_effect_inside_the_transaction_and_do_not_leak(store):
    settings = memlab.SearchSettings(strategy="hnsw", ef_search=123, iterative_scan="strict_order", max_scan_tuples=777)
    with store.connection() as conn:
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


def test_settings_roll_back_when_the_search_fails(store):
    with store.connection() as conn:
        with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
            sqlu.apply_settings(conn, memlab.SearchSettings(ef_search=99))
            conn.execute("SELECT 1/0")
        assert conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0] == "40"
