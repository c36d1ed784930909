"""The main job behind `memlab eval` (and the notebooks): event fixtures against FAISS exact, the ingest
benchmark, and the extractor comparison on fact fixtures, then one report folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from memlab.embedding.base import Embedder
from memlab.evaluation.fact_run import run_fact_eval, summarize_facts
from memlab.evaluation.fixture_run import FixtureRun, run_fixture_eval
from memlab.evaluation.fixtures import load_event_fixtures
from memlab.evaluation.ingest_bench import IngestBench, measure_ingest
from memlab.evaluation.labelled import LabelledSet
from memlab.evaluation.report import markdown_table, write_run
from memlab.facts.extractors.base import Extractor
from memlab.storage.store import Store


@dataclass
class EvalResult:
    events: LabelledSet
    run: FixtureRun
    summary: pd.DataFrame
    bench: IngestBench
    facts: pd.DataFrame | None = None
    facts_summary: pd.DataFrame | None = None


def run_eval(
    store: Store,
    embedder: Embedder,
    *,
    events_dir: Path,
    facts_dir: Path | None,
    extractors: list[Extractor],
    k: int = 10,
    bench_repeat: int = 4,
    progress: bool = False,
) -> EvalResult:
    """Everything `memlab eval` measures, as data."""
    events = load_event_fixtures(events_dir)
    fact_set = load_event_fixtures(facts_dir) if facts_dir is not None else None  # fail early on bad input
    run = run_fixture_eval(store, embedder, events, k=k, progress=progress)
    bench = measure_ingest(store, getattr(embedder, "inner", embedder), events, repeat=bench_repeat)
    result = EvalResult(events, run, run.summary(), bench)
    if fact_set is not None and extractors:
        frames = [run_fact_eval(store, embedder, fact_set, ex, progress=progress) for ex in extractors]
        result.facts = pd.concat(frames, ignore_index=True)
        result.facts_summary = summarize_facts(result.facts)
    return result


def flat_metrics(result: EvalResult) -> dict[str, float]:
    """metrics.json: flat, stable keys."""
    out = {
        f"{r.granularity}.{r.config}.{m}": float(r[m])
        for _, r in result.summary.iterrows()
        for m in ("recall", "recall_vs_exact", "mrr", "ndcg", "hit_rate", "empty_rate", "correct_empty_rate")
    }
    out.update({f"ingest.{key}": float(v) for key, v in result.bench.as_dict().items()})
    if result.facts_summary is not None:
        for _, r in result.facts_summary.iterrows():
            for m in ("key_accuracy", "state_exact", "candidate_recall", "candidate_precision", "dropped"):
                out[f"facts.{r.extractor}.{m}"] = float(r[m])
    return out


def eval_sections(result: EvalResult) -> dict[str, str]:
    """The report sections of the fixtures job (also used by the ci and full suites)."""
    bench, run = result.bench, result.run
    skipped = {g: dict(r.skipped) for g, r in run.ingest.items()}
    sections = {
        "Ingest": (
            f"- units added per granularity: { {g: r.added for g, r in run.ingest.items()} }\n"
            f"- events skipped by reason: {skipped}\n"
            f"- ingest rate {bench.ingest_units_per_s:.1f} units/s vs the model's raw encode rate "
            f"{bench.raw_encode_per_s:.1f} texts/s on the same {bench.texts} texts (ratio {bench.ratio:.2f}; "
            "the difference is filtering, secret scanning, bookkeeping and HNSW maintenance)"
        ),
        "Plans taken by the `planner` strategy": markdown_table(
            run.questions[run.questions.config == "planner"]
            .groupby(["granularity", "plan"])
            .size()
            .rename("questions")
            .reset_index()
        ),
    }
    if result.facts_summary is not None and result.facts is not None:
        missed = result.facts[result.facts.extractor != "labelled"][["extractor", "fixture", "missed"]]
        missed = missed[missed.missed.map(len) > 0]
        sections["Fact extraction (fact fixtures, replayed in their own order)"] = (
            markdown_table(result.facts_summary)
            + "\n\n`key_accuracy`: share of keys whose current values equal the fixture's expected ones. "
            "`candidate_recall`/`precision`: against the gold candidates after the quote and registry checks.\n\n"
            + (markdown_table(missed.assign(missed=missed.missed.map(lambda m: "; ".join(map(str, m)))))
               if len(missed) else "No gold candidate missed.")
        )  # fmt: skip
    return sections


def write_eval_report(out: Path, result: EvalResult, config: dict) -> Path:
    return write_run(
        out,
        questions=result.run.questions,
        summary=result.summary,
        config=config,
        extra_sections=eval_sections(result),
        metrics=flat_metrics(result),
    )
