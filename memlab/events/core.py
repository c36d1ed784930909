"""What an EventMemory's ingest, search and erasure share: its settings, its model and layer, the scope check, the
embedding caches erasure clears, and the per-user counts `auto` keeps for a few seconds. One `MemoryCore` is made
by `EventMemory` and handed to each collaborator (memlab.events.ingest, .search, .forgetting), so none of them
reaches into another."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from memlab.embedding.base import Embedder
from memlab.embedding.cache import EmbeddingCache, caches_of, embed_query_transient, erasure_caches
from memlab.errors import DimensionError
from memlab.inputs import InputLimits, check_ids, check_text
from memlab.storage import units as sqlu
from memlab.storage.schema import ModelInfo
from memlab.storage.store import Store
from memlab.types import AutoPolicy, FactKeys, TimestampWindow

# `auto` reads a user's unit count and tenant index (one round trip) to pick a strategy; it keeps what it read
# this long, so a burst of searches pays that trip once. Writes and deletes through this EventMemory drop it at
# once; another process's writes are seen within this many seconds (a stale count only picks a slower or
# faster plan for that while, never other users' rows or wrong ones).
STRATEGY_FACTS_SECONDS = 5.0
_STRATEGY_FACTS_MAX = 10_000  # users remembered at most; beyond that the memory starts again


def check_vectors(vectors: np.ndarray, expected_rows: int, dimension: int, model_id: str) -> None:
    """Refuse vectors of the wrong shape before anything is written."""
    if vectors.ndim != 2 or vectors.shape[0] != expected_rows or vectors.shape[1] != dimension:
        raise DimensionError(
            f"Embedder {model_id!r} returned vectors of shape {vectors.shape}, expected ({expected_rows}, "
            f"{dimension}): model {model_id!r} is registered as {dimension}-d. Nothing was written. Fix the "
            "embedder, or give a model with another dimension its own model id."
        )
    if not np.isfinite(vectors).all():
        raise DimensionError(f"Embedder {model_id!r} returned NaN or infinite values; nothing was written.")


def index_due(layer_units: int, policy: AutoPolicy) -> bool:
    """Whether a layer needs its shared HNSW index: once it holds more units than `auto` scans exactly
    (`AutoPolicy.exact_below`). Below that every user of the layer is scanned exactly, so a graph kept up on every
    write would be read by nothing; a search that asks to walk it (a fixed `hnsw` or `planner` strategy, or `auto`
    with a lower `SearchSettings.exact_below`) builds it first."""
    return layer_units > policy.exact_below


@dataclass
class MemoryCore:
    """An EventMemory's settings and shared state (see the module docstring)."""

    store: Store
    embedder: Embedder
    model: ModelInfo
    layer: str
    granularity: str
    chunk_size: int
    chunk_overlap: int
    min_chars: int
    scan_secrets: bool
    timestamps: TimestampWindow
    limits: InputLimits
    rendering: str
    fact_keys: FactKeys | None
    _strategy_facts: dict[tuple[str, str], tuple[float, sqlu.ScopeFacts]] = field(default_factory=dict)
    _index_seen_at: float | None = None  # when the layer's shared HNSW index was last seen (time.monotonic)

    # -- the layer's shared HNSW index: built once it is needed, not kept up while nothing reads it ----------------
    def _index_fresh(self) -> bool:
        seen = self._index_seen_at
        return seen is not None and time.monotonic() - seen < STRATEGY_FACTS_SECONDS

    def index_present(self, conn) -> bool:
        """Whether the layer's shared HNSW index exists: a catalog lookup, kept STRATEGY_FACTS_SECONDS once the
        index was seen (another process's load may drop it; within that while a search scans exactly meanwhile)."""
        if not self._index_fresh():
            found = sqlu.index_exists(conn, sqlu.index_name_for(self.model.model_id, self.layer))
            self._index_seen_at = time.monotonic() if found else None
        return self._index_seen_at is not None

    def index_state(self, conn) -> tuple[bool, int]:
        """Whether the layer's shared HNSW index exists, and the layer's units, in one round trip (what
        `index_due` and a first load's path read); the presence seen is kept as `index_present` keeps it."""
        found, units = sqlu.layer_index_state(conn, self.layer, self.model.model_id,
                                              sqlu.index_name_for(self.model.model_id, self.layer))  # fmt: skip
        self._index_seen_at = time.monotonic() if found else None
        return found, units

    def index_dropped(self) -> None:
        self._index_seen_at = None

    def ensure_index(self) -> None:
        """Build the layer's shared HNSW index now if it is missing (a read-only store builds nothing)."""
        self.store.ensure_vector_index(self.model.model_id, self.layer)
        self._index_seen_at = None if self.store.read_only else time.monotonic()

    def index_if_due(self) -> float:
        """Build the layer's shared index if it is missing and due (`index_due`): after every write. Returns the
        build's seconds (0.0: nothing built). The store's policy is read before a connection is taken (see
        Search._policy_for)."""
        if self._index_fresh() or self.store.read_only:
            return 0.0
        policy = self.store.auto_policy()
        with self.store.connection() as conn:
            found, units = self.index_state(conn)
        if found or not index_due(units, policy):
            return 0.0
        started = time.perf_counter()
        self.ensure_index()
        return time.perf_counter() - started

    def scope(self, app_name: str, user_id: str) -> sqlu.Scope:
        check_ids(app_name, user_id)  # memory is always scoped to one user of one app
        return sqlu.Scope(app_name, user_id, self.layer, self.model)

    def check_vector(self, vector: np.ndarray) -> np.ndarray:
        """A query vector as float32, refused if its dimension is not the model's."""
        vector = np.asarray(vector, dtype=np.float32)
        check_vectors(vector.reshape(1, -1), 1, self.model.dimension, self.model.model_id)
        return vector

    def check_query(self, app_name: str, user_id: str, query: object) -> None:
        check_text(query, "the query", empty_ok=True, max_bytes=self.limits.query_bytes,
                   limit_name="InputLimits(query_bytes=...)", app_name=app_name, user_id=user_id)  # fmt: skip

    def embed_query(self, app_name: str, user_id: str, query: str) -> np.ndarray:
        """The query's vector, never written to the embedding cache (the query is the user's data too)."""
        self.check_query(app_name, user_id, query)
        return embed_query_transient(self.embedder, query)

    def caches(self) -> list[EmbeddingCache]:
        """The embedding caches erasure clears: the embedder's own (through any wrapping) and every shared
        cache this process opened."""
        return caches_of(self.embedder)

    def forget_cached(self, keys: set[tuple[str, str]]) -> int:
        if not keys:
            return 0
        return sum(cache.forget_keys(keys) for cache in self.caches())

    def forget_erased(self, keys: set[tuple[str, str]], refs: Iterable[str]) -> int:
        """An erasure's part in every cache of this process (`erasure_caches`): the erased texts' vectors (under
        every model) go, and a computation in flight deriving from them or from the erased `refs` (user, session,
        events) stores nothing."""
        refs = list(refs)
        return sum(cache.forget_erased(keys, refs) for cache in erasure_caches(self.embedder))

    def changed(self, users: Iterable[tuple[str, str]] | None = None) -> None:
        """Every path that writes, erases or (re)indexes this memory's rows calls this: the counts and tenant
        indexes kept for `auto` and the gate (see scope_facts) may be stale. `users` ((app, user) pairs): only
        theirs changed, so only theirs go (an ingest names its users: one user's writes do not make every other
        user's next search pay the count again); None drops every user's."""
        if users is None:
            self._strategy_facts.clear()
            return
        for key in users:
            self._strategy_facts.pop(key, None)

    def scope_facts(self, conn, scope: sqlu.Scope) -> sqlu.ScopeFacts:
        """The user's count and tenant index as last read (by auto or the gate), if less than
        STRATEGY_FACTS_SECONDS ago; else read now."""
        kept, fresh = self.kept_scope_facts(scope)
        return kept if kept is not None and fresh else self.read_scope_facts(conn, scope)

    def kept_scope_facts(self, scope: sqlu.Scope) -> tuple[sqlu.ScopeFacts | None, bool]:
        """The user's facts as last read (None if never, or dropped by a write of theirs) and whether that was
        less than STRATEGY_FACTS_SECONDS ago."""
        kept = self._strategy_facts.get((scope.app_name, scope.user_id))
        if kept is None:
            return None, False
        return kept[1], time.monotonic() - kept[0] < STRATEGY_FACTS_SECONDS

    def read_scope_facts(self, conn, scope: sqlu.Scope, knobs: Sequence[tuple[str, str]] = ()) -> sqlu.ScopeFacts:
        """Read the user's facts now and keep them; `knobs` are SET LOCAL by the same statement."""
        facts = sqlu.scope_facts(conn, scope, knobs)
        if len(self._strategy_facts) >= _STRATEGY_FACTS_MAX:
            self._strategy_facts.clear()
        self._strategy_facts[(scope.app_name, scope.user_id)] = (time.monotonic(), facts)
        return facts
