"""The packaged model and the embedding cache, for real."""

from __future__ import annotations

import numpy as np

import memlab
from memlab.embedding import (
    CachedEmbedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
    embed_queries,
    packaged_minilm_path,
)


def test_default_model_is_minilm_384_normalised(embedder):
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2" and embedder.dimension == 384
    vectors = embedder.embed_documents(["We deploy with Argo CD.", "I am vegetarian."])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    near = float(embedder.embed_query("How do we deploy?") @ vectors[0])
    far = float(embedder.embed_query("How do we deploy?") @ vectors[1])
    assert near > far


def test_cache_embeds_each_text_once_and_persists(tmp_path, embedder):
    raw = embedder.inner  # the uncached model behind the session's cached embedder
    first = CachedEmbedder(raw, EmbeddingCache(tmp_path / "c.sqlite"))
    texts = ["alpha beta gamma", "delta epsilon", "alpha beta gamma"]
    a = first.embed_documents(texts)
    assert first.computed == 2, "a text repeated within one call is embedded once"
    first.embed_documents(texts)
    assert first.computed == 2
    second = CachedEmbedder(raw, EmbeddingCache(tmp_path / "c.sqlite"))  # a new process would do the same
    b = second.embed_documents(texts)
    assert second.computed == 0
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, raw.embed_documents(texts), atol=1e-6)


def test_cache_keys_include_the_model_id(tmp_path, embedder):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    full = CachedEmbedder(embedder.inner, cache)
    short = CachedEmbedder(SentenceTransformerEmbedder(packaged_minilm_path(), truncate_dim=64), cache)
    assert full.embed_query("same text").shape == (384,)
    assert short.embed_query("same text").shape == (64,)
    assert short.computed == 1


def test_a_folder_that_is_not_a_model_is_refused(tmp_path):
    import pytest

    with pytest.raises(memlab.ConfigError, match="not a sentence-transformers model folder"):
        SentenceTransformerEmbedder(tmp_path)


def test_embed_queries_batches_and_matches_one_by_one(tmp_path, embedder):
    questions = ["How do we deploy?", "What do I eat?", "How do we deploy?"]
    one_by_one = np.vstack([embedder.inner.embed_query(q) for q in questions])
    np.testing.assert_allclose(embed_queries(embedder.inner, questions), one_by_one, atol=1e-5)
    cached = CachedEmbedder(embedder.inner, EmbeddingCache(tmp_path / "q.sqlite"))
    np.testing.assert_allclose(embed_queries(cached, questions), one_by_one, atol=1e-5)
    assert cached.computed == 2, "one batched call, each distinct question once"
    assert embed_queries(embedder.inner, []).shape == (0, 384)


def test_warm_transient_embeds_the_questions_in_one_call_and_stores_none(tmp_path, embedder):
    from memlab.embedding.cache import embed_query_transient, warm_transient

    cached = CachedEmbedder(embedder.inner, EmbeddingCache(tmp_path / "w.sqlite"))
    questions = ["user home city", "user diet", "user home city"]
    warm_transient(cached, questions)
    assert cached.computed == 2, "one call, each distinct question once"
    for q in questions:
        np.testing.assert_allclose(embed_query_transient(cached, q), embedder.inner.embed_query(q), atol=1e-5)
    assert cached.computed == 2, "every search found its vector"
    cached.forget_transient()
    embed_query_transient(cached, "user diet")
    assert cached.computed == 3, "erasure's forget_transient drops the warmed vectors too"
    later = CachedEmbedder(embedder.inner, EmbeddingCache(tmp_path / "w.sqlite"))
    later.embed_documents(questions)
    assert later.computed == 2, "nothing was written to the cache: a user's questions are their data"
