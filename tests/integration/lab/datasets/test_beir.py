"""`format: beir`: a corpus, its queries and graded qrels as one user's memory; what is skipped is counted, and
malformed files are named with their line and fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from memlab.errors import FixtureError
from tests.conftest import ROOT

EXAMPLE = ROOT / "fixtures" / "beir" / "example"


def load(path: Path = EXAMPLE, **options: object) -> lab.Dataset:
    return lab.load_dataset({"name": "beir", "format": "beir", "path": str(path), **options})


@pytest.fixture(scope="module")
def data() -> lab.Dataset:
    return load()


def test_documents_are_one_users_events_with_title_and_text_joined(data: lab.Dataset) -> None:
    [user] = data.users
    assert [s.id for s in user.sessions] == ["d1", "d2", "d3", "d4", "d5", "d6"]
    first = user.sessions[0].events[0]
    assert (first.id, first.author) == ("d1", "document")
    assert first.text == ("Vitamin D and bone density\n\nVitamin D supplements increase bone mineral density in "
                          "older adults with low baseline levels.")  # fmt: skip
    assert user.sessions[2].events[0].text.startswith("Regular aerobic")  # no title: the text alone
    assert all(e.timestamp.tzinfo is not None for s in user.sessions for e in s.events)


def test_graded_qrels_are_relevant_above_zero(data: lab.Dataset) -> None:
    q = {x.id: x for x in data.questions}
    assert list(q) == ["q1", "q2", "q3"]
    assert q["q2"].relevant == ("d2", "d5")  # scores 2 and 1 both count
    assert q["q3"].relevant == ("d3",)  # its d9 is not in the corpus
    assert all(x.answerable and x.user_id == "example" for x in data.questions)


def test_skipped_queries_and_stray_rows_are_counted(data: lab.Dataset) -> None:
    assert data.dropped == {
        "qrels rows naming a document not in corpus.jsonl": ["line 6: q3 -> d9"],
        "queries without a qrels row": ["q4"],
        "queries without a relevant document (score > 0) in the corpus": ["q5"],  # only a score of 0
    }
    result = CliRunner().invoke(app, ["check-dataset", str(EXAMPLE), "--format", "beir"])
    assert result.exit_code == 0, result.output
    assert "users 1, sessions 6, events 6" in result.output and "query: 3" in result.output
    assert "dropped queries without a qrels row: 1 (q4)" in result.output


def test_split_and_limit(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, folder)
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq4\td4\t1\n")
    assert [q.id for q in load(folder, split="dev").questions] == ["q4"]
    assert [q.id for q in load(folder, limit=2).questions] == ["q1", "q2"]


@pytest.mark.parametrize(("name", "text", "message"), [
    ("corpus.jsonl", '{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": "b"\n', r"corpus.jsonl:2: not valid JSON"),
    ("corpus.jsonl", '{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n', r"corpus.jsonl:2: `_id` 'd1' repeats"),
    ("queries.jsonl", '{"_id": "q1"}\n', r"queries.jsonl:1: `text` missing"),
    ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1 d1 1\n", r"test.tsv:2: expected 3 tab-separated columns"),
    ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\thigh\n", r"test.tsv:2: score 'high' is not a number"),
])  # fmt: skip
def test_malformed_files_name_file_line_and_fix(tmp_path: Path, name: str, text: str, message: str) -> None:
    folder = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, folder)
    (folder / name).write_text(text)
    with pytest.raises(FixtureError, match=message):
        load(folder)


def test_a_missing_file_names_the_layout(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, folder)
    (folder / "qrels" / "test.tsv").unlink()
    with pytest.raises(FixtureError, match=r"qrels/test.tsv missing; the BEIR layout is corpus.jsonl"):
        load(folder)
