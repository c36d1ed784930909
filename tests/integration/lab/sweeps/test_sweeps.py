"""The sweeps at small scale through the experiment model, on the real embedded PostgreSQL with real embeddings."""

from __future__ import annotations

import pandas as pd
import pytest

import memlab
from memlab import lab
from tests.conftest import EVENT_FIXTURES
from tests.support.scores import labelled

JSONL_EXAMPLE = "fixtures/jsonl/example.jsonl"


@pytest.fixture(scope="module")
def folder(tmp_path_factory, memlab_home, store):
    config = lab.parse_config({
        "name": "sweeps",
        "datasets": [
            {"name": "fixtures", "format": "fixtures", "path": str(EVENT_FIXTURES)},
            {"name": "jsonl", "format": "jsonl", "path": JSONL_EXAMPLE},
        ],
        # the gate fitted on fixtures is tested on the small jsonl example (LongMemEval by question type: the ci
        # suite, which the CI gate compares key by key, and tests/unit/lab/datasets/test_longmemeval.py).
        # The time cells search the text rendering (no speaker_date ingest only they would read) and no question is
        # re-rendered (test_retrieval_modes.py covers first-person questions): no assert reads those cells
        "systems": [{"name": "event", "strategy": "auto"}],
        "sweeps": ["granularity", "retrieval", "filtered"],
        "options": {
            "granularity": {"chunks": [[4, 1]], "session": False, "extractors": ["rules"], "datasets": ["fixtures"]},
            "retrieval": {"renderings": ["text", "speaker"], "fact_keys": ["rules"], "time": ["boost"],
                          "time_rendering": "text", "query_renderings": ["as_is"], "per_session": [2],
                          "authors": ["user"], "answerability": {"train": "fixtures"},
                          "datasets": ["fixtures", "jsonl"]},
            "filtered": {"total_rows": 3000, "shares": [0.003, 0.1], "relations": ["on_topic"], "ef_search": [40],
                         "iterative": ["off", "relaxed_order"], "queries": 3, "datasets": ["fixtures"]},
        },
    })  # fmt: skip
    out = tmp_path_factory.mktemp("sweeps") / "run"
    lab.run_experiment(config, out)
    return lab.RunFolder(out)


def _wide(folder, dataset: str) -> pd.DataFrame:
    s = labelled(folder.scores[folder.scores.dataset == dataset])
    return s.pivot_table(index="system", columns="metric", values="value")


def test_granularity_on_the_event_fixtures(folder):
    by = _wide(folder, "fixtures")
    assert {"event", "chunk4o1", "facts-rules", "faiss-exact-event", "faiss-exact-chunk4o1"} <= set(by.index)
    assert by.loc["event", "recall_vs_exact"] == 1.0, "auto scores small users exactly"
    assert by.loc["chunk4o1", "context_chars"] > by.loc["event", "context_chars"], "chunks cost more context"
    assert 0.5 < by.loc["event", "recall@10"] <= 1.0
    assert by.loc["facts-rules", "context_chars"] < by.loc["event", "context_chars"], "facts are short lines"
    assert "recall@10[size=<=50]" in by.columns and "recall@10[size=51-500]" not in by.columns


def test_filtered_sweep_shows_the_trap_and_its_fixes(folder):
    frame = folder.table("filtered", "fixtures")
    by = _wide(folder, "fixtures")
    small = "[share=0.003]"
    assert by.loc["filtered:exact", f"recall_vs_exact{small}"] == 1.0
    off = by.loc["filtered:hnsw-ef40-off-mst20000", f"recall_vs_exact{small}"]
    relaxed = by.loc["filtered:hnsw-ef40-relaxed_order-mst20000", f"recall_vs_exact{small}"]
    assert off < 0.5 and relaxed > off, "plain HNSW loses a 0.3% tenant; iterative scans help"
    assert by.loc["filtered:partial-index-ef40-off", "recall_vs_exact[share=0.1]"] >= 0.9, "a partial index fixes it"
    planner = frame[frame.config.str.startswith("planner") & (frame["query"] == 0)]
    assert set(planner.plan) <= {"hnsw", "scope_index", "primary_key", "seq_scan"} | {
        p for p in planner.plan if p.startswith("index:")
    }
    assert frame.rows_removed_by_filter.notna().any()
    assert "jsonl" not in set(folder.scores[folder.scores.system.str.startswith("filtered:")].dataset), \
        "options.filtered.datasets limits the sweep"  # fmt: skip


def test_retrieval_sweep_compares_renderings_modes_fact_keys_and_time(folder):
    by = _wide(folder, "fixtures")
    grid = {"text/vector", "text/lexical", "text/hybrid", "speaker/vector", "speaker/hybrid",
            "speaker_date+facts:rules/vector", "speaker_date+facts:rules/hybrid", "text/vector/time-boost"}
    assert grid <= set(by.index)
    assert by.loc["text/vector", "recall@10"] == by.loc["event", "recall@10"], "the baseline is plain event search"
    assert by.loc["text/vector", "context_chars"] == by.loc["event", "context_chars"], "bodies are returned as stored"
    assert by.loc["text/hybrid", "recall@10"] > 0 and by.loc["text/lexical", "empty_rate"] >= 0
    assert {"text/vector/cap-2", "speaker/hybrid/cap-2"} <= set(by.index)
    assert by.loc["text/vector/cap-2", "empty_rate"] == by.loc["text/vector", "empty_rate"], "a cap never shortens"
    assert {"text/vector/author-user", "speaker/hybrid/author-user", "text/hybrid/cap-2/author-user"} <= set(by.index)
    report = (folder.path / "report.md").read_text()
    assert "Best configuration against the baseline" in report and "When to return nothing" in report
    gate = report.split("When to return nothing", 1)[1].split("\n#", 1)[0]
    header = next(line for line in gate.splitlines() if line.startswith("| system |"))
    assert "| roc_auc |" in header, header
    note = " ".join(gate.split())  # the note says which rows hold which AUC
    assert "roc_auc is the per-question ROC AUC" in note and "the per-hit ROC AUC" in note, note


def test_every_retrieval_system_name_parses_back_to_its_cell():
    from memlab.lab.sweeps.retrieval import Cell, names

    dataset = lab.load_fixtures(EVENT_FIXTURES)
    options = {"per_session": [1, 3], "authors": ["user", "model"], "time": ["boost", "filter"]}
    grid = names(dataset, options)
    assert len(grid) == len(set(grid)) > 40
    for name in grid:
        cell = Cell.parse(name)
        assert cell.name == name
        settings = memlab.SearchSettings(**cell.search())
        assert (settings.per_session, settings.prefer_author, settings.time) == (cell.per_session, cell.author,
                                                                                  cell.time)  # fmt: skip
    with pytest.raises(memlab.ConfigError, match="authors"):
        names(dataset, {"authors": [""]})


def test_the_answerability_gate_is_fitted_reported_and_saved(folder):
    rows = folder.scores[folder.scores.system.str.startswith("answerability:")]
    fixtures = rows[rows.dataset == "fixtures"].pivot_table(index="system", columns="metric", values="value")
    assert fixtures.loc["answerability:gate", "false_memory_rate"] <= 0.2, "the threshold keeps the rule (CV)"
    assert 0.0 <= fixtures.loc["answerability:gate", "recall_kept"] <= 1.0
    assert fixtures.loc["answerability:distance-cut", "false_memory_rate"] <= 0.2
    gate = memlab.events.AnswerabilityGate.load(folder.path / "answerability.json")
    assert gate.fitted["data_set"] == "fixtures" and gate.settings["mode"] == "hybrid"
    assert set(rows.dataset) == {"fixtures", "jsonl"}, "fitted on one data set, tested on the other"
