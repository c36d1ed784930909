"""Distance cut-offs in one place: the rule that recommends one, and its application, a cut run derived from its
parent system's saved run.

The rule, read from a system's saved run: the `max_distance` with the most recall@k whose false-memory rate on
no-answer questions stays at or under the target, what it costs (recall@k kept, as a share of the recall without a
cut-off) and what it buys (the false-memory rate), or why no cut-off is advised. The headline, the cut-off sweep's
metrics, section and plot, the per-question viewer (through the sweep's `recommended_max_distance`) and
`lab.metrics.recommend` all read `advise`, so a report cannot advise two things.

A threshold someone pastes into production must come with its price, so no cut-off is advised when a data set
cannot support one: no no-answer questions to measure false memories on, a nearest-hit distance that does not tell
answerable from no-answer questions apart (per-question ROC AUC under `MIN_AUC`), no cut on the grid that meets
the target, or a cut that keeps no recall at all. An advised cut-off is flagged when it keeps under `MIN_KEPT` of
the recall or rests on fewer than `MIN_NO_ANSWER` no-answer questions.

Two ROC AUCs are reported and named apart: the per-question AUC (the nearest hit's distance telling answerable
from no-answer questions: what a cut-off can do, and the guard) and the per-hit AUC (a hit's distance telling hits
holding a labelled event from the rest).

The application: `cut` drops a run's hits beyond a distance, and `CutRun` is a derived run (memlab.lab.systems.derived)
of role `cut`: its parent's saved run cut at `max_distance`, never asked again. The cut-off grid, the rule's
table and the answerability gate's distance cut all cut through `cut`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from memlab.lab.datasets.model import Question
from memlab.lab.metrics.distances import DEFAULT_GRID, FALSE_MEMORY_TARGET, labelled_distances, per_cutoff
from memlab.lab.metrics.scoring import score, summarize
from memlab.lab.systems.derived import derived_kind
from memlab.lab.systems.roles import CUT

MIN_AUC = 0.7  # below this the nearest hit's distance barely ranks answerable questions above no-answer ones
MIN_NO_ANSWER = 20  # below this one no-answer question moves the false-memory rate by more than 5 points
MIN_KEPT = 0.5  # a cut-off that loses more than half the recall is a warning in itself

QUESTION_AUC = "per-question ROC AUC"  # of the nearest hit's distance, answerable vs no-answer questions
HIT_AUC = "per-hit ROC AUC"  # of a hit's distance, hits holding a labelled event vs the rest


NO_HIT_DISTANCE = 2.0  # the largest cosine distance: a question given nothing reads as the farthest


def cut(run: pd.DataFrame, max_distance: float | None, *, k: int | None = None) -> pd.DataFrame:
    """Drop hits beyond the cut-off (with `k`, hits ranked beyond k first, as scoring at k sees the run);
    questions left with nothing keep one empty row."""
    if k is not None:
        run = run[run["rank"] <= k]
    if max_distance is None:
        return run
    kept = run[(run["rank"] == 0) | (run["distance"] <= max_distance)]
    lost = set(zip(run.system, run.question_id, strict=True)) - set(zip(kept.system, kept.question_id, strict=True))
    empty = run.drop_duplicates(["system", "question_id"]).set_index(["system", "question_id"]).loc[sorted(lost)]
    empty = empty.reset_index().assign(rank=0, unit_id=None, event_ids=[[] for _ in range(len(lost))],
                                       distance=np.nan, chars=0)  # fmt: skip
    if "event_sessions" in empty.columns:
        empty = empty.assign(session_id=None, event_sessions=[[] for _ in range(len(lost))])
    if "rerank" in empty.columns:  # the question's re-rank cost stays; the dropped hit's score goes
        empty = empty.assign(rerank=np.nan)
    return pd.concat([kept, empty], ignore_index=True) if len(lost) else kept


@derived_kind
@dataclass(frozen=True)
class CutRun:
    """`parent`'s saved run with hits beyond `max_distance` dropped: a derived run of role `cut`, computed from
    the saved run, never re-queried."""

    kind: ClassVar[str] = "cutoff"
    role_name: ClassVar[str] = CUT
    name: str
    parent: str
    max_distance: float

    def derive(self, parent: pd.DataFrame) -> pd.DataFrame:
        return cut(parent, self.max_distance).assign(system=self.name)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "parent": self.parent, "max_distance": self.max_distance}


def cutoff_grid(
    run: pd.DataFrame, questions: Sequence[Question], *, k: int = 10, grid: Sequence[float] = DEFAULT_GRID
) -> pd.DataFrame:
    """Recall, precision, empty rate and correct-empty rate at every cut-off of the grid, per system (cut-offs
    that keep the same hits are scored once: memlab.lab.metrics.distances.kept_hits)."""
    summaries = list(per_cutoff(run, questions, grid,
                                lambda c: summarize(score(cut(run, c, k=k), questions, k=k))))  # fmt: skip
    out = pd.concat([s.assign(max_distance=c) for s, c in zip(summaries, grid, strict=True)], ignore_index=True)
    out["false_memory_rate"] = 1.0 - out["correct_empty_rate"]
    return out


def nearest_hit_auc(run: pd.DataFrame, questions: Sequence[Question], *, k: int = 10) -> float:
    """ROC AUC of the nearest hit's distance (within k; lower = answerable) as a score telling answerable from
    no-answer questions: whether any max_distance can return nothing on the second and keep the first. The
    nearest hit, not the first ranked, since a cut drops a question's hits only when its nearest is beyond it
    (they differ for hybrid rankings). NaN without both kinds of question."""
    top = run[(run["rank"] > 0) & (run["rank"] <= k)]
    nearest = top.groupby("question_id").distance.min()
    y = np.array([q.answerable for q in questions], dtype=bool)
    d = np.array([nearest.get(q.id, NO_HIT_DISTANCE) for q in questions], dtype=float)
    return float(roc_auc_score(y, -np.nan_to_num(d, nan=NO_HIT_DISTANCE))) if len(np.unique(y)) == 2 else float("nan")


@dataclass(frozen=True)
class CutoffAdvice:
    """`max_distance` None: no cut-off advised, `reason` says why. Rates are over the data set's questions."""

    system: str
    max_distance: float | None
    reason: str
    recall: float  # recall@k at the cut-off (the uncut recall when none is advised)
    recall_uncut: float
    false_memory_rate: float  # share of no-answer questions still given hits at the cut-off (uncut when none)
    no_answer: int
    question_auc: float  # per question: the nearest hit's distance as a score for "answerable" (the guard)
    hit_auc: float  # per hit: a hit's distance as a score for "holds a labelled event"
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


def rule_text(target: float = FALSE_MEMORY_TARGET) -> str:
    """The rule, in the words every section that shows a cut-off uses."""
    return (f"Recommended cut-off: the max_distance with the most recall whose false-memory rate on no-answer "
            f"questions stays at or under {target:.0%}; none when the data set has no no-answer questions, when the "
            f"{QUESTION_AUC} of the nearest hit's distance is under {MIN_AUC}, when no distance of the grid meets "
            "the target, or when the only such cuts keep no recall.")  # fmt: skip


def hit_distance_auc(run: pd.DataFrame, questions: Sequence[Question], *, k: int = 10) -> float:
    """Per-hit ROC AUC of a hit's distance (lower = relevant) telling hits within k that hold a labelled event from
    the rest; NaN without both kinds of hit."""
    d = labelled_distances(run, questions, k=k).dropna(subset=["distance"])
    if d.relevant.nunique() < 2:
        return float("nan")
    return float(roc_auc_score(d.relevant.astype(bool), -d.distance.astype(float)))


def advise(
    run: pd.DataFrame,
    questions: Sequence[Question],
    *,
    k: int,
    system: str = "",
    target: float = FALSE_MEMORY_TARGET,
    grid: Sequence[float] = DEFAULT_GRID,
) -> CutoffAdvice:
    """The rule (module docstring) applied to one system's run: the most recall@k whose false-memory rate stays
    at or under `target` on the grid, with the checks that decide whether a cut-off is advised at all."""
    system = system or str(run.system.iloc[0])
    no_answer = sum(not q.answerable for q in questions)
    answerable = len(questions) - no_answer
    uncut = score(run, questions, k=k)
    recall_uncut = float(uncut[uncut.answerable].recall.mean()) if uncut.answerable.any() else float("nan")
    auc = nearest_hit_auc(run, questions, k=k)
    common = {"system": system, "recall_uncut": recall_uncut, "no_answer": no_answer, "question_auc": auc,
              "hit_auc": hit_distance_auc(run, questions, k=k), "target": target}  # fmt: skip

    def none(reason: str) -> CutoffAdvice:
        fm = float(1.0 - uncut[~uncut.answerable]["empty"].mean()) if no_answer else float("nan")
        return CutoffAdvice(max_distance=None, reason=reason, recall=recall_uncut, false_memory_rate=fm, **common)

    if no_answer == 0:
        return none("the data set has no no-answer questions, so no cut-off can be checked against false memories")
    if answerable == 0:
        return none("the data set has no answerable questions, so no cut-off can be checked against lost answers")
    if np.isnan(auc) or auc < MIN_AUC:
        return none(f"distance does not separate answerable from no-answer questions ({QUESTION_AUC} {auc:.2f} of "
                    f"the nearest hit's distance over {answerable} answerable and {no_answer} no-answer questions, "
                    f"under {MIN_AUC}; 0.5 is chance), so a cut drops answers about as often as false memories")
    points = sorted({round(float(d), 3) for d in grid})
    table = cutoff_grid(run, questions, k=k, grid=points)
    ok = table[table.false_memory_rate.fillna(1.0) <= target]
    if ok.empty:
        return none(f"no max_distance from {points[0]:.2f} to {points[-1]:.2f} keeps false memories at or under "
                    f"{target:.0%} of the {no_answer} no-answer questions")  # fmt: skip
    pick = ok.sort_values(["recall", "max_distance"], ascending=[False, True]).iloc[0]
    if not pick.recall > 0:
        return none(f"every cut that keeps false memories at or under {target:.0%} returns no relevant event")
    return CutoffAdvice(max_distance=round(float(pick.max_distance), 3), reason="", recall=float(pick.recall),
                        false_memory_rate=float(pick.false_memory_rate), **common)  # fmt: skip


def recommend(
    run: pd.DataFrame,
    questions: Sequence[Question],
    *,
    k: int = 10,
    target: float = FALSE_MEMORY_TARGET,
    grid: Sequence[float] = DEFAULT_GRID,
) -> list[CutoffAdvice]:
    """`advise` for every system of a run (in the order they appear)."""
    return [advise(g, questions, k=k, system=str(system), target=target, grid=grid)
            for system, g in run.groupby("system", sort=False)]  # fmt: skip


def cutoff_options(manifest: dict, dataset: str) -> dict | None:
    """The cut-off sweep's options when the run's config applies it to `dataset`, else None (no advice then:
    a run that did not ask about cut-offs gets no cut-off in its headline)."""
    cfg = manifest.get("config", {}).get("resolved", {})
    if "cutoff" not in (cfg.get("sweeps") or []):
        return None
    options = dict((cfg.get("options") or {}).get("cutoff") or {})
    only = options.pop("datasets", None)
    return None if only is not None and dataset not in only else options


def folder_advice(folder: Any, dataset: str, system: str, options: dict[str, Any]) -> CutoffAdvice | None:
    """The advice for `system`'s saved run in a run folder under the cut-off sweep's `options` (its `target` and
    `grid`), computed once per folder; None when the folder holds no run of that system."""
    runs = folder.runs(dataset)
    if system not in runs:
        return None
    target = float(options.get("target", FALSE_MEMORY_TARGET))
    grid = tuple(sorted({round(float(d), 3) for d in options.get("grid", DEFAULT_GRID)}))
    return folder.memo("cutoff_advice", (dataset, system, folder.k, target, grid), lambda: advise(
        runs[system].frame, folder.questions(dataset), k=folder.k, system=system, target=target, grid=grid))


def advice_metrics(advice: CutoffAdvice) -> dict[str, float]:
    """The advice as the cut-off sweep stores it (metrics.json): the advised distance (NaN: none advised), the
    recall and false-memory rate it leads to, and the two ROC AUCs, named apart."""
    nan = float("nan")
    return {"recommended_max_distance": nan if advice.max_distance is None else advice.max_distance,
            "recall_at_recommended": advice.recall, "false_memory_at_recommended": advice.false_memory_rate,
            "question_distance_roc_auc": _round(advice.question_auc),
            "hit_distance_roc_auc": _round(advice.hit_auc)}  # fmt: skip


def _round(value: float) -> float:
    return round(value, 3) if math.isfinite(value) else float("nan")


def advice_table(advices: Sequence[CutoffAdvice], k: int) -> pd.DataFrame:
    """One row per system: the advised cut-off (`none`) with what it keeps and reaches, and both AUCs."""
    return pd.DataFrame([{
        "system": a.system, "recommended max_distance": "none" if a.max_distance is None else f"{a.max_distance:.3f}",
        f"recall@{k} there": a.recall, f"recall@{k} uncut": a.recall_uncut, "false-memory rate there":
        a.false_memory_rate, "no-answer questions": a.no_answer, f"{QUESTION_AUC} (nearest hit)": a.question_auc,
        f"{HIT_AUC} (distance)": a.hit_auc,
    } for a in advices])  # fmt: skip


def sentence(advice: CutoffAdvice, k: int) -> str:
    """The cut-off sentence of a system: the cut-off with its cost, or that none is advised and why."""
    if advice.max_distance is None:
        return f"Cut-off for `{advice.system}`: none recommended: {advice.reason}."
    text = (f"Recommended cut-off for `{advice.system}`: max_distance {advice.max_distance:.3f} keeps recall@{k} "
            f"{advice.recall:.3f} of {advice.recall_uncut:.3f} ({advice.kept:.0%} of the recall without a cut-off) "
            f"and leaves false memories on {advice.false_memory_rate:.0%} of the {advice.no_answer} no-answer "
            f"questions (target {advice.target:.0%}; {QUESTION_AUC} {advice.question_auc:.2f} of the nearest hit's "
            "distance).")  # fmt: skip
    return text + "".join(f" **Warning**: {w}." for w in advice.warnings)


__all__ = ["HIT_AUC", "MIN_AUC", "MIN_KEPT", "MIN_NO_ANSWER", "NO_HIT_DISTANCE", "QUESTION_AUC", "CutRun",
           "CutoffAdvice", "advice_metrics", "advice_table", "advise", "cut", "cutoff_grid", "cutoff_options",
           "folder_advice", "hit_distance_auc", "nearest_hit_auc", "recommend", "rule_text", "sentence"]
