"""The headline's cut-off advice for one system, read from its saved run: the `max_distance` the cut-off sweep's
rule picks, what it costs (recall@k kept, as a share of the recall without a cut-off) and what it buys (the
false-memory rate on no-answer questions), or why no cut-off is advised.

A threshold someone pastes into production must come with its price, so no cut-off is advised when a data set
cannot support one: no no-answer questions to measure false memories on, a distance that does not tell
answerable from no-answer questions apart (ROC AUC under `MIN_AUC`), no cut on the grid that meets the target,
or a cut that keeps no recall at all. A cut-off that is advised is flagged when it keeps under `MIN_KEPT` of the
recall or rests on fewer than `MIN_NO_ANSWER` no-answer questions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from memlab.lab.answerability import nearest_hit_auc
from memlab.lab.cutoff_analysis import DEFAULT_GRID, FALSE_MEMORY_TARGET, cutoff_grid
from memlab.lab.dataset import Question
from memlab.lab.scoring import score

MIN_AUC = 0.7  # below this the nearest hit's distance barely ranks answerable questions above no-answer ones
MIN_NO_ANSWER = 20  # below this one no-answer question moves the false-memory rate by more than 5 points
MIN_KEPT = 0.5  # a cut-off that loses more than half the recall is a warning in itself


@dataclass(frozen=True)
class CutoffAdvice:
    """`max_distance` None: no cut-off advised, `reason` says why. Rates are over the data set's questions."""

    system: str
    max_distance: float | None
    reason: str
    recall: float  # recall@k at the cut-off (the uncut recall when none is advised)
    recall_uncut: float
    false_memory_rate: float  # share of no-answer questions still given hits at the cut-off
    no_answer: int
    roc_auc: float  # nearest-hit distance as a score for "answerable"
    target: float

    @property
    def kept(self) -> float:
        """Share of the uncut recall@k the cut-off keeps."""
        return self.recall / self.recall_uncut if self.recall_uncut > 0 else float("nan")

    @property
    def warnings(self) -> list[str]:
        """What a reader must know before using an advised cut-off (empty when none is advised)."""
        if self.max_distance is None:
            return []
        out = []
        if self.kept < MIN_KEPT:
            out.append(f"it keeps under half the recall ({self.kept:.0%})")
        if self.no_answer < MIN_NO_ANSWER:
            out.append(f"it rests on only {self.no_answer} no-answer question{'s' * (self.no_answer != 1)} (under "
                       f"{MIN_NO_ANSWER}): one question moves the false-memory rate by {1 / self.no_answer:.0%}")
        return out


def cutoff_options(manifest: dict, dataset: str) -> dict | None:
    """The cut-off sweep's options when the run's config applies it to `dataset`, else None (no advice then:
    a run that did not ask about cut-offs gets no cut-off in its headline)."""
    cfg = manifest.get("config", {}).get("resolved", {})
    if "cutoff" not in (cfg.get("sweeps") or []):
        return None
    options = dict((cfg.get("options") or {}).get("cutoff") or {})
    only = options.pop("datasets", None)
    return None if only is not None and dataset not in only else options


def advise(
    run: pd.DataFrame,
    questions: Sequence[Question],
    *,
    k: int,
    system: str = "",
    target: float = FALSE_MEMORY_TARGET,
    grid: Sequence[float] = DEFAULT_GRID,
) -> CutoffAdvice:
    """The cut-off sweep's rule (the most recall@k whose false-memory rate stays at or under `target`) applied
    to one system's run, with the checks that decide whether a cut-off is advised at all."""
    system = system or str(run.system.iloc[0])
    no_answer = sum(not q.answerable for q in questions)
    uncut = score(run, questions, k=k)
    recall_uncut = float(uncut[uncut.answerable].recall.mean()) if uncut.answerable.any() else float("nan")
    auc = nearest_hit_auc(run, questions, k=k)
    common = {"system": system, "recall_uncut": recall_uncut, "no_answer": no_answer, "roc_auc": auc,
              "target": target}  # fmt: skip

    def none(reason: str) -> CutoffAdvice:
        fm = float(1.0 - uncut[~uncut.answerable]["empty"].mean()) if no_answer else float("nan")
        return CutoffAdvice(max_distance=None, reason=reason, recall=recall_uncut, false_memory_rate=fm, **common)

    if no_answer == 0:
        return none("the data set has no no-answer questions, so no cut-off can be checked against false memories")
    if np.isnan(auc) or auc < MIN_AUC:
        answerable = len(questions) - no_answer
        return none(f"distance does not separate answerable from no-answer questions (ROC AUC {auc:.2f} of the "
                    f"nearest hit's distance over {answerable} answerable and {no_answer} no-answer questions, "
                    f"under {MIN_AUC}; 0.5 is chance), so a cut drops answers about as often as false memories")
    table = cutoff_grid(run, questions, k=k, grid=sorted(float(d) for d in grid))
    ok = table[table.false_memory_rate.fillna(1.0) <= target]
    if ok.empty:
        return none(f"no max_distance from {min(grid):.2f} to {max(grid):.2f} keeps false memories at or under "
                    f"{target:.0%} of the {no_answer} no-answer questions")  # fmt: skip
    pick = ok.sort_values(["recall", "max_distance"], ascending=[False, True]).iloc[0]
    if not pick.recall > 0:
        return none(f"every cut that keeps false memories at or under {target:.0%} returns no relevant event")
    return CutoffAdvice(max_distance=round(float(pick.max_distance), 3), reason="", recall=float(pick.recall),
                        false_memory_rate=float(pick.false_memory_rate), **common)  # fmt: skip


def sentence(advice: CutoffAdvice, k: int) -> str:
    """The headline's cut-off sentence: the cut-off with its cost, or that none is advised and why."""
    if advice.max_distance is None:
        return f"Cut-off for `{advice.system}`: none recommended: {advice.reason}."
    text = (f"Recommended cut-off for `{advice.system}`: max_distance {advice.max_distance:.3f} keeps recall@{k} "
            f"{advice.recall:.3f} of {advice.recall_uncut:.3f} ({advice.kept:.0%} of the recall without a cut-off) "
            f"and leaves false memories on {advice.false_memory_rate:.0%} of the {advice.no_answer} no-answer "
            f"questions (target {advice.target:.0%}; nearest-hit distance ROC AUC {advice.roc_auc:.2f}).")  # fmt: skip
    return text + "".join(f" **Warning**: {w}." for w in advice.warnings)


__all__ = ["MIN_AUC", "MIN_KEPT", "MIN_NO_ANSWER", "CutoffAdvice", "advise", "cutoff_options", "sentence"]
