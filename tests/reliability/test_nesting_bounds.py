"""Deeply nested JSON or YAML in any file a user hands memlab (a data set of every format, judgments, a query
file, a pool, a query log, a baseline) ends in one error line naming the file and exit code 2, never a
RecursionError traceback; nesting within the bound still reads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlab import ConfigError, lab
from memlab.cli import app
from memlab.errors import FixtureError
from tests.conftest import ROOT
from tests.integration.lab.datasets.test_judged_set import APP, JUDGED, judgment, write_judgments, write_pool
from tests.integration.lab.judging.test_pool import QUERIES, write_queries, write_sessions

DEEP = "[" * 50_000 + "]" * 50_000  # past the decoder's stack
DEEPISH = "[" * 300 + "]" * 300  # decodes, but deeper than any memlab file


def one_line_exit_2(args: list[str], where: str) -> str:
    result = CliRunner().invoke(app, args)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, (result.exit_code, result.output[-2000:], repr(result.exception))
    assert "Traceback" not in result.output and len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert where in lines[0] and "nested" in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("deep", [DEEP, DEEPISH])
def test_a_deep_line_of_a_memlab_jsonl_file(tmp_path, deep):
    path = tmp_path / "data.jsonl"
    good = (ROOT / "fixtures" / "jsonl" / "example.jsonl").read_text().splitlines()
    path.write_text("\n".join([good[0], json.dumps({"type": "question", "id": "x"})[:-1] + f', "text": {deep}}}',
                               *good[1:]]) + "\n")  # fmt: skip
    one_line_exit_2(["check-dataset", str(path)], "data.jsonl:2")


@pytest.mark.parametrize("deep", [DEEP, DEEPISH])
def test_a_deep_beir_corpus_line(tmp_path, deep):
    folder = tmp_path / "corpus"
    shutil.copytree(ROOT / "fixtures" / "beir" / "example", folder)
    with (folder / "corpus.jsonl").open("a") as f:
        f.write('{"_id": "dx", "title": "t", "text": ' + deep + "}\n")
    one_line_exit_2(["check-dataset", str(folder), "--format", "beir"], "corpus.jsonl:")


@pytest.mark.parametrize("fmt", ["longmemeval", "locomo"])
@pytest.mark.parametrize("deep", [DEEP, DEEPISH])
def test_a_deep_json_file_of_longmemeval_and_locomo(tmp_path, fmt, deep):
    path = tmp_path / f"{fmt}.json"
    path.write_text(f"[{deep}]")
    one_line_exit_2(["check-dataset", str(path), "--format", fmt], f"{fmt}.json")


@pytest.mark.parametrize(("name", "text"), [
    ("deep.yaml", "app: a\nuser: u\nsessions:\n" + "".join("  " * i + "-\n" for i in range(1, 700))),
    ("flow.yaml", "app: a\nuser: u\nsessions: " + DEEP + "\n"),
    ("deep.json", '{"app": "a", "user": "u", "sessions": ' + DEEP + "}"),
])  # fmt: skip
def test_a_deep_fixture_file(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    one_line_exit_2(["check-dataset", str(tmp_path / name), "--format", "fixtures"], name)


@pytest.fixture
def judged(tmp_path) -> dict[str, Path]:
    sessions = write_sessions(tmp_path / "logs.jsonl", APP)
    return {"queries": write_queries(tmp_path / "queries.jsonl", APP, QUERIES), "sessions": tmp_path / "logs.jsonl",
            "pool": write_pool(tmp_path / "pool.json", sessions),
            "judgments": write_judgments(tmp_path / "j.jsonl", [judgment(*row) for row in JUDGED])}  # fmt: skip


def _judged_args(files: dict[str, Path]) -> list[str]:
    return ["check-dataset", str(files["queries"]), "--format", "judged", "--pool", str(files["pool"]),
            "--judgments", str(files["judgments"]), "--sessions", str(files["sessions"])]  # fmt: skip


@pytest.mark.parametrize("key", ["queries", "judgments", "pool", "sessions"])
def test_a_deep_file_of_a_judged_set(judged, key):
    assert CliRunner().invoke(app, _judged_args(judged)).exit_code == 0  # the set itself is good
    path = judged[key]
    if key == "pool":
        path.write_text(DEEP)
    else:
        path.write_text(path.read_text() + DEEP + "\n")
    one_line_exit_2(_judged_args(judged), path.name)


def test_a_deep_query_log_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"user": "u1", "text": "hi", "asked_at": "2026-01-01T00:00:00Z"}\n' + DEEP + "\n")
    one_line_exit_2(["queries", "import", str(path), "--out", str(tmp_path / "q.jsonl")], "log.jsonl:2")
    assert not (tmp_path / "q.jsonl").exists()


@pytest.mark.parametrize("deep", [DEEP, DEEPISH])
def test_a_deep_baseline_or_metrics_file(tmp_path, deep):
    good = tmp_path / "metrics.json"
    good.write_text(json.dumps({"fx/event/recall@5": 0.5}))
    bad = tmp_path / "baseline.json"
    bad.write_text('{"metrics": ' + deep + "}")
    one_line_exit_2(["report", "--run", str(good), "--baseline", str(bad)], "baseline.json")


BLOCK = "".join("  " * i + "-\n" for i in range(1, 700))  # indentation nesting, under a config's 1 MB


@pytest.mark.parametrize("text", ["templates: " + DEEP, "templates:\n" + BLOCK])
def test_a_deep_question_templates_file(tmp_path, text):
    path = tmp_path / "templates.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"templates.yaml: refused: nested"):
        lab.datasets.load_templates(path)
    assert lab.datasets.load_templates().templates  # memlab's own still read


def test_nesting_within_the_bound_still_reads(tmp_path):
    """A data file's ordinary depth passes; a value a few levels deep is refused by the reader's own check."""
    path = tmp_path / "data.jsonl"
    path.write_text((ROOT / "fixtures" / "jsonl" / "example.jsonl").read_text().replace(
        '"qtype": ', '"answer": [[[["x"]]]], "qtype": ', 1))  # fmt: skip
    with pytest.raises(FixtureError, match=r"`answer` must be a string or a number"):
        lab.load_jsonl(path)


def test_a_reader_without_its_own_bound_still_ends_in_one_line(tmp_path, monkeypatch):
    """The CLI's last guard: a reader that recursed past Python's limit (one not yet bounded) is one error line and
    exit 2, like every user error."""

    def recursing(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(lab.datasets, "load_dataset", recursing)
    path = tmp_path / "data.jsonl"
    shutil.copy(ROOT / "fixtures" / "jsonl" / "example.jsonl", path)
    one_line_exit_2(["check-dataset", str(path)], "flatten the file")
