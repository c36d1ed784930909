"""The store against the real embedded PostgreSQL: pgvector checks, clear errors, model registry."""

from __future__ import annotations

import uuid

import psycopg
import pytest

import memlab
from memlab.errors import ExtensionError
from memlab.storage.store import check_vector_version, parse_version


def _dsn_for(store, dbname: str, **extra: str) -> str:
    return psycopg.conninfo.make_conninfo(store.dsn, dbname=dbname, **extra)


def test_parse_version_handles_suffixes():
    assert parse_version("0.8.5") == (0, 8, 5)
    assert parse_version("0.8.0-dev") == (0, 8, 0)
    assert parse_version("0.10.1") > parse_version("0.8.5")


def test_version_check_accepts_current_and_rejects_old():
    check_vector_version("0.8.0")
    check_vector_version("0.8.5")
    with pytest.raises(ExtensionError, match=r"0\.7\.4 is too old.*>= 0\.8\.0.*ALTER EXTENSION vector UPDATE"):
        check_vector_version("0.7.4")
    with pytest.raises(ExtensionError, match="not installed"):
        check_vector_version(None)


def test_embedded_store_has_pgvector_085(store):
    assert store.embedded
    assert parse_version(store.vector_version) >= (0, 8, 0)


def test_old_pgvector_in_a_real_database_gives_clear_error(store, scratch_db):
    with psycopg.connect(_dsn_for(store, scratch_db), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
        # Make this database's catalog claim an older release: the check must read what the server reports.
        conn.execute("UPDATE pg_extension SET extversion = '0.7.4' WHERE extname = 'vector'")
    with pytest.raises(memlab.errors.ExtensionError) as err:
        memlab.open_store(dsn=_dsn_for(store, scratch_db))
    assert "0.7.4" in str(err.value) and "0.8.0" in str(err.value)


def test_missing_extension_that_cannot_be_created_gives_clear_error(store):
    role = f"noext_{uuid.uuid4().hex[:8]}"
    db = f"noext_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'CREATE DATABASE "{db}" OWNER "{role}"')
    try:
        with pytest.raises(ExtensionError, match=r"not installed.*CREATE EXTENSION vector"):
            memlab.open_store(dsn=_dsn_for(store, db, user=role))
        with psycopg.connect(_dsn_for(store, db), autocommit=True) as conn:
            tables = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'memory_unit'").fetchone()[0]
        assert tables == 0, "nothing may be created when the extension check fails"
    finally:
        with psycopg.connect(store.dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_database_down_names_the_problem_and_the_fix():
    with pytest.raises(memlab.DatabaseUnavailableError) as err:
        memlab.open_store(dsn="postgresql://memlab:secret@127.0.0.1:1/nowhere?connect_timeout=2")
    message = str(err.value)
    assert "Cannot connect" in message and "MEMLAB_DSN" in message
    assert "secret" not in message, "the password must not leak into the error"


def test_store_reports_clear_error_for_env_dsn(monkeypatch):
    monkeypatch.setenv("MEMLAB_DSN", "postgresql://127.0.0.1:1/nowhere?connect_timeout=2")
    with pytest.raises(memlab.DatabaseUnavailableError):
        memlab.open_store()


def test_fresh_database_gets_schema_and_reopens(store, scratch_db):
    dsn = _dsn_for(store, scratch_db)
    with memlab.open_store(dsn=dsn) as first:
        first.register_model("m-test", 8)
        first.ensure_vector_index("m-test", "event")
    with memlab.open_store(dsn=dsn) as second:  # idempotent schema creation
        assert [m.model_id for m in second.models()] == ["m-test"]
        assert second.has_vector_index("m-test", "event")
        assert second.vector_indexes("m-test") == {"event": second.vector_indexes("m-test")["event"]}


def test_registering_a_model_with_another_dimension_is_refused(store):
    model_id = f"model-{uuid.uuid4().hex[:6]}"
    store.register_model(model_id, 16)
    with pytest.raises(memlab.DimensionError, match=r"registered with dimension 16.*gives 32-d"):
        store.register_model(model_id, 32)


def test_unique_keys_all_include_user_id(store):
    """Shardable by user: every unique index on memory_unit contains user_id."""
    with store.connection() as conn:
        rows = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_unit' AND indexdef LIKE 'CREATE UNIQUE%'"
        ).fetchall()
    assert rows
    assert all("user_id" in r[0] for r in rows)
