"""Search latency and recall per strategy and tenant size, on one big multi-tenant table, and how the latency of
one small user grows with the table (the scaling curve).

The table (`total_rows` rows of one corpus from `memlab.lab.bench.corpora`, app APP, layer `bench:search:<corpus>`):
tenants under test at BUCKETS shares of the table (at least one row each), one fixed small user
(FIXED_ROWS rows, the corpus's first rows, identical at every size: the scaling curve follows it), and
Zipf-skewed background tenants for the rest. Rows are drawn from the corpus without replacement (while it
lasts), streamed into `EventMemory.bulk_load` (HNSW built once, after the load).

Each tenant is searched with the same embedded real questions under every strategy (k=10): `exact`, HNSW with
a relaxed iterative scan, HNSW without one, `planner`, `partial` (a per-tenant partial HNSW index, for tenants
at PARTIAL_MIN_SHARE or more, built after the strategies that must not see it ran) and `auto` through the
public `EventMemory.search_vector` (the plan it took is recorded), with the tenant's own index present exactly
when `EventMemory.maintain` would have built one under the store's AutoPolicy. Tenant by tenant, strategies
take turns query by query, so drift in the machine's load hits them alike (on a shared machine a whole cell's p50
moves between cells run minutes apart); for a tenant `auto` scans exactly, the HNSW walks of the shared graph take
their turns in a block after the rest (`SHARED_WALKS`: between a small user's searches they would time their own
eviction of the CPU caches, not the user's cost). The frame's `block` column names each row's block (`turns`,
`walks`, `own-index`). Latency is one whole search as a client pays
it (pooled connection, transaction, settings, query; `auto` adds its own decision), after one unrecorded
warm-up per strategy and tenant; recall@k is against FAISS exact over the tenant's own vectors (ties at the
k-th distance count as found).

Sizes: the orchestrator calls `search_bench` once per size (10k, 100k, 1M) and concatenates the frames;
`scaling_curve` reads the fixed user's rows out of them. Each call reloads the table from scratch rather than
growing the previous one, because growing saves nothing that matters: the HNSW build is most of a reload, and
growing with `bulk_load` drops and rebuilds the index over all the rows, so it saves only the COPY of the rows
already there; growing with the index in place (rows inserted into the live graph) is several times slower than
a reload (docs/results.md). A reload also gives every size a fresh graph and exact tenant shares.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
from rich.progress import track

from memlab.embedding.base import Embedder
from memlab.events.core import STRATEGY_FACTS_SECONDS
from memlab.events.memory import EventMemory
from memlab.events.units import Unit
from memlab.lab.systems.faiss_exact import FaissExact
from memlab.storage.store import Store
from memlab.types import SearchSettings

APP = "memlab-bench"
LAYER_PREFIX = "bench:search:"
BUCKETS: tuple[float, ...] = (0.0001, 0.001, 0.01, 0.1)
FIXED_ROWS = 50
FIXED_USER = f"fixed-{FIXED_ROWS}"
BACKGROUND_TENANTS = 200
PARTIAL_MIN_SHARE = 0.01
K = 10
STRATEGIES: tuple[str, ...] = ("exact", "hnsw-relaxed", "hnsw-off", "planner", "partial", "auto")
_T0 = datetime(2024, 1, 1, tzinfo=UTC)


def settings_for(strategy: str, k: int = K) -> SearchSettings:
    """The SearchSettings each strategy name stands for."""
    table = {
        "exact": SearchSettings(top_k=k, strategy="exact"),
        "hnsw-relaxed": SearchSettings(top_k=k, strategy="hnsw", ef_search=40, iterative_scan="relaxed_order",
                                       max_scan_tuples=20_000),
        "hnsw-off": SearchSettings(top_k=k, strategy="hnsw", ef_search=40, iterative_scan="off"),
        "planner": SearchSettings(top_k=k, strategy="planner"),
        "partial": SearchSettings(top_k=k, strategy="hnsw", ef_search=40, iterative_scan="off", literal_scope=True),
        "auto": SearchSettings(top_k=k, strategy="auto"),
    }  # fmt: skip
    if strategy not in table:
        raise ValueError(f"strategy {strategy!r} is unknown; use some of {STRATEGIES}")
    return table[strategy]


def bucket_label(share: float) -> str:
    """0.0001 -> '0.01%', 0.01 -> '1%'."""
    return f"{share * 100:g}%"


@dataclass(frozen=True)
class Tenant:
    """One user of the bench table and the corpus rows (indices) it holds."""

    user_id: str
    bucket: str  # "0.01%" ... "10%", FIXED_USER, or "background"
    share: float
    rows: np.ndarray  # indices into the corpus

    @property
    def size(self) -> int:
        return len(self.rows)


def _background_sizes(total: int, n: int, seed: int) -> list[int]:
    """Zipf-like skew (as the filtered sweep's `_tenant_sizes`): a few big tenants, many small ones, summing to
    `total`; at most `total` tenants of at least one row."""
    n = max(0, min(n, total))
    if n == 0:
        return []
    weights = 1.0 / np.arange(1, n + 1) ** 1.1
    sizes = np.maximum(1, np.floor(weights / weights.sum() * total)).astype(int)
    sizes[0] += total - sizes.sum()
    return [int(s) for s in np.random.default_rng(seed).permutation(sizes)]


def layout(
    total_rows: int, corpus_rows: int, *, buckets: Sequence[float] = BUCKETS, fixed_rows: int = FIXED_ROWS,
    background_tenants: int = BACKGROUND_TENANTS, seed: int = 0,
) -> list[Tenant]:  # fmt: skip
    """Who owns which corpus rows in a table of `total_rows`: the fixed user holds the corpus's first rows (the
    same at every size), every other row is a fresh corpus row (a random permutation, repeated only when the
    corpus is smaller than the table)."""
    under_test = {bucket_label(s): (s, max(1, round(s * total_rows))) for s in buckets}
    used = fixed_rows + sum(n for _, n in under_test.values())
    if used > total_rows:
        raise ValueError(f"total_rows={total_rows} cannot hold the tenants under test ({used} rows)")
    if corpus_rows < fixed_rows:
        raise ValueError(f"the corpus has {corpus_rows} rows, fewer than the fixed user's {fixed_rows}")
    rng = np.random.default_rng(seed)
    rest = total_rows - fixed_rows
    pool = np.arange(fixed_rows, corpus_rows)
    draws = [rng.permutation(pool) for _ in range(-(-rest // max(len(pool), 1)))] if len(pool) else []
    order = np.concatenate(draws)[:rest] if draws else np.zeros(rest, dtype=np.int64)
    tenants = [Tenant(FIXED_USER, FIXED_USER, fixed_rows / total_rows, np.arange(fixed_rows))]
    at = 0
    for label, (share, n) in under_test.items():
        tenants.append(Tenant(f"bucket-{label}", label, share, order[at : at + n]))
        at += n
    for i, n in enumerate(_background_sizes(total_rows - used, background_tenants, seed)):
        tenants.append(Tenant(f"bg{i:04d}", "background", n / total_rows, order[at : at + n]))
        at += n
    return tenants


def _rows(tenants: list[Tenant], vectors: np.ndarray, done: dict) -> Iterator[tuple[str, str, Unit, np.ndarray]]:
    """Rows for `bulk_load`, one at a time (never a list of a million tuples); records when the last is out."""
    for tenant in tenants:
        session = f"{tenant.user_id}-s"
        for j, row in enumerate(tenant.rows):
            unit_id = f"{tenant.user_id}-{j}"
            unit = Unit(session, unit_id, (unit_id,), "user", _T0 + timedelta(seconds=j), f"row {j}")
            yield APP, tenant.user_id, unit, vectors[row]
    done["copied_at"] = time.perf_counter()


def clear(store: Store, model_id: str, tenants: Sequence[Tenant] = ()) -> int:
    """Empty every search-bench layer of APP: one corpus in the table at a time (the scope index spans layers,
    so a second corpus would slow every exact scan). The layers' HNSW indexes and the per-tenant indexes of
    `tenants` are dropped first (vacuuming a million dead entries out of an HNSW graph takes far longer than
    rebuilding it), then rows are deleted and the table VACUUMed so no dead row is left for a scan to skip.
    Returns rows deleted."""
    layers = sorted(layer for layer in store.vector_indexes(model_id) if layer.startswith(LAYER_PREFIX))
    for layer in layers:
        for t in tenants:
            store.drop_tenant_index(model_id, layer, APP, t.user_id)
    for layer in layers:
        store.drop_vector_index(model_id, layer)
    deleted = sum(store.delete_layer(APP, layer) for layer in layers)
    if deleted:
        store.vacuum()
    return deleted


def load_table(
    store: Store, embedder: Embedder, vectors: np.ndarray, tenants: list[Tenant], *, corpus_name: str
) -> tuple[EventMemory, dict[str, float]]:
    """Clear the bench app, then bulk-load the tenants' rows into layer `bench:search:<corpus_name>` (HNSW built once
    at the end). Returns the memory and seconds spent: clear, copy (rows written), index (HNSW build + ANALYZE)."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    model = store.register_model(embedder.model_id, embedder.dimension)
    clear(store, model.model_id, tenants)
    timings["clear_s"] = time.perf_counter() - started
    memory = EventMemory(store, embedder, layer=LAYER_PREFIX + corpus_name)
    done: dict[str, float] = {}
    began = time.perf_counter()
    memory.bulk_load(_rows(tenants, vectors, done))
    ended = time.perf_counter()
    timings["copy_s"] = done.get("copied_at", ended) - began  # the last batch of rows is written after this
    timings["index_s"] = ended - done.get("copied_at", ended)
    return memory, timings


def exact_truth(
    tested: Sequence[Tenant], vectors: np.ndarray, queries: np.ndarray, k: int
) -> dict[tuple[str, int], list]:
    """(tenant, query number) -> FAISS exact's k nearest of the tenant's own rows (unit `<user>-<j>` is its j-th
    row): the yardstick every bench case's recall@k is judged against."""
    exact = FaissExact()
    truth: dict[tuple[str, int], list] = {}
    for t in tested:
        exact.add_user(APP, t.user_id, unit_ids=[f"{t.user_id}-{j}" for j in range(t.size)], vectors=vectors[t.rows])
        for qi, q in enumerate(queries):
            truth[(t.user_id, qi)] = list(exact.search_vector(APP, t.user_id, q, k))
    return truth


def recall_with_ties(found: list, truth: list) -> float:
    """Share of the true top k found; a hit as near as the k-th true row counts (ties, duplicate vectors)."""
    if not truth:
        return 1.0
    kth = max(h.distance for h in truth) + 1e-5
    return min(len(truth), sum(h.distance <= kth for h in found)) / len(truth)


def _search(memory: EventMemory, tenant: str, vector: np.ndarray, strategy: str, k: int):
    """(hits, latency ms, plan) of one search of `tenant` under `strategy`, timed as a caller pays it: through
    `EventMemory.search_vector`, the same path for `auto`, the fixed strategies it is judged against and
    `partial` (the tenant's own index, reached with `SearchSettings(literal_scope=True)`)."""
    settings = settings_for(strategy, k)
    started = time.perf_counter()
    hits = memory.search_vector(APP, tenant, vector, settings)
    return list(hits), (time.perf_counter() - started) * 1000, hits.plan if strategy == "auto" else None


def _plan(memory: EventMemory, tenant: str, vector: np.ndarray, strategy: str, k: int) -> str:
    """The access path PostgreSQL takes for the strategy (EXPLAIN, outside any timing)."""
    path = memory.explain_vector(APP, tenant, vector, settings_for(strategy, k)).access_path
    if strategy == "partial" and path.startswith("index:memlab_tenant_"):
        return "partial_index"
    return path


FIXED: tuple[str, ...] = ("exact", "hnsw-relaxed", "hnsw-off", "planner")  # need no per-tenant index
# Strategies whose search walks the shared graph, through pages of every other user: for a small tenant of a large
# table the relaxed walk reads a long way until it finds k of its rows. Interleaved with a small user's searches,
# each of those then starts with cold CPU caches (a small user's exact and auto p95 about double right after a
# relaxed walk): that times the walk's eviction, not the user's search. For tenants `auto` scans exactly they
# take their turns in a block of their own after the others.
SHARED_WALKS: tuple[str, ...] = ("hnsw-relaxed", "hnsw-off")
_TIMES = re.compile(r"^(Planning|Execution) Time: ([0-9.]+) ms", re.MULTILINE)
_BUFFERS = re.compile(r"Buffers: shared ((?:[a-z]+=\d+ ?)+)")


def explain_fixed(memory: EventMemory, vector: np.ndarray, strategy: str = "auto", k: int = K) -> dict:
    """EXPLAIN (ANALYZE, BUFFERS) of the fixed small user's search under `strategy` (auto resolved as a search
    resolves it), run right after its timed searches so caches are as they left them: the plan text, its access
    path, the server's planning and execution ms and the statement's shared buffers hit and read (the top node's
    count; a btree level more in the scope index shows as one more buffer)."""
    ex = memory.explain_vector(APP, FIXED_USER, vector, settings_for(strategy, k))
    times = {name: float(ms) for name, ms in _TIMES.findall(ex.plan)}
    first = _BUFFERS.search(ex.plan)
    buffers = dict(kv.split("=") for kv in first.group(1).split()) if first else {}
    return {
        "strategy": strategy, "access_path": ex.access_path, "planning_ms": times.get("Planning", float("nan")),
        "execution_ms": times.get("Execution", float("nan")), "shared_hit": int(buffers.get("hit", 0)),
        "shared_read": int(buffers.get("read", 0)), "plan": ex.plan,
    }  # fmt: skip


def _measure(
    memory: EventMemory, tenant: Tenant, strategies: list[str], queries: np.ndarray, k: int,
    truth: dict, base: dict, block: str = "turns",
) -> list[dict]:  # fmt: skip
    """One row per (strategy, query) for one tenant. Strategies take turns query by query (the first one moves
    each time), so a machine that slows down mid-run slows them all alike; one warm-up search each first."""
    plans = {}
    for strategy in strategies:
        _search(memory, tenant.user_id, queries[0], strategy, k)  # warm-up, not recorded
        plans[strategy] = None if strategy == "auto" else _plan(memory, tenant.user_id, queries[0], strategy, k)
    rows = []
    for qi, q in enumerate(queries):
        turn = qi % len(strategies) if strategies else 0
        for strategy in strategies[turn:] + strategies[:turn]:
            hits, latency, auto_plan = _search(memory, tenant.user_id, q, strategy, k)
            rows.append({
                **base, "bucket": tenant.bucket, "share": tenant.share, "tenant": tenant.user_id,
                "tenant_rows": tenant.size, "strategy": strategy, "query": qi, "latency_ms": latency,
                "recall": recall_with_ties(hits, truth[(tenant.user_id, qi)]), "returned": len(hits),
                "expected": min(k, tenant.size), "plan": auto_plan or plans[strategy], "block": block,
            })  # fmt: skip
    return rows


def search_bench(
    store: Store, embedder: Embedder, vectors: np.ndarray, queries: np.ndarray, *, total_rows: int,
    corpus_name: str, strategies: Sequence[str] = STRATEGIES, k: int = K, buckets: Sequence[float] = BUCKETS,
    background_tenants: int = BACKGROUND_TENANTS, seed: int = 0, progress: bool = False,
) -> pd.DataFrame:  # fmt: skip
    """Load a `total_rows` table from `vectors` (see the module docstring) and search every tenant under test
    with every query under every strategy. One row per (rows_total, corpus, bucket, strategy, query): latency_ms,
    recall (vs FAISS exact over the tenant's rows), returned, expected (min(k, tenant rows)), plan. The frame's
    `attrs` hold the seconds spent (clear_s, copy_s, index_s, partial_index_s, search_s) and, when the fixed user
    was searched, `fixed_explain` (`explain_fixed` of its `auto` search, after its timed ones)."""
    unknown = set(strategies) - set(STRATEGIES)
    if unknown:
        raise ValueError(f"unknown strategies {sorted(unknown)}; use some of {STRATEGIES}")
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
    tenants = layout(total_rows, len(vectors), buckets=buckets, background_tenants=background_tenants, seed=seed)
    memory, timings = load_table(store, embedder, vectors, tenants, corpus_name=corpus_name)
    tested = [t for t in tenants if t.bucket != "background"]
    truth = exact_truth(tested, vectors, queries, k)
    policy = store.auto_policy()
    above = policy.tenant_index_above
    model_id, base = memory.model.model_id, {"rows_total": total_rows, "corpus": corpus_name}
    rows: list[dict] = []
    fixed_explain: dict | None = None
    timings["partial_index_s"] = 0.0
    started = time.perf_counter()
    todo: Iterable[Tenant] = tested
    if progress:
        todo = track(tested, description=f"search {corpus_name} {total_rows:,}")
    for t in todo:
        # A tenant's own index changes what its other searches may use (the planner takes it): the strategies
        # that need none run first; `auto` sees the index only where EventMemory.maintain would have built one.
        # auto takes turns with the fixed strategies it is judged against, so a machine slowing down mid-run
        # slows them alike (run apart, a drift between the two would turn into a ratio).
        auto = "auto" in strategies
        # For a tenant auto scans exactly, the shared-graph walks run after the rest (see SHARED_WALKS).
        first = [s for s in FIXED if s in strategies] + (["auto"] if auto and t.size < above else [])
        walks = [s for s in first if s in SHARED_WALKS and t.size <= policy.exact_below]
        first = [s for s in first if s not in walks]
        rows += _measure(memory, t, first, queries, k, truth, base)
        if t.bucket == FIXED_USER and first:
            fixed_explain = explain_fixed(memory, queries[0], "auto" if auto else first[0], k)
        if walks:
            rows += _measure(memory, t, walks, queries, k, truth, base, "walks")
        partial = "partial" in strategies and t.bucket != FIXED_USER and t.share >= PARTIAL_MIN_SHARE
        if partial or (auto and t.size >= above):
            built = time.perf_counter()
            store.create_tenant_index(model_id, memory.layer, APP, t.user_id)
            timings["partial_index_s"] += time.perf_counter() - built
            later = (["partial"] if partial else []) + (["auto"] if auto and t.size >= above else [])
            rows += _measure(memory, t, later, queries, k, truth, base, "own-index")
            store.drop_tenant_index(model_id, memory.layer, APP, t.user_id)  # gone before the next tenant and load
    timings["search_s"] = time.perf_counter() - started - timings["partial_index_s"]
    frame = pd.DataFrame(rows)
    frame.attrs.update(timings)
    if fixed_explain is not None:
        frame.attrs["fixed_explain"] = fixed_explain
    return frame


def _p(q: float):
    def percentile(s: pd.Series) -> float:
        return float(np.percentile(s, q))

    percentile.__name__ = f"p{q:g}"
    return percentile


def summarize_search(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (rows_total, corpus, bucket, strategy): mean recall, p50/p95/p99 latency (ms), mean rows returned,
    tenant rows, queries, and the most frequent plan."""
    keys = ["rows_total", "corpus", "bucket", "strategy"]
    return (
        frame.groupby(keys, sort=False)
        .agg(
            tenant_rows=("tenant_rows", "first"), queries=("query", "size"), recall=("recall", "mean"),
            latency_ms_p50=("latency_ms", _p(50)), latency_ms_p95=("latency_ms", _p(95)),
            latency_ms_p99=("latency_ms", _p(99)), returned=("returned", "mean"),
            plan=("plan", lambda s: s.mode().iloc[0] if s.notna().any() else None),
        )
        .reset_index()
    )  # fmt: skip


def scaling_curve(frame: pd.DataFrame) -> pd.DataFrame:
    """The fixed small user's p50/p95 latency and recall per (corpus, strategy, rows_total), from the
    concatenated `search_bench` frames of several sizes: how one user's search cost grows with the table."""
    fixed = frame[frame.bucket == FIXED_USER]
    out = (
        fixed.groupby(["corpus", "strategy", "rows_total"])
        .agg(latency_ms_p50=("latency_ms", _p(50)), latency_ms_p95=("latency_ms", _p(95)),
             recall=("recall", "mean"), queries=("query", "size"))
        .reset_index()
    )  # fmt: skip
    # The strategies of one block take turns, so auto's searches at one size span the sum of its block's latencies:
    # `auto` re-reads the user's count (one more statement's work) once per STRATEGY_FACTS_SECONDS of that span.
    spanning = fixed
    if "block" in fixed and (fixed.strategy == "auto").any():
        spanning = fixed[fixed.block.isin(fixed.loc[fixed.strategy == "auto", "block"].unique())]
    span = spanning.groupby(["corpus", "rows_total"]).latency_ms.sum().rename("spanned_s") / 1000
    out = out.merge(span.reset_index(), on=["corpus", "rows_total"], how="left")
    out["count_rereads"] = np.minimum(out.queries, np.floor(out.spanned_s / STRATEGY_FACTS_SECONDS)).where(
        out.strategy == "auto", 0).astype(int)  # fmt: skip
    return out.sort_values(["corpus", "strategy", "rows_total"], ignore_index=True)
