"""The probe's alerts: the `METRIC OP NUMBER` grammar (breakdown keys may hold `<=` themselves), each operator's
crossing, a missing metric named with its nearest keys, and the noise rule: a crossing the previous probe's
per-question scores cannot tell from noise (the gate's paired test) does not fire.

The per-question tables are built by hand with the columns `lab.experiment.question_scores` gives them; a real scored
folder's tables are used in test_alerts_folders.py."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import memlab
from memlab.lab.live.alerts import Alert, evaluate_alerts, parse_alert


@pytest.mark.parametrize(
    ("text", "metric", "op", "threshold"),
    [
        ("recall@10<0.80", "recall@10", "<", 0.8),
        ("empty_rate > 0.10", "empty_rate", ">", 0.1),
        ("  recall@10 <= .8  ", "recall@10", "<=", 0.8),
        ("recall@10[size=501-2000]<0.7", "recall@10[size=501-2000]", "<", 0.7),
        ("recall@10[size=<=50]<0.7", "recall@10[size=<=50]", "<", 0.7),
        ("recall@10[size=>2000] >= 0.5", "recall@10[size=>2000]", ">=", 0.5),
        ("recall@10[qtype=knowledge-update]<=0.5", "recall@10[qtype=knowledge-update]", "<=", 0.5),
        ("drift_p<1e-2", "drift_p", "<", 0.01),
        ("empty_rate>10%", "empty_rate", ">", 0.1),
        ("recall@10 < 80 %", "recall@10", "<", 0.8),
        ("stale_rate>=0", "stale_rate", ">=", 0.0),
        ("latency_ms_p95>250", "latency_ms_p95", ">", 250.0),
    ],
)
def test_the_grammar_reads_metric_operator_and_number(text, metric, op, threshold):
    alert = parse_alert(text)
    assert (alert.metric, alert.op) == (metric, op)
    assert alert.threshold == pytest.approx(threshold)
    assert alert.text == text.strip()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("recall@10", "no comparison operator"),
        ("recall@10 0.8", "no comparison operator"),
        ("recall@10<", "no number"),
        ("recall@10<abc", "'abc' is not a number"),
        ("recall@10<0.8<0.9", "is not a number"),
        ("recall@10<nan", "finite"),
        ("recall@10=<0.8", "unknown operator '=<' (did you mean '<='?)"),
        ("recall@10=>0.8", "unknown operator '=>' (did you mean '>='?)"),
        ("recall@10==0.8", "unknown operator '=='"),
        ("recall@10=0.8", "unknown operator '='"),
        ("recall@10!=0.8", "unknown operator '!='"),
        ("<0.8", "no metric"),
        ("  >= 1", "no metric"),
        ("recall@10[size=<=50<0.7", "unclosed '['"),
    ],
)
def test_a_malformed_alert_is_a_config_error_with_the_grammar(text, problem):
    with pytest.raises(memlab.ConfigError) as caught:
        parse_alert(text)
    message = str(caught.value)
    assert problem in message
    assert "METRIC OP NUMBER" in message and "recall@10<0.80" in message  # the grammar and an example


@pytest.mark.parametrize(
    ("op", "value", "threshold", "fired"),
    [
        ("<", 0.79, 0.8, True), ("<", 0.8, 0.8, False), ("<", 0.81, 0.8, False),
        ("<=", 0.8, 0.8, True), ("<=", 0.79, 0.8, True), ("<=", 0.81, 0.8, False),
        (">", 0.11, 0.1, True), (">", 0.1, 0.1, False), (">", 0.09, 0.1, False),
        (">=", 0.1, 0.1, True), (">=", 0.11, 0.1, True), (">=", 0.09, 0.1, False),
    ],
)  # fmt: skip
def test_each_operator_fires_only_when_crossed(op, value, threshold, fired):
    alert = parse_alert(f"empty_rate{op}{threshold}")
    [result] = evaluate_alerts([alert], {"empty_rate": value, "recall@10": 0.5})
    assert (result.fired, result.value, result.p_value) == (fired, value, None)
    assert result.alert == alert
    assert ("crossed" if fired else "not crossed") in result.reason


def test_a_missing_metric_is_an_error_naming_the_nearest_keys_first():
    metrics = {"empty_rate": 0.1, "recall@5": 0.7, "recall@10": 0.8, "precision@10": 0.2, "latency_ms_p95": 9.0}
    with pytest.raises(memlab.ConfigError) as caught:
        evaluate_alerts([parse_alert("recall@10<0.9"), parse_alert("recal@10<0.8")], metrics)
    message = str(caught.value)
    assert "recal@10" in message and "'recall@10<0.9'" not in message  # only the alert whose metric is missing
    assert message.index("'recall@10'") < message.index("'empty_rate'")  # closest first


def test_a_breakdown_without_questions_has_no_value_and_does_not_fire():
    [result] = evaluate_alerts([parse_alert("recall@10[size=>2000]<0.7")], {"recall@10[size=>2000]": math.nan})
    assert not result.fired and result.value is None
    assert result.reason == "no value (no questions in that breakdown)"


# -- the noise rule: hand-made per-question tables of one (data set, system) ---------------------------------------


def _table(recalls: list[float], *, buckets: list[str] | None = None, system: str = "probe") -> pd.DataFrame:
    """Per-question scores as `lab.experiment.question_scores` shapes them: one answerable question per recall value."""
    n = len(recalls)
    return pd.DataFrame({
        "system": system, "question_id": [f"q{i:02d}" for i in range(n)], "qtype": "default",
        "answerable": True, "recall": recalls, "mrr": recalls, "hit": recalls, "empty_rate": 0.0,
        "size_bucket": buckets or ["51-500"] * n, "dataset": "labels",
    })  # fmt: skip


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_a_crossing_within_noise_of_the_previous_probe_does_not_fire():
    before = [1.0] * 40
    now = [0.0] + [1.0] * 39  # one question of 40 lost: recall 0.975
    [result] = evaluate_alerts([parse_alert("recall@10<0.98")], {"recall@10": _mean(now)},
                               question_scores=_table(now), previous_question_scores=_table(before),
                               previous_metrics={"recall@10": _mean(before)})  # fmt: skip
    assert not result.fired
    assert result.p_value is not None and result.p_value > 0.5
    assert result.reason.startswith("crossed, but within noise of the previous probe (p=")


def test_a_significant_drop_from_the_previous_probe_fires_with_its_p_value():
    before = [1.0] * 40
    now = [0.0] * 20 + [1.0] * 20
    [result] = evaluate_alerts([parse_alert("recall@10<0.98")], {"recall@10": _mean(now)},
                               question_scores=_table(now), previous_question_scores=_table(before))  # fmt: skip
    assert result.fired
    assert result.p_value is not None and result.p_value < 0.001
    assert "p=" in result.reason


def test_a_crossing_the_previous_probe_had_too_fires_without_a_significant_change():
    before = [0.0] * 5 + [1.0] * 35  # 0.875, already under 0.9
    now = [0.0] * 6 + [1.0] * 34
    [result] = evaluate_alerts([parse_alert("recall@10<0.9")], {"recall@10": _mean(now)},
                               question_scores=_table(now), previous_question_scores=_table(before),
                               previous_metrics={"recall@10": _mean(before)})  # fmt: skip
    assert result.fired
    assert "previous probe" in result.reason and "0.875" in result.reason


def test_the_previous_value_comes_from_its_question_scores_when_its_metrics_are_not_given():
    before = [0.0] * 5 + [1.0] * 35
    now = [0.0] * 6 + [1.0] * 34
    [result] = evaluate_alerts([parse_alert("recall@10<0.9")], {"recall@10": _mean(now)},
                               question_scores=_table(now), previous_question_scores=_table(before))  # fmt: skip
    assert result.fired and "0.875" in result.reason


def test_a_breakdown_is_tested_on_the_questions_of_its_bucket_only():
    """Two of ten small-memory questions lost (noise there) while every large-memory one was lost too: tested on
    all questions the drop is significant, on the bucket's own it is not."""
    buckets = ["<=50"] * 10 + [">2000"] * 30
    before = [1.0] * 40
    now = [0.0] * 2 + [1.0] * 8 + [0.0] * 30
    metrics = {"recall@10": _mean(now), "recall@10[size=<=50]": 0.8, "recall@10[size=>2000]": 0.0}
    small, large, overall = evaluate_alerts(
        [parse_alert("recall@10[size=<=50]<0.9"), parse_alert("recall@10[size=>2000]<0.9"),
         parse_alert("recall@10<0.9")],
        metrics, question_scores=_table(now, buckets=buckets), previous_question_scores=_table(before, buckets=buckets),
    )  # fmt: skip
    assert not small.fired and "within noise" in small.reason
    assert large.fired and overall.fired


def test_the_system_names_of_the_two_probes_need_not_match():
    """The tables are one (data set, system) each: a probe of a renamed system is still paired question by
    question with the previous one."""
    before, now = [1.0] * 40, [0.0] + [1.0] * 39
    [result] = evaluate_alerts([parse_alert("recall@10<0.98")], {"recall@10": _mean(now)},
                               question_scores=_table(now, system="new-name"),
                               previous_question_scores=_table(before, system="old-name"))  # fmt: skip
    assert not result.fired and result.p_value is not None


def test_metrics_that_do_not_average_questions_fire_on_the_threshold_alone():
    before, now = [1.0] * 40, [1.0] * 40
    alerts = [parse_alert("latency_ms_p95>100"), parse_alert("drift_p<0.01"), parse_alert("stale_rate>0.1")]
    results = evaluate_alerts(alerts, {"latency_ms_p95": 250.0, "drift_p": 0.001, "stale_rate": 0.2},
                              question_scores=_table(now), previous_question_scores=_table(before))  # fmt: skip
    assert all(r.fired and r.p_value is None for r in results)


def test_without_the_previous_probe_a_crossing_fires():
    now = [0.0] + [1.0] * 39
    [result] = evaluate_alerts([parse_alert("recall@10<0.98")], {"recall@10": _mean(now)},
                               question_scores=_table(now))  # fmt: skip
    assert result.fired and result.p_value is None


def test_alerts_are_tested_together_with_holms_correction():
    """Like the gate's drops, the crossed alerts' paired tests are one family: the p-value reported is adjusted
    over the tests made, so more alerts never mean more false pages."""
    before = [1.0] * 40
    now = [0.0] * 8 + [1.0] * 32
    one = evaluate_alerts([parse_alert("recall@10<0.9")], {"recall@10": 0.8, "mrr": 0.8},
                          question_scores=_table(now), previous_question_scores=_table(before))  # fmt: skip
    two = evaluate_alerts([parse_alert("recall@10<0.9"), parse_alert("mrr<0.9")], {"recall@10": 0.8, "mrr": 0.8},
                          question_scores=_table(now), previous_question_scores=_table(before))  # fmt: skip
    assert two[0].p_value == pytest.approx(min(1.0, 2 * one[0].p_value))


def test_an_alert_is_a_value_object():
    assert parse_alert("recall@10 < 0.8") == Alert("recall@10 < 0.8", "recall@10", "<", 0.8)
