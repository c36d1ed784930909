"""The hardware probes measure what they say they measure: real numbers from the vectors given, not rates of
an empty loop. Timings are only checked to be positive and finite (the machine is noisy)."""

from __future__ import annotations

import math

import numpy as np

from memlab.lab.base.hardware import faiss_scan, memory_bandwidth


def _unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_memory_bandwidth_counts_read_and_written_bytes():
    out = memory_bandwidth(megabytes=32, repeat=2)
    assert out["bytes_per_copy"] == 2 * 32 * 2**20
    assert math.isfinite(out["bytes_per_s"]) and out["bytes_per_s"] > 0
    assert out["seconds_best"] <= out["seconds_median"]
    assert out["bytes_per_s"] == out["bytes_per_copy"] / out["seconds_best"]


def test_faiss_scan_searches_the_vectors_given():
    vectors = _unit_rows(20_000, 64, seed=1)
    targets = np.array([5, 17_000, 123, 19_999, 8_000])
    # Each query is a slightly moved copy of a known row: that row must come back first.
    queries = vectors[targets] + 0.01 * _unit_rows(len(targets), 64, seed=2)
    out = faiss_scan(vectors, queries, k=3, repeat=1, bandwidth={"bytes_per_s": 1e10}, single_queries=2)
    assert out["vectors"] == 20_000 and out["dimension"] == 64 and out["vector_bytes"] == 20_000 * 64 * 4
    assert out["queries_single"] == 2 and out["queries_batch"] == len(targets)
    assert out["ids"].shape == (len(targets), 3)
    assert list(out["ids"][:, 0]) == list(targets)
    assert np.allclose(out["scores"][:, 0], np.sum(vectors[targets] * queries, axis=1), atol=1e-4)
    assert out["bandwidth_bytes_per_s"] == 1e10
    for key in ("single_vectors_per_s", "batch_vectors_per_s", "bandwidth_fraction", "batch_bandwidth_fraction"):
        assert math.isfinite(out[key]) and out[key] > 0, key
    # bytes/s is the vector rate times 4 bytes per dimension, and the fraction is that over the bandwidth.
    assert math.isclose(out["single_bytes_per_s"], out["single_vectors_per_s"] * 64 * 4)
    assert math.isclose(out["bandwidth_fraction"], out["single_bytes_per_s"] / 1e10)
    assert out["faiss_threads"] >= 1


def test_faiss_scan_measures_bandwidth_when_not_given():
    vectors = _unit_rows(2_000, 32, seed=3)
    out = faiss_scan(vectors, vectors[:4], k=1, repeat=1)
    assert out["bandwidth_bytes_per_s"] > 0 and math.isfinite(out["bandwidth_fraction"])
    assert list(out["ids"][:, 0]) == [0, 1, 2, 3]


def test_memory_bandwidth_on_two_threads_copies_the_whole_array():
    out = memory_bandwidth(megabytes=16, repeat=1, threads=2)
    assert out["threads"] == 2 and out["bytes_per_copy"] == 2 * 16 * 2**20
    assert math.isfinite(out["bytes_per_s"]) and out["bytes_per_s"] > 0 and "2 thread" in out["method"]


def test_faiss_scan_sweeps_threads_and_batches_and_names_the_kernel():
    import faiss

    vectors = _unit_rows(5_000, 32, seed=4)
    before = faiss.omp_get_max_threads()
    out = faiss_scan(vectors, vectors[:3], k=2, repeat=1, bandwidth=1e10, batches=(1, 4), threads=(1, 2))
    threshold = faiss.cvar.distance_compute_blas_threshold
    sweep = {(s["threads"], s["batch"], s["kernel"]): s for s in out["sweep"]}
    own = "sgemm" if threshold <= 4 else "simd"
    assert set(sweep) == {(t, 1, "simd") for t in (1, 2)} | {(t, 4, own) for t in (1, 2)} | (
        {(t, 4, "sgemm-forced") for t in (1, 2)} if own == "simd" else set())  # fmt: skip
    assert faiss.omp_get_max_threads() == before, "the sweep restores FAISS's thread count"
    assert faiss.cvar.distance_compute_blas_threshold == threshold == out["blas_threshold"], "and its threshold"
    for (_, batch, _), s in sweep.items():
        assert s["queries_per_s"] > 0 and math.isclose(s["queries_per_s"], batch / s["seconds_per_call"])
        # a pass over 5,000 x 32 float32 per call; a batch serves `batch` questions with that one pass
        assert math.isclose(s["bandwidth_fraction"], 5_000 * 32 * 4 / s["seconds_per_call"] / 1e10)
        assert math.isclose(s["effective_fraction"], s["bandwidth_fraction"] * batch)
    assert out["compile_options"] and "openblas" in out["blas"].lower()
    assert faiss_scan(vectors, vectors[:2], k=1, repeat=1, bandwidth=1e10)["sweep"] == []
