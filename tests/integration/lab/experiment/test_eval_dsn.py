"""`--dsn` names a server to work on, not a database to take over: `memlab eval --dsn` and `memlab judge pool --dsn`
on a database without memlab's tables (and without the vector extension) run in a scratch database of their own on
that server and leave the database they were given exactly as it was; a role that may not create a database is
refused with one line naming the fix, and still nothing is created."""

from __future__ import annotations

import json

import psycopg
import pytest
import yaml
from typer.testing import CliRunner

from memlab.cli import app
from tests.conftest import ROOT
from tests.integration.lab.judging.test_pool import QUERIES, write_config, write_queries, write_sessions
from tests.support.table_store import catalog_snapshot, drop_role, own_database, select_only_role

EXAMPLE_JSONL = ROOT / "fixtures" / "jsonl" / "example.jsonl"
PASSWORD = "Pw-9913-kd"


@pytest.fixture
def plain(store):
    """A database of the test server holding one table of someone else's and no extension at all."""
    with own_database(store.dsn, "evaldsn", vector=False) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE orders (id bigint PRIMARY KEY, item text)")
            conn.execute("INSERT INTO orders VALUES (1, 'tea'), (2, 'rice')")
            conn.execute("ANALYZE orders")
        yield dsn


def _config(tmp_path) -> str:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({"name": "tiny-dsn", "k": 5, "plots": False, "sweeps": [],
                                    "datasets": [{"name": "ex", "format": "memlab", "path": str(EXAMPLE_JSONL)}],
                                    "systems": [{"name": "event", "granularity": "event", "strategy": "exact"}]}))
    return str(path)


def _databases(dsn: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {name for (name,) in conn.execute("SELECT datname FROM pg_database").fetchall()}


def test_eval_with_a_dsn_runs_on_its_server_and_leaves_the_database_as_it_was(plain, tmp_path, memlab_home):
    before = catalog_snapshot(plain)
    databases = _databases(plain)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--config", _config(tmp_path), "--dsn", plain, "--out", str(out)])
    assert result.exit_code == 0, result.output
    after = catalog_snapshot(plain)
    assert after == before
    assert after["extensions"] == [("plpgsql", "1.0")], "no vector extension was created"
    assert {name for _, name, _, _ in after["relations"]} == {"orders", "orders_pkey"}, "no memlab table"
    assert _databases(plain) == databases, "the run's scratch database was dropped"
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0.0 < metrics["ex/event/recall@5"] <= 1.0  # the run itself ran, in its scratch database
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["versions"]["pgvector"]


def test_judge_pool_with_a_dsn_leaves_the_database_as_it_was(plain, tmp_path, memlab_home):
    write_sessions(tmp_path / "logs.jsonl", "pool-dsn")
    config = write_config(tmp_path / "exp.yaml", tmp_path / "logs.jsonl")
    queries = write_queries(tmp_path / "queries.jsonl", "pool-dsn", QUERIES)
    before = catalog_snapshot(plain)
    result = CliRunner().invoke(app, ["judge", "pool", "--config", str(config), "--queries", str(queries), "--depth",
                                      "2", "--out", str(tmp_path / "pool.json"), "--dsn", plain])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert catalog_snapshot(plain) == before
    pool = json.loads((tmp_path / "pool.json").read_text())
    assert all(q["hits"] for q in pool["queries"]) and [s["name"] for s in pool["systems"]] == ["event", "chunk3"]


def test_a_role_that_cannot_create_a_database_is_refused_and_nothing_is_created(plain, tmp_path, memlab_home):
    role, dsn = select_only_role(plain, ["orders"], password=PASSWORD)
    try:
        before = catalog_snapshot(plain)
        out = tmp_path / "run"
        result = CliRunner().invoke(app, ["eval", "--config", _config(tmp_path), "--dsn", dsn, "--out", str(out)])
        assert result.exit_code == 2, result.output
        text = " ".join(result.output.split())
        assert text.count("error:") == 1 and "Cannot create a scratch database for this run" in text
        assert "writes nothing to the one the DSN names" in text and "grant CREATEDB to this role" in text
        assert PASSWORD not in result.output
        assert catalog_snapshot(plain) == before
        assert not list(out.glob("runs/*")), "nothing was asked"
    finally:
        drop_role(plain, role)
