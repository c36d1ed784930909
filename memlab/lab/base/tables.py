"""Score tables as text: one cell, a pipe table, long scores pivoted to one row per system, a breakdown by group.
Pure helpers (a frame in, a frame or a string out) that the report, the sweeps' sections, comparisons and the CLI
share; they import nothing of the workbench but the memory-size labels, so anything may import them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from memlab.lab.base.sizes import SIZE_LABELS


def _counts(values: pd.Series) -> bool:
    """A float column that holds counts (every value whole, some above 1): printed as integers. Rates (0 to 1)
    and measured times are not whole numbers, so they keep their decimals."""
    numbers = pd.to_numeric(values, errors="coerce").dropna()
    return bool(len(numbers)) and bool((numbers == numbers.round()).all()) and bool((numbers.abs() > 1).any())


def format_cell(value: object, floatfmt: str = ".3f", whole: bool = False) -> str:
    """One table cell: integers as integers, floats to `floatfmt` (3 decimals; rates and small figures), floats
    of 100 and more without decimals (thousands separated from 10,000), missing values empty."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float | np.floating) and np.isnan(value):
        return ""
    if isinstance(value, bool | np.bool_):
        return str(bool(value)).lower()
    if isinstance(value, int | np.integer):
        return f"{int(value):,}" if abs(int(value)) >= 10_000 else str(int(value))
    if isinstance(value, float | np.floating):
        if whole or abs(value) >= 100:  # counts, characters, rows/s, long latencies: no decimals
            return f"{value:,.0f}" if abs(value) >= 10_000 else f"{value:.0f}"
        return format(float(value), floatfmt)
    return str(value)


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".3f") -> str:
    """A pipe table without extra dependencies (pandas' to_markdown needs tabulate). Column dtypes are kept
    (counts print as integers, see `format_cell`)."""
    cols = list(frame.columns)
    whole = {col: frame[col].dtype.kind == "f" and _counts(frame[col]) for col in cols}
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False, name=None):
        cells = [format_cell(value, floatfmt, whole[col]) for col, value in zip(cols, row, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _overall(scores: pd.DataFrame) -> pd.DataFrame:
    """Long scores' rows over all the questions (a breakdown's rows carry their `group`)."""
    return scores[scores["group"] == ""] if "group" in scores.columns else scores


def pivot_scores(scores: pd.DataFrame, systems: list[str], metrics: list[str]) -> pd.DataFrame:
    """Wide table from long scores: one row per system (in the order given), one column per metric present (over
    all the questions)."""
    scores = _overall(scores)
    sub = scores[scores.system.isin(systems) & scores.metric.isin(metrics)]
    if sub.empty:
        return pd.DataFrame({"system": systems})
    wide = sub.pivot_table(index="system", columns="metric", values="value", sort=False)
    questions = scores[scores.system.isin(systems) & (scores.metric == metrics[0])].set_index("system").questions
    wide = wide.reindex([s for s in systems if s in wide.index])
    cols = [m for m in metrics if m in wide.columns]
    # Without a cut-off no system returns nothing, so an all-zero correct-empty rate says nothing: left out.
    cols = [m for m in cols if m != "correct_empty_rate" or wide[m].fillna(0).abs().sum() > 0]
    out = wide[cols].reset_index()
    if len(questions):
        out.insert(1, "questions", out.system.map(questions).fillna(0).astype(int))
    return out


def breakdown(scores: pd.DataFrame, systems: list[str], metric: str, group: str) -> pd.DataFrame | None:
    """`metric` of `systems` broken down by `group` (the long scores' `group` and `group_value` columns) as a
    table: one row per system, one column per group value (None when there is at most one value: nothing to break
    down)."""
    if "group" not in scores.columns:
        return None
    rows = scores[scores.system.isin(systems) & (scores.metric == metric) & (scores["group"] == group)]
    if rows.group_value.nunique() <= 1:
        return None
    wide = rows.pivot_table(index="system", columns="group_value", values="value", sort=False).rename_axis(
        columns="group")
    if group == "size":  # memory-size buckets in size order, not alphabetical
        wide = wide[[b for b in SIZE_LABELS if b in wide.columns] + [c for c in wide.columns if c not in SIZE_LABELS]]
    return wide.reindex([s for s in systems if s in wide.index]).reset_index()


__all__ = ["breakdown", "format_cell", "markdown_table", "pivot_scores"]
