"""The cut-off sweep: each parent system cut at every distance of a grid (a derived run of its saved run, no new
queries: memlab.lab.metrics.cutoffs.CutRun), the cut-off advised per parent (memlab.lab.metrics.cutoffs, the rule the
headline uses too) with its recall
and false-memory rate, a transfer test (`apply_from`: a data set's parents cut at the distance advised on another
data set) and, against the previous run, drift of hit distances. The analysis itself is memlab.lab.metrics.distances.
Options: CutoffOptions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memlab.lab.base.options import option
from memlab.lab.base.plots import cutoff_curves, distance_histograms
from memlab.lab.base.tables import markdown_table
from memlab.lab.datasets.model import Dataset
from memlab.lab.metrics.cutoffs import CutRun, advice_metrics, advice_table, folder_advice, rule_text, sentence
from memlab.lab.metrics.distances import DEFAULT_GRID, FALSE_MEMORY_TARGET, drift, labelled_distances
from memlab.lab.metrics.keys import overall
from memlab.lab.metrics.scoring import LONG_COLUMNS, long_scores, score
from memlab.lab.runs.folder import RunFolder
from memlab.lab.runs.records import slug
from memlab.lab.sweeps.base import Sweep, SweepContext, distinct
from memlab.lab.systems.derived import role_of_derived
from memlab.lab.systems.kinds import EventSystem
from memlab.lab.systems.roles import CUT, MEASURE, SystemRole, cut_parents
from memlab.lab.systems.table import TableSystem

DEFAULT_PARENTS = ("event", "chunk4o1")


@dataclass(frozen=True)
class CutoffOptions:
    systems: list[str] | None = option(None, "the systems cut (default: the configured event systems, event and "
                                             "chunk4o1)")  # fmt: skip
    grid: list[float] = option([float(d) for d in DEFAULT_GRID], "the max_distance values each system is cut at",
                               low=0.0, high=2.0)  # fmt: skip
    target: float = option(FALSE_MEMORY_TARGET, "the false-memory rate the advised cut-off keeps under", low=0.0,
                           high=1.0)  # fmt: skip
    apply_from: str | None = option(None, "a data set whose advised cut-off is applied here too (does it transfer?)")


def parents(options: dict[str, Any], context: SweepContext) -> list[str]:
    """Which systems are cut: `options.systems`, else the configured event and table systems plus event and
    chunk4o1 (a table system is cut on the table's own distances)."""
    event_like = [s.name for s in context.systems if isinstance(s, EventSystem | TableSystem)]
    if options.get("systems"):
        return [n for n in options["systems"] if n in event_like]
    configured = [s["name"] for s in context.config.get("systems", []) if s.get("name") in event_like]
    return list(dict.fromkeys([*configured, *[p for p in DEFAULT_PARENTS if p in event_like]])) or event_like[:1]


def cut_name(parent: str, max_distance: float) -> str:
    return f"{parent}@cut{max_distance:.3f}".rstrip("0").rstrip(".")


def grid_distances(options: dict[str, Any], parent: str) -> dict[str, float]:
    """{cut system: its max_distance} of the grid this sweep's options cut `parent` at."""
    return {cut_name(parent, d): d for d in sorted({round(float(x), 3) for x in options.get("grid", DEFAULT_GRID)})}


def _grid_from_scores(base: pd.DataFrame, parent: str, k: int, distances: dict[str, float],
                      ran: set[str]) -> pd.DataFrame:  # fmt: skip
    """The grid of `parent`'s cuts (the cut systems with a saved run, by their recorded role and parent)."""
    cuts = base[(base.role == CUT) & (base.parent == parent) & base.system.isin(ran) & overall(base)]
    if cuts.empty:
        return pd.DataFrame()
    wide = cuts[cuts.metric.isin([f"recall@{k}", "empty_rate", "correct_empty_rate"])].pivot_table(
        index="system", columns="metric", values="value").reset_index()
    wide["max_distance"] = wide.system.map(distances).astype(float)
    wide = wide.rename(columns={f"recall@{k}": "recall"})
    if "correct_empty_rate" not in wide:
        wide["correct_empty_rate"] = np.nan
    wide["false_memory_rate"] = 1.0 - wide["correct_empty_rate"]
    return wide.assign(system=parent).sort_values("max_distance")


def carried(parent: str, source: str, distance: float) -> CutRun:
    """`parent` cut at the distance advised on the data set `source`: the derived run the transfer test scores."""
    return CutRun(f"{parent}@cut-from-{source}", parent, distance)


def transferred(folder: RunFolder, dataset: str, parent: str, source: str, distance: float) -> list[tuple]:
    """`parent` on `dataset` cut at the distance recommended on `source`: does a threshold carry over to data it
    was not chosen on? Scored from the saved run (a derived run, no new queries), as long-form rows
    (LONG_COLUMNS)."""
    runs = folder.runs(dataset)
    if parent not in runs:
        return []
    moved = carried(parent, source, distance)
    scored = score(moved.derive(runs[parent].frame), folder.questions(dataset), k=folder.k)
    keep = {f"recall@{folder.k}", "empty_rate", "correct_empty_rate"}
    frame = long_scores(scored, dataset, folder.k, groups=("qtype",))
    frame = frame[frame.metric.isin(keep)]
    return [*frame.itertuples(index=False, name=None), (dataset, moved.name, "max_distance", "", "", distance,
                                                         len(scored))]  # fmt: skip


def _drift_text(previous: str, dataset: str, current: pd.DataFrame, k: int) -> str:
    before = RunFolder(Path(previous))
    try:
        runs = before.runs(dataset)
        questions = before.questions(dataset)
    except (OSError, ValueError, KeyError):
        return f"No run of {dataset!r} in {previous}."
    old = [labelled_distances(runs[p].frame, questions, k=k).assign(system=p) for p in set(current.system) if p in runs]
    table = drift(pd.concat(old, ignore_index=True), current) if old else pd.DataFrame()
    return markdown_table(table) if len(table) else f"No comparable run of {dataset!r} in {previous}."


class CutoffSweep(Sweep):
    """Distance cut-offs of the event-like systems: the grid, the recommendation, transfer and drift."""

    name = "cutoff"
    options_type = CutoffOptions

    def planned(self, options: dict[str, Any], config: dict[str, Any]) -> int:
        """Parents (those named, else the configured systems and the defaults) x distinct grid distances."""
        grid = {round(float(x), 3) for x in options.get("grid", DEFAULT_GRID)}
        named = options.get("systems")
        return (distinct(named) if named else len(config.get("systems") or []) + len(DEFAULT_PARENTS)) * len(grid)

    def systems(self, dataset: Dataset, options: dict[str, Any], context: SweepContext) -> list[CutRun]:
        grid = sorted({round(float(x), 3) for x in options.get("grid", DEFAULT_GRID)})
        return [CutRun(cut_name(p, d), p, d) for p in parents(options, context) for d in grid]

    def scores(self, folder: RunFolder, dataset: str, options: dict[str, Any], base: pd.DataFrame) -> pd.DataFrame:
        """Per cut parent: the cut-off advice (memlab.lab.metrics.cutoffs, the one rule) read from its saved run: the
        advised max_distance (NaN: none advised), the recall and false-memory rate it leads to, and the per-question
        and per-hit ROC AUCs of distance. With `apply_from: DATASET`, also each parent cut at the distance advised
        on that data set (scored earlier in the same run; none where none was advised there)."""
        runs = folder.runs(dataset)
        source = options.get("apply_from")
        if source and source != dataset:
            recs = base[(base.dataset == source) & (base.metric == "recommended_max_distance") & base.value.notna()]
            rows = [row for r in recs.itertuples(index=False)
                    for row in transferred(folder, dataset, r.system, source, float(r.value))]  # fmt: skip
        else:
            rows = []
        n = len(folder.questions(dataset))
        for parent in _cut_parents(base[base.dataset == dataset], set(runs)):
            advice = folder_advice(folder, dataset, parent, options) if parent in runs else None
            if advice is not None:
                rows += [(dataset, parent, metric, "", "", float(value), n)
                         for metric, value in advice_metrics(advice).items()]  # fmt: skip
        frame = pd.DataFrame(rows, columns=LONG_COLUMNS)
        cuts = [carried(str(r.system), source, float(r.value))
                for r in (recs.itertuples(index=False) if source and source != dataset else ())]  # fmt: skip
        moved = {c.name: role_of_derived(c, self.name) for c in cuts}
        found = [runs[s].role or SystemRole() if s in runs else moved.get(s, SystemRole(MEASURE, self.name))
                 for s in frame.system]  # fmt: skip
        return frame.assign(role=[r.role for r in found], sweep=[r.sweep or "" for r in found],
                            parent=[r.parent or "" for r in found])  # fmt: skip

    def section(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
        k = folder.k
        base = folder.scores[folder.scores.dataset == dataset]
        runs = folder.runs(dataset)
        advices = [a for p in _cut_parents(base, set(runs)) if (a := folder_advice(folder, dataset, p, options))
                   is not None]  # fmt: skip
        if not advices:
            return None
        systems = [a.system for a in advices]
        grid = pd.concat([_grid_from_scores(base, p, k, grid_distances(options, p), set(runs)) for p in systems],
                         ignore_index=True)  # fmt: skip
        questions = folder.questions(dataset)
        dist = pd.concat([labelled_distances(runs[p].frame, questions, k=k).assign(system=p) for p in systems],
                         ignore_index=True)  # fmt: skip
        stem = slug(dataset)  # the file name every output of this data set uses (distinct names, distinct files)
        advised = {a.system: a.max_distance for a in advices if a.max_distance is not None}
        figures = folder.figure(f"distances__{stem}.png", "distances", lambda png: distance_histograms(dist, png))
        figures += folder.figure(f"cutoffs__{stem}.png", "cut-offs",
                                 lambda png: cutoff_curves(grid, png, advised, k=k))  # fmt: skip
        parts = ["", *[f"- {sentence(a, k)}" for a in advices]]
        moved = base[(base.role == CUT) & ~base.system.isin(set(runs)) & overall(base)]
        if len(moved):
            wide = moved.pivot_table(index="system", columns="metric", values="value", sort=False).reset_index()
            parts += ["", "Cut at the distance recommended on another data set (never tuned here):", "",
                      markdown_table(wide)]  # fmt: skip
        previous = folder.manifest.get("previous")
        if previous:
            parts += ["", "Drift of hit distances against the previous run (two-sample KS):", "",
                      _drift_text(previous, dataset, dist, k)]  # fmt: skip
        target = float(options.get("target", FALSE_MEMORY_TARGET))
        return "\n".join([rule_text(target), "", markdown_table(advice_table(advices, k)), *figures, *parts])


def _cut_parents(scores: pd.DataFrame, ran: set[str]) -> list[str]:
    """The systems the cut-off grid cut: the parents its cut systems (those with a saved run) record."""
    return cut_parents(scores[scores.system.isin(ran)])


__all__ = ["DEFAULT_GRID", "DEFAULT_PARENTS", "CutoffSweep", "carried", "cut_name", "parents", "transferred"]
