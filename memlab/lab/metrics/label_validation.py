"""How far pooled labels can be trusted, measured on data whose labels are complete.

The assessor is simulated from the gold labels: a pooled event is relevant iff it is gold evidence. Then, for a
pool of the first `n` systems at depth `d` (events, as `memlab judge pool` counts them): the share of the gold
evidence the pool captures, every system's recall@k on the pooled labels against the full labels, Kendall's tau
of the two system rankings, whether the paired tests (memlab.lab.metrics.uncertainty, as the gate uses them) reach the
same conclusions, and the bias against a system left out of the pool (leave-one-out). Pure functions of run
frames (memlab.lab.runs.records) and questions; the `labels` sweep (memlab.lab.sweeps.labels) runs the systems."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from memlab.lab.base.identity import EventKey, labelled, run_events
from memlab.lab.datasets.model import Question
from memlab.lab.metrics.keys import ScoreKey
from memlab.lab.metrics.ranking import events_in_rank_order
from memlab.lab.metrics.scoring import score
from memlab.lab.metrics.uncertainty import paired_differences

Rankings = dict[str, dict[str, list[EventKey]]]  # system -> question id -> events in rank order
Pool = dict[str, set[EventKey]]  # question id -> pooled events
TAG = "labels"  # the data set tag of the per-question tables handed to the paired tests (names hold no slash)


def ranked_events(run: pd.DataFrame) -> Rankings:
    """Each system's events per question in rank order, each at the rank of the first unit holding it (what
    pooling and scoring both count)."""
    hits = run[run["rank"] > 0].sort_values(["system", "question_id", "rank"], kind="stable")
    units: dict[str, dict[str, list[list[EventKey]]]] = {}
    for system, qid, keys in zip(hits.system, hits.question_id, run_events(hits), strict=True):
        units.setdefault(system, {}).setdefault(qid, []).append(keys)
    return {s: {q: events_in_rank_order(u) for q, u in by_q.items()} for s, by_q in units.items()}


def make_pool(rankings: Rankings, systems: Iterable[str], depth: int) -> Pool:
    """Per question, the union of each system's first `depth` events."""
    pool: Pool = {}
    for system in systems:
        for qid, events in rankings.get(system, {}).items():
            pool.setdefault(qid, set()).update(events[:depth])
    return pool


def captured(gold: Sequence[EventKey], pooled: set[EventKey]) -> list[EventKey]:
    """The gold events the pool holds (a pooled event without its session matches on the id, as scoring does)."""
    return [g for g in gold if g in pooled or any(labelled([g], p) for p in pooled if p[1] == g[1])]


def capture_share(questions: Sequence[Question], pool: Pool) -> float:
    """Gold events in the pool over all gold events of the answerable questions (NaN without any)."""
    total = sum(len(q.evidence) for q in questions if q.answerable)
    found = sum(len(captured(q.evidence, pool.get(q.id, set()))) for q in questions if q.answerable)
    return found / total if total else float("nan")


def pooled_labels(questions: Sequence[Question], pool: Pool) -> list[Question]:
    """The questions as a judged set built on this pool would label them: the simulated assessor marks a pooled
    event relevant iff it is gold, so the evidence is the gold the pool captured and every pooled event is
    judged; a question whose gold the pool missed becomes a no-answer question (as in `format: judged`)."""
    out = []
    for q in questions:
        pooled = pool.get(q.id, set())
        kept = tuple(captured(q.evidence, pooled))
        out.append(replace(q, relevant=tuple(dict.fromkeys(e for _, e in kept)), evidence=kept,
                           judged=tuple(sorted(pooled, key=lambda key: (key[0] or "", key[1])))))  # fmt: skip
    return out


def per_question_recall(run: pd.DataFrame, questions: Sequence[Question], k: int) -> pd.DataFrame:
    """system, question_id, answerable, recall (recall@k, NaN on no-answer questions), scored as every run is."""
    scored = score(run, questions, k=k)
    return scored[["system", "question_id", "answerable", "recall"]].assign(dataset=TAG)


def mean_recall(per_question: pd.DataFrame) -> pd.Series:
    """Mean recall@k per system over the questions answerable under those labels."""
    answerable = per_question[per_question.answerable.astype(bool)]
    return answerable.groupby("system", sort=False).recall.mean()


def ranking_tau(full: pd.Series, pooled: pd.Series) -> float:
    """Kendall's tau (tau-b: ties allowed) of the systems ranked by two label sources; NaN under two systems or
    when one source ties every system."""
    systems = [s for s in full.index if s in pooled.index]
    if len(systems) < 2:
        return float("nan")
    a, b = full[systems].to_numpy(float), pooled[systems].to_numpy(float)
    if np.all(a == a[0]) or np.all(b == b[0]):
        return float("nan")
    return float(kendalltau(a, b).statistic)


def largest_swap(full: pd.Series, other: pd.Series) -> float:
    """The largest full-label gap between two systems that `other` ranks the other way round (0 when it swaps
    none): a swap of systems a hair apart is noise, a swap of systems far apart is a wrong ranking."""
    systems = [s for s in full.index if s in other.index]
    gaps = [abs(full[a] - full[b]) for a, b in itertools.combinations(systems, 2)
            if (full[a] - full[b]) * (other[a] - other[b]) < 0]  # fmt: skip
    return float(max(gaps, default=0.0))


def conclusions(per_question: pd.DataFrame, systems: Sequence[str], k: int, *, seed: int = 0) -> dict[tuple, int]:
    """For every pair (a, b) of systems: +1 if the paired test (Holm-adjusted over all pairs) finds b's recall@k
    higher, -1 lower, 0 no significant difference."""
    pairs = list(itertools.combinations(systems, 2))
    keys = [(ScoreKey(TAG, a, f"recall@{k}"), ScoreKey(TAG, b, f"recall@{k}")) for a, b in pairs]
    tests = paired_differences(per_question, per_question, keys, seed=seed)
    found = {(row.before, row.after): int(np.sign(row.change)) if row.significant else 0
             for row in tests.itertuples(index=False)}  # fmt: skip
    return {pair: found.get((str(a), str(b)), 0) for pair, (a, b) in zip(pairs, keys, strict=True)}


def agreement(first: Mapping[tuple, int], second: Mapping[tuple, int]) -> tuple[int, int]:
    """(pairs with the same conclusion, pairs compared)."""
    both = [p for p in first if p in second]
    return sum(first[p] == second[p] for p in both), len(both)


@dataclass
class Validation:
    """The measured tables: `pools` (one row per depth x systems pooled), `recall` (system x label source),
    `leave_one_out` (one row per system)."""

    pools: pd.DataFrame
    recall: pd.DataFrame
    leave_one_out: pd.DataFrame


def pool_name(depth: int, size: int) -> str:
    return f"d{depth}n{size}"


def _subsets_capture(rankings: Rankings, questions: Sequence[Question], systems: Sequence[str], depth: int,
                     size: int) -> tuple[float, float, float]:  # fmt: skip
    """Capture share averaged over every `size`-subset of the systems (and its lowest and highest)."""
    shares = [capture_share(questions, make_pool(rankings, chosen, depth))
              for chosen in itertools.combinations(systems, size)]  # fmt: skip
    return float(np.mean(shares)), float(np.min(shares)), float(np.max(shares))


def leave_one_out(run: pd.DataFrame, rankings: Rankings, questions: Sequence[Question], systems: Sequence[str],
                  depth: int, k: int, full: pd.Series) -> pd.DataFrame:  # fmt: skip
    """Per system s: recall@k on full labels, on labels pooled from all systems, and on labels pooled from the
    others; `bias` = without - full; `gap_change` = how much s's distance to the mean of the other systems moves
    when it is left out of the pool (negative: the missing pool makes s look worse than it is)."""
    together = mean_recall(per_question_recall(run, pooled_labels(questions, make_pool(rankings, systems, depth)), k))
    rows = []
    for left in systems:
        others = [s for s in systems if s != left]
        without = mean_recall(per_question_recall(run, pooled_labels(questions, make_pool(rankings, others, depth)),
                                                  k))  # fmt: skip
        gap_full = full[left] - full[others].mean()
        gap_without = without[left] - without[others].mean()
        rows.append({"system": left, "full": float(full[left]), "pooled_with": float(together[left]),
                     "pooled_without": float(without[left]), "bias": float(without[left] - full[left]),
                     "gap_change": float(gap_without - gap_full)})  # fmt: skip
    return pd.DataFrame(rows, columns=["system", "full", "pooled_with", "pooled_without", "bias", "gap_change"])


def validate(run: pd.DataFrame, questions: Sequence[Question], systems: Sequence[str], *, depths: Sequence[int],
             sizes: Sequence[int], k: int, loo_depth: int, seed: int = 0) -> Validation:  # fmt: skip
    """Every measurement of the module on one data set. `run` holds each system's hits to at least the largest
    depth; a pool of n systems takes the first n of `systems` (sizes above len(systems) are skipped); capture is
    also averaged over every n-subset."""
    systems = [s for s in systems if s in set(run.system)]
    answerable = [q for q in questions if q.answerable]
    rankings = ranked_events(run)
    full_q = per_question_recall(run, answerable, k)
    full = mean_recall(full_q).reindex(systems)
    full_tests = conclusions(full_q, systems, k, seed=seed)
    rows, recall = [], {"full": full}
    for depth in depths:
        for size in sizes:
            if size > len(systems):
                continue
            chosen = list(systems[:size])
            pool = make_pool(rankings, chosen, depth)
            labels = pooled_labels(answerable, pool)
            per_q = per_question_recall(run, labels, k)
            pooled = mean_recall(per_q).reindex(systems)
            recall[pool_name(depth, size)] = pooled
            same, compared = agreement(full_tests, conclusions(per_q, systems, k, seed=seed))
            mean, low, high = _subsets_capture(rankings, answerable, systems, depth, size)
            outside = [s for s in systems if s not in chosen]
            outside_bias = float((pooled - full)[outside].mean()) if outside else float("nan")
            rows.append({"pool": pool_name(depth, size), "depth": depth, "systems": size, "pooled": ", ".join(chosen),
                         "capture": capture_share(answerable, pool), "capture_mean": mean, "capture_min": low,
                         "capture_max": high, "questions": len(answerable),
                         "answerable_pooled": sum(q.answerable for q in labels), "tau": ranking_tau(full, pooled),
                         "largest_swap": largest_swap(full, pooled),
                         "tests_agree": same, "tests": compared,
                         "max_abs_diff": float((pooled - full).abs().max()),
                         "outside_bias": outside_bias})  # fmt: skip
    loo = leave_one_out(run, rankings, answerable, systems, loo_depth, k, full) if len(systems) > 1 else \
        pd.DataFrame(columns=["system", "full", "pooled_with", "pooled_without", "bias", "gap_change"])  # fmt: skip
    table = pd.DataFrame(recall).rename_axis("system").reset_index()
    return Validation(pd.DataFrame(rows), table, loo)


def generated_vs_own(own: pd.DataFrame, own_questions: Sequence[Question], generated: pd.DataFrame,
                     generated_questions: Sequence[Question], k: int) -> pd.DataFrame:  # fmt: skip
    """Per system: recall@k on the data set's own questions and on questions generated from its sessions (each on
    its own complete labels), the difference (positive: the generated questions are easier) and their counts."""
    mine = mean_recall(per_question_recall(own, [q for q in own_questions if q.answerable], k))
    made = mean_recall(per_question_recall(generated, [q for q in generated_questions if q.answerable], k))
    systems = [s for s in mine.index if s in made.index]
    return pd.DataFrame({"system": systems, "own": mine[systems].to_numpy(float),
                         "generated": made[systems].to_numpy(float),
                         "difference": (made[systems] - mine[systems]).to_numpy(float),
                         "own_questions": sum(q.answerable for q in own_questions),
                         "generated_questions": sum(q.answerable for q in generated_questions)})  # fmt: skip


__all__ = ["Validation", "agreement", "capture_share", "captured", "conclusions", "generated_vs_own", "largest_swap",
           "leave_one_out", "make_pool", "mean_recall", "per_question_recall", "pool_name", "pooled_labels",
           "ranked_events", "ranking_tau", "validate"]  # fmt: skip
