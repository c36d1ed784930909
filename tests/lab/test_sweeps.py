"""The sweeps at small scale, on the real embedded PostgreSQL with real embeddings."""

from __future__ import annotations

import memlab
from memlab.lab.sweeps.external import external_eval
from memlab.lab.sweeps.filtered import FilteredGrid, filtered_sweep, summarize_filtered
from memlab.lab.sweeps.granularity import Unit, granularity_sweep


def test_granularity_sweep_on_the_event_fixtures(store, embedder, fixture_set):
    units = [
        Unit("event", "event"),
        Unit("chunk4o1", "chunk", 4, 1),
        Unit("facts-rules", "facts", extractor=memlab.RuleExtractor()),
    ]
    scores, summary = granularity_sweep(store, embedder, fixture_set, units=units, k=10)
    by = summary.set_index("system")
    assert set(by.index) == {"event", "chunk4o1", "facts-rules"}
    assert by.loc["event", "recall_vs_exact"] == 1.0, "auto scores small users exactly"
    assert by.loc["chunk4o1", "context_chars"] > by.loc["event", "context_chars"], "chunks cost more context"
    assert 0.5 < by.loc["event", "recall"] <= 1.0
    assert by.loc["facts-rules", "context_chars"] < by.loc["event", "context_chars"], "facts are short lines"
    assert set(scores.size_bucket) == {"<=50"}


def test_filtered_sweep_shows_the_trap_and_its_fixes(store, embedder, fixture_set):
    mem = memlab.EventMemory(store, embedder)
    texts = [e.text.strip() for s in fixture_set.sessions() for e in mem.kept_events(s)[0]]
    questions = [q.text for q in fixture_set.questions if q.answerable]
    grid = FilteredGrid(total_rows=3000, shares=(0.003, 0.1), relations=("on_topic",), ef_search=(40,),
                        iterative=("off", "relaxed_order"), queries=3)  # fmt: skip
    frame = filtered_sweep(store, embedder, texts, questions, grid)
    s = summarize_filtered(frame).set_index(["share", "config"])
    small = 0.003
    assert s.loc[(small, "exact"), "recall"] == 1.0
    off, relaxed = s.loc[(small, "hnsw ef=40 off mst=20000")], s.loc[(small, "hnsw ef=40 relaxed_order mst=20000")]
    assert off.recall < 0.5 and relaxed.recall > off.recall, "plain HNSW loses a 0.3% tenant; iterative scans help"
    assert off.predicted_recall < 0.5
    assert s.loc[(0.1, "partial index ef=40 off"), "recall"] >= 0.9, "a per-tenant partial index fixes a big tenant"
    planner = frame[frame.config.str.startswith("planner") & (frame["query"] == 0)]
    assert set(planner.plan) <= {"hnsw", "scope_index", "primary_key", "seq_scan"} | {
        p for p in planner.plan if p.startswith("index:")
    }
    assert frame.rows_removed_by_filter.notna().any()


def test_longmemeval_scored_by_question_type(store, embedder):
    from memlab.lab.longmemeval import QUESTION_TYPES, default_dir, load_longmemeval

    path = default_dir() / "longmemeval_oracle.json.gz"
    parts = [load_longmemeval(path, question_types=[t], limit=1, include_abstention=False) for t in QUESTION_TYPES]
    parts.append(load_longmemeval(path, question_types=["abstention"], limit=1))
    from memlab.lab.dataset import Dataset

    lme = Dataset("lme", [u for p in parts for u in p.users], [q for p in parts for q in p.questions])
    _scores, summary = external_eval(store, embedder, lme, k=10)
    assert set(summary.qtype) == {*QUESTION_TYPES, "abstention"}
    answerable = summary[summary.qtype != "abstention"]
    assert answerable.session_recall.notna().all() and (answerable.recall_vs_exact == 1.0).all()
    assert summary.set_index("qtype").loc["abstention", "correct_empty_rate"] == 0.0, "no cut-off: never empty"
