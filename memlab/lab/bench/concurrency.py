"""Search under concurrent clients: QPS, p50/p95/p99 and recall@10 (vs FAISS exact) from 1 to 16 clients, on the
multi-tenant table `search.search_bench` left loaded, and where QPS stops growing and why, measured.

Clients search the tenants under test (the per-bucket users and the fixed small user) with `auto`, through:
- `api`: `EventMemory.search_vector` from threads (the query already embedded),
- `text`: `EventMemory.search` with the question's text from threads (pays the model's query embedding too),
- `adk`: `memlab.adk.EventMemoryService.search_memory` from asyncio tasks on one event loop (the service hands
  each search to `asyncio.to_thread`, so the loop's default executor bounds how many run at once),
- `processes`: `EventMemory.search_vector`, one process per client at the process level, each with its own store
  (`open_store(dsn=<the bench store's dsn>)`, one pooled connection) on the same server.

The thread paths run every level on one small pool (`pool_size`, the store's own by default) and the top level
again with one pool slot per client. Each client makes one unrecorded warm-up search, then all start together.
Around each run the bench measures what could stop QPS from growing: the client's CPU seconds
(`time.process_time`; the children's own for processes), the PostgreSQL server's (the postmaster's children, by
`/proc/<pid>/schedstat` where readable), how busy the machine's cores were (and so what other processes took),
the pool's waits (psycopg_pool `get_stats`) and the server's wait events (pg_stat_activity sampled from a
connection of its own). The saturation level of a path is the first whose QPS gains less than 10% over the
previous level's; its reason is read from those measurements (`saturation`).

Process clients start from a forkserver that has imported this module once: a spawned interpreter pays
`import memlab.lab` (seconds of CPU) per client, which would dwarf the searches measured.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import queue
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import psutil
import psycopg

from memlab.embedding.base import Embedder
from memlab.events.memory import EventMemory
from memlab.lab.base.tables import markdown_table
from memlab.lab.bench.search import (
    APP,
    BUCKETS,
    FIXED_ROWS,
    FIXED_USER,
    LAYER_PREFIX,
    K,
    Tenant,
    exact_truth,
    layout,
    recall_with_ties,
)
from memlab.storage.store import Store, open_store
from memlab.types import SearchSettings

PATHS: tuple[str, ...] = ("api", "text", "adk", "processes")
THREAD_PATHS: tuple[str, ...] = ("api", "text", "adk")
HEADLINE_PATH = "api"
GAIN = 0.10  # a level whose QPS gains less than this over the previous one is where QPS stopped growing
CPU_BOUND = 0.85  # share of the machine's cores busy from which the CPU is the reason
WAIT_BOUND = 0.20  # share of client time spent waiting for a pooled connection / of server time in lock waits
_NAMED = ("running", "Lock", "LWLock", "IO")
_ACTIVE_SQL = """SELECT wait_event_type FROM pg_stat_activity WHERE datname = current_database()
    AND state = 'active' AND backend_type = 'client backend' AND pid <> pg_backend_pid()"""


@dataclass(frozen=True)
class ConcurrencySize:
    """How big the concurrency case runs: `levels` (concurrent clients), searches per client per run, the process
    level (None: the top level), the small pool every level runs at (None: the store's `pool_size`) and how often
    pg_stat_activity is sampled. `kwargs()` is what `concurrency_bench` takes."""

    levels: tuple[int, ...]
    queries_per_client: int
    process_clients: int | None = None
    pool_size: int | None = None
    sample_ms: float = 20.0

    def kwargs(self) -> dict[str, Any]:
        return asdict(self)


CONCURRENCY_SIZES = {
    "ci": ConcurrencySize(levels=(1, 2, 4, 8), queries_per_client=8),
    "full": ConcurrencySize(levels=(1, 2, 4, 8, 16), queries_per_client=60),
}


class _VectorsOnly:
    """The Embedder a process client hands EventMemory: it searches stored vectors with query vectors it was given,
    so it needs the model's id and dimension, never the model (loading it would cost each process seconds)."""

    def __init__(self, model_id: str, dimension: int) -> None:
        self.model_id, self.dimension = model_id, dimension

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("a process client of the concurrency bench searches by vector only")

    def embed_query(self, text: str) -> np.ndarray:
        raise RuntimeError("a process client of the concurrency bench searches by vector only")


def auto_settings(k: int = K) -> SearchSettings:
    """What every client asks for: `auto`, k hits, no distance cut-off (recall is against FAISS's k nearest)."""
    return SearchSettings(top_k=k, strategy="auto")


# -- what a run measures besides latency ---------------------------------------------------------------------
def postmaster(dsn: str) -> psutil.Process | None:
    """The server's postmaster if it runs on this machine (the parent of this connection's backend), else None."""
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:  # the backend exits with the connection: look it up here
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            parent = psutil.Process(pid).parent()
        return parent if parent is not None and "postgres" in parent.name() else None
    except (psycopg.Error, psutil.Error):
        return None


def _cpu_seconds(proc: psutil.Process) -> float:
    """A process's CPU seconds so far: the scheduler's nanosecond run time where Linux shows it (a search's
    backend works for a millisecond or two, below the 10 ms clock ticks of user + system time), else the ticks."""
    try:
        with open(f"/proc/{proc.pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        t = proc.cpu_times()
        return t.user + t.system


def _server_cpu(master: psutil.Process | None) -> dict[int, float]:
    """CPU seconds so far of each of the postmaster's children (backends, background workers)."""
    out: dict[int, float] = {}
    if master is None:
        return out
    try:
        children = master.children()
    except psutil.Error:
        return out
    for child in children:
        try:
            out[child.pid] = _cpu_seconds(child)
        except psutil.Error:
            continue
    return out


class _Sampler(threading.Thread):
    """Samples the wait events of the database's active client backends every `every_ms` on its own connection;
    its own CPU time is kept apart (subtracted from the client's)."""

    def __init__(self, dsn: str, every_ms: float) -> None:
        super().__init__(daemon=True)
        self.dsn, self.every = dsn, every_ms / 1000
        self.stop, self.ready = threading.Event(), threading.Event()
        self.samples, self.active = 0, 0
        self.waits: Counter[str] = Counter()
        self.cpu_s = 0.0

    def run(self) -> None:
        started = time.thread_time()
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                self.ready.set()
                while not self.stop.is_set():
                    rows = conn.execute(_ACTIVE_SQL).fetchall()
                    self.samples += 1
                    self.active += len(rows)
                    self.waits.update(r[0] or "running" for r in rows)
                    self.stop.wait(self.every)
        except psycopg.Error:
            pass
        finally:
            self.ready.set()
            self.cpu_s = time.thread_time() - started


def _idle(times: Any) -> float:
    return times.idle + getattr(times, "iowait", 0.0)


class _Window:
    """CPU (this process, the server, the machine), pool statistics and wait events between `open` and `close`."""

    def __init__(self, dsn: str, master: psutil.Process | None, every_ms: float, store: Store | None) -> None:
        self.dsn, self.master, self.every, self.store = dsn, master, every_ms, store

    def open(self) -> None:
        self.sampler = _Sampler(self.dsn, self.every)
        self.sampler.start()
        self.sampler.ready.wait(10)
        if self.store is not None:
            self.store.pool.pop_stats()
        self.server0, self.machine0 = _server_cpu(self.master), psutil.cpu_times()
        self.cpu0, self.started = time.process_time(), time.monotonic()

    def close(self) -> dict[str, float]:
        ended, cpu = time.monotonic(), time.process_time()
        server, machine = _server_cpu(self.master), psutil.cpu_times()
        self.sampler.stop.set()
        self.sampler.join(10)
        pool = self.store.pool.get_stats() if self.store is not None else {}
        total = sum(machine) - sum(self.machine0)
        idle = _idle(machine) - _idle(self.machine0)
        s = self.sampler
        active = max(s.active, 1)
        out = {
            "window_s": ended - self.started,
            "client_cpu_s": cpu - self.cpu0 - s.cpu_s,
            "server_cpu_s": sum(v - self.server0.get(pid, 0.0) for pid, v in server.items()) if self.master else np.nan,
            "machine_busy": 1 - idle / total if total > 0 else np.nan,
            "pool_requests": pool.get("requests_num", 0), "pool_requests_queued": pool.get("requests_queued", 0),
            "pool_wait_ms": pool.get("requests_wait_ms", 0),
            "wait_samples": s.samples, "active_backends": s.active / s.samples if s.samples else np.nan,
            "running_share": s.waits["running"] / active,
            "lock_wait_share": (s.waits["Lock"] + s.waits["LWLock"]) / active,
            "io_wait_share": s.waits["IO"] / active,
            "other_wait_share": sum(v for w, v in s.waits.items() if w not in _NAMED) / active,
        }  # fmt: skip
        return out


# -- the clients ---------------------------------------------------------------------------------------------
Record = tuple[str, int, float, list[str], str | None, int]  # tenant, question, latency ms, unit ids, plan, pid


def _plan(tested: Sequence[Tenant], clients: int, per_client: int, questions: int) -> list[list[tuple[str, int]]]:
    """(tenant, question) per search of each client: clients start at different tenants and questions, and every
    client cycles through every tenant under test."""
    return [[(tested[(c + j) % len(tested)].user_id, (c * per_client + j) % questions) for j in range(per_client)]
            for c in range(clients)]  # fmt: skip


def _threads(clients: int, work: list[list[tuple[str, int]]], call: Callable[[str, int], tuple[list[str], str | None]],
             window: _Window) -> tuple[list[Record], dict[str, float]]:  # fmt: skip
    """Run each client's searches in a thread of its own, all released at once after one warm-up search each."""
    warmed, go = threading.Barrier(clients + 1), threading.Barrier(clients + 1)
    records: list[list[Record]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []

    def client(c: int) -> None:
        try:
            call(*work[c][0])  # warm-up, not recorded
        except BaseException as exc:  # reported after the run
            errors.append(exc)
        warmed.wait()
        go.wait()
        for tenant, qi in work[c]:
            if errors:
                return
            try:
                started = time.perf_counter()
                ids, plan = call(tenant, qi)
                records[c].append((tenant, qi, (time.perf_counter() - started) * 1000, ids, plan, os.getpid()))
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(clients)]
    for t in threads:
        t.start()
    warmed.wait()
    window.open()
    go.wait()
    for t in threads:
        t.join()
    measured = window.close()
    if errors:
        raise errors[0]
    return [r for rs in records for r in rs], measured


def _adk(service: Any, texts: Sequence[str], clients: int, work: list[list[tuple[str, int]]],
         window: _Window) -> tuple[list[Record], dict[str, float]]:  # fmt: skip
    """Each client is an asyncio task on one event loop awaiting `search_memory` (as an ADK app's agents do)."""
    records: list[Record] = []

    async def one(tenant: str, qi: int) -> tuple[list[str], str | None]:
        response = await service.search_memory(app_name=APP, user_id=tenant, query=texts[qi])
        memories = response.memories
        return [m.id for m in memories], (memories[0].custom_metadata or {}).get("plan") if memories else None

    async def client(c: int) -> None:
        for tenant, qi in work[c]:
            started = time.perf_counter()
            ids, plan = await one(tenant, qi)
            records.append((tenant, qi, (time.perf_counter() - started) * 1000, ids, plan, os.getpid()))

    async def main() -> None:
        await asyncio.gather(*(one(*work[c][0]) for c in range(clients)))  # warm-up, not recorded
        window.open()
        await asyncio.gather(*(client(c) for c in range(clients)))

    # On a loop of its own in a thread of its own: the caller may be inside an event loop (a notebook).
    worker = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    worker.start()
    worker.join()
    return records, window.close()


def _process_client(dsn: str, layer: str, model_id: str, dimension: int, work: list[tuple[str, int]],
                    queries: np.ndarray, k: int, ready: Any, go: Any, results: Any) -> None:  # fmt: skip
    """One process client: its own store (one pooled connection) on the bench's database, searching by vector."""
    try:
        store = open_store(dsn=dsn, pool_size=1)
        memory = EventMemory(store, _VectorsOnly(model_id, dimension), layer=layer)
        settings = auto_settings(k)
        memory.search_vector(APP, work[0][0], queries[work[0][1]], settings)  # warm-up, not recorded
        store.pool.pop_stats()
        ready.put(os.getpid())
        if not go.wait(300):
            raise TimeoutError("the bench never said go")
        cpu, started, out = time.process_time(), time.monotonic(), []
        for tenant, qi in work:
            t = time.perf_counter()
            hits = memory.search_vector(APP, tenant, queries[qi], settings)
            ms = (time.perf_counter() - t) * 1000
            out.append((tenant, qi, ms, [h.unit_id for h in hits], hits.plan, os.getpid()))
        ended = time.monotonic()
        stats = store.pool.get_stats()
        results.put(("ok", started, ended, time.process_time() - cpu, stats, out))
        store.close()
    except BaseException as exc:  # reported to the bench
        ready.put(-1)
        results.put(("error", "".join(traceback.format_exception_only(exc)).strip()))


def _gather(q: Any, procs: list, timeout: float) -> list:
    """One message per process from `q`; fails at once if a process died without sending one (a script that
    starts the bench must guard it with `if __name__ == "__main__":`, as multiprocessing needs)."""
    out: list = []
    deadline = time.monotonic() + timeout
    while len(out) < len(procs):
        try:
            out.append(q.get(timeout=0.5))
        except queue.Empty:
            dead = sum(p.exitcode is not None for p in procs)
            if dead > len(out) or time.monotonic() > deadline:
                raise RuntimeError(f"{dead} process client(s) ended without reporting") from None
    return out


def _processes(
    store: Store, memory: EventMemory, queries: np.ndarray, k: int, clients: int, work: list[list[tuple[str, int]]],
    window: _Window,
) -> tuple[list[Record], dict[str, float]]:  # fmt: skip
    """One process per client, forked from a forkserver that imported this module once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    args = (store.dsn, memory.layer, memory.model.model_id, memory.model.dimension)
    procs = [ctx.Process(target=_process_client, args=(*args, work[c], queries, k, ready, go, results), daemon=True)
             for c in range(clients)]  # fmt: skip
    for p in procs:
        p.start()
    records: list[Record] = []
    try:
        pids = _gather(ready, procs, 300)
        window.open()
        go.set()
        done = _gather(results, procs, 600) if min(pids) > 0 else [results.get(timeout=60)]
        measured = window.close()
    finally:
        go.set()
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    failed = [d[1] for d in done if d[0] != "ok"]
    if failed:
        raise RuntimeError(f"a process client failed: {failed[0]}")
    for _, _, _, _, _, out in done:
        records += out
    measured["window_s"] = max(d[2] for d in done) - min(d[1] for d in done)
    measured["client_cpu_s"] = sum(d[3] for d in done)
    for key, stat in (("pool_requests", "requests_num"), ("pool_requests_queued", "requests_queued"),
                      ("pool_wait_ms", "requests_wait_ms")):  # fmt: skip
        measured[key] = sum(d[4].get(stat, 0) for d in done)
    return records, measured


# -- the bench -----------------------------------------------------------------------------------------------
class _Truth:
    """FAISS exact over each tested tenant's own vectors (as `search_bench` builds it), and the exact distance of
    any unit a search returned (unit `<user>-<j>` is the tenant's j-th corpus row), so every path's recall is
    judged on the same numbers, whatever distances it reports."""

    def __init__(self, tested: Sequence[Tenant], vectors: np.ndarray, queries: np.ndarray, k: int) -> None:
        self.vectors, self.queries = vectors, queries
        self.rows = {t.user_id: t.rows for t in tested}
        self.truth = exact_truth(tested, vectors, queries, k)

    def recall(self, tenant: str, qi: int, ids: list[str]) -> float:
        rows = self.rows[tenant]
        found = [SimpleNamespace(distance=float(1.0 - self.vectors[rows[int(u.rsplit("-", 1)[1])]] @ self.queries[qi]))
                 for u in ids]  # fmt: skip
        return recall_with_ties(found, self.truth[(tenant, qi)])


def _row(path: str, mode: str, clients: int, pool: int, records: list[Record], measured: dict[str, float],
         truth: _Truth, base: dict) -> dict:  # fmt: skip
    latency = np.array([r[2] for r in records])
    recall = np.array([truth.recall(r[0], r[1], r[3]) for r in records])
    exact = np.array([r[4] == "exact" for r in records])
    seconds = measured["window_s"]
    pids = {r[5] for r in records}
    cores = psutil.cpu_count() or 1
    busy_cores = measured["machine_busy"] * cores
    return {
        **base, "path": path, "mode": mode, "clients": clients, "pool_size": pool, "searches": len(records),
        "seconds": seconds, "qps": len(records) / seconds if seconds > 0 else np.nan,
        "latency_ms_p50": float(np.percentile(latency, 50)), "latency_ms_p95": float(np.percentile(latency, 95)),
        "latency_ms_p99": float(np.percentile(latency, 99)), "recall": float(recall.mean()),
        "exact_recall": float(recall[exact].mean()) if exact.any() else np.nan, "exact_searches": int(exact.sum()),
        "plan": Counter(r[4] for r in records).most_common(1)[0][0],
        "client_pids": len(pids), "bench_pid_searched": os.getpid() in pids,
        "executor_workers": min(32, cores + 4) if path == "adk" else np.nan,
        **measured,
        "client_cores": measured["client_cpu_s"] / seconds, "server_cores": measured["server_cpu_s"] / seconds,
        "other_cores": busy_cores - (measured["client_cpu_s"] + np.nan_to_num(measured["server_cpu_s"])) / seconds,
        "pool_wait_share": measured["pool_wait_ms"] / (seconds * 1000 * clients) if seconds > 0 else np.nan,
        "cores": cores, "load_1m": os.getloadavg()[0],
    }  # fmt: skip


def concurrency_bench(
    store: Store, embedder: Embedder, vectors: np.ndarray, queries: np.ndarray, question_texts: Sequence[str], *,
    total_rows: int, background_tenants: int, corpus_name: str = "real", levels: Sequence[int] = (1, 2, 4, 8, 16),
    queries_per_client: int = 60, process_clients: int | None = None, pool_size: int | None = None,
    sample_ms: float = 20.0, paths: Sequence[str] = PATHS, k: int = K, buckets: Sequence[float] = BUCKETS,
    seed: int = 0,
) -> pd.DataFrame:  # fmt: skip
    """Search the tenants under test of the table `search.search_bench(store, embedder, vectors, queries,
    total_rows=..., corpus_name=..., background_tenants=...)` left loaded (same arguments), from `levels`
    concurrent clients on every path of `paths` (module docstring). Thread paths run each level on a pool of
    `pool_size` (None: the store's) and the top level again with one slot per client; `processes` runs
    `process_clients` (None: the top level) processes. Tenants above the store's `tenant_index_above` get their own
    index for the run (as `EventMemory.maintain` would build it; dropped at the end). One row per (path, clients,
    pool_size): QPS, latency percentiles, recall@k vs FAISS exact, and the CPU, pool and wait measurements."""
    unknown = set(paths) - set(PATHS)
    if unknown or not levels or min(levels) < 1:
        raise ValueError(f"paths must be some of {PATHS} (got {sorted(unknown)}) and levels at least 1 ({levels})")
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
    if len(question_texts) != len(queries):
        raise ValueError(f"{len(question_texts)} question texts for {len(queries)} query vectors")
    tenants = layout(total_rows, len(vectors), buckets=buckets, background_tenants=background_tenants, seed=seed)
    tested = [t for t in tenants if t.bucket != "background"]
    layer = LAYER_PREFIX + corpus_name
    memory = EventMemory(store, embedder, layer=layer)
    if memory.count(APP, FIXED_USER) != FIXED_ROWS or memory.count(APP, tested[-1].user_id) != tested[-1].size:
        raise ValueError(f"the table of {total_rows:,} rows is not loaded in layer {layer!r}: run "
                         "search.search_bench with the same arguments first")  # fmt: skip
    truth = _Truth(tested, vectors, queries, k)
    model_id = memory.model.model_id
    indexed = [t for t in tested if t.size >= store.auto_policy().tenant_index_above]
    for t in indexed:
        store.create_tenant_index(model_id, layer, APP, t.user_id)
    small, top = pool_size or store.pool_size, max(levels)
    master = postmaster(store.dsn)
    stores: dict[int, tuple[Store, EventMemory, Any]] = {}
    base = {"rows_total": total_rows, "corpus": corpus_name}
    rows: list[dict] = []
    settings = auto_settings(k)

    def opened(pool: int) -> tuple[Store, EventMemory, Any]:
        if pool not in stores:
            s = open_store(dsn=store.dsn, pool_size=pool, timeout=store.timeout)
            s.pool.resize(min_size=pool, max_size=pool)  # every slot connected before the clients start
            s.pool.wait(timeout=30)
            mem = EventMemory(s, embedder, layer=layer)
            stores[pool] = (s, mem, _adk_service(mem, k) if "adk" in paths else None)
        return stores[pool]

    def run(path: str, clients: int, pool: int) -> None:
        s, mem, service = opened(pool)
        work = _plan(tested, clients, queries_per_client, len(queries))
        window = _Window(store.dsn, master, sample_ms, s)
        if path in ("api", "text"):

            def call(tenant: str, qi: int) -> tuple[list[str], str | None]:
                if path == "api":
                    hits = mem.search_vector(APP, tenant, queries[qi], settings)
                else:
                    hits = mem.search(APP, tenant, question_texts[qi], settings)
                return [h.unit_id for h in hits], hits.plan

            records, measured = _threads(clients, work, call, window)
        else:
            records, measured = _adk(service, question_texts, clients, work, window)
        rows.append(_row(path, "async" if path == "adk" else "threads", clients, pool, records, measured, truth, base))

    thread_paths = [p for p in THREAD_PATHS if p in paths and (p != "adk" or _adk_available())]
    try:
        for clients in levels:  # paths take turns level by level, so drift in the machine's load hits them alike
            for path in thread_paths:
                run(path, clients, small)
        if top > small:
            for path in thread_paths:
                run(path, top, top)
        if "processes" in paths:
            n = process_clients or top
            work = _plan(tested, n, queries_per_client, len(queries))
            window = _Window(store.dsn, master, sample_ms, None)
            records, measured = _processes(store, memory, queries, k, n, work, window)
            rows.append(_row("processes", "processes", n, 1, records, measured, truth, base))
    finally:
        for s, _, _ in stores.values():
            s.close()
        for t in indexed:
            store.drop_tenant_index(model_id, layer, APP, t.user_id)
    frame = pd.DataFrame(rows)
    frame.attrs.update({"small_pool": small, "indexed_tenants": len(indexed), "tenants": len(tested)})
    return frame


def _adk_available() -> bool:
    # Imported here: google-adk is the optional `adk` extra (and takes a second or two to import).
    try:
        import memlab.adk  # noqa: F401
    except ImportError:  # the `adk` extra is not installed: the path is left out
        return False
    return True


def _adk_service(memory: EventMemory, k: int) -> Any:
    """The ADK service over `memory`, asking for the same search the other paths make (no distance cut-off)."""
    if not _adk_available():
        return None
    from memlab.adk import EventMemoryService  # the optional `adk` extra, see _adk_available

    return EventMemoryService(memory, settings=auto_settings(k), max_results=k)


# -- summaries -----------------------------------------------------------------------------------------------
def saturation(series: pd.DataFrame) -> tuple[int | None, str, str]:
    """(clients, reason code, reason in words) for one path's runs on the small pool, in level order: the first
    level whose QPS gains less than GAIN over the previous level's, and what the measurements at it show."""
    series = series.sort_values("clients")
    qps = series.qps.to_numpy()
    at = next((i for i in range(1, len(qps)) if qps[i] < (1 + GAIN) * qps[i - 1]), None)
    if at is None:
        return None, "growing", f"QPS still grew by {GAIN:.0%} or more at every level up to {int(series.clients.max())}"
    r = series.iloc[at]
    figures = (f"{r.machine_busy:.0%} of {int(r.cores)} cores busy (client {r.client_cores:.2f}, server "
               f"{r.server_cores:.2f}, other processes {r.other_cores:.2f} cores), pool waits {r.pool_wait_share:.0%} "
               f"of client time, server backends in lock waits {r.lock_wait_share:.0%} and in IO "
               f"{r.io_wait_share:.0%} of samples")  # fmt: skip
    if r.machine_busy >= CPU_BOUND:  # whose CPU: this bench's (client and server) or other processes'
        code = "cpu-other-processes" if r.other_cores > r.client_cores + r.server_cores else "cpu"
    elif r.pool_wait_share >= WAIT_BOUND:
        code = "pool"
    elif r.lock_wait_share >= WAIT_BOUND:
        code = "locks"
    elif r.path == "adk" and r.clients > r.executor_workers:
        code = "executor"
    else:
        code = "unexplained"
    return int(r.clients), code, f"{code}: {figures}"


def summarize_concurrency(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, float]]:
    """The runs with `qps_vs_one` (QPS over the path's one-client QPS on the small pool; process clients over the
    `api` path's), each path's saturation level and reason, and the flat bench.json keys:
    `concurrency.<clients>.{qps,qps_vs_one,p95_ms,recall}` (the `api` path on the small pool),
    `concurrency.<path>.<clients>.{...}` (every path on the small pool; processes at their level),
    `concurrency.<path>.<clients>.pool_<size>.{...}` (every run), `concurrency.<path>.saturation_clients`,
    `concurrency.<path>.saturation.{machine_busy,client_cores,server_cores,pool_wait_share,lock_wait_share}`,
    `concurrency.<path>.<top>.pool_per_client_vs_small` and `concurrency.saturation_clients` (api)."""
    if frame.empty:
        return frame.copy(), {}
    table = frame.copy()
    threads = table[table["mode"] != "processes"]
    small = int(threads.pool_size.min()) if len(threads) else 1
    one = {p: g[(g.clients == 1) & (g.pool_size == small)].qps for p, g in table.groupby("path")}
    api_one = float(one[HEADLINE_PATH].iloc[0]) if len(one.get(HEADLINE_PATH, ())) else np.nan
    table["qps_vs_one"] = [
        r.qps / (float(one[r.path].iloc[0]) if len(one.get(r.path, ())) else api_one) for r in table.itertuples()
    ]
    table["saturation_clients"] = np.nan
    table["saturation_reason"] = ""
    out: dict[str, float] = {}
    metrics = {"qps": "qps", "qps_vs_one": "qps_vs_one", "p50_ms": "latency_ms_p50", "p95_ms": "latency_ms_p95",
               "p99_ms": "latency_ms_p99", "recall": "recall", "pool_wait_share": "pool_wait_share",
               "lock_wait_share": "lock_wait_share", "machine_busy": "machine_busy", "client_cores": "client_cores",
               "server_cores": "server_cores"}  # fmt: skip
    for r in table.itertuples():
        stems = [f"concurrency.{r.path}.{r.clients}.pool_{r.pool_size}"]
        if r.pool_size == small or r.mode == "processes":
            stems.append(f"concurrency.{r.path}.{r.clients}")
            if r.path == HEADLINE_PATH:
                stems.append(f"concurrency.{r.clients}")
        for stem in stems:
            for key, col in metrics.items():
                value = getattr(r, col)
                if value == value:  # not NaN
                    out[f"{stem}.{key}"] = float(value)
    for path, group in table[table.pool_size == small].groupby("path"):
        if path == "processes":
            continue
        clients, _, words = saturation(group)
        mask = table.path == path
        table.loc[mask, "saturation_reason"] = words
        out[f"concurrency.{path}.saturated"] = float(clients is not None)
        if clients is not None:
            table.loc[mask, "saturation_clients"] = clients
            out[f"concurrency.{path}.saturation_clients"] = float(clients)
            r = group[group.clients == clients].iloc[0]
            for col in ("machine_busy", "client_cores", "server_cores", "pool_wait_share", "lock_wait_share"):
                out[f"concurrency.{path}.saturation.{col}"] = float(r[col])
            if path == HEADLINE_PATH:
                out["concurrency.saturation_clients"] = float(clients)
        top = int(group.clients.max())
        wide = table[mask & (table.clients == top) & (table.pool_size == top)]
        if top > small and len(wide):
            base = group[group.clients == top].qps.iloc[0]
            out[f"concurrency.{path}.{top}.pool_per_client_vs_small"] = float(wide.qps.iloc[0] / base)
    return table, out


def _fmt(value: float, digits: int = 3) -> str:
    if value != value:
        return "n/a"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.{digits}g}"


def concurrency_section(table: pd.DataFrame, results: dict[str, float]) -> list[str]:
    """bench.md's concurrency section (Markdown lines) from `summarize_concurrency`'s table and keys."""
    if table.empty:
        return ["## Concurrency", "", "Not measured in this run.", ""]
    r0 = table.iloc[0]
    shown = pd.DataFrame([{
        "path": r.path, "clients": int(r.clients), "pool": int(r.pool_size), "searches": int(r.searches),
        "QPS": _fmt(r.qps), "x one client": _fmt(r.qps_vs_one), "p50 ms": _fmt(r.latency_ms_p50),
        "p95 ms": _fmt(r.latency_ms_p95), "p99 ms": _fmt(r.latency_ms_p99), "recall@10": _fmt(r.recall, 4),
        "cores busy": _fmt(r.machine_busy * r.cores), "client cores": _fmt(r.client_cores),
        "server cores": _fmt(r.server_cores), "pool wait": f"{r.pool_wait_share:.0%}",
        "lock waits": f"{r.lock_wait_share:.0%}", "plan": r.plan,
    } for r in table.itertuples()])  # fmt: skip
    lines = [
        "## Concurrency", "",
        f"Searches with `auto` (k=10) of the tenants under test of the {int(r0.rows_total):,}-row `{r0.corpus}` table "
        "from concurrent clients: `api` = `EventMemory.search_vector` from threads, `text` = `EventMemory.search` "
        "with the question's text from threads (the model embeds each query), `adk` = "
        "`EventMemoryService.search_memory` from asyncio tasks on one loop (its `asyncio.to_thread` runs at most "
        f"{int(min(32, int(r0.cores) + 4))} searches at once on this machine: the default executor), `processes` = "
        "one process per client with its own store. QPS counts searches over the run's wall time; recall@10 is "
        "against FAISS exact over the tenant's rows. Cores: the machine's busy cores during the run (client, "
        "PostgreSQL server, the rest other processes). Pool wait: share of the clients' time spent waiting for a "
        "pooled connection; lock waits: share of sampled active server backends waiting on a lock.", "",
        markdown_table(shown), "",
    ]  # fmt: skip
    for path, group in table.groupby("path", sort=False):
        if path == "processes":
            continue
        clients = results.get(f"concurrency.{path}.saturation_clients")
        where = f"stops growing at {int(clients)} clients" if clients else "grows at every level"
        effect = [v for key, v in results.items() if key.startswith(f"concurrency.{path}.")
                  and key.endswith(".pool_per_client_vs_small")]  # fmt: skip
        pool = ""
        if effect:
            pool = f"; one pool slot per client at the top level: {_fmt(effect[0])} x the small pool's QPS"
        lines.append(f"- `{path}`: QPS {where} ({group.saturation_reason.iloc[0]}){pool}.")
    lines.append("")
    return lines
