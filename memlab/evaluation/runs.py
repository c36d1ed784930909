"""A run is data: one row per (system, question, rank) with the unit, its event ids, distance and latency.

Runs are saved and reloaded as parquet, so metrics can be recomputed, compared and diffed without
querying again. A question that got nothing still leaves one row (rank 0, no unit) carrying its latency."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from memlab.evaluation.labelled import Question
from memlab.types import Hit

RUN_COLUMNS = [
    "system", "question_id", "rank", "unit_id", "event_ids", "distance", "chars", "latency_ms", "plan",
]  # fmt: skip

Searcher = Callable[[Question, np.ndarray], Sequence[Hit]]


def collect(
    system: str, search: Searcher, questions: Sequence[Question], vectors: dict[str, np.ndarray]
) -> pd.DataFrame:
    """Ask `search` every question (with its pre-embedded vector) and record the ranked hits."""
    rows: list[tuple] = []
    for q in questions:
        started = time.perf_counter()
        hits = search(q, vectors[q.id])
        latency = (time.perf_counter() - started) * 1000
        plan = getattr(hits, "plan", "")
        if not hits:
            rows.append((system, q.id, 0, None, [], np.nan, 0, latency, plan))
        for rank, h in enumerate(hits, start=1):
            rows.append((system, q.id, rank, h.unit_id, list(h.event_ids), h.distance, len(h.text), latency, plan))
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def save_run(run: pd.DataFrame, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    run.to_parquet(path, index=False)
    return path


def load_run(path: str | Path) -> pd.DataFrame:
    run = pd.read_parquet(path)
    run["event_ids"] = run["event_ids"].map(lambda ids: list(ids) if ids is not None else [])
    return run
