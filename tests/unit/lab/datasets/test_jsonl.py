"""memlab's JSONL data set format: strict parsing with the line and the fix, and a lossless round trip."""

from __future__ import annotations

import json

import pytest

import memlab
from memlab import lab
from tests.conftest import ROOT

EXAMPLE = ROOT / "fixtures" / "jsonl" / "example.jsonl"
SESSION = {"type": "session", "app": "a", "user": "u", "id": "s1",
           "events": [{"id": "e1", "author": "user", "at": "2026-01-01T10:00:00Z", "text": "I live in Oslo now."}]}
QUESTION = {"type": "question", "id": "q1", "app": "a", "user": "u", "text": "Where do I live?", "relevant": ["e1"]}


def write(tmp_path, *records) -> object:
    path = tmp_path / "d.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_the_example_loads_with_its_labels():
    data = lab.load_jsonl(EXAMPLE)
    assert data.summary() == {"users": 2, "sessions": 4, "events": 14, "questions": 8, "answerable": 6,
                              "no_answer": 2}  # fmt: skip
    q = next(q for q in data.questions if q.id == "q-nadia-companions")
    assert q.relevant == ("n1", "n5") and q.relevant_sessions == ("n-2026-03-02", "n-2026-04-10")
    assert q.asked_at.tzinfo is not None and q.qtype == "knowledge-update" and q.answer.startswith("nobody")


def test_round_trip_is_lossless(tmp_path):
    data = lab.load_jsonl(EXAMPLE)
    again = lab.load_jsonl(lab.datasets.write_jsonl(data, tmp_path / "copy.jsonl"), name=data.name)
    assert again.checksum() == data.checksum()


@pytest.mark.parametrize(
    ("records", "message"),
    [
        (["{not json"], ":1: not valid JSON"),
        ([{**SESSION, "type": "chat"}], '`type` must be "session" or "question"'),
        ([{**SESSION, "colour": 1}], "unknown key(s) ['colour'] in a session"),
        ([{**SESSION, "events": [{**SESSION["events"][0], "at": "2026-01-01 10:00"}]}], "no time zone"),
        ([{**SESSION, "events": []}], "`events` must be a non-empty list"),
        ([SESSION, {**QUESTION, "relevant": ["e9"]}], ":2: question 'q1': relevant event id(s) ['e9']"),
        ([SESSION, {**QUESTION, "user": "ghost"}], "who has no session in the file"),
        ([SESSION, {k: v for k, v in QUESTION.items() if k != "relevant"}], "`relevant` is required"),
        ([SESSION, QUESTION, QUESTION], ":3: question id 'q1' repeats"),
        ([SESSION, SESSION], "repeats line 1"),
        ([QUESTION], "no session records"),
    ],
)
def test_bad_lines_name_the_line_and_the_fix(tmp_path, records, message):
    with pytest.raises(memlab.errors.FixtureError) as err:
        lab.load_jsonl(write(tmp_path, *records))
    assert message in str(err.value)
    assert "d.jsonl" in str(err.value)


def test_a_no_answer_question_and_the_default_app(tmp_path):
    session = {k: v for k, v in SESSION.items() if k != "app"}
    data = lab.load_jsonl(write(tmp_path, session, {"type": "question", "id": "q", "user": "u", "text": "Pets?",
                                                    "relevant": []}))  # fmt: skip
    assert data.users[0].app_name == "default" and not data.questions[0].answerable


def test_load_dataset_dispatches_by_format_and_checks_options(tmp_path):
    spec = {"name": "mine", "format": "memlab", "path": str(EXAMPLE)}
    assert lab.load_dataset(spec).name == "mine"
    with pytest.raises(memlab.ConfigError, match="unknown key"):
        lab.load_dataset({**spec, "limit": 3})
    with pytest.raises(memlab.ConfigError, match="format 'csv' is unknown"):
        lab.load_dataset({**spec, "format": "csv"})
    lme = lab.load_dataset({"name": "lme", "format": "longmemeval", "per_type": 2,
                            "path": "datasets/longmemeval/longmemeval_s_knowledge_update.json.gz"})  # fmt: skip
    assert len(lme.questions) <= 4 and {q.qtype for q in lme.questions} <= {"knowledge-update", "abstention"}
    assert len(lme.users) == len(lme.questions) and all(len(u.sessions) > 30 for u in lme.users), "real haystacks"
