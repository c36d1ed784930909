"""The concurrency case at tiny size on the real embedded PostgreSQL, the real model and FAISS: a row per path and
level, exact scans stay exact under concurrent clients, process clients really are other processes, a pool of one
connection makes two clients wait, and the bench.json keys and bench.md section are there. No timing asserted."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from memlab.lab.bench import (
    concurrency_bench,
    concurrency_section,
    corpus,
    search_bench,
    summarize_concurrency,
)
from memlab.lab.bench.concurrency import saturation
from memlab.lab.bench.corpora import embedded, real_questions, real_texts

ROWS = 2_000


@pytest.fixture(scope="module")
def frame(embedder, store):
    """search_bench loads the table (one strategy: only the load matters here), then the concurrency case runs on
    it at levels 1 and 2 with a pool of one connection, and two process clients."""
    import memlab

    texts = [t for t in real_texts(6000) if len(t) <= 140][:300]  # test_bench_search embeds these too
    real = embedded(embedder, texts, name="test-bench-real")
    vectors = corpus("real", ROWS, real)
    questions = real_questions(3)
    queries = embedded(embedder, questions, name="test-search-questions", query=True)
    with memlab.scratch_store(store, prefix="bench_concurrency") as db:
        search_bench(db, embedder, vectors, queries, total_rows=ROWS, corpus_name="real", background_tenants=20,
                     strategies=("exact",))  # fmt: skip
        out = concurrency_bench(db, embedder, vectors, queries, questions, total_rows=ROWS, background_tenants=20,
                                levels=(1, 2), queries_per_client=4, process_clients=2, pool_size=1)  # fmt: skip
    return out


def test_a_row_per_path_and_level_and_the_pool_per_client(frame):
    cells = set(zip(frame.path, frame.clients, frame.pool_size, strict=True))
    want = {(p, c, 1) for p in ("api", "text", "adk") for c in (1, 2)} | {(p, 2, 2) for p in ("api", "text", "adk")}
    assert cells == want | {("processes", 2, 1)}
    assert (frame.searches == frame.clients * 4).all()
    assert (frame.qps > 0).all() and (frame.latency_ms_p50 <= frame.latency_ms_p99).all()


def test_exact_scans_are_exact_under_concurrent_clients(frame):
    assert (frame.plan == "exact").all(), "every tenant of a 2,000-row table is scanned exactly by auto"
    assert (frame.exact_searches == frame.searches).all()
    assert (frame.recall == 1.0).all() and (frame.exact_recall == 1.0).all(), frame[["path", "clients", "recall"]]


def test_process_clients_are_other_processes(frame):
    procs = frame[frame.path == "processes"].iloc[0]
    assert procs.client_pids == 2 and not procs.bench_pid_searched
    threads = frame[frame.path == "api"]
    assert (threads.client_pids == 1).all() and threads.bench_pid_searched.all()


def test_a_pool_of_one_makes_two_clients_wait(frame):
    two = frame[(frame.clients == 2) & (frame.pool_size == 1)]
    assert (two.pool_requests >= 8).all()
    # On a busy machine one thread may finish before the other runs at all: any of the three paths queues.
    assert two.pool_requests_queued.sum() > 0, "psycopg_pool counts the requests that queued for the one connection"
    one = two[two.path == "api"].iloc[0]
    assert one.wait_samples > 0 and 0 <= one.lock_wait_share <= 1
    assert frame.server_cpu_s.notna().all(), "the local server's CPU is read"
    if Path("/proc/self/schedstat").is_file():
        # The scheduler's nanosecond clock: every window of the thread paths (whose backends outlive the window)
        # sees the server work. User + system time ticks in 10 ms and reads 0 for windows this short.
        threads = frame[frame.path != "processes"]
        assert (threads.server_cpu_s > 0).all(), threads[["path", "clients", "window_s", "server_cpu_s"]]
    assert frame.client_cpu_s.sum() > 0


def test_keys_and_section(frame):
    table, keys = summarize_concurrency(frame)
    for key in ("concurrency.1.qps", "concurrency.2.qps", "concurrency.2.qps_vs_one", "concurrency.2.p95_ms",
                "concurrency.2.recall", "concurrency.adk.2.qps", "concurrency.text.2.qps_vs_one",
                "concurrency.api.2.pool_2.qps", "concurrency.processes.2.qps", "concurrency.api.saturated",
                "concurrency.api.2.pool_per_client_vs_small"):  # fmt: skip
        assert key in keys, key
    assert keys["concurrency.1.qps_vs_one"] == 1.0 and keys["concurrency.2.recall"] == 1.0
    assert (table[table.path != "processes"].saturation_reason != "").all(), "every thread path says how QPS grew"
    lines = concurrency_section(table, keys)
    assert lines[0] == "## Concurrency" and any(line.startswith("| path |") for line in lines)


def test_saturation_is_the_first_level_gaining_under_ten_percent_and_names_the_measured_reason():
    base = {"path": "api", "cores": 2, "client_cores": 0.9, "server_cores": 1.0, "other_cores": 0.05,
            "pool_wait_share": 0.0, "lock_wait_share": 0.0, "io_wait_share": 0.0, "executor_workers": 6}  # fmt: skip
    runs = pd.DataFrame([{**base, "clients": c, "qps": q, "machine_busy": b}
                         for c, q, b in ((1, 100, 0.5), (2, 180, 0.9), (4, 190, 0.97), (8, 150, 0.99))])  # fmt: skip
    assert saturation(runs)[:2] == (4, "cpu")
    runs["client_cores"], runs["server_cores"], runs["other_cores"] = 0.2, 0.2, 1.5
    assert saturation(runs)[:2] == (4, "cpu-other-processes")
    runs["machine_busy"], runs["pool_wait_share"] = 0.5, 0.6
    assert saturation(runs)[:2] == (4, "pool")
    runs["qps"] = [100, 150, 200, 300]
    assert saturation(runs)[:2] == (None, "growing")
