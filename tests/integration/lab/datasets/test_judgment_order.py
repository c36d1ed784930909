"""Whether assessors disagree is decided on the set of judgments, whatever the order of the lines or the files
they are in: each assessor's verdict is their latest by `time`, and the same set is accepted (with the same
labels) or refused in every order."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from memlab.errors import FixtureError
from tests.integration.lab.datasets.test_judged_set import APP, judgment, write_judgments, write_pool
from tests.integration.lab.judging.test_pool import QUERIES, write_queries, write_sessions

EARLY, LATE = "2026-12-01T10:05:00+00:00", "2026-12-01T11:00:00+00:00"


def line(assessor: str, relevance: int, at: str, event: str = "s0-e0", query: str = "q-cat") -> dict:
    return {**judgment(query, event, relevance, assessor), "time": at}


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    sessions = write_sessions(tmp_path / "logs.jsonl", APP)
    return {"queries": write_queries(tmp_path / "queries.jsonl", APP, QUERIES), "sessions": tmp_path / "logs.jsonl",
            "pool": write_pool(tmp_path / "pool.json", sessions)}  # fmt: skip


def outcomes(files: dict[str, Path], rows: list[dict], tmp_path: Path) -> set[str]:
    """What loading gives for every order of `rows` in one file and for every split of them over two files in
    both file orders: 'refused', or the labels' checksum."""
    seen = set()
    layouts = [[list(order)] for order in itertools.permutations(rows)]
    layouts += [[list(order[:cut]), list(order[cut:])] for order in itertools.permutations(rows)
                for cut in range(1, len(rows))]  # fmt: skip
    for n, parts in enumerate(layouts):
        paths = [write_judgments(tmp_path / f"j{n}-{i}.jsonl", part) for i, part in enumerate(parts)]
        try:
            data = lab.load_dataset({"name": "mine", "format": "judged", **{k: str(v) for k, v in files.items()},
                                     "judgments": [str(p) for p in paths]})  # fmt: skip
        except FixtureError as exc:
            assert "judged it" in str(exc) or "both at" in str(exc), exc
            seen.add("refused")
        else:
            seen.add(data.checksum())
    return seen


def test_a_later_change_of_mind_against_another_assessor_is_refused_in_every_order(files, tmp_path):
    """ana says relevant, bob said so too and then changed his mind: the two disagree, whichever line is last."""
    rows = [line("ana", 1, EARLY), line("bob", 1, EARLY), line("bob", 0, LATE)]
    assert outcomes(files, rows, tmp_path) == {"refused"}


def test_a_change_of_mind_that_ends_in_agreement_is_accepted_in_every_order(files, tmp_path):
    rows = [line("ana", 1, EARLY), line("bob", 0, EARLY), line("bob", 1, LATE), line("ana", 0, EARLY, "s0-e1")]
    (checksum,) = outcomes(files, rows, tmp_path)  # one outcome: the same labels in every order
    assert checksum != "refused"
    write_judgments(tmp_path / "j.jsonl", rows[::-1])
    data = lab.load_dataset({"name": "mine", "format": "judged", **{k: str(v) for k, v in files.items()},
                             "judgments": str(tmp_path / "j.jsonl")})  # fmt: skip
    (question,) = data.questions
    assert question.evidence == (("s0", "s0-e0"),) and set(question.judged) == {("s0", "s0-e0"), ("s0", "s0-e1")}


def test_one_assessor_contradicting_themself_at_the_same_time_is_refused_in_every_order(files, tmp_path):
    rows = [line("ana", 1, EARLY), line("ana", 0, EARLY)]
    assert outcomes(files, rows, tmp_path) == {"refused"}


def test_the_assessor_key_still_chooses_and_takes_that_assessors_latest(files, tmp_path):
    rows = [line("bob", 0, LATE), line("ana", 1, EARLY), line("bob", 1, EARLY)]
    write_judgments(tmp_path / "j.jsonl", rows)
    data = lab.load_dataset({"name": "mine", "format": "judged", **{k: str(v) for k, v in files.items()},
                             "judgments": str(tmp_path / "j.jsonl"), "assessor": "bob"})  # fmt: skip
    assert data.questions[0].evidence == ()  # bob's latest: not relevant


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0)])
def test_check_dataset_refuses_the_disagreement_in_every_order(files, tmp_path, order):
    rows = [line("ana", 1, EARLY), line("bob", 1, EARLY), line("bob", 0, LATE)]
    path = write_judgments(tmp_path / "j.jsonl", [rows[i] for i in order])
    result = CliRunner().invoke(app, ["check-dataset", str(files["queries"]), "--format", "judged", "--pool",
                                      str(files["pool"]), "--judgments", str(path), "--sessions",
                                      str(files["sessions"])])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "'ana' judged it 1" in result.output or "'bob' judged it 0" in result.output, result.output


def test_agreement_takes_each_assessors_latest_by_time_in_any_order(tmp_path):
    rows = [line("bob", 0, LATE), line("ana", 1, EARLY), line("bob", 1, EARLY), line("ana", 1, EARLY, "s0-e1"),
            line("bob", 1, EARLY, "s0-e1")]  # fmt: skip
    pairs = {str(lab.datasets.assessor_agreement(write_judgments(tmp_path / f"j{n}.jsonl", list(order))))
             for n, order in enumerate(itertools.permutations(rows))}  # fmt: skip
    (only,) = pairs
    assert "'agreement': 0.5" in only, only  # bob's latest on s0-e0 is 0: one of the two events agreed
