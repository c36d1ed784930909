"""The CI gate users copy (docs/examples/ci): the GitHub Actions workflow is valid YAML whose steps name only memlab
commands and options that exist, the same as the plain shell script's; both install the torch memlab pins; and the
script runs end to end on a tiny suite: its run passes against the run's own metrics (gate.md and the JUnit file
written) and fails against a baseline made from it that the run regresses against."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from typer.testing import CliRunner

from memlab.cli import app
from tests.conftest import ROOT
from tests.support.command_lines import invocations, memlab_problem

CI = ROOT / "docs" / "examples" / "ci"
WORKFLOW, SCRIPT = CI / "github-actions.yml", CI / "memlab-gate.sh"
GATED = "fx/exact/recall@10"  # the metric the doctored baseline claims an impossible value of


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _steps() -> list[dict]:
    jobs = _workflow()["jobs"]
    assert list(jobs) == ["gate"]
    return jobs["gate"]["steps"]


def _memlab_lines(where: str, text: str) -> list[tuple[str, ...]]:
    found = invocations(text, "memlab", where)
    problems = [f"{inv}: {problem}" for inv in found if (problem := memlab_problem(inv.words))]
    assert not problems, "\n".join(problems)
    return [inv.words[:2] + tuple(w for w in inv.words[2:] if w.startswith("--")) for inv in found]


def test_the_workflow_is_valid_and_its_memlab_lines_parse():
    workflow = _workflow()
    assert workflow["name"] and "pull_request" in workflow[True], "PyYAML reads the `on:` key as True"
    assert workflow["permissions"]["pull-requests"] == "write", "it comments on the pull request"
    steps = _steps()
    assert all(("uses" in step) != ("run" in step) for step in steps), "each step uses an action or runs a command"
    lines = [line for i, step in enumerate(steps) if "run" in step for line in _memlab_lines(f"step {i}", step["run"])]
    assert [line[:2] for line in lines] == [("memlab", "eval"), ("memlab", "report")]
    assert "--junit" in lines[1] and "--baseline" in lines[1]
    gate = next(step for step in steps if step.get("id") == "gate")
    assert gate["continue-on-error"] is True, "the run folder is kept and gate.md posted before the job fails"
    after = steps[steps.index(gate) + 1 :]
    assert all("always()" in step.get("if", "") or "steps.gate.outcome" in step.get("if", "") for step in after)
    assert any(step.get("uses", "").startswith("actions/upload-artifact@") for step in after)
    assert "exit 1" in after[-1]["run"] and after[-1]["if"] == "steps.gate.outcome == 'failure'"


def test_the_script_runs_the_workflows_memlab_lines():
    """Same commands with the same options in the script and the workflow (their values are each one's own)."""
    script = _memlab_lines(str(SCRIPT), SCRIPT.read_text(encoding="utf-8"))
    workflow = [line for step in _steps() if "run" in step for line in _memlab_lines("workflow", step["run"])]
    assert script == workflow


def test_both_install_the_torch_memlab_is_tested_with_from_the_cpu_index():
    """The torch the Makefile installs (the version memlab's own CI runs), inside pyproject's range."""
    version = re.search(r"^TORCH\s*:=\s*torch==(\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1)
    ranges = [r for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
              if r.startswith("torch")]  # fmt: skip
    assert len(ranges) == 1 and Version(version) in SpecifierSet(ranges[0].removeprefix("torch")), ranges
    assert _workflow()["env"]["MEMLAB_TORCH"] == version
    default = re.search(r'^MEMLAB_TORCH="\$\{MEMLAB_TORCH:-([^}]+)\}"$', SCRIPT.read_text(), re.MULTILINE)
    assert default and default.group(1) == version
    install = next(step["run"] for step in _steps() if "pip install" in step.get("run", ""))
    for text in (install, SCRIPT.read_text()):
        first = next(line for line in text.splitlines() if "pip install" in line and not line.lstrip().startswith("#"))
        assert "torch==" in first and "--index-url https://download.pytorch.org/whl/cpu" in first, first


def _script(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """The script as a CI runs it, with this venv's memlab (on PATH) instead of a pip install."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(["bash", str(SCRIPT)], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": path, "MEMLAB_SKIP_INSTALL": "1", **env})  # fmt: skip


def _junit(path: Path) -> ET.Element:
    suite = ET.parse(path).getroot()
    assert suite.tag == "testsuite" and int(suite.get("tests")) > 0
    return suite


def test_the_script_passes_then_fails_against_a_baseline_the_run_regresses_against(tmp_path, memlab_home, store):
    """The script's one real evaluation serves both verdicts: its first run is gated against the run's own metrics
    (a run's metrics.json is a baseline the gate reads), then `memlab baseline` makes the committed baseline of
    that run, doctored so the run regresses against it, and the script gates the finished run again."""
    config = tmp_path / "suite.yaml"
    config.write_text(yaml.safe_dump({
        "name": "tiny", "k": 10, "sweeps": [], "systems": [{"name": "exact", "strategy": "exact"}],
        "datasets": [{"name": "fx", "format": "memlab",
                      "path": str(ROOT / "fixtures/jsonl/example.jsonl")}]}))  # fmt: skip
    env = {"MEMLAB_CONFIG": str(config), "MEMLAB_HOME": str(memlab_home)}  # MEMLAB_RUN: the default
    run, baseline = tmp_path / "memlab-run", tmp_path / "memlab" / "baseline.json"

    passed = _script({**env, "MEMLAB_BASELINE": str(run / "metrics.json")}, tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "already holds a finished run" not in passed.stdout, "the first run evaluates"
    assert (run / "manifest.json").is_file() and (run / "gate.md").is_file()
    assert int(_junit(run / "junit.xml").get("failures")) == 0

    baseline.parent.mkdir()
    made = CliRunner().invoke(app, ["baseline", "--run", str(run), "--out", str(baseline)])
    assert made.exit_code == 0, made.output
    saved = json.loads(baseline.read_text())  # a recall no run can reach, on every question the baseline holds
    saved["metrics"][GATED] = 2.0
    baseline.write_text(json.dumps(saved))
    questions = baseline.with_name("baseline.questions.parquet")
    scores = pd.read_parquet(questions)
    scores.loc[scores.answerable & (scores.system == "exact"), "recall"] = 2.0
    scores.to_parquet(questions, index=False)
    failed = _script(env, tmp_path)  # MEMLAB_BASELINE: the default, memlab/baseline.json
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "already holds a finished run" in failed.stdout, "the finished run is gated again, not run again"
    suite = _junit(run / "junit.xml")
    assert [case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None] == [GATED]
    assert GATED in (run / "gate.md").read_text()


def test_the_script_names_its_missing_config(tmp_path):
    done = _script({"MEMLAB_CONFIG": ""}, tmp_path)
    assert done.returncode != 0 and "MEMLAB_CONFIG" in done.stderr and not (tmp_path / "memlab-run").exists()
