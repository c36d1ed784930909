"""The table-store sweep: what a user's own pgvector table does with its index, on a data set read from it.

- a grid of `ef_search` x `iterative_scan` over each parent table system (HNSW walked with those settings, each
  point a system of its own, scored against FAISS exact over the table's vectors: recall_vs_exact);
- EXPLAIN (ANALYZE, BUFFERS) of each configured table system's search for the smallest and the largest user of
  the data set (by rows in the table), and whether the plan walked the vector index;
- its report section: the table's catalog (indexes, the distance each operator class serves, the model check),
  the grid, the plans, and recall@k and the empty rate by memory size (users bucketed by their rows).

Options (all optional): `systems` (the parents; default the first configured table system of each store and
distance), `ef_search` ([10, 40, 100, 200]), `iterative_scan` ([off, relaxed_order, strict_order]), `explain`
(true)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memlab.lab.base.options import option
from memlab.lab.base.tables import breakdown, markdown_table
from memlab.lab.datasets.model import Dataset
from memlab.lab.metrics.scoring import LONG_COLUMNS
from memlab.lab.runs.folder import RunFolder, save_table
from memlab.lab.sweeps.base import Sweep, SweepContext, distinct
from memlab.lab.systems.kinds import Env
from memlab.lab.systems.roles import MAIN, REFERENCE, SWEEP, SystemRole
from memlab.lab.systems.table import TableSystem, store_of_dataset
from memlab.table_store.store import HNSW_MAX_EF_SEARCH, ITERATIVE_SCANS

NAME = "table"
DEFAULT_EF_SEARCH = (10, 40, 100, 200)
EXPLAIN_COLUMNS = ["system", "user_size", "user_id", "rows", "strategy", "distance", "index", "index_used", "access",
                   "planning_ms", "execution_ms", "shared_hit", "shared_read"]  # fmt: skip


@dataclass(frozen=True)
class TableOptions:
    systems: list[str] | None = option(None, "the table systems the grid varies (default: one per store and "
                                             "distance, the first that walks an index)")  # fmt: skip
    ef_search: list[int] = option(list(DEFAULT_EF_SEARCH), "the hnsw.ef_search values of the grid", low=1,
                                  high=HNSW_MAX_EF_SEARCH)  # fmt: skip
    iterative_scan: list[str] = option(list(ITERATIVE_SCANS), "the hnsw.iterative_scan values of the grid",
                                       choices=ITERATIVE_SCANS)  # fmt: skip
    explain: bool = option(True, "EXPLAIN (ANALYZE, BUFFERS) each configured table system's search for the "
                                 "smallest and the largest user")  # fmt: skip


def grid_name(parent: str, ef_search: int, iterative_scan: str) -> str:
    return f"{parent}@ef{ef_search}-{iterative_scan}"


def parents(options: TableOptions, context: SweepContext) -> list[TableSystem]:
    """The table systems the grid varies: `options.systems`, else one configured system of each (store, distance,
    embedder), the first that walks an index (strategy hnsw or auto) where one does."""
    tables = [s for s in context.systems if isinstance(s, TableSystem)]
    if options.systems:
        return [s for s in tables if s.name in options.systems]
    first: dict[tuple, TableSystem] = {}
    for system in sorted(tables, key=lambda s: s.strategy not in ("hnsw", "auto")):  # stable: config order kept
        first.setdefault((system.store, system.distance, system.embedder), system)
    return list(first.values())


def _explained(context: SweepContext) -> list[TableSystem]:
    """The configured table systems (not the grid's points: one plan per configuration the user named)."""
    configured = {s.get("name") for s in context.config.get("systems", [])}
    return [s for s in context.systems if isinstance(s, TableSystem) and s.name in configured]


def explain_frame(env: Env, dataset: Dataset, systems: list[TableSystem]) -> pd.DataFrame:
    """EXPLAIN (ANALYZE, BUFFERS) of each system's search for the smallest and the largest asking user, with
    that user's first question."""
    asked: dict[tuple[str, str], str] = {}
    for q in dataset.questions:
        asked.setdefault((q.app_name, q.user_id), q.text)
    users = sorted((u for u in dataset.users if (u.app_name, u.user_id) in asked),
                   key=lambda u: (u.event_count, u.user_id))  # fmt: skip
    ends = {"smallest": users[0], "largest": users[-1]} if users else {}
    prefix = f"{dataset.name}/"
    rows = []
    for system in systems:
        handle = env.handle(system, dataset)  # the opened table (its model check passed before the first search)
        embedder = env.embedder(system.embedder)
        for size, user in ends.items():
            vector = np.asarray(embedder.embed_query(asked[(user.app_name, user.user_id)]), dtype=np.float32)
            plan = handle.table.explain(user.app_name.removeprefix(prefix), user.user_id, vector, k=system.k or env.k,
                                        **system.search_settings())  # fmt: skip
            rows.append((system.name, size, user.user_id, user.event_count, plan.strategy, plan.distance, plan.index,
                         plan.index_used, plan.access, plan.planning_ms, plan.execution_ms, plan.shared_hit,
                         plan.shared_read))  # fmt: skip
    return pd.DataFrame(rows, columns=EXPLAIN_COLUMNS)


def _catalog_lines(folder: RunFolder, dataset: str) -> list[str]:
    """The table's catalog and model check as the run recorded them (manifest `stores`)."""
    cfg = folder.manifest.get("config", {}).get("resolved", {})
    store = store_of_dataset(cfg, dataset)
    facts = (folder.manifest.get("stores") or {}).get(store)
    if not facts:
        return []
    lines = [f"Store `{store}`: table `{facts['table']}` ({facts['embedding_type']}({facts['dimension']}), about "
             f"{facts['estimated_rows']} rows, pgvector {facts['vector_version']}); searches measure "
             f"{facts['default_distance']} distance by default.", ""]  # fmt: skip
    if facts["indexes"]:
        indexes = pd.DataFrame(facts["indexes"])
        indexes["params"] = indexes.params.map(lambda p: ", ".join(f"{k}={v}" for k, v in sorted(p.items())))
        lines += [markdown_table(indexes[["name", "method", "opclass", "distance", "params", "valid", "partial"]]), ""]
    else:
        lines += ["The table has no vector index: every search scans the user's rows.", ""]
    served = [d for d, used in facts["index_used_for"].items() if used]
    lines += [f"An index serves {', '.join(served) or 'no'} distance; a search by any other scans the user's rows "
              "(an operator that does not match the index's operator class is ignored by the planner).", ""]
    checks = pd.DataFrame(facts.get("model_checks") or [])
    if len(checks):
        lines += ["Model check (stored texts re-embedded and compared with their stored vectors, before any search):",
                  "", markdown_table(checks[["app", "embedder", "model", "sample", "mean_cosine", "min_cosine",
                                             "matches"]]), ""]  # fmt: skip
    return lines


def _grid_table(folder: RunFolder, dataset: str, scores: pd.DataFrame, k: int) -> pd.DataFrame:
    points = scores[(scores.role == SWEEP) & (scores.sweep == NAME)]
    metrics = [f"recall@{k}", "recall_vs_exact", "empty_rate", "latency_ms_p50", "latency_ms_p95"]
    points = points[points.metric.isin(metrics)]
    if points.empty:
        return pd.DataFrame()
    wide = points.pivot_table(index="system", columns="metric", values="value", sort=False).reset_index()
    point = {name: folder.described(dataset, name) for name in wide.system}  # the settings as recorded, by system
    wide = wide.assign(parent=[point[n].get("grid_of", n) for n in wide.system],
                       ef_search=pd.array([point[n].get("ef_search") for n in wide.system], dtype="Int64"),
                       iterative_scan=[point[n].get("iterative_scan") for n in wide.system])  # fmt: skip
    cols = ["parent", "ef_search", "iterative_scan", *[m for m in metrics if m in wide.columns]]
    return wide[cols].sort_values(["parent", "iterative_scan", "ef_search"]).reset_index(drop=True)


class TableSweep(Sweep):
    """A table store's index settings (ef_search x iterative scan against FAISS exact), its plans for the smallest
    and largest user, and recall by memory size."""

    name = NAME
    measures = True

    options_type = TableOptions

    def planned(self, options: dict[str, Any], config: dict[str, Any]) -> int:
        typed = self.typed(options)
        tables = sum(1 for s in config.get("systems") or [] if isinstance(s, dict) and "store" in s)
        named = distinct(typed.systems) if typed.systems else tables
        return named * distinct(typed.ef_search) * distinct(typed.iterative_scan) + 2 * tables

    def systems(self, dataset: Dataset, options: dict[str, Any], context: SweepContext) -> list[TableSystem]:
        typed = self.typed(options)
        efs, scans = sorted(set(typed.ef_search)), list(dict.fromkeys(typed.iterative_scan))
        return [replace(p, name=grid_name(p.name, ef, scan), strategy="hnsw", ef_search=ef, iterative_scan=scan,
                        grid_of=p.name) for p in parents(typed, context) for scan in scans for ef in efs]  # fmt: skip

    def measure(self, env: Env, dataset: Dataset, options: dict[str, Any], context: SweepContext,
                out: Path) -> None:  # fmt: skip
        systems = _explained(context)
        if self.typed(options).explain and systems:
            save_table(out, NAME, dataset.name, explain_frame(env, dataset, systems))

    def scores(self, folder: RunFolder, dataset: str, options: dict[str, Any], base: pd.DataFrame) -> pd.DataFrame:
        """Per explained system and user size: whether the plan used the vector index (1/0) and its execution
        time, as `index_used[user=smallest]` and `explain_ms[user=largest]`."""
        frame = folder.table(NAME, dataset)
        if frame is None or frame.empty:
            return pd.DataFrame(columns=LONG_COLUMNS)
        rows = [(dataset, r.system, metric, "user", r.user_size, float(value), 1) for r in frame.itertuples()
                for metric, value in (("index_used", r.index_used), ("explain_ms", r.execution_ms))]  # fmt: skip
        return pd.DataFrame(rows, columns=LONG_COLUMNS)

    def section(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
        cfg = folder.manifest.get("config", {}).get("resolved", {})
        if store_of_dataset(cfg, dataset) is None:
            return None  # a data set of memlab's own: no table here
        k = folder.k
        scores = folder.scores[folder.scores.dataset == dataset]
        runs = folder.runs(dataset)
        parts = _catalog_lines(folder, dataset)
        grid = _grid_table(folder, dataset, scores, k)
        if len(grid):
            parts += ["HNSW walked with each `ef_search` x `iterative_scan` (recall_vs_exact against FAISS exact over "
                      "the table's own vectors):", "", markdown_table(grid), ""]  # fmt: skip
        plans = folder.table(NAME, dataset)
        if plans is not None and len(plans):
            parts += ["EXPLAIN (ANALYZE, BUFFERS) for the smallest and the largest user (`index_used`: the plan "
                      "walked the vector index):", "", markdown_table(plans), ""]  # fmt: skip
        main = [s for s, r in runs.items() if (r.role or SystemRole()).role in (MAIN, REFERENCE)]
        for metric in (f"recall@{k}", "empty_rate"):
            wide = breakdown(scores, main, metric, "size")
            if wide is not None:
                parts += [f"{metric} by memory size (users bucketed by their rows in the table):", "",
                          markdown_table(wide), ""]  # fmt: skip
        return "\n".join(parts).rstrip() or None


__all__ = ["TableOptions", "TableSweep", "explain_frame", "grid_name", "parents"]
