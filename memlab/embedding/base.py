"""The seam between memlab and any embedding model: a small protocol, not a framework type."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns text into unit-length float32 vectors. `model_id` is stored with every row it embeds."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Shape (len(texts), dimension), float32, L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Shape (dimension,), float32, L2-normalised."""
        ...


def embed_queries(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Many queries at once, shape (len(texts), dimension): one batched call where the embedder offers
    `embed_queries` (one by one costs about ten times more per text on a busy CPU), else `embed_query` each."""
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    batched = getattr(embedder, "embed_queries", None)
    if callable(batched):
        return np.asarray(batched(list(texts)), dtype=np.float32).reshape(len(texts), -1)
    return np.vstack([np.asarray(embedder.embed_query(t), dtype=np.float32) for t in texts])
