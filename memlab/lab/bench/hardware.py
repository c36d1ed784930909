"""What this machine can do at all, so search numbers can be read against it.

An exact k-NN scan reads every vector once per query: its speed is bounded by memory bandwidth, not by
arithmetic. `memory_bandwidth` measures that bound with a plain large copy; `faiss_scan` measures FAISS's
exact scan over the same vectors and says what share of the bound one query reaches. A pgvector exact scan
far below FAISS's rate is overhead (tuple decoding, casts, the executor), not physics.
"""

from __future__ import annotations

import resource
import time

import faiss
import numpy as np


def memory_bandwidth(*, megabytes: int = 512, repeat: int = 5) -> dict:
    """Bytes per second a single thread moves through memory: `np.copyto` of a `megabytes` float32 array
    into another, best of `repeat` (the machine is noisy; the best run is the least disturbed one). Bytes
    counted are those read plus those written (2 x the array), the traffic a streaming scan would see.

    Keys: bytes_per_s, gb_per_s, seconds_best, seconds_median, megabytes, repeat, bytes_per_copy, method.
    Pick `megabytes` well above the last-level cache or this measures the cache instead."""
    if megabytes <= 0 or repeat <= 0:
        raise ValueError("megabytes and repeat must be positive")
    n = megabytes * 2**20 // 4
    src = np.ones(n, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # first touch: page faults are not bandwidth
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        np.copyto(dst, src)
        seconds.append(time.perf_counter() - started)
    moved = 2 * src.nbytes
    best = min(seconds)
    return {
        "bytes_per_s": moved / best,
        "gb_per_s": moved / best / 1e9,
        "seconds_best": best,
        "seconds_median": float(np.median(seconds)),
        "megabytes": megabytes,
        "repeat": repeat,
        "bytes_per_copy": moved,
        "method": "np.copyto of a float32 array, single thread, best of repeat; bytes read + bytes written",
    }


def _best_of(repeat: int, run) -> float:
    """Seconds of the fastest of `repeat` runs of `run()`."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def faiss_scan(
    vectors: np.ndarray,
    queries: np.ndarray,
    *,
    k: int = 10,
    repeat: int = 3,
    bandwidth: float | dict | None = None,
    single_queries: int = 32,
) -> dict:
    """FAISS `IndexFlatIP` exact search over `vectors`: one query at a time (the first `single_queries` of
    `queries`, each its own `search` call, as a memory service sees them) and all `queries` in one batch
    (what FAISS amortises: several queries per pass over the vectors). Best of `repeat` each.

    `bandwidth` is `memory_bandwidth()`'s dict or bytes/s; measured here when not given.
    `bandwidth_fraction` = vector bytes read per second by the one-at-a-time scan / that bandwidth: near 1
    means the scan streams memory as fast as a copy does; above 1 means the vectors sat in cache. The batch's
    bytes/s (and its fraction) are effective: vector bytes per query x queries per second, though one pass
    over the vectors serves many queries, so they can exceed the bandwidth.

    Keys: vectors, dimension, vector_bytes, k, queries_single, queries_batch, single_seconds_per_query,
    single_vectors_per_s, single_bytes_per_s, batch_seconds, batch_vectors_per_s, batch_bytes_per_s,
    batch_queries_per_s, bandwidth_bytes_per_s, bandwidth_fraction, batch_bandwidth_fraction, faiss_threads,
    ids (the batch's (queries x k) row numbers into `vectors`), scores (their inner products)."""
    base = np.ascontiguousarray(vectors, dtype=np.float32)
    batch = np.ascontiguousarray(queries, dtype=np.float32)
    if base.ndim != 2 or batch.ndim != 2 or base.shape[1] != batch.shape[1]:
        raise ValueError(f"vectors {base.shape} and queries {batch.shape} must be 2-d with the same dimension")
    if len(base) == 0 or len(batch) == 0:
        raise ValueError("need at least one vector and one query")
    if isinstance(bandwidth, dict):
        bandwidth = float(bandwidth["bytes_per_s"])
    elif bandwidth is None:
        bandwidth = float(memory_bandwidth()["bytes_per_s"])
    n, dim = base.shape
    k = min(k, n)
    index = faiss.IndexFlatIP(dim)
    index.add(base)
    singles = batch[: max(1, single_queries)]
    index.search(singles[:1], k)  # warm-up: first-call overheads are not scan speed

    def one_at_a_time() -> None:
        for q in singles:
            index.search(q[None, :], k)

    single_s = _best_of(repeat, one_at_a_time) / len(singles)
    batch_s = _best_of(repeat, lambda: index.search(batch, k))
    scores, ids = index.search(batch, k)
    row_bytes = dim * 4
    single_rate = n / single_s
    batch_rate = n * len(batch) / batch_s
    return {
        "vectors": n,
        "dimension": dim,
        "vector_bytes": int(base.nbytes),
        "k": k,
        "queries_single": len(singles),
        "queries_batch": len(batch),
        "single_seconds_per_query": single_s,
        "single_vectors_per_s": single_rate,
        "single_bytes_per_s": single_rate * row_bytes,
        "batch_seconds": batch_s,
        "batch_vectors_per_s": batch_rate,
        "batch_bytes_per_s": batch_rate * row_bytes,
        "batch_queries_per_s": len(batch) / batch_s,
        "bandwidth_bytes_per_s": bandwidth,
        "bandwidth_fraction": single_rate * row_bytes / bandwidth,
        "batch_bandwidth_fraction": batch_rate * row_bytes / bandwidth,
        "faiss_threads": faiss.omp_get_max_threads(),
        "ids": ids,
        "scores": scores,
    }


def peak_memory_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux reports ru_maxrss in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
