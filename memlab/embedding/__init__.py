"""Embedding models behind one protocol, plus the cache every model goes through.
Modules here are internal; use the names below."""

from __future__ import annotations

from memlab.embedding.base import Embedder, embed_queries
from memlab.embedding.cache import CachedEmbedder, EmbeddingCache, shared_cache
from memlab.embedding.factory import default_embedder, make_embedder
from memlab.embedding.models import prepare_mpnet
from memlab.embedding.openai_compat import OpenAICompatibleEmbedder
from memlab.embedding.sentence_transformer import (
    DEFAULT_MODEL_ID,
    SentenceTransformerEmbedder,
    packaged_minilm_path,
)

__all__ = [
    "DEFAULT_MODEL_ID",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "OpenAICompatibleEmbedder",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "embed_queries",
    "make_embedder",
    "packaged_minilm_path",
    "prepare_mpnet",
    "shared_cache",
]
