"""report.md has one writer, called once per run: `run_experiment` writes it at the end of the run with the
baseline it is given, and nothing (the CLI included) writes it again."""

from __future__ import annotations

import ast

from memlab import lab
from tests.conftest import ROOT

MEMLAB = ROOT / "memlab"


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def test_the_package_defines_one_report_writer_and_only_the_run_calls_it():
    defined, callers = [], []
    for path in sorted(MEMLAB.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(), rel)
        defined += [rel for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "write_report"]
        callers += [rel for n in ast.walk(tree) if isinstance(n, ast.Call) and _called(n) == "write_report"]
    assert defined == ["memlab/lab/report/writer.py"], f"write_report defined in {defined}"
    # a probe is a run of its own: run_probe writes its report once, `memlab report --run` redoes it (one call site)
    assert callers == ["memlab/lab/experiment/run.py", "memlab/lab/live/probe_folder.py"], (
        f"report.md written from {callers}: run_experiment and run_probe write it once")


def test_the_run_writes_its_report_with_the_baseline_it_is_given(tmp_path, memlab_home, store):
    config = lab.parse_config({
        "name": "one-report",
        "datasets": [{"name": "fixtures", "format": "memlab", "path": str(ROOT / "fixtures/jsonl/example.jsonl")}],
        "systems": [{"name": "pg-exact", "strategy": "exact"}],
    }, source="<test>")  # fmt: skip
    baseline = ROOT / "reports" / "baseline.json"  # the committed baseline: a run of the ci suite
    out = lab.run_experiment(config, tmp_path / "run", log=lambda *_: None, baseline=baseline)
    report = (out / "report.md").read_text()
    assert "## Against the committed baseline" in report and f"Not gated: `{baseline}`" in report, (
        "the baseline reaches the run's one report (another suite's baseline: not gated, and said so)"
    )
    assert "## fixtures" in report
    lab.write_report(out)  # the same folder reported again without a baseline: no comparison
    assert "Against the committed baseline" not in (out / "report.md").read_text()
