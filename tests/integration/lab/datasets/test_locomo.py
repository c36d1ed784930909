"""`format: locomo`: LoCoMo's own layout, its evidence ids as written in the wild, category 5 as no-answer
questions, image captions, dates, options, the check-dataset summary and the full suite's optional entry."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memlab import ConfigError, lab
from memlab.cli import app
from memlab.errors import FixtureError
from memlab.lab.datasets.formats.locomo import CATEGORIES as LOCOMO_CATEGORIES
from memlab.lab.datasets.formats.locomo import parse_evidence as locomo_evidence
from memlab.lab.datasets.formats.locomo import parse_session_date as locomo_date
from tests.conftest import ROOT

EXAMPLE = ROOT / "fixtures" / "locomo" / "example.json"


def load(path: Path = EXAMPLE, **options: Any) -> lab.Dataset:
    return lab.load_dataset({"name": "locomo", "format": "locomo", "path": str(path), **options})


@pytest.fixture(scope="module")
def data() -> lab.Dataset:
    return load()


def by_id(data: lab.Dataset) -> dict[str, lab.Question]:
    return {q.id: q for q in data.questions}


@pytest.mark.parametrize(("written", "ids"), [
    (["D1:3"], ["D1:3"]),
    (["D1:3; D2:8"], ["D1:3", "D2:8"]),
    (["D1:3,D2:8"], ["D1:3", "D2:8"]),
    (["D1:3 D2:8"], ["D1:3", "D2:8"]),
    (["D1: 3"], ["D1:3"]),
    ([" D1:3 ", "D2:8  "], ["D1:3", "D2:8"]),
    (["D30:05"], ["D30:5"]),
    (["(D1:3)"], ["D1:3"]),
    ("D1:3;D1:3", ["D1:3"]),
    ([], []),
])  # fmt: skip
def test_evidence_ids_as_written_in_the_wild(written: Any, ids: list[str]) -> None:
    assert locomo_evidence(written) == (ids, [])


def test_evidence_pieces_that_are_no_id_are_kept_apart() -> None:
    assert locomo_evidence(["D1:3", "see D1", "??"]) == (["D1:3"], ["see", "D1", "??"])


def test_categories_follow_the_locomo_evaluation_numbering(data: lab.Dataset) -> None:
    assert LOCOMO_CATEGORIES == {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                                 5: "adversarial"}  # fmt: skip
    q = by_id(data)
    assert [q[f"conv-a/q{i}"].qtype for i in (1, 2, 3, 4, 7)] == ["single-hop", "multi-hop", "temporal",
                                                                   "open-domain", "adversarial"]  # fmt: skip


def test_loose_evidence_resolves_to_the_turns_and_their_sessions(data: lab.Dataset) -> None:
    q = by_id(data)
    assert q["conv-a/q2"].evidence == (("session_1", "D1:1"), ("session_2", "D2:1"))  # "D1:1; D2:1"
    assert q["conv-a/q3"].relevant == ("D1:2", "D2:1")  # "D1:2,D2:1"
    assert q["conv-a/q4"].relevant == ("D2:3",)  # "D2: 3"
    assert q["conv-b/q1"].relevant == ("D1:1",)  # "D01:01"
    assert q["conv-b/q2"].relevant_sessions == ("session_1", "session_2")  # "D1:2 D2:1"


def test_missing_evidence_is_reported_and_all_missing_questions_dropped(data: lab.Dataset) -> None:
    q = by_id(data)
    assert q["conv-a/q5"].relevant == ("D2:2",)  # its D9:9 does not exist: left out, the question kept
    assert "conv-a/q6" not in q and "conv-a/q8" not in q  # every id missing / no evidence: never scored as a miss
    assert data.dropped["evidence ids not in the conversation"] == ["conv-a/q5: D9:9", "conv-a/q6: D7:1"]
    assert data.dropped["questions whose evidence ids are all missing"] == ["conv-a/q6"]
    assert data.dropped["questions without evidence"] == ["conv-a/q8"]
    assert data.dropped["evidence pieces that are not ids"] == ["conv-b/q4: 'see'", "conv-b/q4: 'D1'"]


def test_category_5_questions_are_no_answer_questions(data: lab.Dataset) -> None:
    adversarial = [q for q in data.questions if q.qtype == "adversarial"]
    assert [q.id for q in adversarial] == ["conv-a/q7", "conv-b/q3"]  # with and without evidence in the file
    assert all(not q.answerable and q.relevant == () and q.answer is None for q in adversarial)
    assert data.summary()["no_answer"] == 2


def test_turns_are_events_by_speaker_with_captions_and_utc_minutes(data: lab.Dataset) -> None:
    user = data.user("locomo", "conv-a")
    assert [s.id for s in user.sessions] == ["session_1", "session_2"]  # the empty session_3 adds nothing
    turns = user.session("session_2").events
    assert [e.author for e in turns] == ["Ben", "Ana", "Ben"]
    assert turns[1].text == "Look what I made in class! [image: a photo of a blue ceramic bowl on a wooden table]"
    assert "[image:" not in turns[0].text
    start = datetime(2023, 6, 27, 10, 37, tzinfo=UTC)  # "10:37 am on 27 June, 2023", read as UTC
    assert [e.timestamp for e in turns] == [start + timedelta(minutes=i) for i in range(3)]
    assert all(q.asked_at == start + timedelta(minutes=3) for q in data.questions if q.user_id == "conv-a")


@pytest.mark.parametrize(("text", "expected"), [
    ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
    ("12:09 am on 15 Jan, 2024", datetime(2024, 1, 15, 0, 9, tzinfo=UTC)),
    ("12:30 pm on 1 December 2022", datetime(2022, 12, 1, 12, 30, tzinfo=UTC)),
])  # fmt: skip
def test_session_dates(text: str, expected: datetime) -> None:
    assert locomo_date(text, "here") == expected


def test_options_conversations_and_per_category() -> None:
    first = load(conversations=1)
    assert [u.user_id for u in first.users] == ["conv-a"] and {q.user_id for q in first.questions} == {"conv-a"}
    one = load(per_category=1)  # the first question of each category in each conversation
    assert [q.id for q in one.questions] == ["conv-a/q1", "conv-a/q2", "conv-a/q3", "conv-a/q4", "conv-a/q7",
                                             "conv-b/q1", "conv-b/q2", "conv-b/q3"]  # fmt: skip
    with pytest.raises(ConfigError, match="per_category"):  # checked with the config, before anything loads
        lab.parse_config({"datasets": [{"name": "l", "format": "locomo", "path": str(EXAMPLE),
                                        "per_category": 0}]})  # fmt: skip


def _sample(**changes: Any) -> dict[str, Any]:
    sample = json.loads(EXAMPLE.read_text())[1]
    sample.update(changes)
    return sample


@pytest.mark.parametrize(("samples", "message"), [
    ({"sample_id": "x"}, "expected a JSON list of samples"),
    ([_sample(qa=[{"question": "?", "evidence": ["D1:1"], "category": 7}])], r"category must be one of 1-5"),
    ([_sample(conversation={"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],
                            "session_1_date_time": "yesterday"})], "is not a date like '1:56 pm on 8 May, 2023'"),
    ([_sample(conversation={"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"},
                                          {"speaker": "B", "dia_id": "D1: 1", "text": "yo"}],
                            "session_1_date_time": "1:56 pm on 8 May, 2023"})], "dia_id 'D1:1' repeats"),
    ([_sample(), _sample()], "repeats the sample_id 'conv-b'"),
])  # fmt: skip
def test_malformed_files_name_file_sample_and_fix(tmp_path: Path, samples: Any, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(samples))
    with pytest.raises(FixtureError, match=message) as caught:
        load(path)
    assert str(path) in str(caught.value)


def test_check_dataset_summary() -> None:
    result = CliRunner().invoke(app, ["check-dataset", str(EXAMPLE), "--format", "locomo"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "users 2, sessions 4, events 10" in out and "questions 10 (8 answerable, 2 no-answer)" in out
    assert "adversarial: 2 (2 no-answer)" in out and "single-hop: 4" in out
    assert "dropped evidence ids not in the conversation: 2 (conv-a/q5: D9:9, conv-a/q6: D7:1)" in out
    assert "dropped questions whose evidence ids are all missing: 1 (conv-a/q6)" in out


def test_full_suite_runs_locomo_only_when_given_a_path() -> None:
    plain = lab.load_suite("full")
    assert "locomo" not in [d["name"] for d in plain.resolved["datasets"]] and plain.skipped == ["locomo"]
    given = lab.load_suite("full", [f"datasets.locomo.path={EXAMPLE}"])
    entry = next(d for d in given.resolved["datasets"] if d["name"] == "locomo")
    assert entry["format"] == "locomo" and given.skipped == []
    with pytest.raises(ConfigError, match=r"use an index 0\.\.\d+ or a name \(.*locomo"):
        lab.load_suite("full", ["datasets.locomoo.path=x.json"])
