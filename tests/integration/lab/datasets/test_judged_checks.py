"""Checking a judged set before a run: `memlab check-dataset --format judged` makes the
loader's checks and reports like the other formats; a missing file names the key to fix; `judgments` may list
several files (a person's and the model's), with the disagreement rule across them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import memlab
from memlab.cli import app
from memlab.errors import FixtureError
from tests.integration.lab.datasets.test_judged_set import APP, JUDGED, judgment, load, write_judgments, write_pool
from tests.integration.lab.judging.test_pool import QUERIES, write_queries, write_sessions


@pytest.fixture
def files(tmp_path) -> dict:
    sessions = write_sessions(tmp_path / "logs.jsonl", APP)
    return {"queries": write_queries(tmp_path / "queries.jsonl", APP, QUERIES), "sessions": tmp_path / "logs.jsonl",
            "pool": write_pool(tmp_path / "pool.json", sessions),
            "judgments": write_judgments(tmp_path / "j.jsonl", [judgment(*row) for row in JUDGED])}  # fmt: skip


def check(files: dict, *extra: str) -> tuple[int, str]:
    args = ["check-dataset", str(files["queries"]), "--format", "judged", "--pool", str(files["pool"]),
            "--judgments", str(files["judgments"]), *extra]  # fmt: skip
    if "--dsn" not in extra:
        args += ["--sessions", str(files["sessions"])]
    result = CliRunner().invoke(app, args)
    return result.exit_code, " ".join(result.output.split())


def test_check_dataset_reports_a_judged_set(files):
    code, out = check(files)
    assert code == 0, out
    assert "queries.jsonl: {" in out and out.startswith("ok ") and "'questions': 2" in out and "'users': 1" in out
    assert "judged: 2 queries, 6 judged events (3 relevant); pool" in out and "systems event at depth 3" in out


def test_check_dataset_refuses_a_bad_judged_set_naming_the_line_and_fix(files):
    write_judgments(files["judgments"], [judgment("q-cat", "s0-e0", 1), judgment("q-cat", "s9-e0", 1)])
    code, out = check(files)
    assert code == 2 and "j.jsonl:2: event 's9-e0' was not pooled for query 'q-cat'" in out


def test_check_dataset_refuses_judged_options_with_another_format(files):
    result = CliRunner().invoke(app, ["check-dataset", str(files["sessions"]), "--pool", str(files["pool"])])
    assert result.exit_code == 2 and "--pool go(es) with --format judged" in " ".join(result.output.split())


@pytest.mark.parametrize("key", ["queries", "sessions", "pool", "judgments"])
def test_a_missing_judged_file_names_its_key(files, tmp_path, key):
    gone = tmp_path / "gone.jsonl"
    with pytest.raises(memlab.ConfigError, match=rf"`{key}`.*gone.jsonl does not exist; fix `{key}` in the config"):
        load({**files, key: gone})


def test_a_missing_file_in_a_judgments_list_names_its_place(files, tmp_path):
    with pytest.raises(memlab.ConfigError, match=r"`judgments\[1\]`.*fix `judgments`"):
        load({k: v for k, v in files.items() if k != "judgments"},
             judgments=[str(files["judgments"]), str(tmp_path / "gone.jsonl")])


def test_judgments_may_list_a_persons_and_the_models_files(files, tmp_path):
    person = write_judgments(tmp_path / "ana.jsonl", [judgment(*row) for row in JUDGED])
    model = write_judgments(tmp_path / "model.jsonl", [judgment(q, e, r, "model:m") for q, e, r in JUDGED[:3]]
                            + [judgment("q-car", "s9-e0", 1, "model:m")])  # fmt: skip
    base = {k: v for k, v in files.items() if k != "judgments"}
    data = load(base, judgments=[str(person), str(model)])
    by_id = {q.id: q for q in data.questions}
    assert sorted(by_id) == ["q-car", "q-cat", "q-sister"]  # q-car only the model judged
    assert by_id["q-car"].evidence == (("s9", "s9-e0"),) and by_id["q-cat"].evidence == (("s0", "s0-e0"),)
    (pair,) = data.pool["agreement"]
    assert pair["assessors"] == ["ana", "model:m"] and pair["items"] == 3 and pair["agreement"] == 1.0
    assert [q.id for q in load(base, judgments=[str(person), str(model)], assessor="ana").questions] == [
        "q-cat", "q-sister"]  # fmt: skip


def test_a_disagreement_across_judgments_files_names_both_places(files, tmp_path):
    person = write_judgments(tmp_path / "ana.jsonl", [judgment("q-cat", "s0-e0", 1)])
    model = write_judgments(tmp_path / "model.jsonl", [judgment("q-cat", "s0-e1", 0, "model:m"),
                                                       judgment("q-cat", "s0-e0", 0, "model:m")])  # fmt: skip
    base = {k: v for k, v in files.items() if k != "judgments"}
    with pytest.raises(FixtureError, match=r"model.jsonl:2: 'model:m' judged event 's0-e0' of query 'q-cat' "
                                           r"0, 'ana' judged it 1 on .*ana.jsonl:1; set `assessor:`"):
        load(base, judgments=[str(person), str(model)])
    assert load(base, judgments=[str(person), str(model)], assessor="model:m").questions[0].evidence == ()
