"""The command line as a user meets it: the fixtures suite end to end, bad input, and only public imports."""

from __future__ import annotations

import ast
import json

import pandas as pd
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app
from tests.conftest import ROOT


def test_fixtures_suite_writes_a_run_with_recall_against_faiss_exact(tmp_path, memlab_home, store):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--suite", "fixtures", "--out", str(out), "--set",
                                      "options.ingest.repeat=1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    for name in ("report.md", "scores.csv", "metrics.json", "manifest.json", "runs"):
        assert (out / name).exists(), name
    scores = pd.read_csv(out / "scores.csv")
    by = scores[scores.dataset == "fixtures"].pivot_table(index="system", columns="metric", values="value")
    assert by.loc["pg-exact", "recall_vs_exact"] == 1.0, "pgvector exact must agree with FAISS exact"
    assert by.loc["chunk4o1-exact", "recall_vs_exact"] == 1.0
    assert by.loc["hnsw-ef40-relaxed", "recall_vs_exact"] >= 0.95
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["fixtures/ingest/raw_encode_per_s"] > 0 and metrics["fixtures/ingest/ingest_units_per_s"] > 0
    assert "fixtures/hnsw-ef40-off/recall_vs_exact" in metrics and "fixtures/auto/recall@10" in metrics
    assert metrics["fact-fixtures/extractor:labelled/key_accuracy"] == 1.0, "gold candidates rebuild every state"
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


def check_public(imports: list[tuple[str, str | None]], where: str) -> None:
    public = {"memlab": set(memlab.__all__) | {"lab"}, "memlab.lab": set(lab.__all__)}
    for module, name in imports:
        assert module in public, f"{where} imports the private module {module}"
        assert name is None or name in public[module], f"{where} imports {name} from {module}, not in its __all__"


def test_the_cli_imports_only_public_names():
    check_public(_memlab_imports(ast.parse((ROOT / "memlab" / "cli.py").read_text())), "memlab/cli.py")


def test_the_memory_library_never_imports_the_workbench():
    for path in (ROOT / "memlab").rglob("*.py"):
        rel = path.relative_to(ROOT / "memlab")
        if rel.parts[0] == "lab" or rel.name == "cli.py":
            continue
        for module, name in _memlab_imports(ast.parse(path.read_text())):
            assert not module.startswith("memlab.lab") and not (module == "memlab" and name == "lab"), \
                f"memlab/{rel} imports the workbench ({module})"  # fmt: skip
