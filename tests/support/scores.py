"""Long-form scores as the tests name their figures: the metric with its breakdown, as metrics.json writes it."""

from __future__ import annotations

import pandas as pd

from memlab import lab


def labelled(scores: pd.DataFrame) -> pd.DataFrame:
    """`scores` with `metric` as a flat key's metric part (`recall@10[qtype=temporal]`), from the group columns (a
    scores.csv read back gives an empty group as NaN)."""
    groups = [scores[c].fillna("").astype(str) for c in ("group", "group_value")]
    labels = [lab.metrics.ScoreKey("", "", str(m), g, v).label for m, g, v in zip(scores.metric, *groups, strict=True)]
    return scores.assign(metric=labels)
