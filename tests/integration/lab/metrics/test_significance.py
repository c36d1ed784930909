"""Uncertainty: bootstrap intervals, paired tests, Holm's correction, and the gate on doctored runs (a real drop
is flagged, a wobble of a question or two is not)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app


def test_bootstrap_interval_holds_the_mean_and_narrows_with_more_questions():
    rng = np.random.default_rng(1)
    small, large = rng.random(20), rng.random(2_000)
    lo, hi = lab.metrics.bootstrap_ci(small)
    assert lo < small.mean() < hi
    wide, narrow = hi - lo, np.subtract(*reversed(lab.metrics.bootstrap_ci(large)))
    assert narrow < wide / 4
    assert lab.metrics.bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5) and all(np.isnan(lab.metrics.bootstrap_ci([])))


def test_paired_test_tells_a_shift_from_noise_and_holm_is_conservative():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 2, 100).astype(float)
    assert lab.metrics.paired_p(a, a) == 1.0
    worse = a.copy()
    worse[np.flatnonzero(a == 1)[:25]] = 0  # 25 questions lose their answer
    assert lab.metrics.paired_p(a, worse) < 0.001
    wobble = a.copy()
    wobble[np.flatnonzero(a == 1)[:1]] = 0
    assert lab.metrics.paired_p(a, wobble) > 0.5
    raw = [0.01, 0.04, 0.03, 0.5]
    adjusted = lab.metrics.holm(raw)
    assert list(adjusted) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert all(adj >= p for adj, p in zip(adjusted, raw, strict=True))


def _questions(recall: np.ndarray, system: str = "auto", dataset: str = "synth") -> pd.DataFrame:
    n = len(recall)
    return pd.DataFrame({
        "dataset": dataset, "system": system, "question_id": [f"q{i}" for i in range(n)], "answerable": True,
        "qtype": ["a" if i % 2 else "b" for i in range(n)], "size_bucket": "<=50", "recall": recall,
        "mrr": recall, "ndcg": recall, "hit": recall, "precision": recall / 10, "empty_rate": 0.0,
    })  # fmt: skip


def _metrics(questions: pd.DataFrame, extra: dict[str, float]) -> dict[str, float]:
    keys = ["synth/auto/recall@10", "synth/auto/mrr@10", "synth/auto/recall@10[qtype=a]"]
    table = lab.metrics.intervals(questions, keys)
    return {**dict(zip(table.key, table.value, strict=True)), **extra}


def _doctored(recall: np.ndarray, lost: int) -> np.ndarray:
    out = recall.copy()
    out[np.flatnonzero(recall == 1)[:lost]] = 0
    return out


def test_the_gate_flags_a_real_drop_and_lets_a_wobble_pass():
    rng = np.random.default_rng(3)
    base = (rng.random(80) < 0.75).astype(float)
    rules = lab.report.load_rules()
    base_q = _questions(base)
    baseline = _metrics(base_q, {"fact-fixtures/extractor:rules/key_accuracy": 0.9})
    for lost, expected in ((20, "regression"), (2, "within noise")):
        run_q = _questions(_doctored(base, lost))
        run = _metrics(run_q, {"fact-fixtures/extractor:rules/key_accuracy": 0.85})
        table = lab.report.judge(lab.report.compare(baseline, run, rules), base_q, run_q).set_index("metric")
        assert table.at["synth/auto/recall@10", "verdict"] == expected, (lost, table)
        assert table.at["fact-fixtures/extractor:rules/key_accuracy", "verdict"] == "regression", (
            "a metric without per-question scores keeps its tolerance as the rule"
        )
        if expected == "regression":
            assert table.at["synth/auto/recall@10", "p_adjusted"] < 0.05
    # without the baseline's questions (an old baseline) the tolerance alone decides, as before
    run_q = _questions(_doctored(base, 2))
    table = lab.report.judge(lab.report.compare(baseline, _metrics(run_q, {}), rules), None, run_q).set_index("metric")
    assert table.at["synth/auto/recall@10", "verdict"] == "regression"


def _folder(path, questions: pd.DataFrame, metrics: dict[str, float]) -> None:
    path.mkdir()
    (path / "metrics.json").write_text(json.dumps(metrics))
    (path / "manifest.json").write_text(json.dumps({"config": {"resolved": {"name": "ci"}}}))
    questions.to_parquet(path / "question_scores.parquet", index=False)


def test_memlab_report_exits_1_on_a_real_drop_and_0_on_a_wobble(tmp_path):
    rng = np.random.default_rng(4)
    base = (rng.random(90) < 0.7).astype(float)
    _folder(tmp_path / "base", _questions(base), _metrics(_questions(base), {}))
    runner = CliRunner()
    baseline = tmp_path / "baseline.json"
    assert runner.invoke(app, ["baseline", "--run", str(tmp_path / "base"), "--out", str(baseline)]).exit_code == 0
    assert (tmp_path / "baseline.questions.parquet").exists()
    for name, lost, code in (("wobble", 2, 0), ("drop", 25, 1)):
        q = _questions(_doctored(base, lost))
        _folder(tmp_path / name, q, _metrics(q, {}))
        result = runner.invoke(app, ["report", "--baseline", str(baseline), "--run", str(tmp_path / name)])
        assert result.exit_code == code, (name, result.output)
    assert "within noise" in (tmp_path / "wobble" / "gate.md").read_text()
