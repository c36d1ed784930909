"""bench.md's section "Table store": the figures of memlab.lab.bench.table_store as a page reads them."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from memlab.lab.base.tables import markdown_table
from memlab.lab.bench.markdown import fig
from memlab.lab.bench.table_timing import GOAL

EXPLAIN_SHOWN = ["system", "user_size", "rows", "strategy", "index_used", "access", "planning_ms", "execution_ms",
                 "shared_hit", "shared_read"]  # fmt: skip
TIMING_SHOWN = ["system", "strategy", "ef_search", "iterative_scan", "questions", "rounds", "memlab_ms_p50",
                "bare_ms_p50", "app_ms_p50", "p50_ratio", "p50_ratio_low", "p50_ratio_high", "app_ratio",
                "memlab_vs_app", "memlab_ms_p95", "bare_ms_p95", "p95_ratio", "same_results", "verdict"]  # fmt: skip


def _get(results: dict[str, float], key: str) -> float:
    return float(results.get(key, float("nan")))


def _count(results: dict[str, float], key: str) -> str:
    value = _get(results, key)
    return "n/a" if value != value else f"{int(value):,}"


def timing_line(results: dict[str, float], system: str) -> str:
    p = f"table_store.timing.{system}"
    return (f"`{system}` {fig(_get(results, f'{p}.p50_ratio'))} x (95% interval "
            f"{fig(_get(results, f'{p}.p50_ratio_low'))}..{fig(_get(results, f'{p}.p50_ratio_high'))}; "
            f"{fig(_get(results, f'{p}.memlab_ms_p50'))} vs {fig(_get(results, f'{p}.bare_ms_p50'))} ms)")


def table_store_section(results: dict[str, float], tables: dict[str, pd.DataFrame],
                        cutoffs: Sequence[str]) -> list[str]:  # fmt: skip
    """The section's lines: what was built, the headline figures, the grid, recall by memory size, the plans and
    memlab's time against the bare statement."""
    r = results
    k = "recall@10"
    lines = [
        "## Table store", "",
        "`memlab eval` on the design article's `agent_memory` table (its DDL as printed, "
        f"vector({_count(r, 'table_store.dimension')})), built for this run in a database of its own: "
        f"{_count(r, 'table_store.rows')} rows of {_count(r, 'table_store.users')} users "
        f"({_count(r, 'table_store.user_rows_min')} to {_count(r, 'table_store.user_rows_max')} rows each, "
        "log-uniform: memlab-synth) loaded by COPY in "
        f"{fig(_get(r, 'table_store.copy_seconds'))} s, its HNSW index (vector_cosine_ops, pgvector's default "
        f"m and ef_construction) and scope index built after in {fig(_get(r, 'table_store.index_seconds'))} s "
        f"(HNSW {fig(_get(r, 'table_store.hnsw_bytes') / 2**20)} MB). "
        f"{_count(r, 'table_store.questions')} questions ({_count(r, 'table_store.answerable')} answerable, the "
        "rest no-answer), asked as a role that may only SELECT the table; the run folder is `table-store/run` "
        "(its report.md has the table sweep's section). `recall_vs_exact`: the share of FAISS exact's top 10 "
        "over the table's own vectors that a search returned.", "",
        f"- **exact**: {k} {fig(_get(r, f'table_store.exact.{k}'))}, recall_vs_exact "
        f"{fig(_get(r, 'table_store.exact.recall_vs_exact'))} (FAISS exact {k} "
        f"{fig(_get(r, f'table_store.faiss_exact.{k}'))}).",
        f"- **hnsw** (ef_search 40, iterative scan relaxed_order): {k} {fig(_get(r, f'table_store.hnsw.{k}'))}, "
        f"recall_vs_exact {fig(_get(r, 'table_store.hnsw.recall_vs_exact'))}.",
        f"- **memlab's time per question** over the bare SELECT's (the median question; goal <= {GOAL}): "
        f"{timing_line(r, 'hnsw')}, {timing_line(r, 'exact')}.",
        f"- **`memlab probe --store`** (hnsw, the same {_count(r, 'table_store.probe.questions')} questions, in a "
        "process of its own): its time per question over the bare statement's as the probe measures it (the "
        "statement alone on the probe's connection, after its transaction and settings): p50 "
        f"{fig(_get(r, 'table_store.probe.p50_ratio_to_bare_sql'))} x "
        f"({fig(1000 * _get(r, 'table_store.probe.p50_seconds_per_question'))} vs "
        f"{fig(1000 * _get(r, 'table_store.probe.bare_sql_p50_seconds_per_question'))} ms), mean "
        f"{fig(_get(r, 'table_store.probe.ratio_to_bare_sql'))} x; the whole probe took "
        f"{fig(_get(r, 'table_store.probe.wall_seconds'))} s (its run folder: `table-store/probe/run`).",
        *[f"- {line}" for line in cutoffs], "",
    ]  # fmt: skip
    grid = tables.get("table_store_grid")
    if grid is not None and len(grid):
        lines += ["### ef_search x iterative scan", "",
                  "The `hnsw` system walked with each setting (the table sweep's grid). Latency in ms per search "
                  "as `memlab eval` paid it; `p50_vs_faiss_exact`: its p50 over FAISS exact's (in memory, per "
                  "user) in the same run.", "", markdown_table(grid), ""]  # fmt: skip
    sizes = tables.get("table_store_sizes")
    if sizes is not None and len(sizes):
        lines += ["### Recall by memory size", "", "Users bucketed by their rows in the table.", "",
                  markdown_table(sizes), ""]  # fmt: skip
    plans = tables.get("table_store_explain")
    if plans is not None and len(plans):
        lines += ["### Plans of the smallest and the largest user", "",
                  "EXPLAIN (ANALYZE, BUFFERS) of each configured system's search for the smallest and the largest "
                  "user asked (`index_used`: the plan walked the HNSW index).", "",
                  markdown_table(plans[[c for c in EXPLAIN_SHOWN if c in plans.columns]]), ""]  # fmt: skip
    timing = tables.get("table_store_timing")
    if timing is not None and len(timing):
        lines += ["### memlab against the bare statement", "",
                  "Per question, the vector embedded beforehand for every path: `memlab` is the table system's "
                  "search (`TableStore.search`: its pool, read-only transaction, timeouts, check and settings in "
                  "one round trip, and hits); `bare` the same SELECT alone on a plain autocommit psycopg "
                  "connection whose session holds the same settings (one round trip: the query's own time); `app` "
                  "the SELECT as the design article's service sends it (BEGIN, SET LOCAL, SELECT, COMMIT, one "
                  "statement at a time). The paths take turns question by question; each question's time is its "
                  "median over the rounds; `p50_ratio` (memlab over bare; 95% bootstrap interval over the "
                  "questions), `app_ratio` (app over bare) and `memlab_vs_app` are ratios of the p50s over the "
                  "questions. `same_results`: the share of questions where all three returned the same ids in the "
                  f"same order. `verdict` against the goal {GOAL}: `met` (the whole interval within it), `missed`, "
                  "or `within noise`.", "",
                  markdown_table(timing[[c for c in TIMING_SHOWN if c in timing.columns]]), ""]  # fmt: skip
    return lines


__all__ = ["table_store_section"]
