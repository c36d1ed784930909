"""Public formats end to end: a hand-written LoCoMo-layout file and a BEIR-layout folder run together through
`memlab eval --config` with the granularity, retrieval and cut-off sweeps (tiny data: one run, a few seconds)."""

from __future__ import annotations

import json

import pandas as pd
import yaml
from typer.testing import CliRunner

from memlab.cli import app
from tests.conftest import ROOT
from tests.support.scores import labelled


def test_locomo_and_beir_run_through_eval_with_three_sweeps(tmp_path, memlab_home, store) -> None:
    config = {
        "name": "public-layouts",
        "k": 5,
        "plots": False,  # no test reads the figures here
        "datasets": [
            {"name": "locomo-tiny", "format": "locomo", "path": str(ROOT / "fixtures" / "locomo" / "example.json")},
            {"name": "beir-tiny", "format": "beir", "path": str(ROOT / "fixtures" / "beir" / "example")},
        ],
        "systems": [{"name": "event-exact", "granularity": "event", "strategy": "exact"}],
        "sweeps": ["granularity", "retrieval", "cutoff"],
        "options": {"granularity": {"chunks": [[4, 1]]},  # the retrieval sweep on a small grid: the layouts are
                    # what is tested here, the grid itself in test_sweeps.py
                    "retrieval": {"renderings": ["text", "speaker"], "modes": ["vector", "hybrid"], "fact_keys": [],
                                  "time": [], "query_renderings": ["as_is"]},
                    "cutoff": {"systems": ["event-exact"], "grid": [0.3, 0.6, 0.9]}},
    }  # fmt: skip
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(app, ["eval", "--config", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    counts = {d["name"]: (d["questions"], d["no_answer"]) for d in manifest["datasets"]}
    assert counts == {"locomo-tiny": (10, 2), "beir-tiny": (3, 0)}  # LoCoMo's category 5 as no-answer questions
    scores = labelled(pd.read_parquet(tmp_path / "run" / "scores.parquet"))
    for dataset in counts:
        systems = set(scores[scores.dataset == dataset].system)
        assert {"session", "chunk4o1", "event-exact@cut0.6"} <= systems  # granularity and cut-off sweeps
        assert any("/" in s for s in systems)  # the retrieval sweep's rendering/mode systems
    mine = scores[(scores.dataset == "locomo-tiny") & (scores.system == "event-exact")].set_index("metric").value
    assert "correct_empty_rate[qtype=adversarial]" in mine and "recall@5[qtype=single-hop]" in mine
