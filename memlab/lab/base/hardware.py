"""What this machine can do at all, so search numbers can be read against it.

An exact k-NN scan reads every vector once per query: its speed is bounded by memory bandwidth, not by
arithmetic. `memory_bandwidth` measures that bound with a plain large copy; `faiss_scan` measures FAISS's
exact scan over the same vectors and says what share of the bound one query reaches. A pgvector exact scan
far below FAISS's rate is overhead (tuple decoding, casts, the executor), not physics.
"""

from __future__ import annotations

import itertools
import resource
import threading
import time
from collections.abc import Sequence

import faiss
import numpy as np
from threadpoolctl import threadpool_info


def _copy(dst: np.ndarray, src: np.ndarray, threads: int) -> None:
    """`np.copyto` split into `threads` equal parts, each on its own thread (numpy releases the GIL)."""
    if threads == 1:
        np.copyto(dst, src)
        return
    bounds = np.linspace(0, len(src), threads + 1).astype(int)
    parts = itertools.pairwise(bounds)
    workers = [threading.Thread(target=np.copyto, args=(dst[a:b], src[a:b])) for a, b in parts]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def memory_bandwidth(*, megabytes: int = 512, repeat: int = 5, threads: int = 1) -> dict:
    """Bytes per second `threads` threads move through memory: `np.copyto` of a `megabytes` float32 array
    into another (split in equal parts with several threads), best of `repeat` (the machine is noisy; the best
    run is the least disturbed one). Bytes counted are those read plus those written (2 x the array), the
    traffic a streaming scan would see.

    Keys: bytes_per_s, gb_per_s, seconds_best, seconds_median, megabytes, repeat, threads, bytes_per_copy,
    method. Pick `megabytes` well above the last-level cache or this measures the cache instead."""
    if megabytes <= 0 or repeat <= 0 or threads <= 0:
        raise ValueError("megabytes, repeat and threads must be positive")
    n = megabytes * 2**20 // 4
    src = np.ones(n, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # first touch: page faults are not bandwidth
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        _copy(dst, src, threads)
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
        "threads": threads,
        "bytes_per_copy": moved,
        "method": f"np.copyto of a float32 array, {threads} thread(s), best of repeat; bytes read + bytes written",
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
    batches: Sequence[int] = (),
    threads: Sequence[int] = (),
) -> dict:
    """FAISS `IndexFlatIP` exact search over `vectors`: one query at a time (the first `single_queries` of
    `queries`, each its own `search` call, as a memory service sees them) and all `queries` in one batch
    through BLAS sgemm (what FAISS amortises: one pass over the vectors serves every query). Best of `repeat`
    each.

    `bandwidth` is `memory_bandwidth()`'s dict or bytes/s; measured here when not given.
    `bandwidth_fraction` = vector bytes read per second by the one-at-a-time scan / that bandwidth: near 1
    means the scan streams memory as fast as a copy does; above 1 means the vectors sat in cache. The batch's
    bytes/s (and its fraction) are effective: vector bytes per query x queries per second, though one pass
    over the vectors serves many queries, so they can exceed the bandwidth.

    Keys: vectors, dimension, vector_bytes, k, queries_single, queries_batch, single_seconds_per_query,
    single_vectors_per_s, single_bytes_per_s, batch_seconds, batch_vectors_per_s, batch_bytes_per_s,
    batch_queries_per_s, bandwidth_bytes_per_s, bandwidth_fraction, batch_bandwidth_fraction, faiss_threads,
    ids (the batch's (queries x k) row numbers into `vectors`), scores (their inner products), compile_options
    (FAISS's SIMD level), blas_threshold, blas (the BLAS libraries loaded: name, kernel architecture, threads).
    With `batches` and `threads`: `sweep`, one dict per (threads, batch) from `scan_sweep`."""
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
    # The batch goes to sgemm (one pass over the vectors for all its queries): below FAISS's threshold its own
    # choice is the SIMD scan, one pass per query, which the sweep's `simd` rows measure; at 1M rows a batch of 100
    # that way takes tens of seconds a call, minutes of the full bench for no new figure.
    threshold = int(faiss.cvar.distance_compute_blas_threshold)
    faiss.cvar.distance_compute_blas_threshold = min(threshold, len(batch))
    try:
        batch_s = _best_of(repeat, lambda: index.search(batch, k))
        scores, ids = index.search(batch, k)
    finally:
        faiss.cvar.distance_compute_blas_threshold = threshold
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
        **kernel_info(),
        "sweep": scan_sweep(index, batch, k=k, repeat=repeat, bandwidth=bandwidth, batches=batches,
                            threads=threads) if batches and threads else [],
    }  # fmt: skip


def kernel_info() -> dict:
    """What computes FAISS's inner products here: its compile options (AVX2/AVX512), the batch size from which
    IndexFlatIP hands a batch to BLAS sgemm (below it, its own SIMD scan), and the BLAS libraries loaded with
    the kernel architecture OpenBLAS picked (OPENBLAS_CORETYPE can force a slower one)."""
    blas = [f"{i.get('prefix')} {i.get('version')} {i.get('architecture', '?')} x{i.get('num_threads')}"
            for i in threadpool_info() if i.get("user_api") == "blas"]  # fmt: skip
    return {
        "compile_options": faiss.get_compile_options().strip(),
        "blas_threshold": int(faiss.cvar.distance_compute_blas_threshold),
        "blas": "; ".join(blas),
    }


def scan_sweep(
    index: faiss.Index, queries: np.ndarray, *, k: int, repeat: int, bandwidth: float, batches: Sequence[int],
    threads: Sequence[int], simd_max_batch: int = 16,
) -> list[dict]:  # fmt: skip
    """FAISS's scan rate per (OpenMP threads, queries per `search` call, kernel), best of `repeat`; a batch of 1
    runs min(8, queries) single searches. Each batch runs with FAISS's own kernel choice (`simd` below its BLAS
    threshold: one pass over the vectors per question, so its time grows with the batch; measured up to
    `simd_max_batch`: 256 questions over 1M vectors would take minutes per call) and, when that is not sgemm,
    again with the threshold lowered to the batch (`sgemm-forced`: one pass serves the whole batch).
    `bandwidth_fraction`: bytes of one pass over the vectors per second of a call / `bandwidth` (the traffic
    really caused, per pass);
    `effective_fraction`: vector bytes per query x queries per second / `bandwidth` (the rate a batch serves,
    above 1 when one pass serves many). FAISS's thread count and threshold are restored."""
    nbytes = index.ntotal * index.d * 4
    threshold = int(faiss.cvar.distance_compute_blas_threshold)
    before = faiss.omp_get_max_threads()
    out = []
    try:
        for t in threads:
            faiss.omp_set_num_threads(int(t))
            for b in batches:
                calls = [queries[i : i + 1] for i in range(min(8, len(queries)))] if b == 1 else [
                    np.resize(queries, (b, queries.shape[1]))]  # fmt: skip
                own = "sgemm" if b >= threshold else "simd"
                kernels = [(own, threshold)] if own == "sgemm" or b <= simd_max_batch else []
                if 1 < b < threshold:
                    kernels.append(("sgemm-forced", b))
                for kernel, limit in kernels:
                    faiss.cvar.distance_compute_blas_threshold = limit
                    index.search(calls[0], k)  # warm-up
                    seconds = _best_of(repeat, lambda calls=calls: [index.search(c, k) for c in calls]) / len(calls)
                    out.append({"threads": int(t), "batch": int(b), "kernel": kernel, "seconds_per_call": seconds,
                                "queries_per_s": b / seconds, "single_vectors_per_s": index.ntotal / seconds * b,
                                "bandwidth_fraction": nbytes / seconds / bandwidth,
                                "effective_fraction": nbytes * b / seconds / bandwidth})  # fmt: skip
    finally:
        faiss.omp_set_num_threads(before)
        faiss.cvar.distance_compute_blas_threshold = threshold
    return out


def peak_memory_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux reports ru_maxrss in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
