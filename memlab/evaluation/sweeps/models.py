"""A model migration judged as it would be in production: the second model's rows are written beside the
first model's with `migrate_embeddings` (from the stored text), then both answer the same questions."""

from __future__ import annotations

import time

import pandas as pd

from memlab.embedding.base import Embedder
from memlab.evaluation.faiss_exact import FaissExact
from memlab.evaluation.labelled import LabelledSet
from memlab.evaluation.runs import collect
from memlab.evaluation.scoring import score, summarize
from memlab.events.memory import EventMemory, migrate_embeddings
from memlab.storage.store import Store
from memlab.types import SearchSettings


def encode_rate(embedder: Embedder, texts: list[str]) -> float:
    """Texts per second of the raw model (pass an uncached embedder)."""
    embedder.embed_documents(texts[:4])
    started = time.perf_counter()
    embedder.embed_documents(texts)
    return len(texts) / (time.perf_counter() - started)


def model_sweep(
    store: Store, labelled: LabelledSet, first: Embedder, second: Embedder, *, k: int = 10,
    raw_first: Embedder | None = None, raw_second: Embedder | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Summary per model: recall, MRR, agreement with FAISS exact, dimension, raw encode rate and the time the
    migration took."""
    old = EventMemory(store, first)
    old.add_sessions(labelled.sessions())
    started = time.perf_counter()
    app = labelled.questions[0].app_name if labelled.questions else None
    migration = migrate_embeddings(store, first.model_id, second, app_name=app, layers=[old.layer])
    migration_s = time.perf_counter() - started
    sample = [e.text for s in labelled.sessions() for e in s.events if e.text][:256]
    rows = []
    settings = SearchSettings(top_k=k)
    for embedder, raw in ((first, raw_first), (second, raw_second)):
        memory = EventMemory(store, embedder)
        vectors = {q.id: embedder.embed_query(q.text) for q in labelled.questions}
        exact = FaissExact.from_memory(memory, app_name=labelled.questions[0].app_name)

        def search(q, v, m=memory, s=settings):
            return m.search_vector(q.app_name, q.user_id, v, s)

        run = collect(embedder.model_id, search, labelled.questions, vectors)
        truth = collect(embedder.model_id, lambda q, v, e=exact: e.search_vector(q.app_name, q.user_id, v, k),
                        labelled.questions, vectors)  # fmt: skip
        summary = summarize(score(run, labelled.questions, k=k, exact=truth)).iloc[0].to_dict()
        summary.update(
            dimension=embedder.dimension,
            encode_texts_per_s=encode_rate(raw, sample) if raw is not None else float("nan"),
            migration_rows=migration.rows_added if embedder is second else 0,
            migration_s=migration_s if embedder is second else 0.0,
        )
        rows.append(summary)
    return pd.DataFrame(rows)
