"""`memlab report --against`: two runs of differently named configs on the same data, compared paired on the
questions both answered, with what differs between the configs; the gate still refuses them, pointing here."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from tests.conftest import ROOT

EXAMPLE_JSONL = ROOT / "fixtures" / "jsonl" / "example.jsonl"
EXTRA = {"type": "question", "id": "q-omar-move", "app": "travel-agent", "user": "omar", "text": "Where did I move?",
         "asked_at": "2026-05-10T09:00:00Z", "relevant": ["o4"], "qtype": "single-session"}  # fmt: skip


def _eval(folder, name: str, data, systems: list[dict]):
    config = {"name": name, "k": 2, "datasets": [{"name": "mine", "format": "memlab", "path": str(data)}],
              "systems": systems, "sweeps": []}  # fmt: skip
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    out = folder / name
    result = CliRunner().invoke(app, ["eval", "--config", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, memlab_home, store):
    """Config `alpha` and config `beta` on the same conversations: beta chunks the `main` system, renames and
    slows its HNSW system, and its copy of the data drops one question and adds another."""
    folder = tmp_path_factory.mktemp("compare")
    lines = [line for line in EXAMPLE_JSONL.read_text().splitlines() if '"q-omar-seat"' not in line]
    data_b = folder / "mine-b.jsonl"
    data_b.write_text("\n".join([*lines, json.dumps(EXTRA)]) + "\n")
    run_a = _eval(folder, "alpha", EXAMPLE_JSONL, [{"name": "main", "granularity": "event", "strategy": "exact"},
                                                   {"name": "hnsw", "strategy": "hnsw", "ef_search": 40}])
    run_b = _eval(folder, "beta", data_b, [{"name": "main", "granularity": "chunk", "chunk_size": 2,
                                            "chunk_overlap": 0, "strategy": "exact"},
                                           {"name": "hnsw-b", "strategy": "hnsw", "ef_search": 10}])  # fmt: skip
    return run_a, run_b


def _recount(run_a, run_b, system_a: str, system_b: str, column: str) -> tuple[float, int]:
    """The paired mean change of one per-question column, recounted from the two saved question_scores files."""
    qa = pd.read_parquet(run_a / "question_scores.parquet")
    qb = pd.read_parquet(run_b / "question_scores.parquet")
    a = qa[(qa.system == system_a) & qa.answerable].set_index("question_id")[column]
    b = qb[(qb.system == system_b) & qb.answerable].set_index("question_id")[column]
    both = a.index.intersection(b.index)
    return float((a.loc[both] - b.loc[both]).mean()), len(both)


def test_two_configs_compare_paired_on_shared_questions(two_runs):
    run_a, run_b = two_runs
    result = lab.compare_runs(run_a, run_b, systems=["hnsw:hnsw-b"])
    table = result.table.set_index(["system", "metric"])
    change, shared = _recount(run_a, run_b, "main", "main", "recall")
    row = table.loc[("main", "recall@2")]
    assert row.change == pytest.approx(change) and row.questions == shared == 5
    assert row.lo <= row.change <= row.hi and 0 < row.p <= 1
    assert row.run - row.against == pytest.approx(change)
    assert (result.table.change != 0).any(), "the two configs' rankings differ somewhere"
    hnsw = table.loc[("hnsw vs hnsw-b", "mrr@2")]
    assert hnsw.change == pytest.approx(_recount(run_a, run_b, "hnsw", "hnsw-b", "mrr")[0])
    coverage = result.coverage.set_index("system").loc["main"]
    assert (coverage.both, coverage.only_run, coverage.only_against) == (7, 1, 1)
    text = "\n".join(result.differences)
    assert "`systems[main].granularity`: run `\"event\"`, against `\"chunk\"`" in text
    assert "`systems[main].chunk_size`" in text and "`systems[hnsw-b].ef_search`" in text
    assert "data set `mine`: its content differs" in text and "config name: run `alpha`, against `beta`" in text


def test_cli_writes_the_comparison_and_the_gate_points_to_it(two_runs, tmp_path):
    run_a, run_b = two_runs
    done = CliRunner().invoke(app, ["report", "--run", str(run_a), "--against", str(run_b),
                                    "--system", "hnsw:hnsw-b"])  # fmt: skip
    assert done.exit_code == 0, done.output
    written = (run_a / "compare.md").read_text()
    assert written.startswith("# Comparison of two runs") and "| mine | hnsw vs hnsw-b | recall@2 |" in written
    baseline = tmp_path / "beta.json"
    assert CliRunner().invoke(app, ["baseline", "--run", str(run_b), "--out", str(baseline)]).exit_code == 0
    refused = CliRunner().invoke(app, ["report", "--baseline", str(baseline), "--run", str(run_a)])
    assert refused.exit_code == 2
    message = " ".join(refused.output.split())
    assert f"memlab report --run {run_a} --against {baseline}" in message
    assert "systems on `mine` only in the baseline:" in message and "`hnsw-b`" in message
    assert "systems on `mine` only in the run: `hnsw`" in message
    assert "--suite" not in message, "beta is not a suite: no `memlab eval --suite beta` advice"
    against_file = lab.compare_runs(run_a, baseline).table.set_index(["system", "metric"])
    assert against_file.loc[("main", "recall@2"), "change"] == pytest.approx(
        _recount(run_a, run_b, "main", "main", "recall")[0])


def test_a_bad_system_pair_is_a_clear_error(two_runs):
    run_a, run_b = two_runs
    result = CliRunner().invoke(app, ["report", "--run", str(run_a), "--against", str(run_b), "--system", "x:y"])
    assert result.exit_code == 2 and "no split names a system" in result.output
