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
