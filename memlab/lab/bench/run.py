"""`memlab bench`: every performance figure of one run, measured side by side on this machine and written as
`bench.json` (flat keys that say what they measure) and `bench.md`, plus the raw tables as CSV.

Nothing here is gated on absolute time: two noisy cores make seconds meaningless across runs. What carries
across runs are ratios measured in the same run: ingest vs the model's raw encode rate, a strategy's latency vs
the best fixed strategy for the same tenant, FAISS's scan rate vs the memory bandwidth measured minutes apart.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import memlab.lab.base.hardware as hardware
import memlab.lab.bench.bulk as bulk
import memlab.lab.bench.concurrency as concurrency
import memlab.lab.bench.corpora as corpora
import memlab.lab.bench.lexical as lexical_bench
import memlab.lab.bench.search as search
import memlab.lab.bench.streaming as streaming
import memlab.lab.bench.table_store as table_store
from memlab.embedding import default_embedder
from memlab.embedding.base import Embedder
from memlab.errors import ConfigError
from memlab.events.ingest import PATH_FIRST_LOAD
from memlab.lab.base.hardware import peak_memory_mb
from memlab.lab.bench.ingest_sets import ingest_set
from memlab.lab.bench.markdown import bench_markdown
from memlab.lab.metrics.uncertainty import quantile_ratio_ci
from memlab.lab.systems.ingest_timing import STAGES, measure_batch_sizes, measure_ingest
from memlab.storage.store import Store, open_store
from memlab.types import AutoPolicy

RECALL_GOAL = 0.99  # auto's recall@10 vs FAISS exact in every tenant bucket
LATENCY_GOAL = 1.2  # auto's p95 at most this times the faster fixed strategy's for that bucket
FIXED = ("exact", "hnsw-relaxed", "hnsw-off", "planner", "partial")
MEMORY, TABLE_STORE = "memory", "table-store"
PARTS = (MEMORY, TABLE_STORE)  # `memlab bench --part`: memlab's own memory, a user's own table


@dataclass(frozen=True)
class BenchSize:
    """How big one bench run is. `rows`: the table sizes searched (the scaling curve spans them)."""

    name: str
    rows: tuple[int, ...]
    queries: int
    real_texts: int | None  # None: every distinct turn in the checkout
    near_duplicate_rows: int  # the stress corpus is searched at this size only
    ingest_sets: tuple[str, ...]  # INGEST_SETS measured; the first gives the headline `ingest.*` figures
    spare_core_sets: tuple[str, ...]  # measured again with the model on one core fewer (`ingest.<set>.spare_core.*`)
    bandwidth_mb: int
    bulk_rows: int
    build_rows: int
    background_tenants: int
    lexical_units: tuple[int, ...] = (1_000, 4_000)  # one user per size: lexical and hybrid vs vector search
    ingest_rounds: int | None = None  # rounds of each ingest set (None: the set's own, INGEST_SETS)
    batch_sizes: tuple[int, ...] = (64, 256, 1024)  # `add_sessions(batch_units=...)` compared (none: not measured)


SIZES = {
    # a smoke of every section (CI runs it beside the tests): small tables, one ingest round of the fixtures
    "ci": BenchSize("ci", rows=(2_000, 4_000), queries=12, real_texts=1_000, near_duplicate_rows=4_000,
                    ingest_sets=("fixtures",), spare_core_sets=(),
                    bandwidth_mb=128, bulk_rows=1_000, build_rows=4_000,
                    background_tenants=20, lexical_units=(500, 1_000),
                    ingest_rounds=1, batch_sizes=()),
    "full": BenchSize("full", rows=(10_000, 100_000, 1_000_000), queries=100, real_texts=None,
                      near_duplicate_rows=100_000, ingest_sets=("longmemeval-s", "synth-short", "fixtures"),
                      spare_core_sets=("synth-short", "fixtures"), bandwidth_mb=1024, bulk_rows=20_000,
                      build_rows=100_000, background_tenants=400,
                      lexical_units=(1_000, 2_000, 4_000, 8_000, 16_000, 50_000)),
}  # fmt: skip


def bench_size(name: str) -> BenchSize:
    if name not in SIZES:
        raise ConfigError(f"bench size {name!r} is unknown; use one of {sorted(SIZES)}.")
    return SIZES[name]


def latency_verdict(low: float, high: float, goal: float = LATENCY_GOAL) -> str:
    """`met` when the whole interval of auto's p95 ratio is within the goal, `missed` when all of it is beyond,
    else `within noise` (this run cannot tell)."""
    if high <= goal:
        return "met"
    return "missed" if low > goal else "within noise"


def auto_goal(summary: pd.DataFrame, raw: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (rows, corpus, bucket): auto's recall and p95 against the faster fixed strategy for that bucket (the
    lowest p95 among fixed strategies reaching the recall goal; if none does, among all). With the raw
    per-query latencies (`search_raw`), the p95 ratio gets a 95% bootstrap interval over the queries (paired:
    both strategies ran the same queries) and a verdict: the latency goal counts as met unless the whole
    interval is beyond it. Without them the point ratio decides."""
    keys = ["rows_total", "corpus", "bucket"]
    cells = dict(iter(raw.groupby(keys, sort=False))) if raw is not None else {}
    out = []
    for (rows, corpus, bucket), grp in summary.groupby(keys, sort=False):
        auto = grp[grp.strategy == "auto"]
        fixed = grp[grp.strategy.isin(FIXED)]
        if auto.empty or fixed.empty:
            continue
        good = fixed[fixed.recall >= RECALL_GOAL]
        best = (good if len(good) else fixed).sort_values("latency_ms_p95").iloc[0]
        a = auto.iloc[0]
        ratio = float(a.latency_ms_p95 / best.latency_ms_p95) if best.latency_ms_p95 else float("nan")
        low = high = ratio
        cell = cells.get((rows, corpus, bucket))
        if cell is not None:
            mine = cell[cell.strategy == "auto"].sort_values("query").latency_ms.to_numpy()
            theirs = cell[cell.strategy == best.strategy].sort_values("query").latency_ms.to_numpy()
            if len(mine) == len(theirs) > 1:
                ratio, low, high = quantile_ratio_ci(mine, theirs, q=95)
        verdict = latency_verdict(low, high)
        out.append({"rows_total": rows, "corpus": corpus, "bucket": bucket, "tenant_rows": int(a.tenant_rows),
                    "queries": int(a.queries) if "queries" in a else None,
                    "auto_plan": a.plan, "auto_recall": float(a.recall), "auto_p95_ms": float(a.latency_ms_p95),
                    "best_fixed": best.strategy, "best_fixed_recall": float(best.recall),
                    "best_fixed_p95_ms": float(best.latency_ms_p95), "p95_vs_best_fixed": ratio,
                    "p95_ratio_low": low, "p95_ratio_high": high, "latency_verdict": verdict,
                    "goal_met": bool(a.recall >= RECALL_GOAL and verdict != "missed")})  # fmt: skip
    return pd.DataFrame(out)


def calibrate(summary: pd.DataFrame, current: AutoPolicy | None = None) -> AutoPolicy:
    """The rows up to which an exact scan of one user beats walking an index, from the largest table measured:
    exact latency grows with the user's rows (a least-squares line over the buckets); the per-tenant index
    costs about the same at any size. Users above the crossover get their own index (`EventMemory.maintain`)."""
    current = current or AutoPolicy()
    if summary.empty:
        return current
    biggest = summary[summary.rows_total == summary.rows_total.max()]
    real = biggest[biggest.corpus == "real"] if (biggest.corpus == "real").any() else biggest
    exact = real[real.strategy == "exact"]
    indexed = real[real.strategy == "partial"]
    if len(exact) < 2 or indexed.empty:
        return current
    slope, intercept = np.polyfit(exact.tenant_rows.astype(float), exact.latency_ms_p95.astype(float), 1)
    index_ms = float(indexed.latency_ms_p95.median())
    if slope <= 0:
        return current
    crossover = int(np.clip((index_ms - intercept) / slope, 1_000, 200_000))
    # auto's own tenant-index searches set its ef_search: where one fell short of the recall goal, twice as many
    # candidates (a tenant index's recall at the same ef_search differs from one build to the next).
    tenant = real[(real.strategy == "auto") & (real.plan == "tenant-index")]
    short = len(tenant) and bool((tenant.recall < RECALL_GOAL).any())
    tenant_ef = min(1000, current.tenant_ef_search * 2) if short else current.tenant_ef_search
    stamp = f"memlab bench {datetime.now(UTC):%Y-%m-%d}, {int(real.rows_total.max()):,} rows"
    return replace(current, exact_below=crossover, tenant_index_above=crossover, tenant_ef_search=tenant_ef,
                   calibrated_on=stamp)  # fmt: skip


FAISS_BATCHES = (1, 4, 16, 64, 256)  # queries per FAISS search call (1: one question at a time)
FAISS_GOAL = 0.5  # FAISS exact's share of the measured memory bandwidth


def fixed_growth(curve: pd.DataFrame) -> dict[str, float]:
    """`scaling.fixed.<strategy>.p95_vs_smallest`: the fixed small user's p95 on the largest real table over its
    p95 on the smallest (the goal: at most LATENCY_GOAL, a small user's cost flat as other users' data grows)."""
    real = curve[curve.corpus == "real"]
    out = {}
    for strategy, grp in real.groupby("strategy"):
        grp = grp.sort_values("rows_total")
        if len(grp) > 1 and grp.latency_ms_p95.iloc[0] > 0:
            out[f"scaling.fixed.{strategy}.p95_vs_smallest"] = float(grp.latency_ms_p95.iloc[-1]
                                                                     / grp.latency_ms_p95.iloc[0])  # fmt: skip
    return out


def small_user_plans(explains: pd.DataFrame, curve: pd.DataFrame) -> pd.DataFrame:
    """The fixed user's EXPLAIN per table size beside its measured p50 (auto, real corpus): `outside_server_ms`
    is the p50 minus the server's planning and execution, what the client, the connection pool and the round
    trips add."""
    auto = curve[(curve.corpus == "real") & (curve.strategy == "auto")].set_index("rows_total").latency_ms_p50
    out = explains.copy()
    out["client_p50_ms"] = out.rows_total.map(auto)
    out["outside_server_ms"] = out.client_p50_ms - out.planning_ms - out.execution_ms
    return out


def faiss_figures(sweep: pd.DataFrame, threads_bandwidth_ratio: float) -> dict[str, float]:
    """bench.json's FAISS sweep: `faiss.batch.<n>.<kernel>.*` at the most threads measured (and
    `faiss.batch.<n>.bandwidth_fraction`: the effective fraction of the faster kernel), `faiss.threads.<t>.*` for
    one query at a time, and the best single-query fraction against the one-thread and the all-threads
    bandwidth."""
    if sweep.empty:
        return {}
    most = sweep[sweep.threads == sweep.threads.max()]
    out = flat("faiss.batch", most, ["batch", "kernel"], ["bandwidth_fraction", "effective_fraction", "queries_per_s"])
    best = most.sort_values("effective_fraction").groupby("batch").tail(1)  # the faster kernel per batch size
    out |= {f"faiss.batch.{int(b)}.bandwidth_fraction": float(f) for b, f in zip(best.batch, best.effective_fraction,
                                                                                  strict=True)}  # fmt: skip
    single = sweep[sweep.batch == 1]
    out |= flat("faiss.threads", single, ["threads"], ["single_vectors_per_s", "bandwidth_fraction"])
    best = float(single.bandwidth_fraction.max()) if not single.empty else float("nan")
    out["faiss.single_best_bandwidth_fraction"] = best
    out["faiss.single_best_vs_threads_bandwidth"] = best / threads_bandwidth_ratio
    out["faiss.batch_best_effective_fraction"] = float(sweep.effective_fraction.max())
    out["faiss.goal_met_single"] = float(best >= FAISS_GOAL)
    out["faiss.goal_met_batched"] = float(out["faiss.batch_best_effective_fraction"] >= FAISS_GOAL)
    return out


def flat(prefix: str, frame: pd.DataFrame, keys: list[str], values: list[str]) -> dict[str, float]:
    """`prefix.<key values>.<value column>` -> number, for bench.json."""
    out = {}
    for row in frame.itertuples(index=False):
        stem = ".".join([prefix, *(str(getattr(row, k)) for k in keys)])
        for v in values:
            value = getattr(row, v)
            if value is not None and not (isinstance(value, float) and np.isnan(value)):
                out[f"{stem}.{v}"] = float(value)
    return out


def memory_part(
    store: Store, embedder: Embedder, spec: BenchSize, size: str, *, results: dict[str, float],
    tables: dict[str, pd.DataFrame], step: Callable[[str], None], progress: bool, calibrate_store: bool,
) -> dict[str, Any]:  # fmt: skip
    """memlab's own memory: the bandwidth, ingest, corpora, search per strategy and its scaling, serving,
    lexical search, FAISS, bulk writes and builds, and the calibrated auto policy. Fills `results` and `tables`;
    returns what the FAISS scan said of its build (bench.json's meta)."""
    model = getattr(embedder, "inner", embedder)
    # 1. The machine: memory bandwidth bounds every exact scan.
    bandwidth = hardware.memory_bandwidth(megabytes=spec.bandwidth_mb)
    results["memory.bandwidth_gb_per_s"] = bandwidth["gb_per_s"]
    both = hardware.memory_bandwidth(megabytes=spec.bandwidth_mb, threads=min(2, os.cpu_count() or 1))
    results["memory.bandwidth_threads_gb_per_s"] = both["gb_per_s"]  # what a scan on every core could stream
    step("bandwidth")

    # 2. Ingest at the model's speed, on every set of the size: long real turns, short generated ones in bulk, and
    # the small job of the fixtures (one batch: nothing to overlap).
    rows = []
    cores = os.cpu_count() or 1
    runs = [(name, None) for name in spec.ingest_sets]
    runs += [(name, cores - 1) for name in spec.spare_core_sets if cores > 1]
    for position, (name, threads) in enumerate(runs):
        sessions, rounds = ingest_set(name)
        rounds = spec.ingest_rounds or rounds
        ingest = measure_ingest(store, model, sessions, rounds=rounds, threads=threads)
        row = ingest.as_dict()
        rows.append({"set": name, **row})
        key = f"ingest.{name}" + (".spare_core" if threads is not None else "")
        keys = [key] + (["ingest"] if position == 0 else [])
        for key in keys:
            results.update({
                f"{key}.ratio": ingest.ratio, f"{key}.ratio_q1": row["ratio_q1"], f"{key}.ratio_q3": row["ratio_q3"],
                f"{key}.texts": ingest.texts,
                f"{key}.texts_per_s": ingest.ingest_texts_per_s,
                f"{key}.raw_encode_texts_per_s": ingest.raw_encode_per_s,
                f"{key}.units_per_s": ingest.ingest_units_per_s, f"{key}.seconds": ingest.ingest_seconds,
                f"{key}.reingest_seconds": ingest.reingest_seconds, f"{key}.reingest_share": ingest.reingest_share,
                f"{key}.reingest_embedded": ingest.reingest_embedded, f"{key}.rounds": ingest.rounds,
                f"{key}.model_threads": ingest.model_threads,
                f"{key}.first_load": float(ingest.path == PATH_FIRST_LOAD),
                f"{key}.index_upkeep_seconds": ingest.index_upkeep_seconds,
                f"{key}.nonmodel_seconds": ingest.nonmodel_seconds, f"{key}.serial_ratio": ingest.serial_ratio,
                f"{key}.nonmodel_budget_seconds": ingest.nonmodel_budget_seconds(),
                **{f"{key}.stage.{s}_seconds": ingest.stages.get(s, 0.0) for s in STAGES},
            })  # fmt: skip
        if position == 0 and spec.batch_sizes:
            batches = pd.DataFrame(measure_batch_sizes(store, model, sessions, sizes=spec.batch_sizes))
            tables["ingest_batches"] = batches
            results.update(flat("ingest.batch_units", batches, ["batch_units"], ["texts_per_s"]))
    tables["ingest"] = pd.DataFrame(rows)
    step("ingest")

    # 3. Corpora that look like memory: real turns (embedded once, cached), topped up with matched vectors.
    real = corpora.embedded(embedder, corpora.real_texts(spec.real_texts), name="real-texts", progress=progress)
    questions = corpora.embedded(embedder, corpora.real_questions(spec.queries), name="questions", query=True,
                                 progress=False)  # fmt: skip
    largest = max(spec.rows)
    real_corpus = corpora.corpus("real", largest, real)
    near = corpora.corpus("near_duplicate", spec.near_duplicate_rows, real)
    sample = min(len(real), 20_000)
    # At equal size (NN distances shrink as a corpus grows): real turns, the table searched (real topped up with
    # matched vectors, subsampled) and the near-duplicate stress corpus.
    dist = corpora.distribution_table({"real": real[:sample], "real+matched": real_corpus, "near_duplicate": near},
                                      size=sample)  # fmt: skip
    tables["corpora"] = dist
    results["corpus.real_texts"] = len(real)
    results.update(flat("corpus", dist, ["corpus"], ["p5", "p50", "p95", "ks"]))
    step("corpora")

    # 4. Search per strategy and tenant bucket at each size; the scaling curve follows one small user.
    frames, explains = [], []
    for rows in spec.rows:
        frames.append(search.search_bench(store, embedder, real_corpus[:rows], questions, total_rows=rows,
                                          corpus_name="real", background_tenants=spec.background_tenants,
                                          progress=progress))  # fmt: skip
        attrs = frames[-1].attrs
        results[f"search.real.{rows}.load_seconds"] = attrs.get("copy_s", np.nan) + attrs.get("index_s", np.nan)
        if "fixed_explain" in attrs:
            explains.append({"rows_total": rows, **attrs["fixed_explain"]})
        step(f"search real {rows:,}")
        if rows == largest:  # the largest table is still loaded: many clients at once, then search while writing
            served = concurrency.concurrency_bench(
                store, embedder, real_corpus[:rows], questions, corpora.real_questions(spec.queries), total_rows=rows,
                background_tenants=spec.background_tenants, corpus_name="real",
                **concurrency.CONCURRENCY_SIZES[size].kwargs())  # fmt: skip
            tables["concurrency"], figures = concurrency.summarize_concurrency(served)
            results.update(figures)
            step(f"concurrency {rows:,}")
            written = streaming.streaming_bench(store, embedder, real_corpus[:rows], questions, total_rows=rows,
                                                corpus_name="real", background_tenants=spec.background_tenants,
                                                size=size)  # fmt: skip
            tables["streaming"], figures = streaming.summarize_streaming(written)
            tables["streaming_writes"] = written.writes
            results.update(figures)
            step(f"search while writing {rows:,}")
    frames.append(search.search_bench(store, embedder, near, questions, total_rows=spec.near_duplicate_rows,
                                      corpus_name="near_duplicate", background_tenants=spec.background_tenants,
                                      progress=progress))  # fmt: skip
    step(f"search near-duplicate {spec.near_duplicate_rows:,}")
    search.clear(store, store.register_model(embedder.model_id, embedder.dimension).model_id)
    frame = pd.concat(frames, ignore_index=True)
    tables["search_raw"] = frame
    summary = search.summarize_search(frame)
    tables["search"] = summary
    results.update(flat("search", summary, ["corpus", "rows_total", "bucket", "strategy"],
                        ["recall", "latency_ms_p50", "latency_ms_p95", "latency_ms_p99"]))  # fmt: skip
    goal = auto_goal(summary, frame)
    tables["auto"] = goal
    top = goal[(goal.rows_total == largest) & (goal.corpus == "real")]
    results.update(flat("auto", top, ["bucket"], ["auto_recall", "auto_p95_ms", "p95_vs_best_fixed"]))
    results.update({k.replace(".auto_recall", ".recall"): v for k, v in results.items() if k.endswith(".auto_recall")})
    results["auto.goal_met_buckets"] = float(top.goal_met.sum())
    results["auto.goal_clearly_met_buckets"] = float((top.goal_met & (top.latency_verdict == "met")).sum())
    results.update(flat("auto", top, ["bucket"], ["p95_ratio_low", "p95_ratio_high"]))
    results["auto.buckets"] = float(len(top))
    curve = search.scaling_curve(frame)
    tables["scaling"] = curve
    results.update(flat("scaling", curve, ["corpus", "strategy", "rows_total"], ["latency_ms_p50", "latency_ms_p95"]))
    results.update(fixed_growth(curve))
    if explains:
        tables["fixed_explain"] = small_user_plans(pd.DataFrame(explains), curve)
        figures = ["planning_ms", "execution_ms", "shared_hit", "shared_read", "outside_server_ms"]
        results.update(flat("scaling.explain", tables["fixed_explain"], ["rows_total"], figures))

    # 4b. Lexical and hybrid search against vector search, one user per size (real turns as text).
    texts = corpora.real_texts(spec.real_texts)
    lexical = lexical_bench.lexical_bench(store, embedder, texts, real_corpus, corpora.real_questions(spec.queries),
                                          questions, sizes=spec.lexical_units, progress=progress)  # fmt: skip
    tables["lexical"] = lexical_bench.summarize_lexical(lexical)
    results.update(flat("lexical", tables["lexical"], ["units"], lexical_bench.SUMMARY_FIGURES))
    step("lexical and hybrid search")

    # 5. FAISS exact against the bandwidth bound, over the largest real table.
    # Per OpenMP thread count and queries per call: which kernel runs, and what share of the bandwidth it reaches.
    big = real_corpus.nbytes > 256 * 2**20  # a pass over this many rows is slow: fewer single questions, 2 repeats
    scan = hardware.faiss_scan(real_corpus, questions, bandwidth=bandwidth, batches=FAISS_BATCHES,
                               single_queries=8 if big else 32, repeat=2 if big else 3,
                               threads=tuple(range(1, min(2, os.cpu_count() or 1) + 1)))  # fmt: skip
    results.update({"faiss.vectors": scan["vectors"], "faiss.single_vectors_per_s": scan["single_vectors_per_s"],
                    "faiss.batch_vectors_per_s": scan["batch_vectors_per_s"],
                    "faiss.bandwidth_fraction": scan["bandwidth_fraction"],
                    "faiss.threads": scan["faiss_threads"],
                    "faiss.blas_threshold": scan["blas_threshold"]})  # fmt: skip
    sweep = pd.DataFrame(scan["sweep"])
    tables["faiss_sweep"] = sweep
    results.update(faiss_figures(sweep, both["bytes_per_s"] / bandwidth["bytes_per_s"]))
    meta_faiss = {k: scan[k] for k in ("compile_options", "blas_threshold", "blas")}
    del real_corpus, near
    step("faiss")

    # 6. Bulk writes and HNSW builds.
    writes = bulk.bulk_write(store, corpora.corpus("real", spec.bulk_rows, real), rows=spec.bulk_rows)
    tables["bulk_write"] = writes
    results.update(flat("bulk", writes, ["method", "index"], ["rows_per_s"]))
    builds = bulk.hnsw_build(store, corpora.corpus("real", spec.build_rows, real), rows=spec.build_rows)
    tables["hnsw_build"] = builds
    results.update(flat("hnsw_build", builds, ["m", "ef_construction"], ["seconds", "rows_per_s"]))
    step("bulk writes and builds")

    policy = calibrate(summary, store.auto_policy())
    tables["policy"] = pd.DataFrame([policy.__dict__])
    results.update({"policy.exact_below": policy.exact_below, "policy.tenant_index_above": policy.tenant_index_above})
    if calibrate_store:
        store.save_auto_policy(policy)
    return meta_faiss


def bench_parts(parts: Sequence[str] | None) -> tuple[str, ...]:
    """The parts asked for (None or empty: all of them), checked."""
    if not parts:
        return PARTS
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise ConfigError(f"bench part(s) {unknown} unknown; use one or more of {list(PARTS)} (none: all).")
    return tuple(p for p in PARTS if p in parts)


def run_bench(
    size: str = "ci", *, out: Path | None = None, dsn: str | None = None, calibrate_store: bool = False,
    progress: bool = False, log: Callable[[str], Any] = print, parts: Sequence[str] | None = None,
) -> Path:  # fmt: skip
    """Run the benchmarks of `size` ("ci": a couple of minutes; "full": 10k to 1M rows, hours on 2 cores) on
    the embedded PostgreSQL (or `dsn`), write `bench.json`, `bench.md` and CSVs under `out` (default
    reports/bench/<size>-<time>) and return that folder. `parts` (PARTS; default all): `memory` is memlab's own
    memory, `table-store` a user's own table measured where it is (memlab.lab.bench.table_store).
    `calibrate_store` saves the calibrated `auto` policy into the database benchmarked."""
    spec = bench_size(size)
    chosen = bench_parts(parts)
    store = open_store(dsn=dsn)  # first: a database that is down leaves no empty run folder behind
    out = Path(out or Path("reports") / "bench" / f"{size}-{datetime.now(UTC):%Y%m%dT%H%M%S}")
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    embedder = default_embedder()
    results: dict[str, float] = {}
    seconds: dict[str, float] = {}
    tables: dict[str, pd.DataFrame] = {}

    def step(name: str) -> None:
        seconds[name] = time.perf_counter() - started - sum(seconds.values())
        log(f"bench {size}: {name} done ({seconds[name]:.0f} s)")

    meta_faiss: dict[str, Any] = {}
    if MEMORY in chosen:
        meta_faiss = memory_part(store, embedder, spec, size, results=results, tables=tables, step=step,
                                 progress=progress, calibrate_store=calibrate_store)  # fmt: skip
    table_section: list[str] = []
    if TABLE_STORE in chosen:
        figures, more, table_section = table_store.table_store_bench(store.dsn, embedder, size, out, log=log)
        results.update(figures)
        tables.update(more)
        step("table store")
    results["peak_memory_mb"] = peak_memory_mb()
    results["seconds"] = time.perf_counter() - started
    store.close()

    for name, table in tables.items():
        table.to_csv(out / f"{name}.csv", index=False)
    meta = {"size": size, "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                        "platform": platform.platform()},
            "seconds_by_step": seconds, "policy_saved": calibrate_store, "faiss": meta_faiss,
            "parts": list(chosen)}  # fmt: skip
    (out / "bench.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1, sort_keys=True))
    serving = []
    if "concurrency" in tables:
        serving += concurrency.concurrency_section(tables["concurrency"], results)
    if "streaming" in tables:
        serving += streaming.streaming_section(tables["streaming"], results)
    (out / "bench.md").write_text(bench_markdown(meta, results, tables, spec, serving, table_section))
    return out
