"""The fixtures job: ingest a labelled set at each granularity, answer its questions with pgvector under
several search configurations and with FAISS exact, and score every run the same way (memlab.evaluation.scoring)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pandas as pd

from memlab.embedding.base import Embedder
from memlab.evaluation.faiss_exact import FaissExact
from memlab.evaluation.labelled import LabelledSet
from memlab.evaluation.runs import collect
from memlab.evaluation.scoring import score, summarize
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
    """Per-question scores (one row per granularity, configuration and question) and the ingest reports."""

    questions: pd.DataFrame
    ingest: dict[str, IngestReport] = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        return summarize(self.questions, by=("granularity", "config"))


def run_fixture_eval(
    store: Store,
    embedder: Embedder,
    labelled: LabelledSet,
    *,
    k: int = 10,
    configs: dict[str, SearchSettings] | None = None,
    granularities: dict[str, dict] | None = None,
    progress: bool = False,
) -> FixtureRun:
    """Ingest `labelled` at each granularity and score every question under every configuration, and
    FAISS exact itself, against the labels and against FAISS exact."""
    configs = configs or DEFAULT_CONFIGS
    granularities = granularities or DEFAULT_GRANULARITIES
    vectors = {q.id: embedder.embed_query(q.text) for q in labelled.questions}
    frames: list[pd.DataFrame] = []
    reports: dict[str, IngestReport] = {}
    for gname, gargs in granularities.items():
        memory = EventMemory(store, embedder, **gargs)
        reports[gname] = memory.add_sessions(labelled.sessions(), progress=progress)
        exact = FaissExact.from_memory(memory)
        sizes = {u: exact.size(*u) for u in exact.users()}
        truth = collect("faiss_exact", lambda q, v, e=exact: e.search_vector(q.app_name, q.user_id, v, k),
                        labelled.questions, vectors)  # fmt: skip
        runs = [truth]
        for cname, settings in configs.items():
            s = replace(settings, top_k=k, max_distance=None)
            runs.append(collect(cname, lambda q, v, m=memory, s=s: m.search_vector(q.app_name, q.user_id, v, s),
                                labelled.questions, vectors))  # fmt: skip
        scored = score(pd.concat(runs, ignore_index=True), labelled.questions, k=k, exact=truth, memory_sizes=sizes)
        frames.append(scored.rename(columns={"system": "config"}).assign(granularity=gname))
    return FixtureRun(pd.concat(frames, ignore_index=True), reports)
