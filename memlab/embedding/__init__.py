"""Embedding models behind one protocol, plus the cache every model goes through."""

from __future__ import annotations

from pathlib import Path

from memlab.config import memlab_home
from memlab.embedding.base import Embedder
from memlab.embedding.cache import CachedEmbedder, EmbeddingCache
from memlab.embedding.sentence_transformer import (
    DEFAULT_MODEL_ID,
    SentenceTransformerEmbedder,
    packaged_minilm_path,
)

_DEFAULT: dict[Path, CachedEmbedder] = {}


def default_embedder(*, home: str | Path | None = None, cache: bool = True) -> Embedder:
    """all-MiniLM-L6-v2 (384-d) from the packaged model, cached under `$MEMLAB_HOME/cache/` (shared per home)."""
    base = SentenceTransformerEmbedder(packaged_minilm_path(), model_id=DEFAULT_MODEL_ID)
    if not cache:
        return base
    cache_path = memlab_home(home) / "cache" / "embeddings.sqlite"
    if cache_path not in _DEFAULT:
        _DEFAULT[cache_path] = CachedEmbedder(base, EmbeddingCache(cache_path))
    return _DEFAULT[cache_path]


__all__ = [
    "DEFAULT_MODEL_ID",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "packaged_minilm_path",
]
