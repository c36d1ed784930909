"""The filtered-search trap, measured: how many of a user's true nearest rows HNSW returns when that user
owns 0.01% to 10% of a table, across ef_search x iterative scan x max_scan_tuples, against the exact
strategy, a per-tenant partial index and FAISS exact over the user's own rows.

The corpus: queries are real questions, embedded; the users under test hold real sentence embeddings of
real text (drawn from a labelled set, with a little jitter only when a user needs more rows than there are
sentences), chosen on the query's topic, at random, or unrelated to it; everyone else is background built
from the same sentences plus Gaussian noise (see memlab.lab.datasets.synth.vectors), with skewed tenant sizes.

Every search goes through `EventMemory.search_vector` (the partial-index cells with
`SearchSettings(literal_scope=True)`), timed as a caller pays it, in a database of the sweep's own (see
`filtered_sweep`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.progress import track

from memlab.embedding.base import Embedder
from memlab.errors import ConfigError
from memlab.events.memory import EventMemory
from memlab.events.units import Unit
from memlab.lab.base.options import option
from memlab.lab.base.plots import recall_latency
from memlab.lab.base.redacted import write_csv
from memlab.lab.base.tables import markdown_table
from memlab.lab.datasets.model import Dataset
from memlab.lab.datasets.synth.vectors import background_rows, jitter
from memlab.lab.metrics.scoring import LONG_COLUMNS
from memlab.lab.runs.folder import RunFolder, save_table
from memlab.lab.runs.records import slug
from memlab.lab.sweeps.base import Sweep, SweepContext, distinct
from memlab.lab.systems.faiss_exact import FaissExact
from memlab.lab.systems.kinds import Env
from memlab.storage.servers import scratch_store
from memlab.storage.store import Store
from memlab.types import ITERATIVE_SCANS, SearchSettings

APP = "memlab-filtered"
LAYER = "bench:filtered"
MAX_SCAN_TUPLES = 1_000_000  # tuples an iterative HNSW scan may visit per search (pgvector's default: 20,000)


@dataclass(frozen=True)
class FilteredGrid:
    total_rows: int = 5_000
    shares: tuple[float, ...] = (0.0001, 0.001, 0.01, 0.1)
    relations: tuple[str, ...] = ("on_topic", "random", "unrelated")
    ef_search: tuple[int, ...] = (10, 40, 100, 400, 800)
    iterative: tuple[str, ...] = ("off", "relaxed_order", "strict_order")
    max_scan_tuples: tuple[int, ...] = (20_000,)
    queries: int = 5
    k: int = 10
    background_tenants: int = 40
    remedy_min_share: float = 0.01  # partial HNSW index for users at or above this share
    seed: int = 0
    settings_extra: dict = field(default_factory=dict)


def _tenant_sizes(total: int, n: int, rng: np.random.Generator) -> list[int]:
    """Zipf-like skew: a few big tenants, many small ones, summing to `total`."""
    weights = 1.0 / np.arange(1, n + 1) ** 1.1
    sizes = np.maximum(1, np.floor(weights / weights.sum() * total)).astype(int)
    sizes[0] += total - sizes.sum()
    return [int(s) for s in rng.permutation(sizes)]


def _user_vectors(base: np.ndarray, query: np.ndarray, n: int, relation: str, rng) -> np.ndarray:
    sims = base @ query
    order = np.argsort(-sims)
    pool = {"on_topic": order[: max(20, len(order) // 5)], "unrelated": order[len(order) // 2 :]}.get(relation, order)
    if n <= len(pool):
        return base[rng.choice(pool, size=n, replace=False)]
    return jitter(base[pool], n, noise=0.01, seed=int(rng.integers(1 << 30)))


def build_corpus(store: Store, embedder: Embedder, texts: list[str], questions: list[str], grid: FilteredGrid):
    """Load background and users under test in bulk (index built once, after the load)."""
    rng = np.random.default_rng(grid.seed)
    memory = EventMemory(store, embedder, layer=LAYER)
    base = embedder.embed_documents(texts)
    qvec = embedder.embed_documents(questions[: grid.queries])
    tenants = {}
    for share in grid.shares:
        for relation in grid.relations:
            n = max(1, round(share * grid.total_rows))
            tenants[f"t{share:g}-{relation}"] = (share, relation, n)
    under_test = sum(n for _, _, n in tenants.values())
    sizes = _tenant_sizes(max(grid.total_rows - under_test, 0), grid.background_tenants, rng)
    rows = list(background_rows(APP, {f"bg{i:03d}": s for i, s in enumerate(sizes)}, base, seed=grid.seed))
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for user, (_share, relation, n) in tenants.items():
        vectors = _user_vectors(base, qvec.mean(axis=0) / np.linalg.norm(qvec.mean(axis=0)), n, relation, rng)
        for i, v in enumerate(vectors):
            unit = Unit(f"{user}-s", f"{user}-{i}", (f"{user}-{i}",), "user", t0 + timedelta(minutes=i), f"row {i}")
            rows.append((APP, user, unit, v))
    store.delete_layer(APP, LAYER)
    memory.bulk_load(rows)
    return memory, tenants, qvec


def add_remedy(store: Store, memory: EventMemory, user: str) -> str:
    """A partial HNSW index over one tenant's rows: the graph is dense in rows the filter keeps."""
    return store.create_tenant_index(memory.model.model_id, LAYER, APP, user)


def _configs(grid: FilteredGrid) -> list[tuple[str, SearchSettings, bool]]:
    out = [
        (f"hnsw ef={ef} {it} mst={mst}", SearchSettings(top_k=grid.k, strategy="hnsw", ef_search=ef,
                                                         iterative_scan=it, max_scan_tuples=mst), False)
        for ef in grid.ef_search for it in grid.iterative for mst in grid.max_scan_tuples
    ]  # fmt: skip
    out.append(("exact", SearchSettings(top_k=grid.k, strategy="exact"), False))
    out.append(("planner ef=40 off", SearchSettings(top_k=grid.k, strategy="planner", iterative_scan="off"), False))
    return out


def filtered_sweep(
    store: Store, embedder: Embedder, texts: list[str], questions: list[str], grid: FilteredGrid | None = None,
    *, progress: bool = False,
) -> pd.DataFrame:  # fmt: skip
    """One row per (tenant, configuration, query): rows returned, recall@k vs FAISS exact over the tenant's
    rows, latency, the plan taken, rows removed by the filter (first query of each cell), predicted rows.

    Measured in a scratch database of the same server (dropped afterwards): the table the planner reads
    statistics of holds this sweep's rows only, so the `planner` cell does not depend on what else the run's
    database holds (other data sets, other sweeps), and the run's database is left as it was."""
    grid = grid or FilteredGrid()
    with scratch_store(store, prefix="memlab_filtered") as own:
        return _measure_cells(own, embedder, texts, questions, grid, progress)


def _measure_cells(
    store: Store, embedder: Embedder, texts: list[str], questions: list[str], grid: FilteredGrid, progress: bool
) -> pd.DataFrame:
    """`filtered_sweep` in the database it owns."""
    memory, tenants, qvecs = build_corpus(store, embedder, texts, questions, grid)
    exact = FaissExact.from_memory(memory, app_name=APP)
    # The per-tenant partial indexes are built only after every other cell ran: with them in place the planner
    # would serve those tenants from them even in the plain-HNSW cells.
    remedied = {u for u, (share, _, _) in tenants.items() if share >= grid.remedy_min_share}
    rows = []
    cells = [(u, c) for u in tenants for c in _configs(grid)] + [
        (u, ("partial index ef=40 off", SearchSettings(top_k=grid.k, strategy="hnsw", iterative_scan="off",
                                                      literal_scope=True), True))
        for u in sorted(remedied)
    ]  # fmt: skip
    if progress:
        cells = track(cells, description="filtered search")
    for user, (name, settings, literal) in cells:
        if literal and user in remedied:
            add_remedy(store, memory, user)
            remedied.discard(user)
        share, relation, n = tenants[user]
        for qi, vector in enumerate(qvecs):
            # a unit is (session, unit id): an event unit's id is its event id, unique within its session only
            truth = [(h.session_id, h.unit_id) for h in exact.search_vector(APP, user, vector, grid.k)]
            started = time.perf_counter()
            hits = memory.search_vector(APP, user, vector, settings)
            latency = (time.perf_counter() - started) * 1000
            removed, path = np.nan, ""
            if qi == 0:  # the plan of the same search, outside the timing
                plan = memory.explain_vector(APP, user, vector, settings)
                removed, path = plan.rows_removed_by_filter, plan.access_path
            found = [(h.session_id, h.unit_id) for h in hits]
            expected_rows = min(grid.k, n)
            rows.append({
                "tenant": user, "share": share, "relation": relation, "tenant_rows": n, "config": name,
                "strategy": settings.strategy, "ef_search": settings.ef_search,
                "iterative_scan": settings.iterative_scan,
                "max_scan_tuples": settings.max_scan_tuples, "query": qi, "returned": len(found),
                "recall": len(set(found) & set(truth)) / len(truth) if truth else 1.0,
                "empty": not found and expected_rows > 0, "short": len(found) < expected_rows,
                "latency_ms": latency, "rows_removed_by_filter": removed, "plan": path,
                "predicted_rows": min(grid.k, settings.ef_search * n / grid.total_rows)
                if settings.strategy == "hnsw" and settings.iterative_scan == "off" and not literal else np.nan,
            })  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["predicted_recall"] = frame.predicted_rows / np.minimum(grid.k, frame.tenant_rows)
    return frame


def summarize_filtered(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (share, config): recall, rows returned, empty/short rates, p50/p95 latency, prediction."""
    g = frame.groupby(["share", "config"], sort=False)
    out = g.agg(
        recall=("recall", "mean"), returned=("returned", "mean"), empty_rate=("empty", "mean"),
        short_rate=("short", "mean"), latency_ms_p50=("latency_ms", "median"),
        latency_ms_p95=("latency_ms", lambda s: float(np.percentile(s, 95))),
        rows_removed_by_filter=("rows_removed_by_filter", "mean"), predicted_recall=("predicted_recall", "mean"),
        ef_search=("ef_search", "first"), iterative_scan=("iterative_scan", "first"), strategy=("strategy", "first"),
    ).reset_index()  # fmt: skip
    out["size_bucket"] = out.share.map(lambda s: f"{s:.2%}")
    out["series"] = [
        c.split(" ef=")[0] if not c.startswith("hnsw") else f"hnsw {it}"
        for c, it in zip(out.config, out.iterative_scan, strict=True)
    ]
    return out


# -- the sweep: measure on any data set's texts and questions ------------------------------------------------

GRID = FilteredGrid()  # the defaults of the options below


@dataclass(frozen=True)
class FilteredOptions:
    total_rows: int = option(GRID.total_rows, "rows in the table: the background tenants fill what the tenants "
                                              "under test leave", low=1, high=10_000_000)  # fmt: skip
    shares: list[float] = option(list(GRID.shares), "each tenant under test's share of the table", low=1e-9,
                                 high=1.0)  # fmt: skip
    relations: list[str] = option(list(GRID.relations), "how a tenant's rows relate to the queries",
                                  choices=GRID.relations)  # fmt: skip
    ef_search: list[int] = option(list(GRID.ef_search), "the HNSW ef_search values timed", low=1, high=1000)
    iterative: list[str] = option(list(GRID.iterative), "the iterative scan modes timed", choices=ITERATIVE_SCANS)
    max_scan_tuples: list[int] = option(list(GRID.max_scan_tuples), "the iterative scans' tuple budgets timed",
                                        low=1, high=MAX_SCAN_TUPLES)  # fmt: skip
    queries: int = option(GRID.queries, "questions asked of each tenant and configuration", low=1, high=100_000)
    k: int = option(GRID.k, "hits per search", low=1, high=1000)
    background_tenants: int = option(GRID.background_tenants, "tenants that fill the rest of the table", low=1,
                                     high=100_000)  # fmt: skip
    remedy_min_share: float = option(GRID.remedy_min_share, "tenants at or above this share get a partial HNSW "
                                                            "index (the remedy)", low=0.0, high=1.0)  # fmt: skip
    seed: int = option(GRID.seed, "the seed of the tenants' sizes and rows", low=0, high=2**32 - 1)
    texts: int = option(3000, "at most this many of the data set's texts become the tenants' rows", low=1,
                        high=1_000_000)  # fmt: skip

    def check(self, where: str) -> None:
        """The tenants under test (each share of the table, once per relation) fit in the table."""
        if sum(self.shares) * len(self.relations) > 1:
            raise ConfigError(f"{where}: the tenants under test would hold sum(shares) x relations = "
                              f"{sum(self.shares):g} x {len(self.relations)} of the table, more than all of it; give "
                              "smaller shares")  # fmt: skip

    def grid(self) -> FilteredGrid:
        return FilteredGrid(**{name: tuple(value) if isinstance(value, list) else value
                               for name, value in self.__dict__.items() if name != "texts"})  # fmt: skip


def measure(env, dataset, options: FilteredOptions, context, out) -> None:
    """The trap measured with the data set's own texts (as tenants' rows) and questions (as queries)."""
    grid = options.grid()
    texts = dataset.texts()[: options.texts]
    questions = [q.text for q in dataset.questions if q.answerable] or [q.text for q in dataset.questions]
    if len(texts) < 5 or not questions:
        return
    frame = filtered_sweep(env.store, env.embedder("default"), texts, questions, grid, progress=env.progress)
    save_table(out, "filtered", dataset.name, frame.assign(total_rows=grid.total_rows))


def system_name(config: str) -> str:
    """The name the filtered sweep's figures for one tenant configuration are recorded under (role: measure)."""
    return f"filtered:{config.replace(' mst=', ' mst').replace('=', '').replace(' ', '-')}"


def scores(folder, dataset: str, options: dict, base: pd.DataFrame) -> pd.DataFrame:
    frame = folder.table("filtered", dataset)
    rows = []
    if frame is None:
        return pd.DataFrame(rows, columns=LONG_COLUMNS)
    summary = summarize_filtered(frame)
    queries = frame.groupby(["share", "config"]).size()
    for r in summary.itertuples(index=False):
        n = int(queries[(r.share, r.config)])
        for metric in ("recall", "empty_rate", "latency_ms_p50", "latency_ms_p95"):
            name = "recall_vs_exact" if metric == "recall" else metric
            rows.append((dataset, system_name(r.config), name, "share", f"{r.share:g}", float(getattr(r, metric)), n))
    return pd.DataFrame(rows, columns=LONG_COLUMNS)


def section(folder, dataset: str, options: dict) -> str | None:
    frame = folder.table("filtered", dataset)
    if frame is None:
        return "Skipped: the data set has fewer than 5 distinct texts or no questions."
    fs = summarize_filtered(frame)
    stem = slug(dataset)  # the file name every output of this data set uses (distinct names, distinct files)
    figure = folder.figure(f"filtered__{stem}.png", "filtered", lambda png: recall_latency(
        fs, png, series="series", predicted="predicted_recall", order="ef_search", k=folder.k))  # fmt: skip
    fs[["size_bucket", "config", "recall", "returned", "empty_rate", "short_rate", "latency_ms_p50", "latency_ms_p95",
        "predicted_recall"]].pipe(write_csv, folder.path / f"filtered__{stem}.csv")
    smallest = fs[fs.share == fs.share.min()]
    headline = smallest[smallest.config.str.contains("ef=40 ") | (smallest.config == "exact")]
    total = int(frame.total_rows.iloc[0]) if "total_rows" in frame else 0
    return "\n".join([
        f"{total:,} rows; the tenants under test hold this data set's texts, the queries are its questions. "
        "`recall` here is recall@k against FAISS exact over the tenant's own rows.", "",
        "Smallest tenant, ef_search=40:", "",
        markdown_table(headline[["size_bucket", "config", "recall", "returned", "empty_rate", "latency_ms_p50",
                                 "latency_ms_p95", "rows_removed_by_filter"]]), *figure, "",
        f"All {len(fs)} cells (every tenant size x configuration, with predicted recall and the short-result rate) "
        f"are in `filtered__{stem}.csv`.",
    ])  # fmt: skip


class FilteredSweep(Sweep):
    """The filtered-search trap on the data set's own texts and questions: recall against FAISS exact by tenant
    share, across ef_search x iterative scan, exact, planner and a per-tenant partial index."""

    name = "filtered"
    measures = True
    options_type = FilteredOptions

    def planned(self, options: dict[str, Any], config: dict[str, Any]) -> int:
        """Searches timed: tenants under test x configurations (with exact, planner, partial index) x queries."""

        def n(key: str) -> int:
            return distinct(options[key]) if key in options else len(getattr(GRID, key))

        configs = n("ef_search") * n("iterative") * n("max_scan_tuples") + 3
        return n("shares") * n("relations") * configs * int(options.get("queries", GRID.queries))

    def measure(self, env: Env, dataset: Dataset, options: dict[str, Any], context: SweepContext,
                out: Path) -> None:  # fmt: skip
        measure(env, dataset, self.typed(options), context, out)

    def scores(self, folder: RunFolder, dataset: str, options: dict[str, Any], base: pd.DataFrame) -> pd.DataFrame:
        return scores(folder, dataset, options, base)

    def section(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
        return section(folder, dataset, options)
