"""How sure a figure is: bootstrap confidence intervals over questions, paired randomization tests between two
systems (or two runs) on the same questions, and Holm's correction when many comparisons are made at once.

A ci data set holds 50 to 100 questions (8 per LongMemEval type), so one question moves recall@10 by one to
twelve points: a difference is reported as real only when a paired test on the questions says so. Pure functions
of per-question score tables (`question_scores.parquet` of a run); seeded, so a report is reproducible."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from memlab.lab.metrics.definitions import Population, question_averages
from memlab.lab.metrics.keys import BREAKDOWNS, ScoreKey, parse_key

CONFIDENCE = 0.95
ALPHA = 0.05
RESAMPLES = 2_000

_KEYS = ("dataset", "system", "question_id", "answerable", "qtype", "size_bucket")


def keep_columns() -> tuple[str, ...]:
    """The columns of a per-question table the tests read: the question's identity and group, and every mean over
    questions of the metric registry (memlab.lab.metrics.definitions), under its name."""
    return (*_KEYS, *sorted(question_averages()))


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, confidence: float = CONFIDENCE, resamples: int = RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (NaN, NaN for no values; the value itself for one)."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return (float("nan"), float("nan"))
    if len(x) == 1 or np.all(x == x[0]):
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    tail = (1 - confidence) / 2
    return (float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail)))


def quantile_ratio_ci(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    q: float = 95.0,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(ratio, low, high): the q-th percentile of `a` over that of `b` (latencies of two strategies on the same
    queries, paired by position) and its percentile-bootstrap interval, resampling the queries together. A p95
    of 20 searches is one outlier's value; the interval says how much of a ratio is the machine's noise."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(f"need paired, non-empty samples; got {len(x)} and {len(y)} values")
    ratio = float(np.percentile(x, q) / np.percentile(y, q))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(x), size=(resamples, len(x)))
    ratios = np.percentile(x[picks], q, axis=1) / np.percentile(y[picks], q, axis=1)
    tail = (1 - confidence) / 2
    return ratio, float(np.quantile(ratios, tail)), float(np.quantile(ratios, 1 - tail))


def paired_p(a: Sequence[float], b: Sequence[float], *, resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value that the mean of `b - a` is zero, by a sign-flip randomization test on the paired
    differences (questions answered by both). 1.0 when the two agree on every question."""
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    d = d[~np.isnan(d)]
    if len(d) == 0 or np.all(d == 0):
        return 1.0
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(resamples, len(d)))
    extreme = int((np.abs((signs * d).mean(axis=1)) >= observed - 1e-12).sum())
    return (extreme + 1) / (resamples + 1)


def holm(pvalues: Iterable[float]) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (same order as given): controls the chance of any false alarm among
    many comparisons without assuming they are independent."""
    p = np.asarray(list(pvalues), dtype=float)
    if len(p) == 0:
        return p
    order = np.argsort(p)
    adjusted = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def averaged(key: ScoreKey) -> tuple[str, Population, str | None] | None:
    """What a figure averages per question: (per-question column, the questions it averages over, the per-question
    column of its breakdown or None); None for a figure that is not a mean over questions the registry scores
    (latency, fact figures) or is broken down by what no per-question column holds."""
    averages = question_averages()
    if key.name not in averages:
        return None
    definition = averages[key.name]
    if not key.group:
        return definition.column, definition.population, None
    breakdown = BREAKDOWNS.get(key.group)
    if breakdown is None or not breakdown.column:
        return None
    return definition.column, definition.population, breakdown.column


class QuestionTable:
    """A per-question score table split once by (data set, system), so many metrics are looked up quickly."""

    def __init__(self, questions: pd.DataFrame) -> None:
        self.frame = questions
        self._groups = {key: rows for key, rows in questions.groupby(["dataset", "system"], sort=False)}

    def values(self, dataset: str, system: str, metric: str, group: str = "", group_value: str = ""
               ) -> pd.Series | None:  # fmt: skip
        """The per-question values a metric of one system on one data set averages (in the breakdown `group` =
        `group_value`, when given), indexed by question id (None when the metric is not a question average or the
        table lacks it)."""
        return self.values_of(ScoreKey(dataset, system, metric, group, group_value))

    def values_of(self, key: ScoreKey | str) -> pd.Series | None:
        """`values` of a figure named by its ScoreKey (or flat key)."""
        parts = parse_key(key)
        found = averaged(parts) if parts is not None else None
        rows = self._groups.get((parts.dataset, parts.system)) if parts is not None else None
        if found is None or rows is None:
            return None
        column, population, group = found
        if column not in rows.columns or (group is not None and group not in rows.columns):
            return None
        rows = rows[population.rows(rows, column)]
        if group is not None:
            rows = rows[rows[group].astype(str) == parts.group_value]
        values = pd.to_numeric(rows[column], errors="coerce").astype(float)
        return pd.Series(values.to_numpy(), index=rows.question_id.to_numpy()).dropna()


def _table(questions: pd.DataFrame | QuestionTable) -> QuestionTable:
    return questions if isinstance(questions, QuestionTable) else QuestionTable(questions)


def intervals(questions: pd.DataFrame | QuestionTable, keys: Iterable[str | ScoreKey], *,
              seed: int = 0) -> pd.DataFrame:  # fmt: skip
    """95% bootstrap interval of every figure (ScoreKey, or flat key) that averages questions: key (flat), value,
    lo, hi, questions."""
    table = _table(questions)
    rows = []
    for key in keys:
        values = table.values_of(key)
        if values is None or values.empty:
            continue
        lo, hi = bootstrap_ci(values.to_numpy(), seed=seed)
        rows.append({"key": str(key), "value": float(values.mean()), "lo": lo, "hi": hi, "questions": len(values)})
    return pd.DataFrame(rows, columns=["key", "value", "lo", "hi", "questions"])


def paired_differences(
    before: pd.DataFrame | QuestionTable,
    after: pd.DataFrame | QuestionTable,
    pairs: Iterable[tuple[str | ScoreKey, str | ScoreKey]],
    *,
    alpha: float = ALPHA,
    seed: int = 0,
) -> pd.DataFrame:
    """For each (figure in `before`, figure in `after`), each a ScoreKey or flat key: the change of the metric on
    the questions both hold, its 95% bootstrap interval, the paired test's p-value and Holm's adjustment over all
    the pairs; `significant` when the adjusted p-value is below `alpha`. `before` and `after` are per-question
    tables: two runs (the gate) or the same run (two systems)."""
    first, second = _table(before), _table(after)
    rows = []
    for key_a, key_b in pairs:
        a, b = first.values_of(key_a), second.values_of(key_b)
        if a is None or b is None:
            continue
        both = a.index.intersection(b.index)
        if len(both) == 0:
            continue
        d = b.loc[both].to_numpy() - a.loc[both].to_numpy()
        lo, hi = bootstrap_ci(d, seed=seed)
        rows.append({"before": str(key_a), "after": str(key_b), "change": float(d.mean()), "lo": lo, "hi": hi,
                     "questions": len(both), "p": paired_p(a.loc[both], b.loc[both], seed=seed)})  # fmt: skip
    out = pd.DataFrame(rows, columns=["before", "after", "change", "lo", "hi", "questions", "p"])
    out["p_adjusted"] = holm(out.p) if len(out) else []
    out["significant"] = out.p_adjusted < alpha
    return out


MIN_QUESTIONS = 20
TIE_TOLERANCE = 1e-9


def too_few(questions: int) -> bool:
    """Whether a figure averaged over this many questions is too thin to judge (under `MIN_QUESTIONS` = 20).

    Why 20: under it one question moves a mean such as recall@k by more than 5 points; a percentile bootstrap
    over so few questions is too narrow (it only reshuffles the values seen, and when all agree, as 5 questions
    all at recall 1.0 do, it shrinks to a point: "1.000-1.000"); and a paired sign-flip test on n questions cannot
    go below p = 2 / 2**n (0.0625 at 5, so no difference on 5 questions can ever be significant, less still after
    Holm's adjustment over many systems). At 20 a question is 5 points and the test's floor is far below 0.05."""
    return questions < MIN_QUESTIONS


def tied(
    values: pd.Series, best: str, questions: pd.DataFrame | QuestionTable | None = None, *, dataset: str = "",
    metric: str = "", tolerance: float = TIE_TOLERANCE,
) -> list[str]:
    """The systems of `values` (metric value by system) tied with `best`, `best` first: equal within `tolerance`,
    or (given the per-question table) with a paired difference of exactly zero on every question both answered.
    Naming one of five identical systems "best" reads as a finding; a tie is not one."""
    table = _table(questions) if questions is not None else None
    mine = table.values(dataset, best, metric) if table is not None else None
    out = [best]
    for system, value in values.items():
        if system == best:
            continue
        same = bool(np.isclose(value, values[best], rtol=0.0, atol=tolerance))
        if not same and mine is not None:
            other = table.values(dataset, system, metric)
            both = mine.index.intersection(other.index) if other is not None else []
            same = len(both) > 0 and bool((other.loc[both].to_numpy() == mine.loc[both].to_numpy()).all())
        if same:
            out.append(str(system))
    return out


def keep_questions(questions: pd.DataFrame) -> pd.DataFrame:
    """The columns of a per-question table the tests need (what a baseline keeps beside its metrics)."""
    return questions[[c for c in keep_columns() if c in questions.columns]].reset_index(drop=True)
