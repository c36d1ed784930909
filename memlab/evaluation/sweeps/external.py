"""External data (LongMemEval): event memory as shipped, scored by question type at the turn and the
session level. Nothing is tuned here: the cut-off applied is the one recommended on memlab's own data."""

from __future__ import annotations

import pandas as pd

from memlab.embedding.base import Embedder
from memlab.evaluation.faiss_exact import FaissExact
from memlab.evaluation.labelled import LabelledSet
from memlab.evaluation.runs import collect
from memlab.evaluation.scoring import cut, score, summarize
from memlab.events.memory import EventMemory
from memlab.storage.store import Store
from memlab.types import SearchSettings


def _session_of(event_id: str) -> str:
    return event_id.rsplit("_", 1)[0]


def session_recall(run: pd.DataFrame, labelled: LabelledSet, k: int) -> pd.Series:
    """Per question: share of answer sessions that at least one retrieved turn (within k) comes from."""
    wanted = {q.id: set(q.relevant_sessions) for q in labelled.questions if q.relevant_sessions}
    hits = run[(run["rank"] > 0) & (run["rank"] <= k)]
    found: dict[str, set[str]] = {}
    for qid, ids in zip(hits.question_id, hits.event_ids, strict=True):
        found.setdefault(qid, set()).update(_session_of(e) for e in ids)
    return pd.Series({qid: len(s & found.get(qid, set())) / len(s) for qid, s in wanted.items()}, name="session_recall")


def external_eval(
    store: Store,
    embedder: Embedder,
    labelled: LabelledSet,
    *,
    k: int = 10,
    max_distance: float | None = None,
    settings: SearchSettings | None = None,
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-question scores with session recall, summary by question type)."""
    settings = settings or SearchSettings(top_k=k)
    memory = EventMemory(store, embedder)
    memory.add_sessions(labelled.sessions(), progress=progress)
    vectors = {q.id: embedder.embed_query(q.text) for q in labelled.questions}
    exact = FaissExact.from_memory(memory, app_name=labelled.questions[0].app_name if labelled.questions else None)
    run = collect("event", lambda q, v: memory.search_vector(q.app_name, q.user_id, v, settings),
                  labelled.questions, vectors)  # fmt: skip
    truth = collect("faiss", lambda q, v: exact.search_vector(q.app_name, q.user_id, v, k), labelled.questions, vectors)
    scores = score(run, labelled.questions, k=k, max_distance=max_distance, exact=truth)
    sessions = session_recall(cut(run, max_distance), labelled, k)
    scores["session_recall"] = scores.question_id.map(sessions)
    summary = summarize(scores, by=("qtype",))
    summary = summary.merge(
        scores[scores.answerable].groupby("qtype").session_recall.mean().rename("session_recall").reset_index(),
        on="qtype", how="left",
    )  # fmt: skip
    return scores, summary
