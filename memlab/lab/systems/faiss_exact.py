"""FAISS exact search over the same units, scoped the same way: the ground truth every recall is measured against.

One `IndexFlatIP` per (app, user): vectors are unit length, so inner product ranks exactly as cosine, and
cosine distance = 1 - inner product, comparable with pgvector's `<=>`. Each hit carries its session, as pgvector's
do: a unit is (session, unit id), and an event unit's id is its event id, which other sessions reuse.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import faiss
import numpy as np

from memlab.embedding.base import Embedder
from memlab.storage import unit_housekeeping as housekeeping
from memlab.types import Hit, Hits


@dataclass
class _UserIndex:
    index: faiss.IndexFlatIP
    unit_ids: list[str]
    bodies: list[str]
    event_ids: list[tuple[str, ...]]
    session_ids: list[str | None]


class FaissExact:
    """Exact cosine k-NN per user. Build it with `from_memory(mem)` (reads the stored vectors back) or
    `from_vectors(...)`."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder
        self._users: dict[tuple[str, str], _UserIndex] = {}

    @classmethod
    def from_memory(cls, memory, *, app_name: str | None = None, user_id: str | None = None) -> FaissExact:
        """Index every unit of `memory`'s layer and model (or one app/user) exactly as stored in PostgreSQL."""
        with memory.store.connection() as conn:
            rows = housekeeping.scoped_vectors(conn, memory.model, memory.layer, app_name, user_id)
        grouped: dict[tuple[str, str], list] = defaultdict(list)
        for app, user, unit_id, body, event_ids, vector, session_id in rows:
            grouped[(app, user)].append((unit_id, body, tuple(event_ids), vector, session_id))
        exact = cls(memory.embedder)
        for (app, user), items in grouped.items():
            exact.add_user(
                app,
                user,
                unit_ids=[i[0] for i in items],
                vectors=np.vstack([np.asarray(i[3], dtype=np.float32) for i in items]),
                bodies=[i[1] for i in items],
                event_ids=[i[2] for i in items],
                session_ids=[i[4] for i in items],
            )
        return exact

    def add_user(
        self,
        app_name: str,
        user_id: str,
        *,
        unit_ids: list[str],
        vectors: np.ndarray,
        bodies: list[str] | None = None,
        event_ids: list[tuple[str, ...]] | None = None,
        session_ids: list[str | None] | None = None,
    ) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        self._users[(app_name, user_id)] = _UserIndex(
            index, list(unit_ids), bodies or [""] * len(unit_ids), event_ids or [()] * len(unit_ids),
            list(session_ids) if session_ids is not None else [None] * len(unit_ids),
        )

    def users(self) -> list[tuple[str, str]]:
        return sorted(self._users)

    def size(self, app_name: str, user_id: str) -> int:
        entry = self._users.get((app_name, user_id))
        return 0 if entry is None else entry.index.ntotal

    def search(self, app_name: str, user_id: str, query: str, top_k: int = 10) -> Hits:
        if self.embedder is None:
            raise ValueError("FaissExact has no embedder; use search_vector with an embedded query.")
        return self.search_vector(app_name, user_id, self.embedder.embed_query(query), top_k)

    def search_vector(self, app_name: str, user_id: str, vector: np.ndarray, top_k: int = 10) -> Hits:
        entry = self._users.get((app_name, user_id))
        if entry is None or entry.index.ntotal == 0:
            return Hits(plan="faiss_exact")
        k = min(top_k, entry.index.ntotal)
        scores, idx = entry.index.search(np.asarray(vector, dtype=np.float32).reshape(1, -1), k)
        return Hits(
            [
                Hit(
                    unit_id=entry.unit_ids[i],
                    text=entry.bodies[i],
                    distance=float(1.0 - s),
                    event_ids=entry.event_ids[i],
                    session_id=entry.session_ids[i],
                )
                for s, i in zip(scores[0], idx[0], strict=True)
                if i >= 0
            ],
            plan="faiss_exact",
        )
