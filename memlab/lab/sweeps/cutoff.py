"""Distance cut-offs: how far relevant and non-relevant hits lie, what each `max_distance` keeps, and a
recommended threshold with the rule that picked it. Distances are stored so the next run can test them for
drift (two-sample Kolmogorov-Smirnov)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import ks_2samp
from sklearn.metrics import precision_recall_curve, roc_auc_score

from memlab.lab.dataset import Question
from memlab.lab.identity import relevant_hits
from memlab.lab.scoring import cut, score, summarize

DEFAULT_GRID = tuple(round(x, 2) for x in np.arange(0.20, 1.21, 0.05))
FALSE_MEMORY_TARGET = 0.2


def labelled_distances(run: pd.DataFrame, questions: Sequence[Question], *, k: int = 10) -> pd.DataFrame:
    """One row per hit within k: its distance and whether it holds a relevant event (no-answer questions'
    hits are all non-relevant)."""
    hits = run[(run["rank"] > 0) & (run["rank"] <= k)].copy()
    hits["relevant"] = relevant_hits(hits, {q.id: q.evidence for q in questions})  # by (session, event)
    return hits[["system", "question_id", "rank", "distance", "relevant"]].reset_index(drop=True)


def cutoff_grid(
    run: pd.DataFrame, questions: Sequence[Question], *, k: int = 10, grid: Sequence[float] = DEFAULT_GRID
) -> pd.DataFrame:
    """Recall, precision, empty rate and correct-empty rate at every cut-off of the grid, per system."""
    frames = []
    for cutoff in grid:
        summary = summarize(score(run, questions, k=k, max_distance=cutoff))
        frames.append(summary.assign(max_distance=cutoff))
    out = pd.concat(frames, ignore_index=True)
    out["false_memory_rate"] = 1.0 - out["correct_empty_rate"]
    return out


@dataclass(frozen=True)
class Recommendation:
    system: str
    max_distance: float
    rule: str
    recall: float
    false_memory_rate: float
    best_f1_distance: float
    roc_auc: float


def recommend(
    grid: pd.DataFrame, distances: pd.DataFrame, *, target: float = FALSE_MEMORY_TARGET
) -> list[Recommendation]:
    """Per system: the largest-recall cut-off whose false-memory rate on no-answer questions stays at or
    under `target`; without no-answer questions, the best-F1 threshold of the hit-level PR curve."""
    out = []
    for system, g in grid.groupby("system", sort=False):
        d = distances[distances.system == system]
        best_f1, auc = float("nan"), float("nan")
        if d.relevant.nunique() == 2:
            precision, recall, thresholds = precision_recall_curve(d.relevant, -d.distance)
            f1 = 2 * precision * recall / np.clip(precision + recall, 1e-12, None)
            best_f1 = float(-thresholds[int(np.argmax(f1[:-1]))])
            auc = float(roc_auc_score(d.relevant, -d.distance))
        ok = g[g.false_memory_rate.fillna(1.0) <= target]
        if g.correct_empty_rate.notna().any() and len(ok):
            pick = ok.sort_values(["recall", "max_distance"], ascending=[False, True]).iloc[0]
            rule = f"largest recall with false-memory rate <= {target:.0%} on no-answer questions"
            cutoff = float(pick.max_distance)
        else:
            cutoff = best_f1
            rule = "best F1 of the hit-level precision-recall curve"
            pick = g.iloc[(g.max_distance - cutoff).abs().argsort().iloc[0]]
        out.append(Recommendation(system, round(cutoff, 3), rule, float(pick.recall),
                                  float(pick.false_memory_rate), round(best_f1, 3), round(auc, 3)))  # fmt: skip
    return out


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


# -- the sweep: derived systems, recommendation scores, report section ------------------------------------------

DEFAULT_PARENTS = ("event", "chunk4o1")


def parents(options: dict, context) -> list[str]:
    """Which systems are cut: `options.systems`, else the configured event systems plus event and chunk4o1."""
    from memlab.lab.systems import EventSystem

    event_like = [s.name for s in context.systems if isinstance(s, EventSystem)]
    if options.get("systems"):
        return [n for n in options["systems"] if n in event_like]
    configured = [s["name"] for s in context.config.get("systems", []) if s.get("name") in event_like]
    return list(dict.fromkeys([*configured, *[p for p in DEFAULT_PARENTS if p in event_like]])) or event_like[:1]


def cut_name(parent: str, max_distance: float) -> str:
    return f"{parent}@cut{max_distance:.3f}".rstrip("0").rstrip(".")


def systems(dataset, options: dict, context) -> list:
    from memlab.lab.systems import CutoffSystem

    grid = sorted({round(float(x), 3) for x in options.get("grid", DEFAULT_GRID)})
    return [CutoffSystem(cut_name(p, d), p, d) for p in parents(options, context) for d in grid]


def _grid_from_scores(base: pd.DataFrame, parent: str, k: int) -> pd.DataFrame:
    cuts = base[base.system.str.startswith(f"{parent}@cut")]
    if cuts.empty:
        return pd.DataFrame()
    wide = cuts[cuts.metric.isin([f"recall@{k}", "empty_rate", "correct_empty_rate"])].pivot_table(
        index="system", columns="metric", values="value").reset_index()
    wide["max_distance"] = wide.system.str.extract(r"@cut([0-9.]+)$")[0].astype(float)
    wide = wide.rename(columns={f"recall@{k}": "recall"})
    if "correct_empty_rate" not in wide:
        wide["correct_empty_rate"] = np.nan
    wide["false_memory_rate"] = 1.0 - wide["correct_empty_rate"]
    return wide.assign(system=parent).sort_values("max_distance")


def transferred(folder, dataset: str, parent: str, source: str, distance: float) -> list[tuple]:
    """`parent` on `dataset` cut at the distance recommended on `source`: does a threshold carry over to data it
    was not chosen on? Scored from the saved run (no new queries)."""
    from memlab.lab.scoring import long_scores

    runs = folder.runs(dataset)
    if parent not in runs:
        return []
    name = f"{parent}@cut-from-{source}"
    scored = score(cut(runs[parent].frame, distance).assign(system=name), folder.questions(dataset), k=folder.k)
    keep = {f"recall@{folder.k}", "empty_rate", "correct_empty_rate"}
    frame = long_scores(scored, dataset, folder.k, groups=("qtype",))
    frame = frame[frame.metric.str.split("[").str[0].isin(keep)]
    return [*frame.itertuples(index=False, name=None), (dataset, name, "max_distance", distance, len(scored))]


def scores(folder, dataset: str, options: dict, base: pd.DataFrame) -> pd.DataFrame:
    """Per cut system: its recommended max_distance, the recall there, and the ROC AUC of distance as a relevance
    signal (from the parent's saved run). With `apply_from: DATASET`, also each parent cut at the distance
    recommended on that data set (scored earlier in the same run)."""
    k = folder.k
    runs = folder.runs(dataset)
    questions = folder.questions(dataset)
    target = float(options.get("target", FALSE_MEMORY_TARGET))
    source = options.get("apply_from")
    if source and source != dataset:
        recs = base[(base.dataset == source) & (base.metric == "recommended_max_distance")]
        rows = [row for r in recs.itertuples(index=False)
                for row in transferred(folder, dataset, r.system, source, float(r.value))]  # fmt: skip
    else:
        rows = []
    base = base[base.dataset == dataset]
    for parent in sorted({s.split("@cut")[0] for s in base.system if "@cut" in s and "@cut-from-" not in s}):
        grid = _grid_from_scores(base, parent, k)
        if grid.empty or parent not in runs:
            continue
        distances = labelled_distances(runs[parent].frame, questions, k=k)
        for rec in recommend(grid, distances.assign(system=parent), target=target):
            n = len(questions)
            for metric, value in (("recommended_max_distance", rec.max_distance), ("recall_at_recommended",
                                  rec.recall), ("false_memory_at_recommended", rec.false_memory_rate),
                                  ("best_f1_distance", rec.best_f1_distance), ("distance_roc_auc", rec.roc_auc)):
                rows.append((dataset, parent, metric, float(value), n))  # fmt: skip
    return pd.DataFrame(rows, columns=["dataset", "system", "metric", "value", "questions"])


def section(folder, dataset: str, options: dict) -> str | None:
    from memlab.lab import plots
    from memlab.lab.report import markdown_table

    k = folder.k
    base = folder.scores[folder.scores.dataset == dataset]
    recs = base[base.metric.isin(["recommended_max_distance", "recall_at_recommended",
                                  "false_memory_at_recommended", "distance_roc_auc"])]  # fmt: skip
    if recs.empty:
        return None
    table = recs.pivot_table(index="system", columns="metric", values="value", sort=False).reset_index()
    grids = [_grid_from_scores(base, p, k) for p in table.system]
    grid = pd.concat(grids, ignore_index=True)
    runs = folder.runs(dataset)
    questions = folder.questions(dataset)
    dist = pd.concat([labelled_distances(runs[p].frame, questions, k=k).assign(system=p) for p in table.system
                      if p in runs], ignore_index=True)  # fmt: skip
    from memlab.lab.runs import slug

    stem = slug(dataset)  # the file name every output of this data set uses (distinct names, distinct files)
    plots.distance_histograms(dist, folder.path / f"distances__{stem}.png")
    plots.cutoff_curves(grid, folder.path / f"cutoffs__{stem}.png",
                        dict(zip(table.system, table.recommended_max_distance, strict=True)), k=k)  # fmt: skip
    parts = []
    moved = base[base.system.str.contains("@cut-from-", regex=False) & ~base.metric.str.contains("[", regex=False)]
    if len(moved):
        wide = moved.pivot_table(index="system", columns="metric", values="value", sort=False).reset_index()
        parts += ["", "Cut at the distance recommended on another data set (never tuned here):", "",
                  markdown_table(wide)]  # fmt: skip
    previous = folder.manifest.get("previous")
    if previous:
        parts += ["", "Drift of hit distances against the previous run (two-sample KS):", "",
                  _drift_text(previous, dataset, dist, k)]  # fmt: skip
    target = float(options.get("target", FALSE_MEMORY_TARGET))
    rule = (f"Recommended: the largest-recall cut-off whose false-memory rate on no-answer questions stays at or "
            f"under {target:.0%}; without no-answer questions, the best-F1 distance of the hit-level PR curve.")
    return "\n".join([rule, "", markdown_table(table), "", f"![distances](distances__{stem}.png)", "",
                      f"![cut-offs](cutoffs__{stem}.png)", *parts])  # fmt: skip


def _drift_text(previous: str, dataset: str, current: pd.DataFrame, k: int) -> str:
    from pathlib import Path

    from memlab.lab.folder import RunFolder
    from memlab.lab.report import markdown_table

    before = RunFolder(Path(previous))
    try:
        runs = before.runs(dataset)
        questions = before.questions(dataset)
    except (OSError, ValueError, KeyError):
        return f"No run of {dataset!r} in {previous}."
    old = [labelled_distances(runs[p].frame, questions, k=k).assign(system=p) for p in set(current.system) if p in runs]
    table = drift(pd.concat(old, ignore_index=True), current) if old else pd.DataFrame()
    return markdown_table(table) if len(table) else f"No comparable run of {dataset!r} in {previous}."
