"""bench.md: the figures of one `memlab bench` run as a page an engineer reads top to bottom. Counts print as
integers, rates and ratios to three significant places; every table names its units."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from memlab.lab.base.tables import markdown_table
from memlab.lab.bench.ingest_sets import describe
from memlab.lab.systems.ingest_timing import RATIO_GOAL


def fig(value: float, digits: int = 3) -> str:
    """A figure for bench.md: n/a for NaN, thousands separators from 100, else `digits` significant digits."""
    if value != value:  # NaN
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def _get(results: dict[str, float], key: str) -> float:
    return float(results.get(key, float("nan")))


def bench_markdown(
    meta: dict[str, Any], results: dict[str, float], tables: dict[str, pd.DataFrame], spec,
    serving: Sequence[str] = (), table_store: Sequence[str] = (),
) -> str:  # fmt: skip
    """bench.md. `serving`: the concurrency and streaming sections' lines, `table_store` the table store's (their
    modules render them: they import this one's helpers, so it cannot import them). A run of the table-store
    part alone has no headline of memlab's own memory."""
    r = results
    ingest = tables.get("ingest", pd.DataFrame())
    lines = [
        f"# memlab bench ({meta['size']})", "",
        f"Finished {meta['finished']} on {meta['machine']['cpus']} cores ({meta['machine']['platform']}); "
        f"{fig(_get(r, 'seconds') / 60)} minutes; peak memory of the bench process "
        f"{fig(_get(r, 'peak_memory_mb'))} MB. "
        "Every figure below was measured in this run; compare runs by the ratios, not the seconds.", "",
    ]  # fmt: skip
    lines += [] if "ingest" not in tables else [
        "## Headline", "",
        f"- **Ingest** (`{ingest['set'].iloc[0] if not ingest.empty else '?'}`): {fig(_get(r, 'ingest.ratio'))} x the "
        "model's raw encode rate on the same "
        f"{int(_get(r, 'ingest.texts')):,} texts ({fig(_get(r, 'ingest.texts_per_s'))} vs "
        f"{fig(_get(r, 'ingest.raw_encode_texts_per_s'))} texts/s; the median of {int(_get(r, 'ingest.rounds'))} "
        f"rounds, the middle half of them {fig(_get(r, 'ingest.ratio_q1'))}..{fig(_get(r, 'ingest.ratio_q3'))}); "
        "re-ingest of the stored corpus took "
        f"{fig(100 * _get(r, 'ingest.reingest_share'))}% of the first ingest's time and embedded "
        f"{int(_get(r, 'ingest.reingest_embedded'))} texts. By ingest set: "
        + ", ".join(f"`{row['set']}` {fig(row['ratio'])} ({int(row['model_threads'])} model threads)"
                    for _, row in ingest.iterrows())
        + ".",
        f"- **auto**: goal (recall@10 >= 0.99 vs FAISS exact, p95 <= 1.2 x the faster fixed strategy) met in "
        f"{int(_get(r, 'auto.goal_met_buckets'))} of {int(_get(r, 'auto.buckets'))} tenant buckets at "
        f"{max(spec.rows):,} rows (real corpus), {int(_get(r, 'auto.goal_clearly_met_buckets'))} of them clearly "
        f"(the whole 95% interval of the p95 ratio within 1.2, over {spec.queries} queries per bucket; the others "
        "are within noise: their interval holds 1.2).",
        f"- **FAISS exact** scans {fig(_get(r, 'faiss.single_vectors_per_s'))} vectors/s per query, "
        f"{fig(_get(r, 'faiss.bandwidth_fraction'))} of the memory bandwidth measured in the same run "
        f"({fig(_get(r, 'memory.bandwidth_gb_per_s'))} GB/s); one question at a time at best "
        f"{fig(_get(r, 'faiss.single_best_bandwidth_fraction'))}, batched questions up to "
        f"{fig(_get(r, 'faiss.batch_best_effective_fraction'))} (effective: vector bytes per question x questions/s). "
        f"{faiss_verdict(r)}",
        f"- **Small user**: the fixed 50-row user's `auto` p95 on the largest table is "
        f"{fig(_get(r, 'scaling.fixed.auto.p95_vs_smallest'))} x its p95 on the smallest (goal <= 1.2; exact "
        f"{fig(_get(r, 'scaling.fixed.exact.p95_vs_smallest'))} x).",
        "",
    ]  # fmt: skip
    if not ingest.empty:
        sets = pd.DataFrame([{
            "set": row["set"], "model threads": int(row.model_threads), "texts": int(row.texts),
            "sessions": int(row.sessions), "rounds": int(row.rounds),
            "raw encode texts/s": row.raw_encode_per_s, "ingest texts/s": row.ingest_texts_per_s, "ratio": row.ratio,
            "ratio q1..q3": f"{fig(row.ratio_q1)}..{fig(row.ratio_q3)}",
            **{f"{s.replace('_', ' ')} s": row.get(f"{s}_seconds", 0.0)
               for s in ("filter", "lookup", "embed", "write", "index_build")},
            "index upkeep s": row.index_upkeep_seconds, "model-free s": row.get("nonmodel_seconds", float("nan")),
            "serial ratio": row.get("serial_ratio", float("nan")), "re-ingest share": row.reingest_share,
            "path": row.get("path") or "",
        } for _, row in ingest.iterrows()])  # fmt: skip
        lines += [
            "## Ingest", "",
            "The ingest rate against the model's raw encode rate on the same distinct texts, measured side by side "
            "(the raw encodes just before and after each ingest); with several rounds, the round with the median "
            "ratio, and the first to third quartile of the rounds' ratios (`ratio q1..q3`: this machine's noise). "
            "Seconds per stage: `filter` includes the secret scan; `embed` is the model inside the ingest; "
            "`write` is the COPY with every index's upkeep; `index build` is the HNSW build after a first load "
            "(`copy-first-load`) into a layer that then needs its index; `index upkeep` is what the HNSW index "
            "cost in all (write and build, less the same writes into a layer without it): none for a set small "
            "enough for `auto` to scan every user exactly, whose layer gets no index until a search walks it. "
            "Stages run one after another, batch after batch; the build comes after them. `model-free` is the "
            "same first load again with every vector cached (the model is never called): all the ingest does "
            "besides embedding (the median of three such loads). "
            "`serial ratio` is raw / (raw + model-free): the ratio that work leaves, none of it beside the model.", "",
            *[f"- `{name}`: {describe(name)}" for name in dict.fromkeys(ingest["set"])], "",
            *[f"- `{row['set']}` took the ingest path `{row['path']}`: {row['path_reason']}"
              for _, row in ingest.iterrows() if row.get("path")], "",
            markdown_table(sets), "",
            "With the model on every core, whatever else ingest costs in CPU (the secret scan, PostgreSQL's COPY "
            "and HNSW inserts) is time taken from the model: on long turns a few per cent of the model's cost per "
            "text, on short turns (where the model is cheap per text) a larger share, and the model's threads also "
            "stall when one of them is pre-empted. The rows with one model thread fewer leave PostgreSQL and the "
            "filters a core of their own (as on a machine whose database runs elsewhere). Either way the filter "
            "and the write run between the model's calls, not beside them: their time adds to the model's.",
            "",
            *ingest_goal_lines(ingest),
        ]  # fmt: skip
        if "ingest_batches" in tables:
            lines += [f"Ingest rate by `add_sessions(batch_units=...)` on `{ingest['set'].iloc[0]}` (texts/s, same "
                      "texts, uncached model):", "", markdown_table(tables["ingest_batches"]), ""]  # fmt: skip
    if "corpora" in tables:
        lines += [
            "## Corpora", "",
            "Nearest-neighbour cosine distance of a sample of rows to their nearest other row, per corpus at equal "
            "size. `real`: distinct turns of the checkout's data sets; `real+matched`: the largest table searched "
            "(the real turns topped up with synthetic rows matched to them), subsampled; `near_duplicate`: jittered "
            "copies of 3,000 real rows (the stress case). `ks`: Kolmogorov-Smirnov statistic against real "
            "(0 = same distribution).", "",
            markdown_table(tables["corpora"]), "",
        ]  # fmt: skip
    if "auto" in tables and not tables["auto"].empty:
        lines += [
            "## auto per tenant bucket", "",
            "Bucket = the tenant's share of the table (`fixed-50` is one 50-row user). `best_fixed`: the fixed "
            "strategy with the lowest p95 among those reaching recall 0.99. Latencies in ms per search. "
            "`p95_ratio_low`..`p95_ratio_high`: the 95% bootstrap interval of auto's p95 over best_fixed's, "
            "resampling the queries both ran; `latency_verdict`: `met` (all of it within 1.2), `missed` (all of it "
            "beyond), `within noise` (this run cannot tell). auto takes turns with the fixed strategies query by "
            "query (for tenants it scans exactly, the HNSW walks of the shared graph take theirs in a block after "
            "them), and both are timed through `EventMemory.search_vector`, as a caller pays them (`partial` with "
            "`SearchSettings(literal_scope=True)`, which lets the tenant's own index serve a fixed strategy).", "",
            markdown_table(tables["auto"]), "",
        ]  # fmt: skip
    if "search" in tables:
        s = tables["search"]
        lines += [
            "## Search per strategy", "",
            "recall@10 against FAISS exact over the tenant's own rows; latency in ms per search (p50/p95/p99), as a "
            "client pays it. Full table: `search.csv`.", "",
        ]
        for (corpus, rows), grp in s.groupby(["corpus", "rows_total"], sort=False):
            pivot = grp.pivot_table(index="bucket", columns="strategy", values=["recall", "latency_ms_p95"],
                                    sort=False)  # fmt: skip
            pivot.columns = [f"{strategy} {what.replace('latency_ms_p95', 'p95 ms')}"
                             for what, strategy in pivot.columns]  # fmt: skip
            lines += [f"### {corpus}, {int(rows):,} rows", "", markdown_table(pivot.reset_index()), ""]
    if "scaling" in tables:
        curve = tables["scaling"]
        pivot = curve.pivot_table(index=["corpus", "strategy"], columns="rows_total", values="latency_ms_p95")
        pivot.columns = [f"{int(c):,} rows p95 ms" for c in pivot.columns]
        lines += [
            "## Scaling curve", "",
            "One fixed 50-row user's p95 search latency (ms) as the table grows: a small user's cost must not "
            "grow with other users' data.", "",
            markdown_table(pivot.reset_index()), "",
        ]  # fmt: skip
        lines += rereads_text(curve)
    if "fixed_explain" in tables:
        lines += small_user_section(tables["fixed_explain"])
    lines += list(serving)
    if "faiss_sweep" in tables and not tables["faiss_sweep"].empty:
        lines += faiss_section(tables["faiss_sweep"], meta.get("faiss", {}), results)
    if "lexical" in tables and not tables["lexical"].empty:
        lines += lexical_section(tables["lexical"])
    for name, title, note in (
        ("bulk_write", "Bulk writes", "Rows/s of binary COPY vs executemany, into a layer without and with its "
         "HNSW index."),
        ("hnsw_build", "HNSW builds", "Build seconds per (m, ef_construction), with the memory and workers used."),
        ("policy", "Calibrated auto policy", "From the largest real table: exact scans up to `exact_below` units, "
         "a per-tenant index from `tenant_index_above` (EventMemory.maintain builds them). Saved into the database "
         "only with `memlab bench --calibrate`."),
    ):  # fmt: skip
        if name in tables:
            lines += [f"## {title}", "", note, "", markdown_table(tables[name]), ""]
    lines += list(table_store)
    lines += ["## Time per step", "", markdown_table(pd.DataFrame(
        [{"step": k, "seconds": v} for k, v in meta["seconds_by_step"].items()])), ""]  # fmt: skip
    return "\n".join(lines)


def lexical_section(table: pd.DataFrame) -> list[str]:
    """bench.md's lexical part: the per-user-size table of `memlab.lab.bench.lexical.summarize_lexical`."""
    return [
        "## Lexical and hybrid search per user size", "",
        "One user per size holding real turns; every question searched in each mode (k=10, modes taking turns "
        "query by query), its vector embedded beforehand (the same cost for every mode). Latency in ms as a "
        "caller pays it: `vector` through `search_vector` (auto; users above the policy's threshold have their "
        "own index, as `EventMemory.maintain` builds), `lexical` and `hybrid` through `search_fused`. "
        "`*_vs_vector_p95`: p95 over vector's p95 in the same run. `lexical_plan_rows_per_unit`: rows the "
        "lexical statement's plan handled (EXPLAIN ANALYZE, one question) per unit of the user: flat when "
        "its cost is linear in the user's units.", "",
        markdown_table(table), "",
    ]  # fmt: skip


def faiss_verdict(r: dict[str, float], goal: float = 0.5) -> str:
    """Whether FAISS exact reached `goal` of the bandwidth one question at a time, else only batched, else not."""
    single, batch = _get(r, "faiss.single_best_bandwidth_fraction"), _get(r, "faiss.batch_best_effective_fraction")
    if single >= goal:
        return f"Goal (>= {goal:g} of the bandwidth) met one question at a time."
    if batch >= goal:
        return (f"Goal (>= {goal:g}) met only with batched questions (one sgemm pass serving the batch); one "
                "question at a time stays below it (see the FAISS section).")  # fmt: skip
    return f"Goal (>= {goal:g}) not met (see the FAISS section)."


def rereads_text(curve: pd.DataFrame) -> list[str]:
    """What `auto` pays beyond `exact` for the fixed user, besides its plan: a re-read of the user's count once its
    kept copy is more than a few seconds old. How often that fell in this run, per size (real corpus)."""
    auto = curve[(curve.strategy == "auto") & (curve.corpus == "real")]
    if auto.empty:
        return []
    each = "; ".join(f"{int(r.rows_total):,} rows: {fig(r.spanned_s)} s, {int(r.count_rereads)} of {int(r.queries)}"
                     for r in auto.itertuples())  # fmt: skip
    return [
        "`auto` costs what `exact` does for this user plus, once its kept count is more than a few seconds old, a "
        "re-read of the count (done by the statement that sets the strategy). The strategies take turns query by "
        "query (the HNSW walks of the shared graph in a block after the others), so `auto`'s searches at one "
        "size span the sum of their block's latencies; "
        f"the span and the `auto` searches that re-read the count: {each}. Where the re-reads approach 5% of the "
        "searches, they are what sets the p95.", "",
    ]  # fmt: skip


def small_user_section(plans: pd.DataFrame) -> list[str]:
    """bench.md: the fixed small user's EXPLAIN (ANALYZE, BUFFERS) per table size, its numbers and its plans."""
    cols = ["rows_total", "strategy", "access_path", "planning_ms", "execution_ms", "shared_hit", "shared_read",
            "client_p50_ms", "outside_server_ms"]  # fmt: skip
    lines = [
        "### The small user's plan per table size", "",
        "EXPLAIN (ANALYZE, BUFFERS) of the fixed user's `auto` search, run right after its timed searches. "
        "`planning_ms` and `execution_ms` are the server's; `shared_hit`/`shared_read`: buffers the statement "
        "found in shared buffers / read from the OS (one more buffer at a bigger table is one more level of the "
        "scope index); `outside_server_ms`: the client's p50 minus the server's time (pool, round trips, Python).",
        "", markdown_table(plans[[c for c in cols if c in plans.columns]]), "",
    ]  # fmt: skip
    for row in plans.itertuples(index=False):
        lines += [f"{int(row.rows_total):,} rows:", "", "```", str(row.plan), "```", ""]
    return lines


def faiss_section(sweep: pd.DataFrame, info: dict, r: dict[str, float]) -> list[str]:
    """bench.md: FAISS exact per OpenMP threads and questions per call, with the kernel that ran."""
    return [
        "## FAISS exact: threads, batch size and kernel", "",
        f"IndexFlatIP over the largest real table. FAISS `{info.get('compile_options', '?')}`; batches of "
        f"{info.get('blas_threshold', '?')} questions or more go to BLAS sgemm, smaller ones to FAISS's own SIMD "
        "scan (`simd`: one pass over the vectors per question, so measured on small batches only); "
        "`sgemm-forced`: the same batch with that threshold lowered to it (one pass per batch). "
        f"BLAS loaded: {info.get('blas', '?')}. Bandwidth: one thread "
        f"{fig(_get(r, 'memory.bandwidth_gb_per_s'))} GB/s, every core "
        f"{fig(_get(r, 'memory.bandwidth_threads_gb_per_s'))} GB/s (np.copyto, read + written bytes); fractions "
        "below are against the one-thread figure. `bandwidth_fraction`: bytes of one pass over the vectors per "
        "second of a call (the traffic really caused); `effective_fraction`: vector bytes per question x "
        "questions per second (what a batch serves; above 1 when one pass serves many). The best single-question "
        f"fraction against the every-core bandwidth: {fig(_get(r, 'faiss.single_best_vs_threads_bandwidth'))}.", "",
        markdown_table(sweep), "",
    ]  # fmt: skip


def ingest_goal_lines(ingest: pd.DataFrame) -> list[str]:
    """Per ingest set, what the ratio goal leaves the non-model work against what it took (from the run's own
    figures), so a missed goal says what stopped it: ingest runs that work between the model's calls, so the
    budget bounds it whatever cores the model left free."""
    lines = []
    for _, row in ingest.iterrows():
        took, budget = row.get("nonmodel_seconds", float("nan")), row.get("nonmodel_budget_seconds", float("nan"))
        if pd.isna(took) or pd.isna(budget):
            continue
        verdict = "met" if row.ratio >= RATIO_GOAL else "missed"
        head = (f"- `{row['set']}` on {int(row.model_threads)} model thread(s): goal {RATIO_GOAL} {verdict} "
                f"({fig(row.ratio)}). Everything but the model took {fig(took)} s (the same load with every vector "
                f"cached, path `{row.get('nonmodel_path') or '?'}`)")  # fmt: skip
        lines.append(f"{head}; the goal leaves it {fig(budget)} s beside the model's {fig(row.raw_seconds)} s: it "
                     f"took {fig(took / budget if budget else float('nan'))} x that.")
    return [*lines, ""] if lines else []
