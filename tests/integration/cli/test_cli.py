"""The command line as a user meets it: the fixtures suite end to end, bad input, and only public imports."""

from __future__ import annotations

import ast
import importlib
import json

import pandas as pd
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app
from tests.conftest import ROOT
from tests.support.scores import labelled


def test_fixtures_suite_writes_a_run_with_recall_against_faiss_exact(fixtures_run):
    out = fixtures_run
    for name in ("report.md", "report.html", "scores.csv", "metrics.json", "manifest.json", "runs"):
        assert (out / name).exists(), name
    scores = labelled(pd.read_csv(out / "scores.csv"))
    by = scores[scores.dataset == "fixtures"].pivot_table(index="system", columns="metric", values="value")
    assert by.loc["pg-exact", "recall_vs_exact"] == 1.0, "pgvector exact must agree with FAISS exact"
    assert by.loc["chunk4o1-exact", "recall_vs_exact"] == 1.0
    assert by.loc["hnsw-ef40-relaxed", "recall_vs_exact"] >= 0.95
    metrics = json.loads((out / "metrics.json").read_text())
    assert not any("/ingest/" in key or "extractor:" in key for key in metrics), "--set sweeps=[] ran no sweep"
    assert "fixtures/hnsw-ef40-off/recall_vs_exact" in metrics and "fixtures/auto/recall@10" in metrics
    assert "faiss-exact-event" in (out / "report.md").read_text()
    again = CliRunner().invoke(app, ["eval", "--suite", "fixtures", "--out", str(out)])
    assert again.exit_code == 0 and "already holds a finished run" in again.output, "a finished run is not redone"


def test_eval_on_a_malformed_fixture_fails_clearly(tmp_path):
    bad = tmp_path / "fx"
    bad.mkdir()
    (bad / "x.yaml").write_text("app: a\nuser: u\nsessions: 3\nqueries: []\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"name: bad\ndatasets:\n  - {{name: fx, format: fixtures, path: {bad}}}\nsweeps: []\n")
    result = CliRunner().invoke(app, ["eval", "--config", str(config), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "x.yaml:" in result.output and "expected a list" in result.output
    assert not (tmp_path / "o").exists(), "nothing is written when the input is bad"


def test_eval_dry_run_loads_every_data_set_lists_each_that_does_not_and_writes_nothing(tmp_path):
    example = ROOT / "fixtures" / "jsonl" / "example.jsonl"
    config = tmp_path / "c.yaml"
    config.write_text(f"name: dry\ndatasets:\n  - {{name: good, format: memlab, path: {example}}}\n"
                      "  - {name: gone, format: memlab, path: nowhere/gone.jsonl}\n"
                      "  - {name: gone2, format: fixtures, path: fixtures/nowhere}\nsweeps: []\n")  # fmt: skip
    runner, out = CliRunner(), tmp_path / "o"
    bad = runner.invoke(app, ["eval", "--config", str(config), "--dry-run", "--out", str(out)])
    assert bad.exit_code == 2 and "2 of 3 data set(s) do not load (gone, gone2)" in bad.output, bad.output
    assert "gone: data set 'gone': nowhere/gone.jsonl not found" in bad.output
    assert "gone2: data set 'gone2': fixtures/nowhere not found" in bad.output and "checkout's fixtures/" in bad.output
    checksum = lab.load_dataset({"name": "good", "format": "memlab", "path": str(example)}).checksum()
    assert f"ok good from {example}: " in bad.output and checksum in bad.output
    good = runner.invoke(app, ["eval", "--config", str(config), "--set", "datasets=[{name: good, format: memlab, "
                               f"path: {example}}}]", "--dry-run", "--out", str(out)])  # fmt: skip
    assert good.exit_code == 0 and "dry: 1 data set(s) load" in good.output, good.output
    assert not out.exists(), "a dry run writes nothing"


def test_check_dataset_names_the_line_and_the_fix(tmp_path):
    good = CliRunner().invoke(app, ["check-dataset", str(ROOT / "fixtures" / "jsonl" / "example.jsonl")])
    assert good.exit_code == 0 and "'questions': 8" in good.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "session", "user": "u", "id": "s", "events": [{"id": "e", "author": "user", '
                   '"at": "2026-01-01T10:00:00", "text": "hello there, friend"}]}\n')
    res = CliRunner().invoke(app, ["check-dataset", str(bad)])
    assert res.exit_code == 2 and "bad.jsonl:1" in res.output and "no time zone" in res.output


def _memlab_imports(tree: ast.AST) -> list[tuple[str, str | None]]:
    """(module, name) for every import of memlab in a parsed source."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "memlab":
            out += [(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.split(".")[0] == "memlab"]
    return out


def _face(module: str) -> set[str] | None:
    """The names a package's face offers (its __all__), None for a module that is no package (internal)."""
    imported = importlib.import_module(module)
    return set(getattr(imported, "__all__", ())) if hasattr(imported, "__path__") else None


def check_public(imports: list[tuple[str, str | None]], where: str) -> None:
    public = {"memlab": set(memlab.__all__) | {"lab"}, "memlab.lab": set(lab.__all__)}
    for module, name in imports:
        names = public.get(module) if module in public else _face(module)
        assert names is not None, f"{where} imports the private module {module}"
        assert name is None or name in names, f"{where} imports {name} from {module}, not in its __all__"


def test_the_cli_imports_only_public_names():
    for path in sorted((ROOT / "memlab" / "cli").glob("*.py")):
        imports = [(m, n) for m, n in _memlab_imports(ast.parse(path.read_text())) if not m.startswith("memlab.cli")]
        check_public(imports, path.relative_to(ROOT).as_posix())


def _one_line_error(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


def test_bad_inputs_end_in_one_line_and_exit_code_2(tmp_path):
    runner = CliRunner()
    cases = {
        ("eval", "--suite", "ci", "--set", "k=0", "--out", str(tmp_path / "k0")): "k must be a whole number",
        ("eval", "--suite", "nope"): "unknown suite 'nope'",
        ("eval", "--suite", "fixtures", "--set", "options.ingest.repeat=0", "--out", str(tmp_path / "r0")):
            "options.ingest.repeat must be a whole number",
        ("eval", "--suite", "fixtures", "--dsn", "notadsn://", "--out", str(tmp_path / "d")): "connection string",
        ("eval", "--config", str(tmp_path / "missing.yaml")): "no such config file",
        ("baseline", "--run", str(tmp_path / "missing")): "no metrics file",
        ("report", "--run", str(tmp_path / "missing")): "no metrics file",
        ("report", "--baseline", str(tmp_path / "none.json"), "--run", str(tmp_path)): "memlab baseline --run",
        ("bench", "--size", "huge", "--out", str(tmp_path / "b")): "bench size 'huge' is unknown",
        ("check", "reliability", "--size", "huge"): "--size must be one of smoke, ci, full",
    }
    (tmp_path / "metrics.json").write_text("{}")
    for args, words in cases.items():
        line = _one_line_error(runner.invoke(app, list(args)))
        assert words in line, (args, line)
    assert not any((tmp_path / name).exists() for name in ("k0", "d", "b")), "a refused run writes nothing"
    hidden = runner.invoke(app, ["eval", "--dsn", "user:secret@x", "--suite", "ci", "--out", str(tmp_path / "h")])
    assert "secret" not in _one_line_error(hidden), "a connection string is never echoed: it may hold a password"


def test_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("memlab ") and result.output.strip()[-1].isdigit()


def _run_folder(path, experiment: str, metrics: dict) -> None:
    path.mkdir()
    (path / "metrics.json").write_text(json.dumps(metrics))
    (path / "manifest.json").write_text(json.dumps({"config": {"resolved": {"name": experiment}}}))


def test_a_baseline_of_another_suite_is_refused_with_the_reason(tmp_path):
    runner = CliRunner()
    _run_folder(tmp_path / "ci-run", "ci", {"synth/auto/recall@10": 0.8})
    _run_folder(tmp_path / "fx-run", "fixtures", {"fixtures/auto/recall@10": 0.9})
    base = tmp_path / "baseline.json"
    made = runner.invoke(app, ["baseline", "--run", str(tmp_path / "ci-run"), "--out", str(base)])
    assert made.exit_code == 0 and json.loads(base.read_text())["experiment"] == "ci"
    line = _one_line_error(runner.invoke(app, ["report", "--baseline", str(base), "--run", str(tmp_path / "fx-run")]))
    assert "'ci'" in line and "'fixtures'" in line
    same = runner.invoke(app, ["report", "--baseline", str(base), "--run", str(tmp_path / "ci-run")])
    assert same.exit_code == 0 and "no regression" in same.output
    old = tmp_path / "old.json"  # a baseline from before it recorded its experiment: still compared
    old.write_text(json.dumps({"synth/auto/recall@10": 0.9}))
    worse = runner.invoke(app, ["report", "--baseline", str(old), "--run", str(tmp_path / "ci-run")])
    assert worse.exit_code == 1 and "regression" in worse.output


def test_the_terminal_table_keeps_breakdown_names(tmp_path):
    """A breakdown's key (`[qtype=x]`, `[size=<=50]`) is printed as text, not read as rich markup and dropped."""
    keys = {"synth/auto/recall@10[qtype=1]": 0.8, "synth/auto/recall@10[size=<=50]": 0.8}
    _run_folder(tmp_path / "run", "ci", keys)
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps({k: 0.9 for k in keys}))
    worse = CliRunner().invoke(app, ["report", "--baseline", str(base), "--run", str(tmp_path / "run")])
    assert worse.exit_code == 1
    flat = worse.output.replace("\n", "").replace("│", "").replace(" ", "")  # a folded cell spans lines
    assert "[qtype=1]" in flat and "[size=<=50]" in flat


def test_report_writes_the_verdicts_as_junit(tmp_path):
    """`memlab report --junit FILE`: a test case per gated metric, a failure for each regression, an ungated key
    skipped; the file parses as XML."""
    import xml.etree.ElementTree as ET

    _run_folder(tmp_path / "run", "ci", {"synth/auto/recall@10": 0.7, "synth/auto/mrr@10": 0.6,
                                         "synth/auto/made_up_figure": 1.0})  # fmt: skip
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps({"synth/auto/recall@10": 0.9, "synth/auto/mrr@10": 0.6,
                                "synth/auto/made_up_figure": 1.0}))  # fmt: skip
    junit = tmp_path / "ci" / "gate.xml"
    result = CliRunner().invoke(app, ["report", "--baseline", str(base), "--run", str(tmp_path / "run"),
                                      "--junit", str(junit)])  # fmt: skip
    assert result.exit_code == 1
    suite = ET.parse(junit).getroot()
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"synth/auto/recall@10", "synth/auto/mrr@10", "synth/auto/made_up_figure"}
    assert cases["synth/auto/recall@10"].find("failure") is not None
    assert cases["synth/auto/mrr@10"].find("failure") is None and cases["synth/auto/mrr@10"].find("skipped") is None
    assert cases["synth/auto/made_up_figure"].find("skipped") is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
