"""Index health of a live store: which strategy `auto` picks per user-size bucket and what the plan
really uses, HNSW index size against the table, and rows under another model id than the configured one (a
half-done migration). Read-only: the checks run as a role that may only SELECT."""

from __future__ import annotations

import uuid

import numpy as np
import psycopg
import pytest

import memlab
from memlab.lab.live.index_health import health_markdown, index_health
from tests.conftest import make_session

OTHER_MODEL = "other-model@v2"
# Tiny thresholds so a handful of rows show every strategy: <=20 units exact, a user's own partial index where
# one exists, else the shared HNSW index (the walk rule never sends 60 units back to exact with these values).
POLICY = memlab.AutoPolicy(exact_below=20, tenant_index_above=50, ef_search=10, tenant_ef_search=40,
                           max_scan_tuples=100, scan_factor=0.01)  # fmt: skip


class Renamed:
    """The real embedder under another model id, same dimension: rows of a second model, as a migration leaves."""

    def __init__(self, inner, model_id: str) -> None:
        self.inner, self._model_id = inner, model_id

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def _texts(n: int) -> list[str]:
    return [f"On day {i} I walked to the market and bought {i} apples for the pie." for i in range(n)]


@pytest.fixture(scope="module")
def live(store, embedder):
    """A store of its own database: app A has a small user (3 units) and a mid user (60 units, with a partial
    index); app B a mid user without one; 3 rows of A's small user under a second model id."""
    name = f"health_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = psycopg.conninfo.make_conninfo(store.dsn, dbname=name)
    role = f"probe_ro_{uuid.uuid4().hex[:8]}"
    apps = (f"app-a-{uuid.uuid4().hex[:6]}", f"app-b-{uuid.uuid4().hex[:6]}")
    try:
        with memlab.open_store(dsn=dsn) as s:
            s.save_auto_policy(POLICY)
            mem = memlab.EventMemory(s, embedder)
            mem.add_sessions([make_session(apps[0], "small-user", "s1", _texts(3)),
                              make_session(apps[0], "mid-user", "s1", _texts(60)),
                              make_session(apps[1], "mid-user", "s1", _texts(60))])  # fmt: skip
            s.create_tenant_index(embedder.model_id, mem.layer, apps[0], "mid-user")
            other = memlab.EventMemory(s, Renamed(embedder, OTHER_MODEL))
            other.add_session(make_session(apps[0], "small-user", "s1", _texts(3)))
            s.analyze()
            layer = mem.layer
        with psycopg.connect(dsn, autocommit=True) as conn:  # a role that may read memlab's tables and nothing more
            conn.execute(f"CREATE ROLE {role} LOGIN")
            conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        yield {"dsn": dsn, "ro_dsn": psycopg.conninfo.make_conninfo(dsn, user=role), "apps": apps, "layer": layer,
               "model": embedder.model_id}  # fmt: skip
    finally:
        with psycopg.connect(store.dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.fixture(scope="module")
def health(live):
    """The health of the live store, read by the SELECT-only role: any write (a fold of the kept counts, an index,
    a table) would fail with a permission error."""
    return index_health(live["ro_dsn"], layer=live["layer"], model_id=live["model"])


def _bucket(health, app: str, bucket: str) -> dict:
    rows = health.buckets[(health.buckets.app == app) & (health.buckets.bucket == bucket)]
    assert len(rows) == 1, health.buckets
    return rows.iloc[0].to_dict()


def test_buckets_show_the_strategy_auto_picks_and_what_the_plan_uses(health, live):
    a, b = live["apps"]
    small, mid, other = _bucket(health, a, "<=50"), _bucket(health, a, "51-500"), _bucket(health, b, "51-500")
    assert (small["users"], small["rows"], small["strategy"], small["plan_uses"]) == (1, 3, "exact", "exact scan")
    assert (mid["users"], mid["rows"], mid["per_user_indexes"]) == (1, 60, 1)
    assert (mid["strategy"], mid["plan_uses"]) == ("tenant-index", "partial index")
    assert (other["per_user_indexes"], other["strategy"], other["plan_uses"]) == (0, "hnsw", "HNSW index")
    assert health.buckets.as_expected.all()
    assert len(health.buckets) == 3  # the second model's rows are not users of the configured model


def test_index_sizes_against_the_table(health, live):
    shared = health.indexes[(health.indexes.kind == "shared") & (health.indexes.model_id == live["model"])]
    assert len(shared) == 1 and shared.iloc[0]["rows"] == 123
    assert shared.iloc[0]["index_bytes"] > 0 and shared.iloc[0]["table_bytes"] > 0 and shared.iloc[0]["ratio"] > 0
    per_user = health.indexes[health.indexes.kind == "per-user"]
    assert per_user["indexes"].sum() == 1 and (per_user["index_bytes"] > 0).all()


def test_rows_under_another_model_are_a_half_done_migration(health, live):
    models = health.models.set_index("model_id")
    assert models.loc[OTHER_MODEL, "rows"] == 3 and bool(models.loc[OTHER_MODEL, "differs_from_configured"])
    assert models.loc[live["model"], "rows"] == 123 and not models.loc[live["model"], "differs_from_configured"]
    [warning] = [w for w in health.warnings if OTHER_MODEL in w]
    assert "3 rows" in warning and "migrate_embeddings" in warning and "drop_model" in warning


def test_no_warning_without_a_second_model(live):
    """Scoped to app B, which holds no row of the second model: no migration warning."""
    health = index_health(live["ro_dsn"], layer=live["layer"], model_id=live["model"], apps=[live["apps"][1]])
    assert set(health.buckets.app) == {live["apps"][1]}
    assert not [w for w in health.warnings if OTHER_MODEL in w] and health.models.rows.sum() == 60


def test_markdown_names_buckets_and_warnings_but_no_user(health, live):
    text = health_markdown(health)
    assert text.startswith("## Index health")
    assert OTHER_MODEL in text and "partial index" in text and "51-500" in text
    assert "mid-user" not in text and "small-user" not in text  # user ids are personal data


def test_a_database_without_memlab_tables_is_a_clear_error(store, scratch_db):
    dsn = psycopg.conninfo.make_conninfo(store.dsn, dbname=scratch_db)
    with pytest.raises(memlab.ConfigError, match="no memlab tables"):
        index_health(dsn, layer="event", model_id="any")


def test_a_dropped_hnsw_index_is_named_with_its_fix(scratch_store, embedder, app_name):
    """`auto` sends a 30-unit user to the shared index, which was dropped (say for a bulk load) and never rebuilt:
    the plan falls back to an exact scan, and the warnings say so and how to rebuild it."""
    scratch_store.save_auto_policy(POLICY)
    mem = memlab.EventMemory(scratch_store, embedder)
    mem.add_session(make_session(app_name, "u", "s1", _texts(30)))
    scratch_store.drop_vector_index(embedder.model_id, mem.layer)
    health = index_health(scratch_store.dsn, layer=mem.layer, model_id=embedder.model_id)
    [bucket] = health.buckets.to_dict("records")
    assert (bucket["strategy"], bucket["plan_uses"], bucket["as_expected"]) == ("hnsw", "exact scan", False)
    assert any("no HNSW index" in w and "ensure_vector_index" in w for w in health.warnings), health.warnings
    assert any("the plan uses exact scan" in w for w in health.warnings), health.warnings
