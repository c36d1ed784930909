"""Fact extractors compared on data sets that state the facts expected at the end (fact fixtures): candidates
against the gold ones, the consolidated state against the expected one. Options: `extractors` ([labelled,
rules]; `llm` when an endpoint is configured)."""

from __future__ import annotations

import pandas as pd

from memlab.lab.fact_run import run_fact_eval, summarize_facts
from memlab.lab.folder import save_table
from memlab.lab.report import markdown_table
from memlab.lab.systems import make_extractor

METRICS = ("key_accuracy", "state_exact", "candidate_recall", "candidate_precision", "dropped", "seconds_per_session")


def measure(env, dataset, options: dict, context, out) -> None:
    if not any(u.expected_facts is not None for u in dataset.users):
        return
    frames = []
    for name in options.get("extractors", ["labelled", "rules"]):
        extractor = make_extractor(name, dataset, env.extractor_options)
        frames.append(run_fact_eval(env.store, env.embedder("default"), dataset, extractor, progress=env.progress))
    frame = pd.concat(frames, ignore_index=True)
    frame["dropped_by_reason"] = frame.dropped_by_reason.map(str)
    frame["missed"] = frame.missed.map(lambda m: "; ".join(map(str, m)))
    save_table(out, "facts", dataset.name, frame)


def scores(folder, dataset: str, options: dict, base: pd.DataFrame) -> pd.DataFrame:
    frame = folder.table("facts", dataset)
    rows = []
    if frame is not None:
        for r in summarize_facts(frame).itertuples(index=False):
            rows += [(dataset, f"extractor:{r.extractor}", m, float(getattr(r, m)), int(r.fixtures)) for m in METRICS]
    return pd.DataFrame(rows, columns=["dataset", "system", "metric", "value", "questions"])


def section(folder, dataset: str, options: dict) -> str | None:
    frame = folder.table("facts", dataset)
    if frame is None:
        return None
    missed = frame[(frame.extractor != "labelled") & (frame.missed != "")][["extractor", "fixture", "missed"]]
    return (markdown_table(summarize_facts(frame)) + "\n\n`key_accuracy`: share of keys whose current values equal "
            "the expected ones. `candidate_recall`/`precision`: against the gold candidates after the quote and "
            "registry checks.\n\n" + (markdown_table(missed) if len(missed) else "No gold candidate missed."))
