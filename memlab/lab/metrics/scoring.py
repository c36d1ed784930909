"""Score a run against event-level labels: every metric of the registry (memlab.lab.metrics.definitions) that is
scored per question, by its ir-measures measure (pytrec_eval) or its own function (empty results, correct empties
on no-answer questions, context size, agreement with FAISS exact, ...), then summarized per system and breakdown
under the same name: adding a metric is adding its entry, with nothing to change here.

A unit is relevant if it holds a relevant event: rankings are mapped to events first (each event at the
rank of the first unit that holds it). Events and units are compared by (session, id) within the question's app
and user (memlab.lab.base.identity): the same event id in another session is another event. A cut-off is applied to
the run before scoring (memlab.lab.metrics.cutoffs)."""

from __future__ import annotations

from collections.abc import Sequence

import ir_measures
import numpy as np
import pandas as pd

from memlab.lab.base.identity import as_labelled, doc_id, run_events, unit_keys
from memlab.lab.base.sizes import SIZE_BINS, SIZE_LABELS, size_bucket  # noqa: F401  (scores' size buckets)
from memlab.lab.datasets.model import Question
from memlab.lab.metrics.definitions import MEAN, MetricDefinition, as_numbers, summarized
from memlab.lab.metrics.keys import BREAKDOWNS, GROUP_COLUMNS, keys_of
from memlab.lab.metrics.per_question import IrMeasure, QuestionResult, ScoredHit, answer_sessions_found
from memlab.lab.metrics.ranking import events_in_rank_order


def score(
    run: pd.DataFrame,
    questions: Sequence[Question],
    *,
    k: int = 10,
    exact: pd.DataFrame | None = None,
    memory_sizes: dict[tuple[str, str], int] | None = None,
) -> pd.DataFrame:
    """One row per (system, question): what the search gave (`returned`, `empty`, `latency_ms`, `plan`, a
    re-ranked run's `rerank_error`) and one column per metric the registry scores per question
    (memlab.lab.metrics.definitions), under the metric's name, NaN outside the questions it averages over, against
    `exact`, the exact reference's run of the same questions (recall_vs_exact). A cut-off is applied to the run
    before (memlab.lab.metrics.cutoffs.cut)."""
    by_id = {q.id: q for q in questions}
    run = run[run.question_id.isin(by_id)]
    trimmed = run[run["rank"] <= k]
    entries = [d for d in summarized() if d.scored and d.applies(run, questions)]
    measures = {d.name: d.question.at(k) for d in entries if isinstance(d.question, IrMeasure)}
    qrels = [ir_measures.Qrel(q.id, doc_id(key), 1) for q in questions for key in q.evidence]
    # a judged set's labels are incomplete: its judged non-relevant events go in as relevance 0, so judged@k and
    # bpref can tell a hit judged wrong from one nobody judged (recall and the rest ignore relevance 0)
    qrels += [ir_measures.Qrel(q.id, doc_id(key), 0) for q in questions for key in q.judged if key not in q.evidence]
    rows = []
    exact_ids: dict[str, list] = {}
    if exact is not None:  # one sort for all questions (a question's ranks are distinct), not one per question
        ranked = exact[exact["rank"] > 0].sort_values("rank", kind="stable")
        for qid, unit in zip(ranked.question_id, unit_keys(ranked), strict=True):
            exact_ids.setdefault(qid, []).append(unit)
    searched = ["latency_ms", "plan", *[c for c in (*RERANK_RECORDED, *SERVICE_RECORDED) if c in trimmed.columns]]
    columns = ["question_id", "rank", "distance", "chars", *searched]
    for system, sys_run in trimmed.groupby("system", sort=False):
        docs = []
        results: dict[str, QuestionResult] = {}
        uncut = run[(run.system == system) & (run["rank"] > 0)].sort_values("rank", kind="stable")
        full_by_q: dict[str, list] = {}
        for qid, unit in zip(uncut.question_id, unit_keys(uncut), strict=True):
            full_by_q.setdefault(qid, []).append(unit)
        by_question: dict[str, list] = {qid: [] for qid in pd.unique(sys_run.question_id)}  # first-seen order
        ordered = sys_run.sort_values("rank", kind="stable")
        for row, unit, keys in zip(ordered[columns].itertuples(index=False), unit_keys(ordered), run_events(ordered),
                                   strict=True):  # fmt: skip
            by_question[row.question_id].append((row, unit, keys))
        for qid, rows_of_q in by_question.items():
            q = by_id[qid]
            hits = tuple(ScoredHit(int(r.rank), unit, tuple(keys), np.nan if r.distance is None else float(r.distance),
                             int(r.chars)) for r, unit, keys in rows_of_q if r.rank > 0)  # fmt: skip
            known = (*q.evidence, *q.judged)
            events = events_in_rank_order([[as_labelled(known, key) for key in hit.events] for hit in hits])
            docs.extend(ir_measures.ScoredDoc(qid, doc_id(e), float(len(events) - i)) for i, e in enumerate(events))
            first = rows_of_q[0][0]
            results[qid] = QuestionResult(hits, k, {c: getattr(first, c) for c in searched},
                                          tuple(full_by_q.get(qid, ())),
                                          tuple(exact_ids.get(qid, ())) if exact is not None else None)  # fmt: skip
        values = {(m.query_id, str(m.measure)): m.value
                  for m in ir_measures.iter_calc(list(measures.values()), qrels, docs)} if measures else {}  # fmt: skip
        for qid, result in results.items():
            q = by_id[qid]
            row = {"system": system, "question_id": qid, "app_name": q.app_name, "user_id": q.user_id,
                   "qtype": q.qtype, "answerable": q.answerable, "returned": len(result.hits),
                   "empty": not result.hits, "latency_ms": float(result.searched["latency_ms"]),
                   "plan": result.searched["plan"]}  # fmt: skip
            if "rerank_error" in result.searched:  # the error re-ranking fell back on (None: it was re-ranked)
                error = result.searched["rerank_error"]
                row["rerank_error"] = error if isinstance(error, str) and error else None
            for d in entries:
                row[d.name] = _value(d, result, q, values, measures)
            if memory_sizes is not None:
                row["memory_units"] = memory_sizes.get((q.app_name, q.user_id), 0)
                row["size_bucket"] = size_bucket(row["memory_units"])
            rows.append(row)
    return pd.DataFrame(rows)


RERANK_RECORDED = ("rerank_seconds", "rerank_tokens", "rerank_error")  # a re-ranked run's per-question costs
SERVICE_RECORDED = ("service_returned", "unmatched")  # a black box's per-question counts (memlab.lab.runs.records)


def _value(definition: MetricDefinition, result: QuestionResult, question: Question,
           values: dict[tuple[str, str], float], measures: dict[str, ir_measures.Measure]) -> float:  # fmt: skip
    """One metric of one question: NaN outside its population; an ir-measures measure's value as computed (a
    question with hits but none scored: 0.0; with no hit: the measure's `no_hits`); else its function's."""
    if not definition.population.holds(question):
        return np.nan
    if isinstance(definition.question, IrMeasure):
        if not result.hits:
            return definition.question.no_hits
        return values.get((question.id, str(measures[definition.name])), 0.0)
    return definition.question(result, question)


def _groups(scores: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """The groups of a per-question table, one row each, with `questions` (answerable ones; NaN where none): the
    groups holding answerable questions joined with every group, the order scores have always had."""
    answerable = scores[scores.answerable.astype(bool)].groupby(by, sort=False).agg(questions=("question_id", "count"))
    every = scores.groupby(by, sort=False).size().rename("_all").to_frame()
    return answerable.join(every, how="outer").drop(columns="_all")


def _summaries(scores: pd.DataFrame, by: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every metric the registry summarizes, per group (columns by metric name), and the count of questions behind
    each: its population's rows in the group. The means (most metrics) come from one grouping of every metric's
    values with those outside its population blanked, the same sums in the same order as each mean over its own
    rows; the other statistics are computed one by one."""
    out = _groups(scores, by)
    keys = [scores[b] for b in by]
    present = [d for d in summarized() if d.column in scores.columns]
    masks = {d.name: d.population.rows(scores, d.column) for d in present}
    means = [d for d in present if d.statistic is MEAN]
    grouped: dict[str, pd.Series] = {}
    if means:
        blanked = pd.DataFrame({d.name: as_numbers(scores[d.column]).to_numpy(dtype=float, na_value=np.nan)
                                for d in means}, index=scores.index).where(pd.DataFrame(masks)[[d.name for d in means]])
        grouped = dict(blanked.groupby(keys, sort=False).mean().items())
    for d in present:
        value = grouped[d.name] if d.statistic is MEAN else d.statistic.compute(scores[masks[d.name]], by, d.column)
        out[d.name] = value.reindex(out.index).astype(float)
    counts = pd.DataFrame(masks, index=scores.index).groupby(keys, sort=False).sum().reindex(out.index)
    return out, counts


def summarize(scores: pd.DataFrame, by: Sequence[str] = ("system",)) -> pd.DataFrame:
    """Per group: `questions` (answerable ones) and every metric the registry summarizes, under its name: its
    statistic over its population (label metrics and the empty rate over answerable questions, the correct-empty
    rate over no-answer ones, context and latency over all)."""
    return _summaries(scores, list(by))[0].reset_index()


# -- long form: one row per (dataset, system, metric) -----------------------------------------------------------

def session_recall(run: pd.DataFrame, questions: Sequence[Question], k: int) -> pd.Series:
    """Per answerable question with session labels: share of its answer sessions that a hit within k comes from
    (the `session_recall` entry's function, memlab.lab.metrics.per_question)."""
    by_id = {q.id: q for q in questions if q.relevant_sessions and q.answerable}
    hits = run[(run["rank"] > 0) & (run["rank"] <= k) & run.question_id.isin(by_id)]
    found: dict[str, list[ScoredHit]] = {}
    for qid, rank, unit, keys in zip(hits.question_id, hits["rank"], unit_keys(hits), run_events(hits), strict=True):
        found.setdefault(qid, []).append(ScoredHit(int(rank), unit, tuple(keys), np.nan, 0))
    return pd.Series({qid: answer_sessions_found(QuestionResult(tuple(found.get(qid, ())), k), q)
                      for qid, q in by_id.items()}, dtype=float)  # fmt: skip


def long_scores(scores: pd.DataFrame, dataset: str, k: int, *, groups: Sequence[str] = ("qtype", "size")
                ) -> pd.DataFrame:  # fmt: skip
    """Per-question scores (from `score`) in the output contract's long form (LONG_COLUMNS): dataset, system,
    metric, the breakdown's group and its value ("": over all questions), value, questions (those its value
    averages over). `groups` names the breakdowns (memlab.lab.metrics.keys.BREAKDOWNS) to add beside the figures
    over all questions."""
    rows = []
    wanted = [BREAKDOWNS[g] for g in groups]
    for breakdown in (None, *[b for b in wanted if b.column in scores.columns and scores[b.column].notna().any()]):
        by = ["system"] + ([breakdown.column] if breakdown else [])
        values, counts = _summaries(scores, by)
        entries = [d for d in summarized() if d.name in values.columns]
        group = breakdown.name if breakdown else ""
        names = [d.name for d in entries]
        figures, numbers = values[names].to_numpy(dtype=float), counts[names].to_numpy()
        for i, key in enumerate(values.index):
            parts = key if isinstance(key, tuple) else (key,)
            value_of_group = str(parts[1]) if breakdown else ""
            for j, d in enumerate(entries):
                if np.isnan(figures[i, j]):
                    continue
                rows.append((dataset, parts[0], d.metric(k), group, value_of_group, float(figures[i, j]),
                             int(numbers[i, j])))  # fmt: skip
    return pd.DataFrame(rows, columns=LONG_COLUMNS)


SCORE_COLUMNS = ["dataset", "system", "metric", "value", "questions"]  # a figure over all questions (a sweep's)
LONG_COLUMNS = ["dataset", "system", "metric", *GROUP_COLUMNS, "value", "questions"]  # the long form, breakdowns too


def with_groups(scores: pd.DataFrame) -> pd.DataFrame:
    """Long-form scores with GROUP_COLUMNS ("" where a frame has none: no breakdown), in LONG_COLUMNS order
    (other columns after)."""
    missing = {c: "" for c in GROUP_COLUMNS if c not in scores.columns}
    scores = scores.assign(**missing) if missing else scores
    return scores[[*LONG_COLUMNS, *[c for c in scores.columns if c not in LONG_COLUMNS]]]


def flat_metrics(scores: pd.DataFrame) -> dict[str, float]:
    """metrics.json: each figure of long-form scores under its flat key (memlab.lab.metrics.keys)."""
    return {str(key): float(value) for key, value in zip(keys_of(scores), scores.value, strict=True)}
