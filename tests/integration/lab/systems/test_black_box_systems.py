"""Other memories as systems of one experiment on the event fixtures: ADK's InMemoryMemoryService, memlab's event
memory behind ADK's interface, mem0 (raw messages, the packaged MiniLM, its pgvector store in the run's database),
a paraphrasing service, and memlab's own event system, all through `memlab eval`."""

from __future__ import annotations

import json
import math

import pytest
import yaml
from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from memlab.lab.metrics.uncertainty import intervals
from tests.conftest import EVENT_FIXTURES

K = 5
LME = {"name": "lme", "format": "longmemeval", "path": "datasets/longmemeval/longmemeval_oracle.json.gz", "limit": 4}
DATASETS = ("fixtures", "lme")
SYSTEMS = [
    {"name": "event", "strategy": "exact"},
    {"name": "adk-keyword", "kind": "adk", "service": "google.adk.memory:InMemoryMemoryService"},
    {"name": "memlab-adk", "kind": "adk", "service": "memlab.lab.systems.services:memlab_event_service"},
    {"name": "mem0", "kind": "mem0"},
    {"name": "paraphrase", "kind": "adk", "service": "tests.support.services:ParaphrasingMemoryService"},
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory, memlab_home, store):
    base = tmp_path_factory.mktemp("black-box")
    config = base / "config.yaml"
    config.write_text(yaml.safe_dump({
        "name": "black-box", "k": K, "plots": False, "sweeps": ["cutoff"],
        "datasets": [{"name": "fixtures", "format": "fixtures", "path": str(EVENT_FIXTURES)}, LME],
        "systems": SYSTEMS,
    }))  # fmt: skip
    result = CliRunner().invoke(app, ["eval", "--config", str(config), "--out", str(base / "run")])
    assert result.exit_code == 0, result.output
    return lab.RunFolder(base / "run")


def _metric(folder, system: str, metric: str, dataset: str = "fixtures") -> float:
    s = folder.scores
    rows = s[(s.dataset == dataset) & (s.system == system) & (s.metric == metric) & (s.group == "")]
    return float(rows.value.iloc[0]) if len(rows) else math.nan


def _ranked(folder, system: str, dataset: str) -> dict[str, list[tuple]]:
    frame = folder.runs(dataset)[system].frame
    hits = frame[frame["rank"] > 0].sort_values(["question_id", "rank"])
    return {q: [tuple(ids) for ids in rows.event_ids] for q, rows in hits.groupby("question_id")}


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_system_has_recall_with_an_interval(folder, dataset):
    for system in [s["name"] for s in SYSTEMS]:
        recall = _metric(folder, system, f"recall@{K}", dataset)
        assert 0.0 <= recall <= 1.0, system
    found = intervals(folder.question_table, [f"{dataset}/{s['name']}/recall@{K}" for s in SYSTEMS[:4]])
    assert len(found) == 4 and (found["lo"] <= found["value"]).all() and (found["value"] <= found["hi"]).all()
    assert (found["hi"] > found["lo"]).any(), "some system's recall varies over the questions"


@pytest.mark.parametrize("dataset", DATASETS)
def test_memlab_through_adk_agrees_with_memlab_on_every_question(folder, dataset):
    own, through_adk = _ranked(folder, "event", dataset), _ranked(folder, "memlab-adk", dataset)
    assert own.keys() == through_adk.keys() and len(own) >= 1
    assert own == through_adk


def test_a_rewording_memory_has_its_hits_counted_as_unmatched(folder):
    frame = folder.runs("fixtures")["paraphrase"].frame
    assert (frame["rank"] > 0).sum() > 0, "the paraphrasing service returned hits"
    assert _metric(folder, "paraphrase", "unmatched_hits") == 1.0
    assert _metric(folder, "paraphrase", f"recall@{K}") == 0.0
    assert "unmatched_hits" in (folder.path / "report.md").read_text()


def test_raw_messages_all_match_and_the_k_cut_is_the_same_for_all(folder):
    for system in ("adk-keyword", "memlab-adk", "mem0"):
        assert _metric(folder, system, "unmatched_hits") == 0.0, system
        frame = folder.runs("fixtures")[system].frame
        assert frame["rank"].max() <= K
    returned = folder.runs("fixtures")["adk-keyword"].frame.service_returned
    assert returned.max() > K, "ADK's keyword search returned more than k somewhere, and was cut to k"


def test_a_black_box_has_no_exact_reference_and_no_cut(folder):
    systems = set(folder.scores.system)
    for system in ("adk-keyword", "memlab-adk", "mem0", "paraphrase"):
        assert math.isnan(_metric(folder, system, "recall_vs_exact")), system
        assert not any(s.startswith(f"{system}@cut") for s in systems), system
    assert _metric(folder, "event", "recall_vs_exact") == 1.0
    rows = [line for line in (folder.path / "report.md").read_text().splitlines() if line.startswith("| mem0 |")]
    assert sum("| n/a |" in row for row in rows) == len(DATASETS), "not applicable, not zero or blank, per data set"


def test_the_manifest_records_each_black_box_and_its_matching_rule(folder):
    manifest = json.loads((folder.path / "manifest.json").read_text())
    text = json.dumps(manifest)
    for needle in ("InMemoryMemoryService", "memlab_event_service", "infer=False", "exact text"):
        assert needle in text, needle
