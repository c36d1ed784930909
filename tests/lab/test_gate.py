"""The regression gate on real metrics files, including a doctored one that must fail CI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memlab.cli import app
from memlab.lab.gate import compare, load_rules, regressions

BASE = {
    "event.auto.recall": 0.91,
    "event.auto.empty_rate": 0.0,
    "event.hnsw_ef40_off.recall_vs_exact": 0.95,
    "ingest.ingest_units_per_s": 150.0,
    "facts.rules.key_accuracy": 0.8,
}


def test_rules_and_verdicts():
    rules = load_rules()
    worse = {**BASE, "event.auto.recall": 0.85, "event.auto.empty_rate": 0.1, "ingest.ingest_units_per_s": 1.0}
    table = compare(BASE, worse, rules).set_index("metric")
    assert table.loc["event.auto.recall", "verdict"] == "regression"
    assert table.loc["event.auto.empty_rate", "verdict"] == "regression"
    assert "ingest.ingest_units_per_s" not in table.index, "timings are not gated"
    within = compare(BASE, {**BASE, "event.auto.recall": 0.90}, rules)
    assert regressions(within).empty
    better = compare(BASE, {**BASE, "facts.rules.key_accuracy": 0.9}, rules).set_index("metric")
    assert better.loc["facts.rules.key_accuracy", "verdict"] == "improvement"
    missing = {k: v for k, v in BASE.items() if k != "facts.rules.key_accuracy"}
    assert regressions(compare(BASE, missing, rules)).metric.tolist() == ["facts.rules.key_accuracy"]


def test_cli_gate_fails_on_a_doctored_run_and_passes_on_the_same(tmp_path):
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(BASE))
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps(BASE))
    ok = CliRunner().invoke(app, ["report", "--baseline", str(baseline), "--run", str(run)])
    assert ok.exit_code == 0, ok.output
    # a deliberately worse setting: plain HNSW losing rows would show as lower recall against FAISS exact
    (run / "metrics.json").write_text(json.dumps({**BASE, "event.hnsw_ef40_off.recall_vs_exact": 0.5}))
    bad = CliRunner().invoke(app, ["report", "--baseline", str(baseline), "--run", str(run)])
    assert bad.exit_code == 1 and "regression" in bad.output
    assert "recall_vs_exact" in (run / "gate.md").read_text()


def test_cli_gate_on_missing_files_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["report", "--baseline", str(tmp_path / "nope.json"), "--run", str(tmp_path)])
    assert result.exit_code == 2 and "no metrics file" in result.output
