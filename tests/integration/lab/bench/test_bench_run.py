"""The pure parts of `memlab bench`: judging auto against the fixed strategies, calibrating the auto policy,
and the bench page. The measuring parts have their own tests (test_bench_*.py); `memlab bench --size ci`
itself runs in CI (.ci/run)."""

from __future__ import annotations

import pandas as pd
import pytest

import memlab
from memlab.lab import bench


def _summary(rows: list[tuple[str, str, int, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"rows_total": 100_000, "corpus": "real", "bucket": b, "strategy": s, "tenant_rows": n, "recall": r,
          "latency_ms_p50": p95 / 2, "latency_ms_p95": p95, "latency_ms_p99": p95 * 1.5, "plan": s}
         for b, s, n, r, p95 in rows]
    )  # fmt: skip


def test_auto_is_judged_against_the_fastest_fixed_strategy_that_reaches_the_recall_goal():
    summary = _summary([
        ("1%", "exact", 1_000, 1.0, 10.0), ("1%", "hnsw-off", 1_000, 0.4, 2.0), ("1%", "auto", 1_000, 1.0, 11.0),
        ("10%", "exact", 10_000, 1.0, 80.0), ("10%", "partial", 10_000, 0.995, 5.0),
        ("10%", "auto", 10_000, 0.995, 9.0),
    ])  # fmt: skip
    goal = bench.auto_goal(summary).set_index("bucket")
    assert goal.loc["1%", "best_fixed"] == "exact", "a fast strategy with recall 0.4 is no yardstick"
    assert goal.loc["1%", "p95_vs_best_fixed"] == pytest.approx(1.1) and goal.loc["1%", "goal_met"]
    assert goal.loc["10%", "best_fixed"] == "partial"
    assert goal.loc["10%", "p95_vs_best_fixed"] == pytest.approx(1.8) and not goal.loc["10%", "goal_met"]


def _raw(latencies: dict[str, list[float]], bucket: str = "1%") -> pd.DataFrame:
    return pd.DataFrame([{"rows_total": 100_000, "corpus": "real", "bucket": bucket, "strategy": s, "query": i,
                          "tenant_rows": 1_000, "latency_ms": v, "recall": 1.0, "returned": 10, "plan": s}
                         for s, values in latencies.items() for i, v in enumerate(values)])  # fmt: skip


def test_auto_latency_is_judged_by_the_interval_of_its_p95_ratio():
    import numpy as np

    summarize_search = bench.summarize_search
    rng = np.random.default_rng(0)
    base = rng.lognormal(1.0, 0.3, 100)
    # same queries, auto 5% slower with noise of its own: the point p95 ratio may land either side of 1.2 in a
    # short run, but 100 queries put it well within
    close = _raw({"exact": list(base), "auto": list(base * rng.normal(1.05, 0.05, 100))})
    goal = bench.auto_goal(summarize_search(close), close).iloc[0]
    assert goal.p95_ratio_low <= goal.p95_vs_best_fixed <= goal.p95_ratio_high
    assert goal.latency_verdict == "met" and goal.goal_met
    slow = _raw({"exact": list(base), "auto": list(base * 2.0)})
    goal = bench.auto_goal(summarize_search(slow), slow).iloc[0]
    assert goal.p95_ratio_low == pytest.approx(2.0) and goal.latency_verdict == "missed" and not goal.goal_met
    # 5 queries with one slow outlier for auto: a point ratio of about 2, but the interval reaches below 1.2
    few = _raw({"exact": [3.0, 3.1, 2.9, 3.0, 3.2], "auto": [3.0, 3.0, 2.9, 3.1, 9.0]})
    goal = bench.auto_goal(summarize_search(few), few).iloc[0]
    assert goal.p95_vs_best_fixed > 1.2 and goal.latency_verdict == "within noise" and goal.goal_met
    assert bench.latency_verdict(1.0, 1.1) == "met" and bench.latency_verdict(1.3, 2.0) == "missed"


def test_calibration_puts_the_exact_threshold_where_exact_scans_cost_what_an_index_costs():
    # exact costs 1 ms + 1 ms per 1,000 rows; the tenant index about 6 ms: crossover at 5,000 rows
    exact = [(f"b{n}", "exact", n, 1.0, 1.0 + n / 1_000) for n in (100, 1_000, 10_000, 50_000)]
    summary = _summary([*exact, ("b10000", "partial", 10000, 1.0, 6.0), ("b50000", "partial", 50000, 1.0, 6.0)])
    policy = bench.calibrate(summary, memlab.AutoPolicy())
    assert policy.exact_below == pytest.approx(5_000, rel=0.01)
    assert policy.tenant_index_above == policy.exact_below
    assert "100,000 rows" in policy.calibrated_on
    # without the per-tenant measurements there is nothing to calibrate from: the policy stays
    assert bench.calibrate(summary[summary.strategy == "exact"], memlab.AutoPolicy()) == memlab.AutoPolicy()


def test_unknown_size_is_a_clear_error():
    with pytest.raises(memlab.ConfigError, match="ci"):
        bench.run_bench("huge")


def test_cli_refuses_an_unknown_size_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from memlab.cli import app

    result = CliRunner().invoke(app, ["bench", "--size", "huge", "--out", str(tmp_path / "b")])
    assert result.exit_code == 2
    assert "bench size 'huge' is unknown" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "b").exists(), "nothing is written for a refused run"
