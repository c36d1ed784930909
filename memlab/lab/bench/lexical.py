"""Lexical and hybrid search latency against vector search, per user size: one user at each size of `sizes`
(1k to 50k units in `full`), holding the first n rows of real turns (texts cycle when the checkout has fewer)
with the bench corpus's vectors, all in layer `bench:lexical` of the bench app; users above the auto policy's
threshold get their own HNSW index (`EventMemory.maintain`, as a deployment would run it).

Each user is searched with the same real questions in three modes (k=10): `vector` (`search_vector`, auto),
`lexical` and `hybrid` (`search_fused`, hybrid being the recommended mode). The query's vector is embedded once
beforehand: embedding costs every mode the same and would hide the differences. Modes take turns query by query
(the first moves each time) after one unrecorded warm-up each, so a machine slowing down mid-run slows them alike.
The lexical statement's EXPLAIN ANALYZE rows per unit are recorded too: they must stay flat as users grow (the
old statement's grew with the user: quadratic work). Nothing here is gated on time; the ratios to vector p95,
measured side by side, are what carries across runs.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
from rich.progress import track

from memlab.embedding.base import Embedder
from memlab.events.memory import EventMemory
from memlab.events.units import Unit
from memlab.lab.bench.search import APP, _p
from memlab.lab.metrics.plan_rows import lexical_plan_rows
from memlab.storage.store import Store
from memlab.types import SearchSettings

LAYER = "bench:lexical"
MODES: tuple[str, ...] = ("vector", "lexical", "hybrid")
SUMMARY_FIGURES = [f"{m}_p{q}_ms" for m in MODES for q in (50, 95)] + [
    "lexical_vs_vector_p95",
    "hybrid_vs_vector_p95",
    "lexical_plan_rows_per_unit",
]  # bench.json, per user size
K = 10
_T0 = datetime(2024, 1, 1, tzinfo=UTC)


def user_id(units: int) -> str:
    return f"lexical-{units}"


def _rows(sizes: Sequence[int], texts: Sequence[str], vectors: np.ndarray) -> Iterator[tuple[str, str, Unit, Any]]:
    """Each user's first n rows: text i cycles through `texts`, vector i is row i of `vectors`."""
    for n in sizes:
        user = user_id(n)
        for j, text in zip(range(n), itertools.cycle(texts)):
            unit = Unit(f"{user}-s{j // 50}", f"u{j}", (f"u{j}",), "user", _T0 + timedelta(minutes=j), text)
            yield APP, user, unit, vectors[j]


def clear(store: Store, model_id: str, sizes: Sequence[int] = ()) -> int:
    """Drop the users' own indexes and the layer's index, then delete the layer's rows; returns rows deleted."""
    for n in sizes:
        store.drop_tenant_index(model_id, LAYER, APP, user_id(n))
    store.drop_vector_index(model_id, LAYER)
    return store.delete_layer(APP, LAYER)


def _search(memory: EventMemory, user: str, text: str, vector: np.ndarray, mode: str, k: int):
    """(hits, ms, plan) of one search as a caller pays it, the query vector given."""
    started = time.perf_counter()
    if mode == "vector":
        hits = memory.search_vector(APP, user, vector, SearchSettings(top_k=k))
    else:
        hits = memory.search_fused(APP, user, text, vector, SearchSettings(top_k=k, mode=mode))
    return hits, (time.perf_counter() - started) * 1000, hits.plan


def lexical_bench(
    store: Store, embedder: Embedder, texts: Sequence[str], vectors: np.ndarray, questions: Sequence[str],
    question_vectors: np.ndarray, *, sizes: Sequence[int], k: int = K, progress: bool = False,
) -> pd.DataFrame:  # fmt: skip
    """Load one user per size (see the module docstring), search each with every question in every mode. One row
    per (units, mode, query): latency_ms, returned, plan, and the lexical plan's rows per unit of that user. The
    frame's `attrs` hold load_s and maintain_s. The layer is emptied before and after."""
    sizes = sorted(set(sizes))
    if not texts or len(vectors) < max(sizes):
        raise ValueError(f"need texts and at least {max(sizes)} vectors, got {len(texts)} texts, {len(vectors)}")
    memory = EventMemory(store, embedder, layer=LAYER)
    model_id = memory.model.model_id
    clear(store, model_id, sizes)
    started = time.perf_counter()
    memory.bulk_load(_rows(sizes, texts, np.ascontiguousarray(vectors, dtype=np.float32)))
    loaded = time.perf_counter()
    memory.maintain(APP)
    timings = {"load_s": loaded - started, "maintain_s": time.perf_counter() - loaded}
    rows: list[dict] = []
    todo = sizes
    if progress:
        todo = track(sizes, description="lexical vs vector")
    try:
        for n in todo:
            user = user_id(n)
            plan_rows = lexical_plan_rows(memory, APP, user, questions[0], top_k=k).rows / n
            for mode in MODES:  # warm-up, not recorded
                _search(memory, user, questions[0], question_vectors[0], mode, k)
            for qi, (text, vector) in enumerate(zip(questions, question_vectors, strict=True)):
                turn = qi % len(MODES)
                for mode in MODES[turn:] + MODES[:turn]:
                    hits, ms, plan = _search(memory, user, text, vector, mode, k)
                    rows.append({"units": n, "mode": mode, "query": qi, "latency_ms": ms, "returned": len(hits),
                                 "plan": plan, "lexical_plan_rows_per_unit": plan_rows})  # fmt: skip
    finally:
        clear(store, model_id, sizes)
    frame = pd.DataFrame(rows)
    frame.attrs.update(timings)
    return frame


def summarize_lexical(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per user size: p50/p95 latency (ms) of each mode, lexical and hybrid p95 over vector p95, the
    lexical plan's rows per unit, the vector plan most taken, and the queries."""
    if frame.empty:
        return pd.DataFrame()
    out = []
    for n, grp in frame.groupby("units", sort=True):
        row: dict = {"units": int(n), "queries": int(grp["query"].nunique())}
        for mode in MODES:
            ms = grp[grp["mode"] == mode]["latency_ms"]
            row[f"{mode}_p50_ms"] = _p(50)(ms) if len(ms) else float("nan")
            row[f"{mode}_p95_ms"] = _p(95)(ms) if len(ms) else float("nan")
        for mode in ("lexical", "hybrid"):
            row[f"{mode}_vs_vector_p95"] = row[f"{mode}_p95_ms"] / row["vector_p95_ms"]
        row["lexical_plan_rows_per_unit"] = float(grp["lexical_plan_rows_per_unit"].iloc[0])
        vector_plans = grp[grp["mode"] == "vector"]["plan"]
        row["vector_plan"] = vector_plans.mode().iloc[0] if vector_plans.notna().any() else None
        out.append(row)
    return pd.DataFrame(out)
