"""The main job for event fixtures: ingest a labelled set, answer its questions with pgvector under several
search configurations and with FAISS exact, and return one tidy row per (granularity, configuration, question)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import pandas as pd

from memlab.embedding.base import Embedder
from memlab.evaluation import metrics
from memlab.evaluation.faiss_exact import FaissExact
from memlab.evaluation.labelled import LabelledSet
from memlab.events.memory import EventMemory
from memlab.storage.store import Store
from memlab.types import IngestReport, SearchSettings

DEFAULT_CONFIGS: dict[str, SearchSettings] = {
    "auto": SearchSettings(),
    "pg_exact": SearchSettings(strategy="exact"),
    "hnsw_ef40_off": SearchSettings(strategy="hnsw", ef_search=40, iterative_scan="off"),
    "hnsw_ef40_relaxed": SearchSettings(strategy="hnsw", ef_search=40, iterative_scan="relaxed_order"),
    "planner": SearchSettings(strategy="planner"),
}
DEFAULT_GRANULARITIES: dict[str, dict] = {
    "event": {"granularity": "event"},
    "chunk4o1": {"granularity": "chunk", "chunk_size": 4, "chunk_overlap": 1},
}


@dataclass
class FixtureRun:
    """Per-question results plus what ingest did for each granularity."""

    questions: pd.DataFrame
    ingest: dict[str, IngestReport] = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        """Mean of each metric per granularity and configuration; answerable questions only, except the
        correct-empty rate, which is over no-answer questions."""
        q = self.questions
        answerable = q[q.answerable]
        out = answerable.groupby(["granularity", "config"], sort=False).agg(
            questions=("question_id", "count"),
            recall_at_k=("recall_at_k", "mean"),
            recall_vs_exact=("recall_vs_exact", "mean"),
            mrr=("rr", "mean"),
            hit_rate=("hit", "mean"),
            empty_rate=("empty", "mean"),
            context_chars=("context_chars", "mean"),
            latency_ms_p50=("latency_ms", "median"),
        )
        no_answer = q[~q.answerable].groupby(["granularity", "config"], sort=False)["empty"].mean()
        out["correct_empty_rate"] = no_answer.reindex(out.index)
        return out.reset_index()


def run_fixture_eval(
    store: Store,
    embedder: Embedder,
    labelled: LabelledSet,
    *,
    k: int = 10,
    max_distance: float | None = None,
    configs: dict[str, SearchSettings] | None = None,
    granularities: dict[str, dict] | None = None,
    progress: bool = False,
) -> FixtureRun:
    """Ingest `labelled` at each granularity and score every question under every configuration."""
    configs = configs or DEFAULT_CONFIGS
    granularities = granularities or DEFAULT_GRANULARITIES
    vectors = {q.id: embedder.embed_query(q.text) for q in labelled.questions}
    rows: list[dict] = []
    reports: dict[str, IngestReport] = {}
    for gname, gargs in granularities.items():
        memory = EventMemory(store, embedder, **gargs)
        reports[gname] = memory.add_sessions(labelled.sessions(), progress=progress)
        exact = FaissExact.from_memory(memory)
        for question in labelled.questions:
            vector = vectors[question.id]
            relevant = frozenset(question.relevant)
            n_units = exact.size(question.app_name, question.user_id)
            started = time.perf_counter()
            truth = exact.search_vector(question.app_name, question.user_id, vector, k)
            truth_ids = truth.unit_ids
            results = {"faiss_exact": (truth, (time.perf_counter() - started) * 1000)}
            for cname, settings in configs.items():
                started = time.perf_counter()
                hits = memory.search_vector(
                    question.app_name, question.user_id, vector, replace(settings, top_k=k, max_distance=None)
                )
                results[cname] = (hits, (time.perf_counter() - started) * 1000)
            for cname, (hits, latency) in results.items():
                kept = [h for h in hits if max_distance is None or h.distance <= max_distance]
                ranked_events = metrics.events_in_rank_order([h.event_ids for h in kept])
                rows.append(
                    {
                        "granularity": gname,
                        "config": cname,
                        "question_id": question.id,
                        "app_name": question.app_name,
                        "user_id": question.user_id,
                        "qtype": question.qtype,
                        "answerable": question.answerable,
                        "memory_units": n_units,
                        "plan": hits.plan,
                        "returned": len(kept),
                        "recall_at_k": metrics.recall(ranked_events, relevant),
                        "rr": metrics.reciprocal_rank(ranked_events, relevant),
                        "hit": bool(relevant.intersection(ranked_events)),
                        "empty": not kept,
                        "recall_vs_exact": metrics.recall_vs_exact([h.unit_id for h in hits], truth_ids, k),
                        "context_chars": sum(len(h.text) for h in kept),
                        "top_distance": kept[0].distance if kept else float("nan"),
                        "latency_ms": latency,
                    }
                )
    return FixtureRun(pd.DataFrame(rows), reports)
