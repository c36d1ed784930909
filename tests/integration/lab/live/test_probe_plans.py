"""A search is labelled with the plan it ran, never the one it was asked for: `hnsw` (or `auto` resolved to the
shared graph) on a layer without an HNSW index scans exactly and says `exact`, and the probe reports that
ef_search had no effect. With the index there, the same search says `hnsw` (the positive control)."""

from __future__ import annotations

import json
import uuid

import pandas as pd
import pytest
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app as cli
from tests.conftest import make_session
from tests.integration.lab.live.test_probe_store import select_only_role

TEXTS = ["I moved to Lyon last spring.", "My sister Ana plays the cello in an orchestra.",
         "I am allergic to peanuts and shellfish.", "Our dog Rex is a border collie.",
         "I work as a nurse on the night shift.", "We are planning a trip to Norway in June."]  # fmt: skip
ASKED = [memlab.SearchSettings(strategy="hnsw", ef_search=200), memlab.SearchSettings(strategy="auto", exact_below=0),
         memlab.SearchSettings(strategy="hnsw", mode="hybrid")]  # fmt: skip


@pytest.fixture
def unindexed(scratch_store, embedder, tmp_path):
    """A small layer (no HNSW index: `auto` scans it exactly), its labels and a SELECT-only DSN."""
    app = f"plans-{uuid.uuid4().hex[:8]}"
    memlab.EventMemory(scratch_store, embedder).add_session(make_session(app, "u1", "s0", TEXTS))
    labels = tmp_path / "labels.jsonl"
    questions = [("q1", "Which city do I live in?", "s0-e0"), ("q2", "What does my sister play?", "s0-e1")]
    labels.write_text("".join(json.dumps({"type": "question", "id": qid, "app": app, "user": "u1", "text": text,
                                          "relevant": [event]}) + "\n" for qid, text, event in questions))
    return app, labels, select_only_role(scratch_store)


def _plans(folder) -> set[str]:
    return set(pd.concat([run.frame for run in lab.RunFolder(folder).all_runs]).plan)


def test_a_search_without_the_index_is_labelled_exact(unindexed, embedder):
    app, _, dsn = unindexed
    with memlab.open_store(dsn, read_only=True) as ro:
        memory = memlab.EventMemory(ro, embedder)
        for settings in ASKED:
            hits = memory.search(app, "u1", "Which city do I live in?", settings)
            ran = memory.explain(app, "u1", "Which city do I live in?", settings).access_path
            assert hits and ran != "hnsw"
            assert hits.plan.split("+")[0] == "exact", (settings, hits.plan, ran)


def test_the_probe_records_the_plan_that_ran_and_that_ef_search_did_nothing(unindexed, tmp_path):
    _, labels, dsn = unindexed
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["probe", "--dsn", dsn, "--labels", str(labels), "--out", str(out),
                                      "--strategy", "hnsw", "--ef-search", "200"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert _plans(out) == {"exact"}
    probe = lab.RunFolder(out).manifest["probe"]
    assert probe["plans"] == {"exact": 2}
    assert any("ef_search 200 had no effect" in n for n in probe["plan_notes"])
    report = (out / "report.md").read_text()
    assert "### Plans that ran" in report and "ef_search 200 had no effect" in report
    assert "ef_search 200 had no effect" in " ".join(result.output.split())


def test_with_the_index_the_label_is_hnsw(unindexed, scratch_store, embedder, tmp_path):
    app, labels, dsn = unindexed
    writer = memlab.EventMemory(scratch_store, embedder)
    assert writer.search(app, "u1", "Which city do I live in?", ASKED[0]).plan == "hnsw"  # builds the index
    with memlab.open_store(dsn, read_only=True) as ro:
        memory = memlab.EventMemory(ro, embedder)
        hits = memory.search(app, "u1", "Which city do I live in?", ASKED[0])
        assert hits.plan == "hnsw" and memory.explain(app, "u1", "x", ASKED[0]).access_path == "hnsw"
    probe = lab.run_probe(labels, tmp_path / "run", dsn=dsn, embedder=embedder, strategy="hnsw", ef_search=200,
                          health=False)  # fmt: skip
    assert _plans(probe.folder) == {"hnsw"}
    assert lab.RunFolder(probe.folder).manifest["probe"]["plan_notes"] == []
