"""The SQL docs/scaling.md shows runs against the embedded PostgreSQL: a user-hash-partitioned memory_unit with
memlab's columns and key, a per-tenant HNSW index on the tenant's partition, a scoped search that reads one
partition. memlab then opens, writes and searches on that table unchanged. The page includes the files this test
runs (docs/examples/scaling/), so the doc cannot drift from what works."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

import memlab
from memlab.events.units import Unit
from memlab.storage import units as sqlu
from memlab.storage.schema import MODELS_DDL, PRIMARY_KEY
from tests.conftest import ROOT

EXAMPLES = ROOT / "docs" / "examples" / "scaling"
APP, BIG, MODEL, LAYER, DIM = "acme", "big-user", "all-MiniLM-L6-v2", "event", 384
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def doc_blocks() -> dict[str, str]:
    """name -> SQL of each example file the page shows."""
    return {path.stem: path.read_text(encoding="utf-8").strip() for path in sorted(EXAMPLES.glob("*.sql"))}


def _unit_vectors(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _rows(model, user: str, vectors: np.ndarray) -> list[tuple]:
    scope = sqlu.Scope(APP, user, LAYER, model)
    return [
        sqlu.unit_row(scope, Unit("s1", f"e{i}", (f"e{i}",), "user", T0 + timedelta(minutes=i), f"{user} {i}"), v)
        for i, v in enumerate(vectors)
    ]


def _relations(plan: dict) -> set[str]:
    """Every relation a plan reads (scans of tables and of indexes), over the whole tree."""
    found = {plan["Relation Name"]} if "Relation Name" in plan else set()
    for child in plan.get("Plans", []):
        found |= _relations(child)
    return found


def _indexes_used(plan: dict) -> set[str]:
    found = {plan["Index Name"]} if "Index Name" in plan else set()
    for child in plan.get("Plans", []):
        found |= _indexes_used(child)
    return found


def test_the_page_shows_the_files_this_test_runs():
    assert list(doc_blocks()) == ["partitioning", "scoped-search", "tenant-index"]


@pytest.fixture
def partitioned(store, scratch_db):
    """A database with memlab's model registry and the doc's partitioned memory_unit, opened by memlab."""
    dsn = psycopg.conninfo.make_conninfo(store.dsn, dbname=scratch_db)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(MODELS_DDL)
        conn.execute(doc_blocks()["partitioning"])
    with memlab.open_store(dsn=dsn) as s:  # runs memlab's own DDL over the existing table
        yield s


def test_partitioned_table_keeps_memlabs_key_and_takes_memlabs_indexes(partitioned):
    with partitioned.connection() as conn:
        strategy, parts = conn.execute(
            "SELECT p.partstrat, (SELECT count(*) FROM pg_inherits WHERE inhparent = p.partrelid) "
            "FROM pg_partitioned_table p WHERE p.partrelid = 'memory_unit'::regclass"
        ).fetchone()
        assert (strategy, parts) == ("h", 8)
        key = conn.execute(
            "SELECT array_agg(a.attname ORDER BY k.i) FROM pg_constraint c "
            "CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, i) "
            "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum "
            "WHERE c.conrelid = 'memory_unit'::regclass AND c.conname = %s",
            [PRIMARY_KEY],
        ).fetchone()[0]
        assert key == ["app_name", "user_id", "layer", "session_id", "unit_id", "embed_model"]
        # memlab's scope index was added by its own DDL, as a partitioned index; full-text search reads the side
        # table (kept by statement triggers on the partitioned table) and its GIN index, not an index of the units.
        kinds = dict(
            conn.execute(
                "SELECT relname, relkind FROM pg_class WHERE relname IN ('memory_unit_scope', 'memory_unit_lexemes', "
                "'memory_unit_terms', 'memory_unit_terms_lexemes')"
            ).fetchall()
        )
        assert kinds == {"memory_unit_scope": "I", "memory_unit_terms": "r", "memory_unit_terms_lexemes": "i"}


def test_doc_search_reads_one_partition_and_the_tenant_index(partitioned):
    model = partitioned.register_model(MODEL, DIM)
    big = _unit_vectors(300, seed=1)
    with partitioned.transaction() as conn:
        assert sqlu.copy_rows(conn, _rows(model, BIG, big)) == 300
        for u in range(12):
            sqlu.copy_rows(conn, _rows(model, f"user-{u}", _unit_vectors(20, seed=10 + u)))
    with partitioned.transaction() as conn:
        assert sqlu.copy_rows(conn, _rows(model, BIG, big)) == 0  # the key holds across partitions
        partitions = {
            r[0] for r in conn.execute("SELECT DISTINCT tableoid::regclass::text FROM memory_unit").fetchall()
        }
        home = conn.execute(
            "SELECT DISTINCT tableoid::regclass::text FROM memory_unit WHERE user_id = %s", [BIG]
        ).fetchall()
    assert len(home) == 1 and len(partitions) > 1
    home_partition = home[0][0]

    blocks = doc_blocks()
    with partitioned.connection() as conn:
        conn.execute(blocks["tenant-index"])
        where = conn.execute(
            "SELECT tablename FROM pg_indexes WHERE indexname = 'memlab_tenant_acme_big_user'"
        ).fetchall()
    assert where == [(home_partition,)]

    search = blocks["scoped-search"]
    query = big[123] + 0.05 * _unit_vectors(1, seed=99)[0]
    with partitioned.transaction() as conn:
        register_vector(conn)
        # 300 rows are cheaper to sort than to walk a graph; pricing sorts out (as memlab's `hnsw` strategy
        # does) shows the planner can use the tenant's index for this statement, as it does for a big tenant.
        conn.execute("SET LOCAL enable_sort = off")
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + search, {"q": query}).fetchone()[0][0]["Plan"]
        assert _relations(plan) == {home_partition}
        assert _indexes_used(plan) == {"memlab_tenant_acme_big_user"}
        conn.execute("SET LOCAL hnsw.ef_search = 100")
        hits = conn.execute(search, {"q": query}).fetchall()
    assert len(hits) == 10 and hits[0][0] == "e123"


def test_memlabs_own_bound_search_is_pruned_to_one_partition(partitioned):
    model = partitioned.register_model(MODEL, DIM)
    with partitioned.transaction() as conn:
        for u in range(12):
            sqlu.copy_rows(conn, _rows(model, f"user-{u}", _unit_vectors(20, seed=10 + u)))
    partitioned.ensure_vector_index(MODEL, LAYER)  # a partitioned HNSW index: one graph per partition
    partitioned.analyze()
    scope = sqlu.Scope(APP, "user-3", LAYER, model)
    vector = _unit_vectors(1, seed=3)[0]
    for strategy in ("exact", "hnsw"):
        settings = memlab.SearchSettings(strategy=strategy)
        with partitioned.transaction() as conn:
            sqlu.apply_settings(conn, settings)
            plan = sqlu.explain_json(conn, scope, vector, settings)  # values bound, not inlined
            hits = sqlu.run_search(conn, scope, vector, settings)
        assert len(_relations(plan)) == 1, (strategy, _relations(plan))
        assert len(hits) == 10
    # memlab's per-tenant index on a partitioned table: one index per partition, from the parent.
    name = partitioned.create_tenant_index(MODEL, LAYER, APP, "user-3")
    with partitioned.connection() as conn:
        children = conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = to_regclass(%s)", [name]
        ).fetchone()[0]
    assert children == 8
