"""Ingest throughput next to the model's raw encode rate on the same texts: the ratio says how much the
filtering, bookkeeping and binary COPY cost on top of embedding. Numbers are rates, compared as ratios."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

from memlab.embedding.base import Embedder
from memlab.events.memory import EventMemory
from memlab.lab.dataset import Dataset
from memlab.storage.store import Store

BENCH_APP = "memlab-bench"


@dataclass(frozen=True)
class IngestBench:
    texts: int
    raw_encode_per_s: float
    ingest_units_per_s: float
    sessions: int

    @property
    def ratio(self) -> float:
        """Ingest rate / raw encode rate (1.0 = ingest costs nothing beyond embedding)."""
        return self.ingest_units_per_s / self.raw_encode_per_s if self.raw_encode_per_s else float("nan")

    def as_dict(self) -> dict:
        return {**asdict(self), "ratio": self.ratio}


def measure_ingest(store: Store, model: Embedder, labelled: Dataset, *, repeat: int = 1) -> IngestBench:
    """Embed the kept texts of `labelled` with `model` (which must not be cached), then ingest the same
    sessions under a throw-away app name with the same uncached model, and compare rates.

    `repeat` copies the sessions under distinct user ids to get a larger, steadier sample."""
    probe = EventMemory(store, model)
    sessions = [
        replace(s, app_name=BENCH_APP, user_id=f"{s.app_name}/{s.user_id}#{r}")
        for r in range(repeat)
        for s in labelled.sessions()
    ]
    texts = [(e.text or "").strip() for s in sessions for e in probe.kept_events(s)[0]]
    model.embed_documents(texts[:8])  # load and warm up the model outside the timings
    raw_seconds = []
    for _ in range(2):  # before and after the ingest, to even out a noisy machine
        started = time.perf_counter()
        model.embed_documents(texts)
        raw_seconds.append(time.perf_counter() - started)
        if len(raw_seconds) == 1:
            started = time.perf_counter()
            report = probe.add_sessions(sessions)
            ingest_seconds = time.perf_counter() - started
    for s in sessions:
        probe.forget_user(s.app_name, s.user_id)
    raw_rate = len(texts) / (sum(raw_seconds) / len(raw_seconds))
    return IngestBench(
        texts=len(texts),
        raw_encode_per_s=raw_rate,
        ingest_units_per_s=report.added / ingest_seconds if ingest_seconds else float("nan"),
        sessions=len(sessions),
    )
