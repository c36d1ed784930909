"""`memlab eval` end to end on the shipped fixtures, into a temporary report folder."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from memlab.cli import app
from tests.conftest import EVENT_FIXTURES


def test_eval_writes_a_report_with_recall_against_faiss_exact(tmp_path, memlab_home, store):
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["eval", "--suite", "fixtures", "--fixtures", str(EVENT_FIXTURES), "--out", str(out), "--bench-repeat", "1"],
    )
    assert result.exit_code == 0, result.output
    for name in ("report.md", "summary.csv", "questions.csv", "metrics.json", "manifest.json"):
        assert (out / name).exists(), name
    summary = pd.read_csv(out / "summary.csv")
    exact = summary[(summary.config == "pg_exact")]
    assert (exact.recall_vs_exact == 1.0).all(), "pgvector exact must agree with FAISS exact"
    relaxed = summary[summary.config == "hnsw_ef40_relaxed"]
    assert (relaxed.recall_vs_exact >= 0.95).all()
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["ingest.raw_encode_per_s"] > 0 and metrics["ingest.ingest_units_per_s"] > 0
    assert "event.hnsw_ef40_off.recall_vs_exact" in metrics and "event.auto.recall" in metrics
    assert "FAISS" in (out / "report.md").read_text() or "faiss_exact" in (out / "report.md").read_text()
    again = CliRunner().invoke(app, ["eval", "--suite", "fixtures", "--out", str(out)])
    assert again.exit_code == 0 and "already holds a finished run" in again.output, "a finished run is not redone"


def test_eval_on_a_malformed_fixture_fails_clearly(tmp_path):
    bad = tmp_path / "fx"
    bad.mkdir()
    (bad / "x.yaml").write_text("app: a\nuser: u\nsessions: 3\nqueries: []\n")
    result = CliRunner().invoke(
        app, ["eval", "--suite", "fixtures", "--fixtures", str(bad), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "x.yaml:" in result.output and "expected a list" in result.output
    assert not (tmp_path / "o").exists(), "nothing is written when the input is bad"
