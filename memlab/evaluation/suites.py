"""Suites: what `memlab eval --suite ci|full` runs, and the run folder it writes.

`ci` finishes in a few minutes on 2 cores and feeds the regression gate; `full` is the real measurement
(200,000-row filtered-search corpus, every synthetic user, all of LongMemEval's oracle questions)."""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from memlab.embedding.base import Embedder
from memlab.evaluation import plots
from memlab.evaluation.labelled import LabelledSet
from memlab.evaluation.main_job import eval_sections, flat_metrics, run_eval
from memlab.evaluation.report import markdown_table, write_run
from memlab.evaluation.runs import save_run
from memlab.evaluation.scoring import summarize
from memlab.evaluation.sweeps import cutoff
from memlab.evaluation.sweeps.external import external_eval
from memlab.evaluation.sweeps.filtered import FilteredGrid, filtered_sweep, summarize_filtered
from memlab.evaluation.sweeps.granularity import default_units, granularity_sweep
from memlab.facts.extractors.base import Extractor
from memlab.storage.store import Store


@dataclass(frozen=True)
class Suite:
    name: str
    synth_users: int
    synth_max_events: int
    longmemeval_per_type: int | None
    filtered: FilteredGrid
    k: int = 10
    bench_repeat: int = 2
    seed: int = 0
    second_model: bool = False  # compare all-mpnet-base-v2 (needs `make models`)
    extras: dict = field(default_factory=dict)


SUITES = {
    "ci": Suite("ci", synth_users=16, synth_max_events=300, longmemeval_per_type=8,
                filtered=FilteredGrid(total_rows=5_000, ef_search=(10, 40, 100, 400, 800), queries=4)),
    "full": Suite("full", synth_users=64, synth_max_events=2000, longmemeval_per_type=None, bench_repeat=4,
                  second_model=True,
                  filtered=FilteredGrid(total_rows=200_000, ef_search=(10, 20, 40, 80, 200, 400, 800),
                                        max_scan_tuples=(1_000, 20_000, 100_000), queries=10, background_tenants=400)),
}  # fmt: skip


def synth_set(suite: Suite) -> LabelledSet:
    from memlab.evaluation.synth import generate

    return generate(suite.seed, users=suite.synth_users, max_events=suite.synth_max_events)


def longmemeval_set(suite: Suite, folder: Path | None = None) -> LabelledSet:
    from memlab.evaluation.longmemeval import QUESTION_TYPES, default_dir, load_longmemeval

    path = (folder or default_dir()) / "longmemeval_oracle.json.gz"
    if suite.longmemeval_per_type is None:
        return load_longmemeval(path)
    parts = [load_longmemeval(path, question_types=[t], limit=suite.longmemeval_per_type, include_abstention=False)
             for t in QUESTION_TYPES]  # fmt: skip
    parts.append(load_longmemeval(path, question_types=["abstention"], limit=suite.longmemeval_per_type))
    return LabelledSet(
        "longmemeval-oracle", [u for p in parts for u in p.users], [q for p in parts for q in p.questions]
    )


def run_suite(
    store: Store,
    embedder: Embedder,
    suite: Suite,
    out: Path,
    *,
    events_dir: Path,
    facts_dir: Path | None,
    extractors: list[Extractor],
    previous: Path | None = None,
    baseline: Path | None = Path("reports/baseline.json"),
    progress: bool = False,
) -> dict[str, float]:
    """Run every sweep of the suite, write the run folder, return the flat metrics."""
    started = datetime.now(UTC)
    out.mkdir(parents=True, exist_ok=True)
    k = suite.k
    base = run_eval(store, embedder, events_dir=events_dir, facts_dir=facts_dir, extractors=extractors, k=k,
                    bench_repeat=suite.bench_repeat, progress=progress)  # fmt: skip
    metrics = flat_metrics(base)
    sections: dict[str, str] = {}

    # 1. granularity on memlab's own labelled set
    synth = synth_set(suite)
    rules = [e for e in extractors if e.name == "rules"]
    runs: dict[str, pd.DataFrame] = {}
    g_scores, g_summary = granularity_sweep(store, embedder, synth, units=default_units(rules), k=k, runs=runs,
                                            progress=progress)  # fmt: skip
    g_scores.to_csv(out / "granularity_scores.csv", index=False)
    for name, run in runs.items():  # runs are data: metrics can be recomputed from them without querying again
        save_run(run, out / "runs" / f"synth-{name}.parquet")
    by_type = summarize(g_scores, by=("system", "qtype"))
    plots.granularity_bars(g_summary, out / "granularity.png")
    by_size = summarize(g_scores, by=("system", "size_bucket"))
    sections["Granularity (memlab-synth)"] = (
        markdown_table(g_summary[["system", "questions", "recall", "mrr", "ndcg", "empty_rate", "recall_vs_exact",
                                  "context_chars", "correct_empty_rate"]])
        + "\n\n![granularity](granularity.png)\n\nBy memory size:\n\n"
        + markdown_table(by_size[["system", "size_bucket", "questions", "recall", "mrr", "recall_vs_exact"]])
        + "\n\nBy question type:\n\n"
        + markdown_table(by_type[["system", "qtype", "questions", "recall", "mrr", "correct_empty_rate"]])
    )  # fmt: skip
    for _, r in g_summary.iterrows():
        for m in ("recall", "mrr", "ndcg", "empty_rate", "recall_vs_exact", "correct_empty_rate"):
            metrics[f"synth.{r.system}.{m}"] = float(r[m])
        metrics[f"synth.{r.system}.context_chars"] = float(r.context_chars)

    # 2. cut-offs for events and one chunk shape
    grids, dists = [], []
    for name in ("event", "chunk4o1"):
        grids.append(cutoff.cutoff_grid(runs[name], synth.questions, k=k))
        dists.append(cutoff.labelled_distances(runs[name], synth.questions, k=k))
    grid, dist = pd.concat(grids, ignore_index=True), pd.concat(dists, ignore_index=True)
    recs = cutoff.recommend(grid, dist)
    dist.to_parquet(out / "distances.parquet", index=False)
    grid.to_csv(out / "cutoff_grid.csv", index=False)
    plots.distance_histograms(dist, out / "distances.png")
    plots.cutoff_curves(grid, out / "cutoffs.png", {r.system: r.max_distance for r in recs})
    rec_table = pd.DataFrame([asdict(r) for r in recs])
    drift_text = "No previous run to compare with."
    if previous is not None and (previous / "distances.parquet").exists():
        drift = cutoff.drift(pd.read_parquet(previous / "distances.parquet"), dist)
        drift_text = markdown_table(drift) if len(drift) else drift_text
    sections["Cut-offs (memlab-synth)"] = (
        markdown_table(rec_table) + "\n\n![distances](distances.png)\n\n![cut-offs](cutoffs.png)\n\n"
        f"Drift of hit distances against the previous run (two-sample KS):\n\n{drift_text}"
    )
    for r in recs:
        metrics[f"cutoff.{r.system}.recommended_max_distance"] = r.max_distance
        metrics[f"cutoff.{r.system}.recall_at_recommended"] = r.recall
        metrics[f"cutoff.{r.system}.roc_auc"] = r.roc_auc

    # 3. external data, with the cut-off recommended on our own data
    lme = longmemeval_set(suite)
    if lme.questions:
        event_cut = next(r.max_distance for r in recs if r.system == "event")
        for label, limit in (("no cut-off", None), (f"cut-off {event_cut}", event_cut)):
            _, lme_summary = external_eval(store, embedder, lme, k=k, max_distance=limit, progress=progress)
            key = "nocut" if limit is None else "cut"
            sections[f"LongMemEval oracle by question type ({label})"] = markdown_table(
                lme_summary[["qtype", "questions", "recall", "session_recall", "mrr", "ndcg", "empty_rate",
                             "recall_vs_exact", "correct_empty_rate", "context_chars"]]
            )  # fmt: skip
            for _, r in lme_summary.iterrows():
                for m in ("recall", "session_recall", "ndcg", "recall_vs_exact", "correct_empty_rate"):
                    metrics[f"longmemeval.{key}.{r.qtype}.{m}"] = float(r[m])

    # 4. filtered search at scale
    texts = [e.text for s in synth.sessions() for e in s.events if e.text and len(e.text) >= 15][:3000]
    questions = [q.text for q in synth.questions if q.answerable]
    frame = filtered_sweep(store, embedder, texts, questions, suite.filtered, progress=progress)
    frame.to_csv(out / "filtered.csv", index=False)
    fs = summarize_filtered(frame)
    plots.recall_latency(fs, out / "filtered.png", series="series", predicted="predicted_recall", order="ef_search")
    smallest = fs[fs.share == fs.share.min()]
    headline = smallest[smallest.config.str.contains("ef=40 ") | (smallest.config == "exact")]
    sections[f"Filtered search ({suite.filtered.total_rows:,} rows)"] = (
        "Smallest tenant, ef_search=40:\n\n"
        + markdown_table(headline[["size_bucket", "config", "recall", "returned", "empty_rate", "latency_ms_p50",
                                   "latency_ms_p95", "rows_removed_by_filter"]])
        + "\n\n![filtered](filtered.png)\n\nAll cells:\n\n"
        + markdown_table(fs[["size_bucket", "config", "recall", "returned", "empty_rate", "short_rate",
                             "latency_ms_p50", "latency_ms_p95", "predicted_recall"]])
        + "\n\nPlans the planner took (first query of each tenant):\n\n"
        + markdown_table(frame[frame.config.str.startswith("planner") & (frame["query"] == 0)][
            ["tenant", "tenant_rows", "plan"]])
    )  # fmt: skip
    gated = fs[fs.config.isin(["exact", "hnsw ef=40 off mst=20000", "hnsw ef=40 relaxed_order mst=20000",
                               "partial index ef=40 off"])]  # fmt: skip
    for _, r in gated.iterrows():  # the headline cells only: the rest are in filtered.csv
        name = r.config.split(" mst=")[0].replace(" ", "_").replace("=", "")
        metrics[f"filtered.{r.share:g}.{name}.recall"] = float(r.recall)
        metrics[f"filtered.{r.share:g}.{name}.latency_ms_p50"] = float(r.latency_ms_p50)

    # 5. a second embedding model, written beside the first as a migration would be
    if suite.second_model:
        sections["Embedding models"] = _model_section(store, embedder, synth, k, metrics)

    sections = {**eval_sections(base), **sections}
    config = {"suite": suite.name, "dataset": "fixtures + memlab-synth + longmemeval", "k": k,
              "embedder": embedder.model_id, "started_at": started.isoformat(timespec="seconds"),
              "suite_config": asdict(suite)}  # fmt: skip
    sections["Against the committed baseline"] = _baseline_section(metrics, baseline)
    write_run(out, questions=base.run.questions, summary=base.summary, config=config, extra_sections=sections,
              metrics=metrics)  # fmt: skip
    return metrics


def _baseline_section(metrics: dict[str, float], baseline: Path | None) -> str:
    from memlab.evaluation.gate import compare, load_metrics, load_rules

    if baseline is None or not baseline.exists():
        return "No baseline to compare with."
    table = compare(load_metrics(baseline), metrics, load_rules())
    changed = table[table.verdict != "ok"]
    head = f"{len(table)} gated metrics checked against `{baseline}`; {len(changed)} moved beyond tolerance."
    return head + ("\n\n" + markdown_table(changed) if len(changed) else "")


def _model_section(store: Store, embedder: Embedder, synth: LabelledSet, k: int, metrics: dict) -> str:
    from memlab.embedding import CachedEmbedder
    from memlab.embedding.models import MPNET, embedder_for
    from memlab.errors import ConfigError
    from memlab.evaluation.sweeps.models import model_sweep

    try:
        raw_second = embedder_for(MPNET)
    except ConfigError as exc:
        return f"Skipped: {exc}"
    cache = getattr(embedder, "cache", None)
    second = CachedEmbedder(raw_second, cache) if cache is not None else raw_second
    # the second model encodes ~25 texts/s here: judge the migration on the users with up to 300 events
    small = [u for u in synth.users if u.event_count <= 300]
    keep = {u.user_id for u in small}
    subset = LabelledSet(f"{synth.name}-small", small, [q for q in synth.questions if q.user_id in keep])
    frame = model_sweep(store, subset, embedder, second, k=k, raw_first=getattr(embedder, "inner", None),
                        raw_second=raw_second)  # fmt: skip
    for _, r in frame.iterrows():
        for m in ("recall", "mrr", "recall_vs_exact"):
            metrics[f"models.{r.system}.{m}"] = float(r[m])
    return markdown_table(frame[["system", "dimension", "recall", "mrr", "ndcg", "recall_vs_exact",
                                 "encode_texts_per_s", "migration_rows", "migration_s"]])  # fmt: skip


def publish_latest(run_dir: Path, latest: Path) -> None:
    """Copy a finished run to reports/latest (a copy, not a link, so it survives moving the folder)."""
    if latest.exists():
        shutil.rmtree(latest)
    shutil.copytree(run_dir, latest)


__all__ = ["SUITES", "Suite", "publish_latest", "run_suite"]
