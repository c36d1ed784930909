"""A read-only store (what `memlab probe` opens): a role with SELECT only, it searches and writes nothing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import psycopg
import pytest

import memlab
from tests.conftest import make_session


def select_only_role(store: memlab.Store) -> str:
    """A new LOGIN role with CONNECT, schema USAGE and SELECT on every table of the store's database: its DSN."""
    role = f"probe_{uuid.uuid4().hex[:8]}"
    dbname = psycopg.conninfo.conninfo_to_dict(store.dsn).get("dbname") or "postgres"
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'probe-pw'")
        conn.execute(f'GRANT CONNECT ON DATABASE "{dbname}" TO {role}')
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    return psycopg.conninfo.make_conninfo(store.dsn, user=role, password="probe-pw")


@pytest.fixture(scope="module")
def filled(store, embedder):
    app = f"ro-{uuid.uuid4().hex[:8]}"
    memory = memlab.EventMemory(store, embedder)
    memory.add_session(make_session(app, "u1", "s1", ["I moved to Lyon last spring.", "Nice, how is the city?",
                                                      "My sister Ana plays the cello."]))  # fmt: skip
    return app, select_only_role(store)


def test_select_only_role_searches_a_read_only_store(filled, embedder):
    app, dsn = filled
    with memlab.open_store(dsn, read_only=True) as ro:
        hits = memlab.EventMemory(ro, embedder).search(app, "u1", "Where do I live?")
        assert hits and hits[0].event_ids == ("s1-e0",)


def test_writes_to_a_read_only_store_are_refused_clearly(filled, embedder, store):
    app, _ = filled
    with memlab.open_store(store.dsn, read_only=True) as ro:  # a superuser, but the store is read-only
        memory = memlab.EventMemory(ro, embedder)
        with pytest.raises(memlab.ConfigError, match="read-only"):
            memory.add_session(make_session(app, "u1", "s9", ["A new memory that must not be written."]))
        with pytest.raises(memlab.ConfigError, match="read-only"):
            ro.analyze()
    with memlab.open_store(store.dsn, read_only=True) as ro:
        assert memlab.EventMemory(ro, embedder).search(app, "u1", "new memory written") is not None
    assert memlab.EventMemory(store, embedder).count(app, "u1") == 3


class OtherModel:
    """The packaged model under a model id the store never saw."""

    def __init__(self, inner):
        self.inner = inner
        self.model_id = "never-stored-model"
        self.dimension = inner.dimension

    def embed_documents(self, texts):
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_unknown_model_is_named_with_the_models_the_store_has(filled, embedder):
    _, dsn = filled
    with memlab.open_store(dsn, read_only=True) as ro, pytest.raises(memlab.ConfigError) as err:
        memlab.EventMemory(ro, OtherModel(embedder))
    assert "never-stored-model" in str(err.value) and embedder.model_id in str(err.value)


def test_a_database_without_memlab_tables_is_named(store, scratch_db):
    dsn = psycopg.conninfo.make_conninfo(store.dsn, dbname=scratch_db)
    with pytest.raises(memlab.ConfigError, match="memory_unit"):
        memlab.open_store(dsn, read_only=True)
    with psycopg.connect(dsn) as conn:  # nothing was created
        assert conn.execute("SELECT to_regclass('memory_unit')").fetchone()[0] is None


def test_fact_memory_on_a_read_only_store_creates_nothing(store, scratch_db, embedder):
    dsn = psycopg.conninfo.make_conninfo(store.dsn, dbname=scratch_db)
    memlab.open_store(dsn).close()  # event memory's tables, not fact memory's
    with memlab.open_store(dsn, read_only=True) as ro, pytest.raises(memlab.ConfigError, match="semantic_fact"):
        memlab.FactMemory(ro, embedder)


@pytest.mark.parametrize("settings", [
    memlab.SearchSettings(strategy="hnsw"), memlab.SearchSettings(strategy="exact"),
    memlab.SearchSettings(strategy="planner"), memlab.SearchSettings(mode="lexical"),
    memlab.SearchSettings(mode="hybrid", time="boost", per_session=1), memlab.SearchSettings(literal_scope=True),
], ids=["hnsw", "exact", "planner", "lexical", "hybrid-time-cap", "literal"])  # fmt: skip
def test_every_search_path_runs_with_select_only(filled, embedder, settings):
    app, dsn = filled
    with memlab.open_store(dsn, read_only=True) as ro:
        hits = memlab.EventMemory(ro, embedder).search(app, "u1", "my sister Ana and her cello", settings,
                                                       asked_at=datetime(2026, 3, 3, tzinfo=UTC))  # fmt: skip
        assert hits and "s1-e2" in {e for h in hits for e in h.event_ids}
