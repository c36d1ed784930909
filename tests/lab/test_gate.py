"""The regression gate on real metrics files, including a doctored one that must fail CI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memlab.cli import app
from memlab.lab import compare, load_rules, regressions

BASE = {
    "fixtures/auto/recall@10": 0.91,
    "fixtures/auto/empty_rate": 0.0,
    "fixtures/hnsw-ef40-off/recall_vs_exact": 0.95,
    "fixtures/ingest/ingest_units_per_s": 150.0,
    "fact-fixtures/extractor:rules/key_accuracy": 0.8,
}


def test_rules_and_verdicts():
    rules = load_rules()
    worse = {**BASE, "fixtures/auto/recall@10": 0.85, "fixtures/auto/empty_rate": 0.1,
             "fixtures/ingest/ingest_units_per_s": 1.0}
    table = compare(BASE, worse, rules).set_index("metric")
    assert table.loc["fixtures/auto/recall@10", "verdict"] == "regression"
    assert table.loc["fixtures/auto/empty_rate", "verdict"] == "regression"
    assert "fixtures/ingest/ingest_units_per_s" not in table.index, "timings are not gated"
    within = compare(BASE, {**BASE, "fixtures/auto/recall@10": 0.90}, rules)
    assert regressions(within).empty
    better = compare(BASE, {**BASE, "fact-fixtures/extractor:rules/key_accuracy": 0.9}, rules).set_index("metric")
    assert better.loc["fact-fixtures/extractor:rules/key_accuracy", "verdict"] == "improvement"
    missing = {k: v for k, v in BASE.items() if k != "fact-fixtures/extractor:rules/key_accuracy"}
    assert regressions(compare(BASE, missing, rules)).metric.tolist() == ["fact-fixtures/extractor:rules/key_accuracy"]


def test_tolerances_follow_the_key_pattern():
    rules = load_rules()
    base = {"synth/event@cut0.50/recall@10": 0.5, "lme/auto/recall@10[qtype=multi-session]": 0.5,
            "lme/auto/recall@10": 0.5, "synth/filtered:hnsw-ef40-off-mst20000/recall_vs_exact[share=0.1]": 0.5}
    moved = {"synth/event@cut0.50/recall@10": 0.1, "lme/auto/recall@10[qtype=multi-session]": 0.46,
             "lme/auto/recall@10": 0.47, "synth/filtered:hnsw-ef40-off-mst20000/recall_vs_exact[share=0.1]": 0.4}
    table = compare(base, moved, rules).set_index("metric")
    assert "synth/event@cut0.50/recall@10" not in table.index, "the cut-off grid is not gated point by point"
    assert table.loc["lme/auto/recall@10[qtype=multi-session]", "verdict"] == "ok", "breakdowns allow 0.05"
    assert table.loc["lme/auto/recall@10", "verdict"] == "regression", "headline metrics allow 0.02"
    assert table.loc["synth/filtered:hnsw-ef40-off-mst20000/recall_vs_exact[share=0.1]", "verdict"] == "ok"


def test_cli_gate_fails_on_a_doctored_run_and_passes_on_the_same(tmp_path):
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(BASE))
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps(BASE))
    ok = CliRunner().invoke(app, ["report", "--baseline", str(baseline), "--run", str(run)])
    assert ok.exit_code == 0, ok.output
    # a deliberately worse setting: plain HNSW losing rows would show as lower recall against FAISS exact
    (run / "metrics.json").write_text(json.dumps({**BASE, "fixtures/hnsw-ef40-off/recall_vs_exact": 0.5}))
    bad = CliRunner().invoke(app, ["report", "--baseline", str(baseline), "--run", str(run)])
    assert bad.exit_code == 1 and "regression" in bad.output
    assert "recall_vs_exact" in (run / "gate.md").read_text()


def test_cli_gate_on_missing_files_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["report", "--baseline", str(tmp_path / "nope.json"), "--run", str(tmp_path)])
    assert result.exit_code == 2 and "no metrics file" in result.output
