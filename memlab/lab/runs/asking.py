"""Asking a system every question: the one loop behind an experiment's runs, the labels sweep's deep runs and the
judging pool. Each question is embedded once per embedder (systems of one embedder share the vectors), the
system's memory is built once per data set (Env's cache), and the ranked hits are recorded as a run frame."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from memlab.embedding.base import embed_queries
from memlab.lab.datasets.model import Dataset, Question
from memlab.lab.runs.records import collect
from memlab.lab.systems.kinds import Env, FaissExactSystem, search_handle


class QueryVectors:
    """The questions' vectors per (data set, embedder name), embedded on first use."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self._cache: dict[tuple[str, str], dict[str, np.ndarray]] = {}

    def __call__(self, dataset: str, questions: Sequence[Question], embedder: str) -> dict[str, np.ndarray]:
        key = (dataset, embedder)
        if key not in self._cache:
            found = embed_queries(self.env.embedder(embedder), [q.text for q in questions])
            self._cache[key] = {q.id: v for q, v in zip(questions, found, strict=True)}
        return self._cache[key]


def embedder_of(system: object) -> str:
    """The embedder a system's questions are embedded with (FAISS exact asks with the memory it copies)."""
    over = system.over if isinstance(system, FaissExactSystem) else system
    return getattr(over, "embedder", "default")


def ask(env: Env, system, dataset: Dataset, vectors: QueryVectors, depth: int, *,
        questions: Sequence[Question] | None = None, progress: str | None = None) -> pd.DataFrame:  # fmt: skip
    """`system`'s hits down to `depth` for `questions` (default: the data set's), as a run frame."""
    asked = list(dataset.questions if questions is None else questions)
    handle = search_handle(env, system, dataset)  # with the run's re-ranker for a system with `rerank:`
    found = vectors(dataset.name, asked, embedder_of(system))
    return collect(system.name, lambda q, v: system.search(handle, q, v, depth), asked, found, progress=progress)
