"""The regression gate on real metrics files, including a doctored one that must fail CI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from memlab.lab.report import compare, load_rules, regressions
from tests.conftest import ROOT

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


# -- directions come from metric definitions, on the committed baseline --------------------------------------------

BASELINE = lab.report.read_baseline_file(ROOT / "reports" / "baseline.json")  # as the gate reads it: the current format
LOWER_IS_BETTER = {  # keys of the committed baseline whose rise is a loss, each moved well past its tolerance
    "synth/answerability:gate/false_memory_rate": 0.90,
    "synth/answerability:gate/brier": 0.35,
    "synth/answerability:gate/calibration_error": 0.30,
    "synth/hnsw-ef40-off/empty_rate": 0.50,
    "synth/answerability:distance-cut/false_memory_rate": 0.60,
    "lme-oracle/event/empty_rate": 0.40,
}


def _gate(tmp_path, metrics: dict[str, float], *extra: str, baseline: dict | None = None):
    """`memlab report` of a run holding `metrics` against the committed baseline (or `baseline`), copied without
    its per-question scores so the tolerances alone decide."""
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps(baseline if baseline is not None else BASELINE))
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "metrics.json").write_text(json.dumps(metrics))
    result = CliRunner().invoke(app, ["report", "--baseline", str(base), "--run", str(run), *extra])
    return result, (run / "gate.md").read_text() if (run / "gate.md").exists() else ""


def test_lower_is_better_metrics_of_the_baseline_fail_when_they_rise_and_pass_when_they_fall(tmp_path):
    metrics = BASELINE["metrics"]
    assert set(LOWER_IS_BETTER) <= set(metrics)
    worse, gate_md = _gate(tmp_path, {**metrics, **LOWER_IS_BETTER})
    assert worse.exit_code == 1, worse.output
    table = gate_md.split("## Ungated")[0]
    for key in LOWER_IS_BETTER:
        row = next(line for line in table.splitlines() if line.startswith(f"| {key} |"))
        assert "| lower |" in row and "| regression |" in row, row
    better = {key: metrics[key] / 3 for key in LOWER_IS_BETTER}
    result, gate_md = _gate(tmp_path, {**metrics, **better})
    assert result.exit_code == 0, result.output
    assert "| synth/answerability:gate/brier | lower |" in gate_md and "improvement" in gate_md


def _moved(how, base: float, sign: int) -> float:
    """`base` moved well past its allowance, `sign` +1 in the good direction, -1 in the bad one."""
    step = 2 * how.allowed(base) + 0.05 + 0.1 * abs(base)
    return base + sign * step * (1 if how.better == "higher" else -1)


def test_every_gated_baseline_metric_fails_when_worse_and_passes_when_better():
    metrics = BASELINE["metrics"]
    rules = load_rules()
    hows = {key: lab.report.gating(key, rules) for key in metrics}
    guessed = sorted(key for key, how in hows.items() if how.definition is None)
    assert guessed == [], f"baseline keys no metric definition covers: {guessed[:10]}"
    checked = [key for key, how in hows.items() if how.gated]
    assert len(checked) > 4000, "the baseline's label metrics, AUCs, rates and fact figures are gated"
    for key in checked:
        assert hows[key].better in ("higher", "lower") and hows[key].better == hows[key].definition.better
    # one at a time: a key of each kind (its definition, allowance and breakdown), judged with nothing beside it
    kinds = {}
    for key in checked:
        how = hows[key]
        kinds.setdefault((how.definition.name, how.abs, how.rel, "[" in key), key)
    assert len(kinds) > 20
    wrong = []
    for key in kinds.values():
        how, base = hows[key], metrics[key]
        for sign, expected in ((-1, "regression"), (1, "improvement")):
            table = compare({key: base}, {key: _moved(how, base, sign)}, rules)
            if table.verdict.tolist() != [expected]:
                wrong.append((key, expected, table.verdict.tolist()))
    assert wrong == [], wrong[:10]
    # all at once, through the gate's own table: each gated key is judged on its own
    worse = compare(metrics, {k: _moved(hows[k], v, -1) if hows[k].gated else v for k, v in metrics.items()}, rules)
    assert set(worse.verdict) == {"regression"} and len(worse) == len(checked)
    better = compare(metrics, {k: _moved(hows[k], v, 1) if hows[k].gated else v for k, v in metrics.items()}, rules)
    assert set(better.verdict) == {"improvement"} and len(better) == len(checked)


def test_a_key_no_definition_covers_is_listed_ungated_never_compared(tmp_path):
    base = {**BASE, "fixtures/auto/mystery_score": 0.5, "fixtures/auto/latency_ms_p50": 3.0}
    for value in (0.1, 0.9):
        result, gate_md = _gate(tmp_path, {**base, "fixtures/auto/mystery_score": value}, baseline=base)
        assert result.exit_code == 0, result.output
        assert "ungated" in result.output and "fixtures/auto/mystery_score" in result.output
        ungated_part = gate_md.split("## Ungated (1)", 1)[1]
        assert "| fixtures/auto/mystery_score |" in ungated_part, gate_md
        assert "regression" not in gate_md and "improvement" not in gate_md
    table = compare(base, {**base, "fixtures/auto/mystery_score": 0.1}).set_index("metric")
    assert table.at["fixtures/auto/mystery_score", "verdict"] == lab.report.ungated(table).verdict.iloc[0]
    assert "fixtures/auto/latency_ms_p50" not in table.index, "a timing is defined, and not gated"
    assert lab.metrics.metric_definition("fixtures/auto/mystery_score") is None


def test_recommended_settings_are_not_gated_as_quality(tmp_path):
    metrics = BASELINE["metrics"]
    settings = ["synth/event/recommended_max_distance", "synth/answerability:gate/threshold",
                "synth/answerability:distance-cut/max_distance", "synth/chunk4o1/best_f1_distance",
                "lme-oracle/event@cut-from-synth/max_distance"]  # fmt: skip
    for sign in (-1, 1):
        moved = {**metrics, **{key: metrics[key] + sign * 0.3 for key in settings}}
        result, gate_md = _gate(tmp_path, moved)
        assert result.exit_code == 0, result.output
        assert not any(key in gate_md for key in settings), gate_md
    for key in settings:
        how = lab.report.gating(key)
        assert not how.gated and how.definition is not None and how.why, key


def test_a_former_metric_name_of_an_unversioned_baseline_is_gated_under_its_current_name(tmp_path):
    """A baseline written before the format version (flat or not) is read in the current format: the metric it
    names by its former name is compared with the run's current one."""
    for old in ({"synth/event/distance_roc_auc": 0.80}, {"experiment": None,
                                                         "metrics": {"synth/event/distance_roc_auc": 0.80}}):
        result, gate_md = _gate(tmp_path, {"synth/event/hit_distance_roc_auc": 0.50}, baseline=old)
        assert result.exit_code == 1, result.output
        assert "| synth/event/hit_distance_roc_auc | higher | 0.800 | 0.500 | -0.300 | 0.020 | regression |" in gate_md
        assert "| synth/event/distance_roc_auc |" not in gate_md, gate_md
    assert lab.metrics.metric_definition("synth/event/distance_roc_auc") is None, "only the upgrade step knows it"


def test_the_committed_baseline_is_read_in_the_current_format():
    raw = json.loads((ROOT / "reports" / "baseline.json").read_text())
    assert BASELINE["format_version"] == lab.runs.FORMAT_VERSION and BASELINE["experiment"] == raw["experiment"]
    renamed = [k for k in raw["metrics"] if k.endswith("/distance_roc_auc")]
    assert renamed, "the committed baseline names some metrics by a former name"
    for key in renamed:
        now = key.replace("/distance_roc_auc", "/hit_distance_roc_auc")
        assert BASELINE["metrics"][now] == raw["metrics"][key] and key not in BASELINE["metrics"]
    assert len(BASELINE["metrics"]) == len(raw["metrics"])


def test_a_baseline_of_a_newer_format_is_refused_with_one_line(tmp_path):
    result, _ = _gate(tmp_path, BASE, baseline={"format_version": lab.runs.FORMAT_VERSION + 1, "experiment": None,
                                                "metrics": BASE})  # fmt: skip
    assert result.exit_code == 2, result.output
    line = " ".join(result.output.split())
    assert f"format version {lab.runs.FORMAT_VERSION + 1}" in line
    assert "newer memlab" in line and "upgrade memlab" in line
    assert "memlab baseline --run" in line
    for bad in ("2", 0, 1.5, True):
        result, _ = _gate(tmp_path, BASE, baseline={"format_version": bad, "metrics": BASE})
        assert result.exit_code == 2 and "format_version" in result.output, (bad, result.output)


def test_a_new_baseline_records_its_format(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps({"synth/event/distance_roc_auc": 0.7, **BASE}))
    out = tmp_path / "baseline.json"
    result = CliRunner().invoke(app, ["baseline", "--run", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text())
    assert written["format_version"] == lab.runs.FORMAT_VERSION
    assert "synth/event/hit_distance_roc_auc" in written["metrics"], "a run folder without a version is format 1"
    assert lab.report.read_baseline_file(out)["metrics"] == written["metrics"]


def test_a_tolerances_file_that_sets_a_direction_is_refused(tmp_path):
    rules = tmp_path / "tolerances.yaml"
    rules.write_text('rules:\n  - {match: "*", direction: higher, abs: 0.02}\n')
    result, _ = _gate(tmp_path, BASE, "--tolerances", str(rules), baseline=BASE)
    assert result.exit_code == 2 and "direction" in result.output and "metrics/definitions" in result.output
    rules.write_text('rules:\n  - {match: "*/auto/*", abs: 0.5}\n')
    result, _ = _gate(tmp_path, {**BASE, "fixtures/auto/recall@10": 0.6}, "--tolerances", str(rules), baseline=BASE)
    assert result.exit_code == 0, "a tolerance rule widens the allowance, the definition keeps the direction"
    result, _ = _gate(tmp_path, {**BASE, "fixtures/auto/recall@10": 0.3}, "--tolerances", str(rules), baseline=BASE)
    assert result.exit_code == 1


def test_every_metric_definition_has_a_direction_to_gate_or_a_reason_not_to():
    for definition in lab.metrics.METRIC_DEFINITIONS:
        if definition.gated:
            assert definition.better in ("higher", "lower"), definition
            assert definition.tolerance >= 0 and definition.relative >= 0, definition
        else:
            assert definition.not_gated, definition
        assert definition.description, definition
