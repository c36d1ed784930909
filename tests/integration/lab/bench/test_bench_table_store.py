"""`memlab bench --size ci --part table-store` on the real embedded PostgreSQL and the real model: the agent_memory
table is built in a database of its own, `memlab eval` runs on it as a SELECT-only role, memlab's search is timed
against the bare SELECT, bench.json and bench.md get the table store's figures and section, and the database and
role are gone afterwards. Only ratios and recalls are checked, never a time."""

from __future__ import annotations

import json
import math

import pandas as pd
import psycopg
import pytest
from typer.testing import CliRunner

from memlab.cli import app
from memlab.lab.bench.table_store import TABLE_SIZES

CI = TABLE_SIZES["ci"]


@pytest.fixture(scope="module")
def bench(store, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-table") / "ci"
    result = CliRunner().invoke(app, ["bench", "--size", "ci", "--part", "table-store", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "bench.json").read_text())
    return {"out": out, "meta": data["meta"], "results": data["results"], "md": (out / "bench.md").read_text(),
            "output": result.output}  # fmt: skip


def test_the_table_is_large_enough_and_its_users_vary(bench):
    r = bench["results"]
    assert bench["meta"]["parts"] == ["table-store"]
    assert 800 <= r["table_store.rows"] <= 10_000 and r["table_store.users"] == CI.users
    assert r["table_store.user_rows_min"] <= 10 and r["table_store.user_rows_max"] >= 100
    assert 0 < r["table_store.answerable"] < r["table_store.questions"], "answerable and no-answer questions"
    assert r["table_store.hnsw_bytes"] > 0


def test_recall_against_the_labels_and_against_faiss_exact(bench):
    r = bench["results"]
    assert r["table_store.exact.recall_vs_exact"] == 1.0, "the table's exact search is FAISS exact's top 10"
    assert r["table_store.exact.recall@10"] == pytest.approx(r["table_store.faiss_exact.recall@10"])
    assert 0.3 < r["table_store.exact.recall@10"] <= 1.0
    assert 0.9 <= r["table_store.hnsw.recall_vs_exact"] <= 1.0
    for scan in CI.iterative_scan:
        for ef in CI.ef_search:
            assert 0.0 <= r[f"table_store.grid.ef{ef}.{scan}.recall_vs_exact"] <= 1.0
            assert math.isfinite(r[f"table_store.grid.ef{ef}.{scan}.p50_vs_faiss_exact"])
    # the filtered-search trap: one index shared by every user, walked without an iterative scan
    low = min(CI.ef_search)
    grid = f"table_store.grid.ef{low}"
    assert r[f"{grid}.off.recall_vs_exact"] < r[f"{grid}.relaxed_order.recall_vs_exact"]


def test_plans_cutoff_and_timing_figures(bench):
    r = bench["results"]
    assert r["table_store.explain.hnsw.largest.index_used"] == 1.0
    assert r["table_store.explain.exact.largest.index_used"] == 0.0
    assert r["table_store.explain.exact.smallest.rows"] <= r["table_store.explain.exact.largest.rows"]
    for system in ("exact", "hnsw"):
        assert 0.0 <= r[f"table_store.cutoff.{system}.recall_at_recommended"] <= 1.0
        assert f"table_store.cutoff.{system}.recommended_max_distance" in r
        for figure in ("p50_ratio", "p50_ratio_low", "p50_ratio_high", "app_ratio", "memlab_vs_app", "p95_ratio"):
            value = r[f"table_store.timing.{system}.{figure}"]
            assert math.isfinite(value) and value > 0, (system, figure, value)
        assert r[f"table_store.timing.{system}.p50_ratio_low"] <= r[f"table_store.timing.{system}.p50_ratio"]
    assert r["table_store.timing.exact.same_results"] == 1.0, "memlab and the bare SELECT return the same rows"
    # memlab probe --store ran on the same questions, as a user runs it, and says what it measured
    assert r["table_store.probe.questions"] == CI.timed_questions
    for figure in ("p50_ratio_to_bare_sql", "ratio_to_bare_sql", "p50_seconds_per_question"):
        assert math.isfinite(r[f"table_store.probe.{figure}"]) and r[f"table_store.probe.{figure}"] > 0, figure
    probe = json.loads((bench["out"] / "table-store" / "probe" / "run" / "manifest.json").read_text())["probe"]
    assert probe["timing"]["p50_ratio_to_bare_sql"] == pytest.approx(r["table_store.probe.p50_ratio_to_bare_sql"])
    timing = pd.read_csv(bench["out"] / "table_store_timing.csv")
    assert set(timing.system) == {"exact", "hnsw"} and set(timing.verdict) <= {"met", "missed", "within noise"}
    grid = pd.read_csv(bench["out"] / "table_store_grid.csv")
    assert len(grid) == len(CI.ef_search) * len(CI.iterative_scan)


def test_bench_md_has_the_section_and_the_run_folder_its_report(bench):
    md = bench["md"]
    assert "`memlab probe --store`" in md
    for heading in ("## Table store", "### ef_search x iterative scan", "### Recall by memory size",
                    "### Plans of the smallest and the largest user", "### memlab against the bare statement"):
        assert heading in md, heading
    assert "## Ingest" not in md and "## Headline" not in md, "--part table-store runs that part only"
    assert "Cut-off" in md
    report = (bench["out"] / "table-store" / "run" / "report.md").read_text()
    assert "### table (agent-table)" in report


def test_the_database_and_the_role_are_dropped(bench, store):
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        databases = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'memlab_bench_table_%'").fetchall()
        roles = conn.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE 'memlab_bench_reader_%'").fetchall()
    assert databases == [] and roles == []
    manifest = (bench["out"] / "table-store" / "run" / "manifest.json").read_text()
    assert "MEMLAB_BENCH_TABLE_DSN" in manifest, "the run read the reader's DSN from the variable"
    assert "password" not in manifest and "memlab_bench_reader_" not in manifest, "and never wrote it"


def test_an_unknown_part_is_refused_before_anything_is_written(tmp_path):
    result = CliRunner().invoke(app, ["bench", "--part", "tables", "--out", str(tmp_path / "b")])
    assert result.exit_code == 2
    assert "bench part(s) ['tables'] unknown" in " ".join(result.output.split()) and "Traceback" not in result.output
    assert not (tmp_path / "b").exists()
