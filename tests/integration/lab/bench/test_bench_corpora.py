"""Bench corpora from the checkout's real texts and the real packaged model: distinct deterministic texts, an
embedding cache that really skips the model, and synthetic rows whose neighbour distances look like real text's
where the near-duplicate corpus's do not."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memlab.lab.bench import corpora


class Counting:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.documents = 0
        self.queries = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries += 1
        return self.inner.embed_query(text)


def short_texts(n: int) -> list[str]:
    """Short real turns (quick to embed), still a sample across the sources (test_bench_search uses the same)."""
    return [t for t in corpora.real_texts(10 * n) if len(t) <= 140][:n]


@pytest.fixture(scope="module")
def real(embedder) -> np.ndarray:
    return corpora.embedded(embedder, short_texts(600), name="test-bench-real")


def test_real_texts_are_distinct_deterministic_and_from_every_big_source():
    texts = corpora.real_texts(3000)
    assert len(texts) == 3000 == len(set(texts))
    assert texts == corpora.real_texts(3000), "same seed, same order"
    assert texts[:100] == corpora.real_texts(100), "a limit is a prefix of the whole shuffled list"
    assert corpora.real_texts(100, seed=1) != texts[:100]
    assert all(t == t.strip() and len(t.split()) >= 3 for t in texts)
    by_source = {name: set(map(str.strip, turns)) for name, turns, _ in corpora._sources()}
    found = {name for name, turns in by_source.items() if turns & set(texts)}
    assert {"longmemeval_s_ku", "longmemeval_oracle", "synth"} <= found, found
    everything = corpora.real_texts()
    assert len(everything) == len(set(everything)) > 40_000
    questions = corpora.real_questions(50)
    assert len(questions) == len(set(questions)) == 50 and not set(questions) & set(everything)


def test_embedded_reuses_the_cache_and_notices_other_texts(embedder):
    counting = Counting(embedder)
    texts = short_texts(30)
    first = corpora.embedded(counting, texts, name="test cache/1")
    assert counting.documents == 30 and first.shape == (30, embedder.dimension) and first.dtype == np.float32
    again = corpora.embedded(counting, texts, name="test cache/1")
    assert counting.documents == 30, "the second call must read the .npy, not embed"
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    files = sorted(corpora.cache_dir().glob("test_cache_1-*.json"))
    assert len(files) == 1
    meta = json.loads(files[0].read_text())
    assert meta["model_id"] == embedder.model_id and meta["rows"] == 30
    corpora.embedded(counting, texts[:29], name="test cache/1")
    assert counting.documents == 59, "other texts are another cache entry"
    corpora.embedded(counting, texts[:3], name="test cache/q", query=True)
    corpora.embedded(counting, texts[:3], name="test cache/q", query=True)
    assert counting.queries == 3


def test_nn_distances_never_count_a_row_itself():
    eye = np.eye(6, dtype=np.float32)
    np.testing.assert_allclose(corpora.nn_distances(eye), 1.0, atol=1e-6)
    twins = np.vstack([eye, eye[:1]])
    d = corpora.nn_distances(twins, sample=7)
    assert np.isclose(d, 0.0, atol=1e-6).sum() == 2 and np.isclose(d, 1.0, atol=1e-6).sum() == 5


def test_matched_vectors_grow_real_text_into_real_looking_text_and_near_duplicates_do_not(real):
    half = real[: len(real) // 2]
    matched = corpora.matched_vectors(half, len(real) - len(half), seed=0)
    assert matched.shape == (len(real) - len(half), real.shape[1]) and matched.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matched, axis=1), 1.0, atol=1e-5)
    assert (1.0 - (matched @ half.T).max(axis=1)).min() > 0.02, "no synthetic row is a copy of a real one"
    np.testing.assert_array_equal(matched, corpora.matched_vectors(half, len(real) - len(half), seed=0))
    grown = np.concatenate([half, matched])
    near = corpora.corpus("near_duplicate", len(real), half)
    table = corpora.distribution_table({"real": real, "grown": grown, "near_duplicate": near}).set_index("corpus")
    assert (table.rows == len(real)).all(), "compared at equal size"
    assert abs(table.p50["grown"] - table.p50["real"]) < 0.05, table
    assert table.p50["near_duplicate"] < table.p50["real"] / 3, table
    assert table.ks["grown"] < table.ks["near_duplicate"] and table.ks["real"] == 0.0
    assert list(table.columns[1:6]) == ["p5", "p25", "p50", "p75", "p95"]


def test_real_text_gets_denser_and_the_extrapolation_follows(real):
    curve = corpora.real_nn_curve(real, points=3)
    assert list(curve.rows) == [len(real), len(real) // 2, len(real) // 4]
    assert curve.p50.iloc[0] < curve.p50.iloc[2], "more rows, nearer neighbours"
    assert corpora.expected_median(real, 4 * len(real)) < curve.p50.iloc[0]


def test_corpus_kinds(real):
    np.testing.assert_array_equal(corpora.corpus("real", 100, real), real[:100])
    grown = corpora.corpus("real", len(real) + 300, real)
    np.testing.assert_array_equal(grown[: len(real)], real)
    np.testing.assert_allclose(np.linalg.norm(grown, axis=1), 1.0, atol=1e-5)
    near = corpora.corpus("near_duplicate", 3000, real)
    assert near.shape == (3000, real.shape[1])
    assert np.median(corpora.nn_distances(near)) < 0.1
    with pytest.raises(ValueError, match="unknown"):
        corpora.corpus("random", 10, real)
