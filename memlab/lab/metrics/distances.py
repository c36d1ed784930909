"""Distance cut-offs analysed: how far relevant and non-relevant hits lie, what each `max_distance` keeps, and drift
of hit distances between two runs (two-sample Kolmogorov-Smirnov). Pure functions of saved runs: the cut-offs
(memlab.lab.metrics.cutoffs: the one rule that recommends a cut-off, and the cut itself), the cut-off sweep and the
answerability gate all build on them, so they live outside the sweeps package."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import numpy as np
import pandas as pd
from scipy.stats import ks_2samp

from memlab.lab.base.identity import relevant_hits
from memlab.lab.datasets.model import Question

T = TypeVar("T")

DEFAULT_GRID = tuple(round(x, 2) for x in np.arange(0.20, 1.21, 0.05))
FALSE_MEMORY_TARGET = 0.2


def labelled_distances(run: pd.DataFrame, questions: Sequence[Question], *, k: int = 10) -> pd.DataFrame:
    """One row per hit within k: its distance and whether it holds a relevant event (no-answer questions'
    hits are all non-relevant)."""
    hits = run[(run["rank"] > 0) & (run["rank"] <= k)].copy()
    hits["relevant"] = relevant_hits(hits, {q.id: q.evidence for q in questions})  # by (session, event)
    return hits[["system", "question_id", "rank", "distance", "relevant"]].reset_index(drop=True)


def kept_hits(run: pd.DataFrame, questions: Sequence[Question], cutoffs: Sequence[float]) -> list[int]:
    """How many of the run's hits (on `questions`, at any rank: `cut` drops beyond k too) each cut-off keeps. The
    hits a cut-off keeps are those at or under it, so two cut-offs that keep as many keep the same hits and score
    alike: a grid finer than the run's distances is scored once per distinct count, not once per cut-off."""
    asked = run[run.question_id.isin({q.id for q in questions}) & (run["rank"] > 0)]
    distances = np.sort(asked.distance.to_numpy(dtype=float))  # NaN sorts last and no cut-off keeps it
    return [int(np.searchsorted(distances, cutoff, side="right")) for cutoff in cutoffs]


def per_cutoff(run: pd.DataFrame, questions: Sequence[Question], cutoffs: Sequence[float],
               measure: Callable[[float], T]) -> Iterator[T]:  # fmt: skip
    """`measure(cutoff)` for every cut-off, computed once per distinct set of kept hits (`kept_hits`) and shared
    by the cut-offs that keep the same hits."""
    done: dict[int, T] = {}
    for cutoff, kept in zip(cutoffs, kept_hits(run, questions, cutoffs), strict=True):
        if kept not in done:
            done[kept] = measure(cutoff)
        yield done[kept]


def drift(previous: pd.DataFrame, current: pd.DataFrame) -> pd.DataFrame:
    """KS test per system between two runs' hit distances (relevant and all hits)."""
    rows = []
    for system in sorted(set(previous.system) & set(current.system)):
        for subset, sel in (("all", lambda d: d), ("relevant", lambda d: d[d.relevant])):
            a = sel(previous[previous.system == system]).distance.dropna()
            b = sel(current[current.system == system]).distance.dropna()
            if len(a) and len(b):
                stat = ks_2samp(a, b)
                rows.append({"system": system, "hits": subset, "ks_statistic": float(stat.statistic),
                             "p_value": float(stat.pvalue), "n_previous": len(a), "n_current": len(b)})  # fmt: skip
    return pd.DataFrame(rows)


__all__ = ["DEFAULT_GRID", "FALSE_MEMORY_TARGET", "drift", "kept_hits", "labelled_distances",
           "per_cutoff"]
