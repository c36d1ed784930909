"""Ingest throughput next to the model's raw encode rate on the same texts: the ratio says how much the
filtering, bookkeeping and binary COPY cost on top of embedding. Numbers are rates, compared as ratios.

Where the rest goes comes from `IngestReport.timings` (seconds per stage: filter and secret scan, lookups,
embedding, COPY with HNSW upkeep, commit; batch after batch, one stage after another), plus two more runs of the
same sessions: a re-ingest (nothing to embed or write) and an ingest into a layer without its HNSW index (the
vectors already cached), whose write time against the first run's is the index's upkeep. A last first load with
every vector cached (the model never called) times everything ingest does besides embedding: it runs beside no
model call, so it bounds the ratio (`serial_ratio`, `nonmodel_budget_seconds`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from memlab.embedding.base import Embedder
from memlab.embedding.cache import CachedEmbedder, EmbeddingCache
from memlab.events.memory import EventMemory
from memlab.lab.datasets.model import Dataset
from memlab.safety.clean_texts import forget_scans
from memlab.storage.disk_erasure import after_erasure
from memlab.storage.store import Store

BENCH_APP = "memlab-bench"
STAGES = ("filter", "lookup", "embed", "write", "commit", "index_build")  # index_build: after a rebuilding first load
RATIO_GOAL = 0.95  # the ingest rate a first load should reach, as a share of the model's raw encode rate
MODEL_FREE_ROUNDS = 3  # the model-free load is timed this many times; the median is reported


@dataclass(frozen=True)
class IngestBench:
    texts: int
    raw_encode_per_s: float
    ingest_units_per_s: float
    sessions: int
    ingest_texts_per_s: float = float("nan")  # distinct texts embedded per second of ingest
    ingest_seconds: float = float("nan")
    reingest_seconds: float = float("nan")
    reingest_embedded: int = 0
    write_without_index_seconds: float = float("nan")
    stages: dict[str, float] = field(default_factory=dict)  # seconds per stage of the first ingest
    round_ratios: tuple[float, ...] = ()  # every round's ratio, sorted: their spread is this machine's noise
    model_threads: int = 0  # CPU threads the model ran on (torch's intra-op pool), raw encode and ingest alike
    path: str = ""  # the write path the first ingest took (IngestReport.path: e.g. "copy-first-load") and why
    path_reason: str = ""
    nonmodel_seconds: float = float("nan")  # the same first load with every vector cached: all but the model
    nonmodel_path: str = ""  # the path that load took (the first ingest's, or the comparison is void)

    @property
    def ratio(self) -> float:
        """Ingest rate / raw encode rate, both in distinct texts per second (1.0 = ingest costs nothing beyond
        embedding)."""
        return self.ingest_texts_per_s / self.raw_encode_per_s if self.raw_encode_per_s else float("nan")

    @property
    def reingest_share(self) -> float:
        """A re-ingest's time as a share of the first ingest's (nothing is embedded or written again)."""
        return self.reingest_seconds / self.ingest_seconds if self.ingest_seconds else float("nan")

    @property
    def index_upkeep_seconds(self) -> float:
        """Time the HNSW index added: the write stage (with the index kept up, or its build after a rebuilding
        first load) minus the same write without it."""
        built = self.stages.get("write", float("nan")) + self.stages.get("index_build", 0.0)
        return built - self.write_without_index_seconds

    @property
    def raw_seconds(self) -> float:
        """The model's raw encode of the distinct texts, in seconds (the reported round's)."""
        return self.texts / self.raw_encode_per_s if self.raw_encode_per_s else float("nan")

    @property
    def serial_ratio(self) -> float:
        """The ratio when nothing else ingest does overlaps the model, as its stages run one after another:
        raw / (raw + model-free first load). The measured ratio stays near it (above it only by noise, or by
        padding the ingest's model calls save on the raw encode's)."""
        return self.raw_seconds / (self.raw_seconds + self.nonmodel_seconds)

    def nonmodel_budget_seconds(self, goal: float = RATIO_GOAL) -> float:
        """How long everything but the model may take, not overlapped, for the ratio to reach `goal`."""
        return self.raw_seconds * (1 / goal - 1)

    @property
    def rounds(self) -> int:
        """First ingests measured; the one with the median ratio is reported."""
        return max(1, len(self.round_ratios))

    @property
    def ratio_quartiles(self) -> tuple[float, float]:
        """The first and third quartile of the rounds' ratios (both the ratio itself with one round)."""
        if not self.round_ratios:
            return (self.ratio, self.ratio)
        q1, q3 = np.percentile(self.round_ratios, [25, 75])
        return (float(q1), float(q3))

    def as_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("stages", "round_ratios")}
        out["rounds"] = self.rounds
        out["ratio_q1"], out["ratio_q3"] = self.ratio_quartiles
        out.update({f"{stage}_seconds": self.stages.get(stage, 0.0) for stage in STAGES})
        return {**out, "ratio": self.ratio, "reingest_share": self.reingest_share,
                "index_upkeep_seconds": self.index_upkeep_seconds, "raw_seconds": self.raw_seconds,
                "serial_ratio": self.serial_ratio,
                "nonmodel_budget_seconds": self.nonmodel_budget_seconds()}  # fmt: skip


@contextmanager
def model_threads(threads: int | None) -> Iterator[int]:
    """Run the model on `threads` CPU threads for the duration (torch's intra-op pool; None leaves it as it is)
    and yield the number in effect. With one core fewer than the machine has, the model leaves PostgreSQL and
    the filters a core of their own: the ingest ratio then shows ingest's own cost, not the contention."""
    # Deferred, as the embedder defers it: torch takes seconds to import, which every
    # `memlab` command and `import memlab.lab` would pay at start-up, not only a bench that runs the model.
    import torch

    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(max(1, threads))
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def _bench_sessions(probe: EventMemory, labelled: Dataset, tag: str, repeat: int = 1) -> tuple[list, list[str]]:
    """`labelled`'s sessions under the bench app (user ids tagged so runs never meet), and the distinct texts
    their units embed: ingest embeds each text once (copies under other users share a vector), so the raw
    encode rate it is compared with is measured on the same distinct texts."""
    sessions = [
        replace(s, app_name=BENCH_APP, user_id=f"{s.app_name}/{s.user_id}#{tag}{r}")
        for r in range(repeat)
        for s in labelled.sessions()
    ]
    texts = list(dict.fromkeys(u.embed_text for s in sessions for u in probe.units_of(s, probe.kept_events(s)[0])))
    return sessions, texts


def _forget(mem: EventMemory, sessions: list) -> None:
    for scope in {(s.app_name, s.user_id) for s in sessions}:
        mem.forget_user(*scope)


def _cleared(mem: EventMemory, sessions: list) -> None:
    """`_forget`, then VACUUM the tables, before a timed ingest: the previous round's deleted rows would
    otherwise be vacuumed by autovacuum while the next round runs, in CPU taken from it (such a round runs slower
    than its neighbours); an import does not clear up after a bulk delete of its own."""
    _forget(mem, sessions)
    after_erasure(mem.store, True)


class _Recorded:
    """The model, keeping each vector it computes in a plain dict, outside every embedding cache: an erasure
    removes the erased texts' vectors from the caches, and each round erases the rows of the round before, so the
    model-free loads replay a round's vectors from here. `computed` counts texts the model was asked for."""

    def __init__(self, model: Embedder, vectors: dict[str, np.ndarray] | None = None, *, record: bool = True):
        self.inner = model  # the served model is read through it
        self.vectors: dict[str, np.ndarray] = vectors if vectors is not None else {}
        self.record = record
        self.computed = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def replay(self) -> _Recorded:
        """The same vectors served back; a text not among them is computed and counted."""
        return _Recorded(self.inner, dict(self.vectors), record=False)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors or self.record]
        if missing:
            self.computed += 0 if self.record else len(missing)
            self.vectors.update(zip(missing, np.asarray(self.inner.embed_documents(missing), dtype=np.float32),
                                    strict=True))  # fmt: skip
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack([self.vectors[t] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def _timed(fn) -> tuple[object, float]:
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def measure_ingest(
    store: Store, model: Embedder, labelled: Dataset, *, repeat: int = 1, rounds: int = 1, threads: int | None = None
) -> IngestBench:
    """Embed the kept texts of `labelled` with `model` (which must not be cached), then ingest the same
    sessions under a throw-away app name, embedding through a fresh in-memory cache, and compare rates.

    `repeat` copies the sessions under distinct user ids (more sessions, the same texts). `rounds` repeats the
    first ingest (each into an empty layer, through an empty cache) between raw encodes, so every ingest is
    compared with the raw encodes just before and after it; the round with the median ratio is reported (a
    job of a second is at the mercy of a noisy machine; the median of interleaved pairs is not). `threads` runs
    the model on that many CPU threads throughout (see `model_threads`)."""
    with model_threads(threads) as used:
        return replace(_measure_ingest(store, model, labelled, repeat, rounds), model_threads=used)


def _measure_ingest(store: Store, model: Embedder, labelled: Dataset, repeat: int, rounds: int) -> IngestBench:
    probe = EventMemory(store, model, layer="bench:ingest")
    sessions, texts = _bench_sessions(probe, labelled, "", repeat)
    _forget(probe, sessions)  # a previous run cut short leaves nothing behind
    # Warm up on every text, untimed: the first pass over new input shapes builds the CPU kernels for them and
    # would otherwise count against whichever of raw encode and ingest ran first.
    model.embed_documents(texts)
    _, raw_before = _timed(lambda: model.embed_documents(texts))
    trials = []
    for _ in range(max(1, rounds)):
        _cleared(probe, sessions)
        forget_scans()  # every round scans its texts for secrets, as a first ingest does
        recorded = _Recorded(model)
        cached = CachedEmbedder(recorded, EmbeddingCache(None))  # starts empty: the ingest embeds everything
        first = EventMemory(store, cached, layer=probe.layer)
        report, seconds = _timed(lambda first=first: first.add_sessions(sessions))
        _, raw_after = _timed(lambda: model.embed_documents(texts))
        raw = (raw_before + raw_after) / 2
        trials.append(((raw / seconds if seconds else 0.0), raw, seconds, report, cached, recorded))
        raw_before = raw_after
    trials.sort(key=lambda t: t[0])
    _, raw, ingest_seconds, report, cached, recorded = trials[len(trials) // 2]
    embedded = cached.computed
    # The last round's rows are stored: a re-ingest of them should embed and write nothing (an empty cache
    # counts every text it would send to the model).
    counting = CachedEmbedder(model, EmbeddingCache(None))
    again, reingest_seconds = _timed(lambda: EventMemory(store, counting, layer=probe.layer).add_sessions(sessions))
    reingest_embedded = again.embedded + counting.computed
    # The median round's first load again, its cache holding every vector: all the ingest costs but the model;
    # the median of MODEL_FREE_ROUNDS (one such load alone can read several times its neighbours).
    replay, frees = recorded.replay(), []
    for _ in range(MODEL_FREE_ROUNDS):
        _cleared(probe, sessions)
        forget_scans()
        frees.append(_timed(lambda: EventMemory(store, replay, layer=probe.layer).add_sessions(sessions)))
    if replay.computed:
        raise RuntimeError("the model-free first load called the model: its time would not be ingest's alone")
    modelfree, nonmodel_seconds = sorted(frees, key=lambda f: f[1])[len(frees) // 2]
    bare = EventMemory(store, replay, layer="bench:ingest-no-index")  # holds every vector: times writes only
    store.drop_vector_index(bare.model.model_id, bare.layer)
    _forget(bare, sessions)
    without_index = bare.add_sessions(sessions)
    _forget(probe, sessions)
    _forget(bare, sessions)
    return IngestBench(
        texts=len(texts),
        raw_encode_per_s=len(texts) / raw,
        ingest_units_per_s=report.added / ingest_seconds if ingest_seconds else float("nan"),
        ingest_texts_per_s=embedded / ingest_seconds if ingest_seconds else float("nan"),
        sessions=len(sessions),
        ingest_seconds=ingest_seconds,
        reingest_seconds=reingest_seconds,
        reingest_embedded=reingest_embedded,
        write_without_index_seconds=without_index.timings.get("write", float("nan")),
        stages={stage: float(report.timings.get(stage, 0.0)) for stage in STAGES},
        round_ratios=tuple(float(t[0]) for t in trials),
        path=report.path,
        path_reason=report.path_reason,
        nonmodel_seconds=nonmodel_seconds,
        nonmodel_path=modelfree.path,
    )


def measure_batch_sizes(
    store: Store, model: Embedder, labelled: Dataset, *, sizes: tuple[int, ...] = (64, 256, 1024)
) -> list[dict]:
    """Ingest texts/s per `add_sessions(batch_units=...)`, each size into a fresh layer with an uncached model,
    in one run so the rates compare: small batches cost more round trips and smaller model calls."""
    probe = EventMemory(store, model, layer="bench:batch")
    sessions, texts = _bench_sessions(probe, labelled, "batch")
    model.embed_documents(texts)  # warm-up, untimed (see measure_ingest)
    out = []
    for size in sizes:
        _cleared(probe, sessions)
        forget_scans()
        report, seconds = _timed(lambda size=size: probe.add_sessions(sessions, batch_units=size))
        rate = len(texts) / seconds if seconds else float("nan")
        out.append({"batch_units": size, "texts": len(texts), "seconds": seconds, "texts_per_s": rate,
                    "added": report.added})  # fmt: skip
    _forget(probe, sessions)
    return out
