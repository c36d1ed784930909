"""The labels sweep: how far to trust pooled and generated labels, measured on a data set whose
labels are complete. The assessor is simulated from the gold labels (a pooled event is relevant iff it is gold
evidence); the analysis is memlab.lab.metrics.label_validation.

Its systems are pooled in the order given: a pool of n systems takes the first n (capture is also averaged over
every n-subset). `measure` asks each of them every question again down to the largest depth (a run keeps only
k hits) and saves those runs as the `labels` table; recall@k is scored on the first k units as everywhere else.
The same systems also answer questions generated from the data set's own sessions (the offline fact templates of
memlab.lab.datasets.generated.templates), each scored on its own labels and compared with the data set's questions.

Options: LabelsOptions."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.base.options import option
from memlab.lab.base.tables import markdown_table
from memlab.lab.datasets.generated.templates import template_questions
from memlab.lab.datasets.model import Dataset, Question
from memlab.lab.metrics.label_validation import Validation, generated_vs_own, largest_swap, ranking_tau, validate
from memlab.lab.metrics.scoring import LONG_COLUMNS, SCORE_COLUMNS
from memlab.lab.runs.asking import QueryVectors, ask
from memlab.lab.runs.folder import RunFolder, save_table
from memlab.lab.sweeps.base import Sweep, SweepContext, distinct
from memlab.lab.systems.kinds import Env, EventSystem, System
from memlab.types import SearchSettings

DEPTHS = (5, 10, 20)
POOL_SIZES = (2, 3, 5)
LOO_DEPTH = 10
EXACT = SearchSettings(strategy="exact")  # label quality, not index approximation
# in pooling order: the two most different first (vector and lexical), then units of other sizes and fused search
DEFAULT_SYSTEMS: tuple[EventSystem, ...] = (
    EventSystem("event"),
    EventSystem("text/lexical", settings=SearchSettings(strategy="exact", mode="lexical")),
    EventSystem("chunk4o1", "chunk", 4, 1),
    EventSystem("text/hybrid", settings=SearchSettings(strategy="exact", mode="hybrid")),
    EventSystem("session", "session"),
    EventSystem("speaker_date/vector", settings=EXACT, rendering="speaker_date"),
)
GENERATED = "labels-generated"  # the tables of the generated questions' runs and labels


@dataclass(frozen=True)
class LabelsOptions:
    systems: list[str] | None = option(None, "the systems pooled, in pooling order: a pool of n takes the first n "
                                             "(default: the sweep's own six)", min_items=2)  # fmt: skip
    depths: list[int] = option(list(DEPTHS), "the pool depths: hits each system adds to a pool", low=1, high=1000,
                               min_items=1)  # fmt: skip
    pool_sizes: list[int] = option(list(POOL_SIZES), "how many systems make a pool", low=1, high=1000, min_items=1)
    loo_depth: int = option(LOO_DEPTH, "the depth of the leave-one-out pools", low=1, high=1000)
    generated: bool = option(True, "also ask fact-template questions generated from the data set's own sessions")


def template_source(dataset: Dataset) -> list[Question]:
    """The offline fact-template questions of the data set's own sessions (generated questions), each labelled with
    the event its fact was quoted from."""
    return template_questions(dataset).questions()


def _wholes(options: dict[str, Any], key: str, default: Sequence[int]) -> list[int]:
    """A list option of whole numbers (checked when the config was read), each once, smallest first."""
    return sorted(set(options.get(key, list(default))))


def pooled_names(options: dict[str, Any]) -> list[str]:
    return list(options.get("systems") or [s.name for s in DEFAULT_SYSTEMS])


def _deep_runs(env: Env, dataset: Dataset, systems: list[System], questions: list[Question], depth: int
               ) -> pd.DataFrame:  # fmt: skip
    """Every system's hits down to `depth` units on `questions` (built memories are reused from the run)."""
    vectors = QueryVectors(env)
    frames = [ask(env, system, dataset, vectors, depth, questions=questions) for system in systems]
    return pd.concat(frames, ignore_index=True)


def _question_rows(questions: list[Question]) -> pd.DataFrame:
    return pd.DataFrame([{"id": q.id, "app_name": q.app_name, "user_id": q.user_id, "text": q.text,
                          "evidence_sessions": [s for s, _ in q.evidence],
                          "evidence_events": [e for _, e in q.evidence]} for q in questions])  # fmt: skip


def _questions(frame: pd.DataFrame) -> list[Question]:
    out = []
    for r in frame.itertuples(index=False):
        keys = tuple(zip(list(r.evidence_sessions), list(r.evidence_events), strict=True))
        out.append(Question(r.id, r.app_name, r.user_id, r.text, tuple(e for _, e in keys), qtype="generated",
                            evidence=keys))  # fmt: skip
    return out


def _f(value: float, digits: int = 3) -> str:
    return "n/a" if value is None or np.isnan(value) else f"{value:.{digits}f}"


def _swaps(gap: float, k: int, verb: str = "swap") -> str:
    """What a ranking's disagreement with the full labels amounts to, from the largest gap it swaps."""
    if gap <= 0:
        return f"{verb} no two systems: a tau below 1 comes from ties the full labels separate"
    return f"{verb} systems whose full-label recall@{k} differs by up to {gap:.3f}"


def trust_text(result: Validation, generated: pd.DataFrame | None, k: int) -> list[str]:
    """How far to trust each source of labels, in words read off the measured numbers."""
    lines = []
    pools = result.pools
    faithful = pools[(pools.tau >= 1.0 - 1e-9) & (pools.tests_agree == pools.tests)]
    if len(pools):
        named = ", ".join(f"`{p}`" for p in faithful.pool) or "none"
        lines.append(f"- Ranking systems: pools that rank the systems exactly as the full labels do (tau 1) with the "
                     f"same paired-test conclusions: {named} of {len(pools)}. The others "
                     f"{_swaps(pools.largest_swap.max(), k)} and disagree on "
                     f"{int((pools.tests - pools.tests_agree).max())} of {int(pools.tests.max())} paired tests at "
                     "most: trust a pooled ranking for differences larger than that.")  # fmt: skip
        inside = result.recall.set_index("system")
        shift = [float((inside[r.pool] - inside["full"])[r.pooled.split(", ")].mean()) for r in pools.itertuples()]
        lines.append(f"- Absolute recall@{k} of a pooled system on pooled labels is off by {min(shift):+.3f} to "
                     f"{max(shift):+.3f} on average (pooled labels only know the gold the pool found, so the "
                     "denominator shrinks): read pooled figures as comparisons between systems, not as recall.")
    for row in result.pools.itertuples(index=False):
        lines.append(f"- Pool `{row.pool}` ({row.systems} systems, depth {row.depth}: {row.pooled}) holds "
                     f"{row.capture:.0%} of the gold evidence ({row.capture_mean:.0%} averaged over every set of "
                     f"{row.systems}, {row.capture_min:.0%}-{row.capture_max:.0%}); "
                     f"{row.questions - row.answerable_pooled} of {row.questions} questions lose all their evidence. "
                     f"The system ranking under its labels has Kendall's tau {_f(row.tau, 2)} against the full "
                     f"labels (it {_swaps(row.largest_swap, k, 'swaps')}), {row.tests_agree} of "
                     f"{row.tests} paired tests reach the same conclusion, and recall@{k} "
                     f"moves by up to {row.max_abs_diff:.3f}"
                     + (f" (systems outside the pool: {row.outside_bias:+.3f} on average)."
                        if not np.isnan(row.outside_bias) else "."))  # fmt: skip
    if len(result.leave_one_out):
        loo = result.leave_one_out
        worst = loo.loc[loo.gap_change.idxmin()]
        lines.append(f"- Left out of the pool, a system's recall@{k} moves by {loo.bias.min():+.3f} to "
                     f"{loo.bias.max():+.3f} against the full labels; against the pooled systems it loses up to "
                     f"{-min(worst.gap_change, 0.0):.3f} ({worst.system}): compare an unpooled system with pooled "
                     "ones only beyond that margin.")  # fmt: skip
    if generated is not None and len(generated):
        mean = float(generated.difference.mean())
        own, made = generated.set_index("system").own, generated.set_index("system").generated
        tau = ranking_tau(own, made)
        lines.append(f"- Generated questions: recall@{k} is {abs(mean):.3f} {'higher' if mean >= 0 else 'lower'} on "
                     f"them than on the data set's own questions on average ({generated.difference.min():+.3f} to "
                     f"{generated.difference.max():+.3f} by system): they are "
                     f"{'easier' if mean >= 0 else 'harder'}, so read their absolute figures with that offset. "
                     f"They rank the systems with Kendall's tau {_f(tau, 2)} against the data set's own questions "
                     f"({len(generated)} systems; 1 is the same order), swapping systems up to "
                     f"{largest_swap(own, made):.3f} apart on the own questions.")
    return lines


class LabelsSweep(Sweep):
    """Pooled and generated labels checked against complete ones."""

    name = "labels"
    measures = True
    options_type = LabelsOptions

    def planned(self, options: dict[str, Any], config: dict[str, Any]) -> int:
        """The default systems it adds, each pooled system asked again (and on generated questions), and the pools
        its analysis scores: every subset of each pool size at each depth (capture is averaged over them all)."""
        names = pooled_names(options)
        again = len(names) * (2 if options.get("generated", True) else 1)
        n = len(set(names))
        pools = sum(math.comb(n, size) for size in set(options.get("pool_sizes", POOL_SIZES)) if size <= n)
        return sum(s.name in names for s in DEFAULT_SYSTEMS) + again + pools * distinct(options.get("depths", DEPTHS))

    def systems(self, dataset: Dataset, options: dict[str, Any], context: SweepContext) -> list[System]:
        """The default systems it pools (those `systems` names, when given; other names are the run's own)."""
        names = set(pooled_names(options))
        return [s for s in DEFAULT_SYSTEMS if s.name in names]

    def _chosen(self, options: dict[str, Any], context: SweepContext, dataset: str) -> list[System]:
        by_name = {s.name: s for s in context.systems}
        missing = [n for n in pooled_names(options) if n not in by_name]
        if missing:
            raise ConfigError(f"options.labels.systems: {missing} did not run on {dataset!r}; name systems of the "
                              f"config or of its sweeps: {sorted(by_name)}")  # fmt: skip
        return [by_name[n] for n in pooled_names(options)]

    def measure(self, env: Env, dataset: Dataset, options: dict[str, Any], context: SweepContext,
                out: Path) -> None:  # fmt: skip
        typed = self.typed(options)
        systems = self._chosen(options, context, dataset.name)
        depth = max(*typed.depths, env.k)
        save_table(out, "labels", dataset.name, _deep_runs(env, dataset, systems, dataset.questions, depth))
        if typed.generated:
            made = template_source(dataset)
            if made:
                save_table(out, GENERATED, dataset.name, _deep_runs(env, dataset, systems, made, env.k))
                save_table(out, f"{GENERATED}-questions", dataset.name, _question_rows(made))

    def validation(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> Validation | None:
        run = folder.memo("labels-run", dataset, lambda: folder.table("labels", dataset))  # read once per folder
        if run is None:
            return None
        key = (dataset, tuple(sorted((k, str(v)) for k, v in options.items())))
        return folder.memo("labels", key, lambda: validate(
            run, folder.questions(dataset), pooled_names(options), depths=_wholes(options, "depths", DEPTHS),
            sizes=_wholes(options, "pool_sizes", POOL_SIZES), k=folder.k,
            loo_depth=int(options.get("loo_depth", LOO_DEPTH))))  # fmt: skip

    def generated(self, folder: RunFolder, dataset: str) -> pd.DataFrame | None:
        """Scored once per folder: `scores` and `section` both ask."""
        return folder.memo("labels-generated", dataset, lambda: self._generated(folder, dataset))

    def _generated(self, folder: RunFolder, dataset: str) -> pd.DataFrame | None:
        run, made = folder.table(GENERATED, dataset), folder.table(f"{GENERATED}-questions", dataset)
        own = folder.memo("labels-run", dataset, lambda: folder.table("labels", dataset))
        if run is None or made is None or own is None:
            return None
        return generated_vs_own(own, folder.questions(dataset), run, _questions(made), folder.k)

    def scores(self, folder: RunFolder, dataset: str, options: dict[str, Any], base: pd.DataFrame) -> pd.DataFrame:
        """Per pool `dNnM` (depth N, M systems): capture, tau and test agreement (system `labels`); per system its
        recall@k on each pool's labels, and leave-one-out bias; generated-question recall where measured."""
        result = self.validation(folder, dataset, options)
        if result is None:
            return pd.DataFrame(columns=SCORE_COLUMNS)
        k = folder.k
        rows = []
        for r in result.pools.itertuples(index=False):
            pool = ("pool", str(r.pool))
            rows += [(dataset, "labels", "pool_capture", *pool, r.capture, r.questions),
                     (dataset, "labels", "pool_capture_mean", *pool, r.capture_mean, r.questions),
                     (dataset, "labels", "pool_tau", *pool, r.tau, r.questions),
                     (dataset, "labels", "pool_tests_agree", *pool, r.tests_agree / r.tests if r.tests else np.nan,
                      r.tests)]  # fmt: skip
        for r in result.recall.itertuples(index=False):
            for pool in result.pools.pool:
                rows.append((dataset, r.system, f"pooled_recall@{k}", "pool", str(pool), getattr(r, pool), 0))
        none = ("", "")  # over all questions, no breakdown
        for r in result.leave_one_out.itertuples(index=False):
            rows += [(dataset, r.system, f"loo_recall@{k}", *none, r.pooled_without, 0),
                     (dataset, r.system, "loo_bias", *none, r.bias, 0),
                     (dataset, r.system, "loo_gap_change", *none, r.gap_change, 0)]  # fmt: skip
        generated = self.generated(folder, dataset)
        for r in (generated.itertuples(index=False) if generated is not None else ()):
            rows.append((dataset, r.system, f"generated_recall@{k}", *none, r.generated, r.generated_questions))
        return pd.DataFrame(rows, columns=LONG_COLUMNS)

    def section(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
        result = self.validation(folder, dataset, options)
        if result is None:
            return None
        k = folder.k
        pools = result.pools[["pool", "depth", "systems", "capture", "capture_mean", "capture_min", "capture_max",
                              "answerable_pooled", "questions", "tau", "largest_swap", "tests_agree", "tests",
                              "max_abs_diff", "outside_bias"]]  # fmt: skip
        generated = self.generated(folder, dataset)
        parts = [f"The assessor is simulated from the gold labels (a pooled event is relevant iff it is gold "
                 f"evidence). A pool `dNnM` takes the first N events of the first M systems in this order: "
                 f"{', '.join(pooled_names(options))}; capture_mean/min/max range over every set of M of them. "
                 f"Paired tests: recall@{k} of every pair of systems, Holm-adjusted, as the gate tests them.", "",
                 markdown_table(pools), "", f"recall@{k} per system on full and on pooled labels:", "",
                 markdown_table(result.recall), "",
                 f"Left out of the pool (depth {options.get('loo_depth', LOO_DEPTH)}, all other systems pooled): "
                 f"bias = recall@{k} without it - full; gap_change = how much its distance to the pooled systems' "
                 "mean moves.", "", markdown_table(result.leave_one_out)]  # fmt: skip
        if generated is not None:
            parts += ["", f"recall@{k} on generated (fact-template) questions against the data set's own questions "
                      "(each on its own labels; never mixed into one figure):", "", markdown_table(generated)]
        elif options.get("generated", True):
            parts += ["", "Generated questions: none (the fact templates found no fact in these sessions)."]
        return "\n".join([*parts, "", "**How far to trust each source of labels:**", "",
                          *trust_text(result, generated, k)])  # fmt: skip


__all__ = ["DEFAULT_SYSTEMS", "DEPTHS", "LOO_DEPTH", "POOL_SIZES", "LabelsSweep", "pooled_names", "template_source",
           "trust_text"]  # fmt: skip
