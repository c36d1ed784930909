"""The probe's alerts: `METRIC OP NUMBER` thresholds on a probe's metrics, judged against the previous probe so
that noise alone does not page anyone.

A labelled set of a few dozen questions moves recall@10 by a few points when one question changes, so a
threshold crossed by such a wobble is not news. When the previous probe's per-question scores are there and the
metric averages questions, a crossing fires only when the change from the previous probe is significant by the
gate's paired test (Holm-corrected over the crossings tested, as the gate corrects over its drops) or when the
previous probe had crossed the threshold too (a standing problem is not noise)."""

from __future__ import annotations

import difflib
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.metrics.uncertainty import ALPHA, QuestionTable, paired_differences

OPS: dict[str, Callable[[float, float], bool]] = {"<": operator.lt, "<=": operator.le, ">": operator.gt,
                                                  ">=": operator.ge}  # fmt: skip
_MEANT = {"=<": "<=", "=>": ">=", "<<": "<", ">>": ">"}  # operators written the other way round
GRAMMAR = ("an alert is METRIC OP NUMBER with OP one of <, <=, >, >= and NUMBER like 0.8, .8, 1e-2 or 80%, e.g. "
           "'recall@10<0.80', 'empty_rate > 10%', 'recall@10[size=501-2000]<0.7' or 'drift_p<0.01'")  # fmt: skip
_OPERATOR = re.compile(r"^\s*(?P<op>[<>=!]+)\s*(?P<number>.*?)\s*$", re.DOTALL)
_OPERATOR_CHARS = "<>=!"
NO_VALUE = "no value (no questions in that breakdown)"
_PROBE = "probe"  # the data set and system name both per-question tables are put under, to pair them


@dataclass(frozen=True)
class Alert:
    """One `--alert`: its text as given, and the metric key, operator and threshold it reads as."""

    text: str
    metric: str
    op: str
    threshold: float


@dataclass(frozen=True)
class AlertResult:
    """An alert judged on one probe: the metric's value (None when it has none), whether it fires and why, and the
    paired test's Holm-adjusted p-value where the change from the previous probe was tested."""

    alert: Alert
    value: float | None
    fired: bool
    reason: str
    p_value: float | None


def _malformed(text: str, problem: str) -> ConfigError:
    return ConfigError(f"alert {text!r}: {problem}; {GRAMMAR}.")


def _split(text: str) -> tuple[str, str]:
    """(metric, the rest from its operator on). A breakdown's brackets may hold `<=` or `>` themselves
    (`recall@10[size=<=50]`), so the operator is looked for after the closing bracket."""
    first_op = min((i for i, c in enumerate(text) if c in _OPERATOR_CHARS), default=-1)
    bracket = text.find("[")
    if bracket != -1 and (first_op == -1 or bracket < first_op):
        close = text.rfind("]")
        if close < bracket:
            raise _malformed(text, "unclosed '[' in the metric")
        return text[: close + 1].strip(), text[close + 1 :]
    if first_op == -1:
        return text.strip(), ""
    return text[:first_op].strip(), text[first_op:]


def _number(text: str, raw: str) -> float:
    if not raw:
        raise _malformed(text, "no number after the operator")
    percent = raw.endswith("%")
    digits = raw[:-1].strip() if percent else raw
    try:
        value = float(digits)
    except ValueError:
        raise _malformed(text, f"{raw!r} is not a number") from None
    if not math.isfinite(value):
        raise _malformed(text, f"the threshold must be a finite number, not {raw!r}")
    return value / 100 if percent else value


def parse_alert(text: str) -> Alert:
    """An `--alert` string as an Alert; a ConfigError naming what is wrong, with the grammar, when malformed."""
    given = text.strip()
    if not given:
        raise _malformed(text, "it is empty")
    metric, rest = _split(given)
    match = _OPERATOR.match(rest)
    if match is None:
        raise _malformed(given, "no comparison operator")
    op = match["op"]
    if op not in OPS:
        hint = f" (did you mean {_MEANT[op]!r}?)" if op in _MEANT else ""
        raise _malformed(given, f"unknown operator {op!r}{hint}")
    if not metric:
        raise _malformed(given, "no metric before the operator")
    return Alert(given, metric, op, _number(given, match["number"]))


def _check_metrics(alerts: Sequence[Alert], metrics: Mapping[str, float]) -> None:
    """An alert on a metric the probe does not have is a typo or a breakdown the labels lack, never a quiet
    "not fired": name the keys that exist, closest first."""
    missing = [a for a in alerts if a.metric not in metrics]
    if not missing:
        return
    keys = sorted(metrics)
    lines = []
    for alert in missing:
        near = difflib.get_close_matches(alert.metric, keys, n=5, cutoff=0.0)
        lines.append(f"alert {alert.text!r}: this probe has no metric {alert.metric!r}; the nearest it has: "
                     f"{', '.join(repr(k) for k in near) or '(none)'}")  # fmt: skip
    raise ConfigError("; ".join(lines) + f". The probe's {len(keys)} metric keys are in its metrics.json "
                      "(without the data set/system prefix); fix the alert's metric or drop it.")  # fmt: skip


def _table(questions: pd.DataFrame) -> QuestionTable:
    """One (data set, system)'s per-question scores under a fixed name, so two probes pair even when the system
    or data set was renamed between them."""
    return QuestionTable(questions.assign(dataset=_PROBE, system=_PROBE))


def _key(metric: str) -> str:
    return f"{_PROBE}/{_PROBE}/{metric}"


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def evaluate_alerts(
    alerts: Sequence[Alert],
    metrics: Mapping[str, float],
    *,
    question_scores: pd.DataFrame | None = None,
    previous_question_scores: pd.DataFrame | None = None,
    previous_metrics: Mapping[str, float] | None = None,
) -> list[AlertResult]:
    """Each alert judged on one probed (data set, system): `metrics` are its flat keys without the prefix,
    `question_scores` its per-question table. A crossing of a metric that averages questions is tested against
    `previous_question_scores` (the previous probe's) when given; see the module's note for the rule."""
    _check_metrics(alerts, metrics)
    testable = question_scores is not None and previous_question_scores is not None and len(question_scores) > 0
    now = _table(question_scores) if testable else None
    before = _table(previous_question_scores) if testable else None
    crossed: dict[str, float] = {}  # metric -> its previous value, for crossings the paired test can judge
    for alert in alerts:
        value = float(metrics[alert.metric])
        if now is None or before is None or math.isnan(value) or not OPS[alert.op](value, alert.threshold):
            continue
        mine, theirs = now.values_of(_key(alert.metric)), before.values_of(_key(alert.metric))
        if mine is None or theirs is None or mine.empty or theirs.empty:
            continue  # not a question average (latency, drift_p, stale_rate), or no questions to compare
        previous = (previous_metrics or {}).get(alert.metric)
        crossed[alert.metric] = float(theirs.mean()) if previous is None or math.isnan(previous) else float(previous)
    tests = paired_differences(before, now, [(_key(m), _key(m)) for m in crossed], alpha=ALPHA) if crossed else None
    verdicts = {} if tests is None else {row.before: (float(row.p_adjusted), bool(row.significant))
                                         for row in tests.itertuples()}  # fmt: skip
    return [_judge(alert, float(metrics[alert.metric]), crossed, verdicts) for alert in alerts]


def _judge(alert: Alert, value: float, crossed: Mapping[str, float],
           verdicts: Mapping[str, tuple[float, bool]]) -> AlertResult:  # fmt: skip
    if math.isnan(value):
        return AlertResult(alert, None, False, NO_VALUE, None)
    where = f"{alert.metric} = {_fmt(value)}"
    if not OPS[alert.op](value, alert.threshold):
        return AlertResult(alert, value, False, f"not crossed: {where}, fires when {alert.op} {_fmt(alert.threshold)}",
                           None)  # fmt: skip
    verdict = verdicts.get(_key(alert.metric))
    if verdict is None:  # nothing to test against: the threshold is the only rule
        return AlertResult(alert, value, True, f"crossed: {where} {alert.op} {_fmt(alert.threshold)}", None)
    p, significant = verdict
    previous = crossed[alert.metric]
    change = f"{where}, {_fmt(previous)} in the previous probe"
    if OPS[alert.op](previous, alert.threshold):
        return AlertResult(alert, value, True, f"crossed, as in the previous probe: {change} (p={p:.3g})", p)
    if significant:
        return AlertResult(alert, value, True, f"crossed, a significant change from the previous probe: {change} "
                           f"(p={p:.3g})", p)  # fmt: skip
    return AlertResult(alert, value, False, f"crossed, but within noise of the previous probe (p={p:.3g}): {change}",
                       p)  # fmt: skip


__all__ = ["GRAMMAR", "OPS", "Alert", "AlertResult", "evaluate_alerts", "parse_alert"]
