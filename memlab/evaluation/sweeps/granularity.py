"""Which unit to remember: events, chunks of several sizes and overlaps, or extracted facts, on the same
questions with the same k, scored on recall, MRR and the context each hands the model."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from memlab.embedding.base import Embedder
from memlab.evaluation.faiss_exact import FaissExact
from memlab.evaluation.labelled import LabelledSet, Question
from memlab.evaluation.runs import collect
from memlab.evaluation.scoring import score, summarize
from memlab.events.memory import EventMemory
from memlab.facts.extractors.base import Extractor
from memlab.facts.memory import FactMemory
from memlab.storage.store import Store
from memlab.types import Hit, Hits, SearchSettings


@dataclass(frozen=True)
class Unit:
    """One granularity: 'event', 'chunk' (size, overlap) or 'facts' (with an extractor)."""

    name: str
    kind: str
    chunk_size: int = 4
    chunk_overlap: int = 1
    extractor: Extractor | None = field(default=None, compare=False)


def default_units(extractors: list[Extractor]) -> list[Unit]:
    units = [
        Unit("event", "event"),
        Unit("chunk2o0", "chunk", 2, 0),
        Unit("chunk4o1", "chunk", 4, 1),
        Unit("chunk8o2", "chunk", 8, 2),
    ]
    return units + [Unit(f"facts-{ex.name}", "facts", extractor=ex) for ex in extractors]


def _fact_searcher(facts: FactMemory, k: int):
    """Facts served as the agent would get them (threshold, decay at the time asked), all sensitivities.
    A fact that answers the question's labelled key covers the question's relevant events."""

    def search(q: Question, _vector: np.ndarray) -> Hits:
        found = facts.search(q.app_name, q.user_id, q.text, allow=("personal", "health"), limit=k, now=q.asked_at)
        hits = []
        for h in found:
            events = h.event_ids
            if q.fact_key and q.fact_key == f"{h.fact.subject}/{h.fact.predicate}":
                events = tuple(dict.fromkeys((*events, *q.relevant)))
            hits.append(Hit(unit_id=h.unit_id, text=h.text, distance=h.distance, event_ids=events))
        return Hits(hits, plan="facts")

    return search


def granularity_sweep(
    store: Store,
    embedder: Embedder,
    labelled: LabelledSet,
    *,
    units: list[Unit],
    k: int = 10,
    settings: SearchSettings | None = None,
    progress: bool = False,
    runs: dict[str, pd.DataFrame] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-question scores, summary by granularity). Event and chunk layers are searched with `settings`
    (default `auto`) and also scored against FAISS exact over the same units. Pass a dict as `runs` to get
    each granularity's raw run back (for cut-off sweeps)."""
    settings = replace(settings or SearchSettings(), top_k=k)
    vectors = {q.id: embedder.embed_query(q.text) for q in labelled.questions}
    sizes = {(u.app_name, u.user_id): u.event_count for u in labelled.users}
    frames = []
    for unit in units:
        if unit.kind == "facts":
            facts = FactMemory(store, embedder, extractor=unit.extractor)
            for session in labelled.sessions():
                facts.add_session(session)
            run = collect(unit.name, _fact_searcher(facts, k), labelled.questions, vectors)
            if runs is not None:
                runs[unit.name] = run
            frames.append(score(run, labelled.questions, k=k, memory_sizes=sizes))
            continue
        memory = EventMemory(store, embedder, granularity=unit.kind, chunk_size=unit.chunk_size,
                             chunk_overlap=unit.chunk_overlap)  # fmt: skip
        memory.add_sessions(labelled.sessions(), progress=progress)
        exact = FaissExact.from_memory(memory)
        run = collect(unit.name, lambda q, v, m=memory: m.search_vector(q.app_name, q.user_id, v, settings),
                      labelled.questions, vectors)  # fmt: skip
        truth = collect(unit.name, lambda q, v, e=exact: e.search_vector(q.app_name, q.user_id, v, k),
                        labelled.questions, vectors)  # fmt: skip
        if runs is not None:
            runs[unit.name] = run
        frames.append(score(run, labelled.questions, k=k, exact=truth, memory_sizes=sizes))
    scores = pd.concat(frames, ignore_index=True)
    return scores, summarize(scores, by=("system",))
