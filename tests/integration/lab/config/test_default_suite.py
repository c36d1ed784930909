"""`memlab eval` with no suite runs the quick suite (a first run of a few minutes); the ci suite, which the CI gate
compares with reports/baseline.json, is one flag away and stays what `make gate` runs."""

from __future__ import annotations

from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from tests.conftest import ROOT


def _size(name: str) -> dict[str, int]:
    cfg = lab.load_suite(name)
    totals = {"events": 0, "questions": 0}
    for spec in cfg.resolved["datasets"]:
        summary = lab.load_dataset(spec, cfg.base_dirs).summary()
        for key in totals:
            totals[key] += summary[key]
    return totals


def test_the_default_suite_is_a_small_slice_of_ci():
    quick, ci = lab.load_suite("quick").resolved, lab.load_suite("ci").resolved
    ci_sets = {d["name"]: d for d in ci["datasets"]}
    for spec in quick["datasets"]:  # the same data, fewer of it: numbers a first run can compare with ci's
        assert spec["name"] in ci_sets and spec["format"] == ci_sets[spec["name"]]["format"], spec
        assert spec.get("path") == ci_sets[spec["name"]].get("path"), spec
    assert {s["name"] for s in quick["systems"]} < {s["name"] for s in ci["systems"]}
    assert set(quick["sweeps"]) < set(ci["sweeps"])
    small, full = _size("quick"), _size("ci")
    assert small["events"] * 2 <= full["events"] and small["questions"] < full["questions"], (small, full)


def test_eval_defaults_to_quick_and_names_the_ci_flag():
    text = " ".join(CliRunner().invoke(app, ["eval", "--help"]).output.replace("│", " ").split())
    assert "quick (the default" in text and "ci (the whole ci suite" in text, text
    makefile = (ROOT / "Makefile").read_text()
    assert "\t$(BIN)/memlab eval\n" in makefile, "make eval runs the default suite"
    assert "memlab eval --suite ci --out reports/ci-gate" in makefile, "the gate keeps the ci suite"
