"""Score a run against event-level labels with ir-measures (pytrec_eval), plus what IR libraries do not
measure: empty results, correct empties on no-answer questions, context size, agreement with FAISS exact.

A unit is relevant if it holds a relevant event: rankings are mapped to events first (each event at the
rank of the first unit that holds it). Events and units are compared by (session, id) within the question's app
and user (memlab.lab.identity): the same event id in another session is another event. A cut-off
(`max_distance`) is applied to the run before scoring."""

from __future__ import annotations

from collections.abc import Sequence

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import RR, Bpref, Judged, P, R, Success, nDCG

from memlab.lab.dataset import Question
from memlab.lab.identity import as_labelled, doc_id, run_events, unit_keys
from memlab.lab.metrics import events_in_rank_order, recall_vs_exact

SIZE_BINS = [0, 50, 500, 2000, np.inf]
SIZE_LABELS = ["<=50", "51-500", "501-2000", ">2000"]


def size_bucket(n: int | float) -> str:
    """The memory-size bucket of a user with `n` units (SIZE_LABELS; 'nan' outside the bins)."""
    if n >= SIZE_BINS[0]:  # NaN fails every comparison
        for upper, label in zip(SIZE_BINS[1:], SIZE_LABELS, strict=True):
            if n <= upper:
                return label
    return "nan"


def cut(run: pd.DataFrame, max_distance: float | None) -> pd.DataFrame:
    """Drop hits beyond the cut-off; questions left with nothing keep one empty row."""
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


def score(
    run: pd.DataFrame,
    questions: Sequence[Question],
    *,
    k: int = 10,
    max_distance: float | None = None,
    exact: pd.DataFrame | None = None,
    memory_sizes: dict[tuple[str, str], int] | None = None,
) -> pd.DataFrame:
    """One row per (system, question): recall@k, P@k, RR, nDCG@k, hit@k on answerable questions; empty,
    returned, context chars and latency on all; recall against the `exact` run's system of the same questions
    (before the cut-off: it measures the index, not the threshold)."""
    by_id = {q.id: q for q in questions}
    run = run[run.question_id.isin(by_id)]
    trimmed = cut(run[run["rank"] <= k], max_distance)
    qrels = [ir_measures.Qrel(q.id, doc_id(key), 1) for q in questions for key in q.evidence]
    # a judged set's labels are incomplete: its judged non-relevant events go in as relevance 0, so judged@k and
    # bpref can tell a hit judged wrong from one nobody judged (recall and the rest ignore relevance 0)
    pooled = any(q.judged for q in questions)
    qrels += [ir_measures.Qrel(q.id, doc_id(key), 0) for q in questions for key in q.judged if key not in q.evidence]
    rows = []
    exact_ids: dict[str, list] = {}
    if exact is not None:  # one sort for all questions (a question's ranks are distinct), not one per question
        ranked = exact[exact["rank"] > 0].sort_values("rank", kind="stable")
        for qid, unit in zip(ranked.question_id, unit_keys(ranked), strict=True):
            exact_ids.setdefault(qid, []).append(unit)
    measures = [R @ k, P @ k, RR, nDCG @ k, Success @ k] + ([Judged @ k, Bpref] if pooled else [])
    columns = ["question_id", "rank", "unit_id", "event_ids", "chars", "latency_ms", "plan"]
    costs = [c for c in ("rerank_seconds", "rerank_tokens", "rerank_error") if c in trimmed.columns]
    columns += costs
    for system, sys_run in trimmed.groupby("system", sort=False):
        docs = []
        per_q = {}
        uncut = run[(run.system == system) & (run["rank"] > 0)].sort_values("rank", kind="stable")
        full_by_q: dict[str, list] = {}
        for qid, unit in zip(uncut.question_id, unit_keys(uncut), strict=True):
            full_by_q.setdefault(qid, []).append(unit)
        by_question: dict[str, list] = {qid: [] for qid in pd.unique(sys_run.question_id)}  # first-seen order
        ordered = sys_run.sort_values("rank", kind="stable")
        for row, keys in zip(ordered[columns].itertuples(index=False), run_events(ordered), strict=True):
            by_question[row.question_id].append((row, keys))
        for qid, rows_of_q in by_question.items():
            hits = [r for r, _ in rows_of_q if r.rank > 0]
            gold = by_id[qid].evidence
            known = (*gold, *by_id[qid].judged)
            events = events_in_rank_order([[as_labelled(known, key) for key in keys] for r, keys in rows_of_q
                                           if r.rank > 0])  # fmt: skip
            docs.extend(ir_measures.ScoredDoc(qid, doc_id(e), float(len(events) - i)) for i, e in enumerate(events))
            rows_of_q = [r for r, _ in rows_of_q]
            per_q[qid] = {
                "returned": len(hits),
                "empty": len(hits) == 0,
                "context_chars": int(sum(r.chars for r in hits)),
                "latency_ms": float(rows_of_q[0].latency_ms),
                "plan": rows_of_q[0].plan,
                "recall_vs_exact": recall_vs_exact(full_by_q.get(qid, []), exact_ids.get(qid, []), k)
                if exact is not None else np.nan,
                **_rerank_cost(rows_of_q[0], costs),
            }  # fmt: skip
        values = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, docs)}
        for qid, extra in per_q.items():
            q = by_id[qid]
            answerable = q.answerable
            row = {"system": system, "question_id": qid, "app_name": q.app_name, "user_id": q.user_id,
                   "qtype": q.qtype, "answerable": answerable, **extra}  # fmt: skip
            for name, m in (
                ("recall", R @ k),
                ("precision", P @ k),
                ("rr", RR),
                ("ndcg", nDCG @ k),
                ("hit", Success @ k),
            ):
                row[name] = values.get((qid, str(m)), 0.0) if answerable else np.nan
            row["correct_empty"] = extra["empty"] if not answerable else np.nan
            if pooled:  # judged@k: share of the hits within k someone judged (none returned: nothing to judge)
                row["judged"] = np.nan if extra["empty"] else values.get((qid, str(Judged @ k)), 0.0)
                row["bpref"] = values.get((qid, str(Bpref)), 0.0) if answerable else np.nan
            if memory_sizes is not None:
                row["memory_units"] = memory_sizes.get((q.app_name, q.user_id), 0)
                row["size_bucket"] = size_bucket(row["memory_units"])
            rows.append(row)
    return pd.DataFrame(rows)


def _rerank_cost(row, costs: list[str]) -> dict[str, float | str | None]:
    """A re-ranked question's cost (memlab.lab.rerank), from its first run row: the model call's seconds and
    tokens, and the error it fell back to the embedding order on (None when it was re-ranked)."""
    out: dict[str, float | str | None] = {c: float(getattr(row, c)) for c in costs if c != "rerank_error"}
    if "rerank_error" in costs:
        error = row.rerank_error
        out["rerank_error"] = error if isinstance(error, str) and error else None
    return out


def summarize(scores: pd.DataFrame, by: Sequence[str] = ("system",)) -> pd.DataFrame:
    """Means per group: label metrics and the empty rate over answerable questions, correct-empty over
    no-answer ones; context and latency over all."""
    answerable = scores[scores.answerable]
    out = answerable.groupby(list(by), sort=False).agg(
        questions=("question_id", "count"),
        recall=("recall", "mean"),
        precision=("precision", "mean"),
        mrr=("rr", "mean"),
        ndcg=("ndcg", "mean"),
        hit_rate=("hit", "mean"),
        empty_rate=("empty", "mean"),
        recall_vs_exact=("recall_vs_exact", "mean"),
    )
    grouped = scores.groupby(list(by), sort=False)
    overall = grouped.agg(context_chars=("context_chars", "mean"), latency_ms_p50=("latency_ms", "median"))
    # np.percentile's linear 95th, vectorised (a per-group lambda is much of the call on a run of many systems),
    # and NaN where a group holds a NaN latency, as np.percentile gives (pandas' quantile would skip it)
    p95 = grouped["latency_ms"].quantile(0.95)
    overall["latency_ms_p95"] = p95.mask(scores["latency_ms"].isna().groupby([scores[b] for b in by], sort=False).any())
    no_answer = scores[~scores.answerable].groupby(list(by), sort=False)["correct_empty"].mean()
    out = out.join(overall, how="outer")
    out["correct_empty_rate"] = no_answer.reindex(out.index).astype(float)
    for column, rows in (("judged", scores), ("bpref", answerable)):  # a judged set's (memlab.lab.judging)
        if column in scores.columns:
            out[column] = rows.groupby(list(by), sort=False)[column].mean().reindex(out.index).astype(float)
    for column in ("rerank_seconds", "rerank_tokens"):  # per question, over all (re-ranked systems only)
        if column in scores.columns:
            out[column] = grouped[column].mean().reindex(out.index).astype(float)
    if "rerank_error" in scores.columns:  # questions that fell back to the embedding order; NaN if not re-ranked
        failed = scores.rerank_error.notna().where(scores.rerank_seconds.notna())
        out["rerank_errors"] = failed.groupby([scores[b] for b in by], sort=False).sum(min_count=1)\
            .reindex(out.index).astype(float)  # fmt: skip
    return out.reset_index()


# -- long form: one row per (dataset, system, metric) -----------------------------------------------------------

_AT_K = {"recall": "recall", "precision": "precision", "mrr": "mrr", "ndcg": "ndcg", "hit_rate": "hit",
         "session_recall": "session_recall", "judged": "judged"}  # fmt: skip
_GROUP_TAGS = {"size_bucket": "size"}  # memory size in events: <=50, 51-500, 501-2000, >2000
_PLAIN = ("empty_rate", "recall_vs_exact", "correct_empty_rate", "context_chars", "latency_ms_p50", "latency_ms_p95",
          "bpref", "rerank_seconds", "rerank_tokens", "rerank_errors")  # fmt: skip


def metric_name(column: str, k: int) -> str:
    """`recall` -> `recall@10`; metrics without a rank cut keep their name."""
    return f"{_AT_K[column]}@{k}" if column in _AT_K else column


def session_recall(run: pd.DataFrame, questions: Sequence[Question], k: int) -> pd.Series:
    """Per question with session labels: share of its answer sessions that a hit within k comes from (the
    sessions its events carry; an event whose session is not known counts for none)."""
    by_id = {q.id: q for q in questions if q.relevant_sessions and q.answerable}
    hits = run[(run["rank"] > 0) & (run["rank"] <= k) & run.question_id.isin(by_id)]
    found: dict[str, set[str]] = {}
    for qid, keys in zip(hits.question_id, run_events(hits), strict=True):
        found.setdefault(qid, set()).update(session for session, _ in keys if session is not None)
    return pd.Series({qid: len(set(q.relevant_sessions) & found.get(qid, set())) / len(set(q.relevant_sessions))
                      for qid, q in by_id.items()}, dtype=float)  # fmt: skip


def _counts(scores: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    g = scores.groupby(by, sort=False)
    return pd.DataFrame({"answerable": g.answerable.sum(), "no_answer": g.answerable.apply(lambda s: (~s).sum()),
                         "all": g.size()}).reset_index()  # fmt: skip


def long_scores(scores: pd.DataFrame, dataset: str, k: int, *, groups: Sequence[str] = ("qtype", "size_bucket")
                ) -> pd.DataFrame:  # fmt: skip
    """Per-question scores (from `score`) in the output contract's long form: dataset, system, metric, value,
    questions. Breakdowns are metrics too: `recall@10[qtype=knowledge-update]`."""
    rows = []
    for group in (None, *[g for g in groups if g in scores.columns and scores[g].notna().any()]):
        by = ["system"] + ([group] if group else [])
        summary = summarize(scores, by=by)
        if "session_recall" in scores.columns:
            sr = scores[scores.answerable].groupby(by, sort=False).session_recall.agg(["mean", "count"])
            summary = summary.merge(sr.rename(columns={"mean": "session_recall", "count": "session_questions"})
                                    .reset_index(), on=by, how="left")  # fmt: skip
        counts = _counts(scores, by)
        summary = summary.drop(columns=["questions"]).merge(counts, on=by, how="left")
        for _, r in summary.iterrows():
            tag = f"[{_GROUP_TAGS.get(group, group)}={r[group]}]" if group else ""
            for col in (*_AT_K, *_PLAIN):
                if col not in summary.columns or pd.isna(r[col]):
                    continue
                n = {"correct_empty_rate": r.no_answer, "context_chars": r["all"], "latency_ms_p50": r["all"],
                     "latency_ms_p95": r["all"], "judged": r["all"], "rerank_seconds": r["all"],
                     "rerank_tokens": r["all"], "rerank_errors": r["all"]}.get(col, r.answerable)  # fmt: skip
                if col == "session_recall":
                    n = r.session_questions
                rows.append((dataset, r.system, metric_name(col, k) + tag, float(r[col]), int(n)))
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


SCORE_COLUMNS = ["dataset", "system", "metric", "value", "questions"]


def metric_key(dataset: str, system: str, metric: str) -> str:
    """The one key scheme of metrics.json and the gate: `dataset/system/metric`."""
    return f"{dataset}/{system}/{metric}"


def flat_metrics(scores: pd.DataFrame) -> dict[str, float]:
    return {metric_key(r.dataset, r.system, r.metric): float(r.value) for r in scores.itertuples(index=False)}
