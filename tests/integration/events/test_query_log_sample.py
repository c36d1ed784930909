"""`memlab queries sample` (a stratified sample of the query log, as a query file) and the plain JSON Lines
query reader behind `memlab queries import`: the file format, the strata, and the errors on bad lines."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime

import pytest
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app
from memlab.lab.base.sizes import size_bucket
from memlab.lab.datasets.judged.sampling import query_record
from tests.conftest import make_session

EMPTY = memlab.SearchSettings(max_distance=0.01)  # nothing is that near: an empty result
SMALL = ["We deploy the payments service with Argo CD.", "My dog is called Pixel and loves the beach.",
         "The quarterly report is due on Friday.", "I prefer green tea over coffee in the morning."]  # fmt: skip
BIG = [f"Note number {i}: the build server {i} restarts at {i % 24} o'clock." for i in range(52)]


@pytest.fixture(scope="module")
def logged_app(store, embedder):
    """One app's log: two small users (4 units: bucket <=50), one big user (52 units: 51-500), searches with
    hits and without; one question asked twice."""
    app_name = "test-qsample"
    memory = memlab.EventMemory(store, embedder, query_log=memlab.QueryLog(enabled=True))
    for user in ("small1", "small2"):
        memory.add_session(make_session(app_name, user, "s1", SMALL))
        for i in range(6):
            memory.search(app_name, user, f"question {i} of {user} about deployments")
        memory.search(app_name, user, "question 0 of " + user + " about deployments")  # asked again: counts once
        for i in range(2):
            memory.search(app_name, user, f"unrelated {i} zebra migration of {user}", EMPTY)
    memory.add_session(make_session(app_name, "big", "b1", BIG))
    for i in range(3):
        memory.search(app_name, "big", f"when does build server {i} restart?")
    memory.search(app_name, "big", "zebra migration", EMPTY)
    return app_name


def _sample(tmp_path, logged_app, *args: str):
    out = tmp_path / "queries.jsonl"
    result = CliRunner().invoke(app, ["queries", "sample", "--out", str(out), "--app", logged_app, *args])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text().splitlines()], result.output, out


def test_sample_is_stratified_by_size_bucket_and_empty_result(tmp_path, logged_app):
    rows, output, _ = _sample(tmp_path, logged_app, "--n", "8", "--seed", "3")
    strata = {}
    for row in rows:
        strata[row["stratum"]] = strata.get(row["stratum"], 0) + 1
        assert row["stratum"] == f"{size_bucket(row['memory_size'])}/{'empty' if row['empty'] else 'hits'}"
    # equal shares of 8 over 4 strata; the one-query stratum gives its spare place to another
    assert sorted(strata) == ["51-500/empty", "51-500/hits", "<=50/empty", "<=50/hits"]
    assert strata["51-500/empty"] == 1 and sum(strata.values()) == 8 and min(strata.values()) >= 1
    assert {r["memory_size"] for r in rows if r["stratum"].startswith("51-500")} == {52}
    assert "51-500/empty" in output and len({r["query_id"] for r in rows}) == 8
    again, _, _ = _sample(tmp_path, logged_app, "--n", "8", "--seed", "3")
    assert again == rows, "the same log and seed draw the same sample"


def test_sample_writes_the_shared_query_file_format(tmp_path, logged_app):
    rows, _, out = _sample(tmp_path, logged_app, "--n", "500")
    assert len(rows) == 12 + 4 + 3 + 1, "every distinct query once (the repeated question counts once)"
    for row in rows:
        assert list(row) == ["query_id", "app", "user", "text", "asked_at", "origin", "stratum", "empty",
                             "memory_size"]  # fmt: skip
        asked = datetime.fromisoformat(row["asked_at"])
        assert asked.utcoffset() is not None and row["origin"] == "logged" and row["app"] == logged_app
        key = "\x1f".join((row["app"], row["user"], row["text"], asked.isoformat()))
        plain = hashlib.sha1(key.encode()).hexdigest()[:16]  # the id, unless it reads as a credential (below)
        assert row["query_id"] == (plain if memlab.redact_secrets(plain) == plain else row["query_id"])
        assert row["query_id"] == query_record(row["app"], row["user"], row["text"], asked, "logged")["query_id"]
    assert [q.query_id for q in lab.datasets.read_queries(out)] == [r["query_id"] for r in rows], "pooling reads it"


def test_a_query_id_never_reads_as_a_credential_so_a_redacted_pool_still_joins_its_query_file():
    # This query's plain digest is 16 decimal digits passing Luhn: the run-folder redactor takes it for a card
    # number, so a pool file (written through the redactor) would name the query by a redacted id.
    asked = datetime.fromisoformat("2026-12-01T13:34:18+00:00")
    plain = hashlib.sha1("\x1f".join(("my-agent", "u1", "Where do I live?", asked.isoformat())).encode()).hexdigest()
    assert memlab.redact_secrets(plain[:16]) != plain[:16] and memlab.find_secrets(plain[:16]) == ["Payment card"]
    made = query_record("my-agent", "u1", "Where do I live?", asked, "logged")["query_id"]
    assert re.fullmatch(r"[0-9a-f]{16}", made) and made != plain[:16]
    assert memlab.redact_secrets(made) == made and memlab.find_secrets(made) == []
    assert query_record("my-agent", "u1", "Where do I live?", asked, "imported")["query_id"] == made, "stable"
    other = query_record("my-agent", "u2", "Where do I live?", asked, "logged")["query_id"]
    assert other != made


def test_sample_refuses_a_file_it_did_not_write_and_an_empty_log(tmp_path, logged_app):
    mine = tmp_path / "notes.jsonl"
    mine.write_text('{"my": "notes"}\n')
    result = CliRunner().invoke(app, ["queries", "sample", "--out", str(mine), "--app", logged_app])
    assert result.exit_code == 2 and "will not overwrite" in result.output and mine.read_text() == '{"my": "notes"}\n'
    result = CliRunner().invoke(app, ["queries", "sample", "--out", str(tmp_path / "q.jsonl"), "--app", "no-such"])
    assert result.exit_code == 2 and "no queries" in result.output and "QueryLog(enabled=True)" in result.output
    result = CliRunner().invoke(app, ["queries", "sample", "--out", str(tmp_path / "q.jsonl"), "--kind", "unit"])
    assert result.exit_code == 2 and "kind must be events or facts" in result.output


GOOD = '{"app": "a", "user": "u1", "text": "Where do I live?", "asked_at": "2026-06-01T12:00:00+00:00"}'


@pytest.mark.parametrize(("line", "expected"), [
    ('{"app": "a", "user": "u1", "text": "x"', "not JSON"),
    ('["a", "u1"]', "expected a JSON object"),
    ('{"user": "u1", "txt": "Where?", "asked_at": "2026-06-01T12:00:00Z"}', "did you mean 'text'?"),
    ('{"app": "a", "text": "Where?", "asked_at": "2026-06-01T12:00:00Z"}', "`user` must be a non-empty string (miss"),
    ('{"app": "a", "user": "u1", "text": "  ", "asked_at": "2026-06-01T12:00:00Z"}', "`text` must be a non-empty"),
    ('{"app": "a", "user": "u1", "text": "Where?", "asked_at": "2026-06-01T12:00:00"}', "(has no time zone)"),
    ('{"app": "a", "user": "u1", "text": "Where?", "asked_at": "yesterday"}', "got 'yesterday'"),
    ('{"app": "a", "user": "u1", "text": "Where?"}', "`asked_at` must be an ISO 8601 time with a zone (missing)"),
])  # fmt: skip
def test_plain_query_file_errors_name_the_line_the_problem_and_the_fix(tmp_path, line, expected):
    path = tmp_path / "mine.jsonl"
    path.write_text(GOOD + "\n\n" + line + "\n")
    with pytest.raises(memlab.errors.FixtureError) as caught:
        lab.datasets.read_plain_queries(path)
    assert f"{path}:3: " in str(caught.value) and expected in str(caught.value)
    result = CliRunner().invoke(app, ["queries", "import", str(path), "--out", str(tmp_path / "q.jsonl")])
    assert result.exit_code == 2 and ":3:" in result.output and not (tmp_path / "q.jsonl").exists()


def test_plain_query_file_becomes_a_query_file(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(GOOD + "\n" + '{"user": "u2", "text": "Was ist mein Job?", "asked_at": "2026-06-02T08:00:00Z"}\n')
    out = tmp_path / "queries.jsonl"
    result = CliRunner().invoke(app, ["queries", "import", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["app"], r["user"], r["origin"]) for r in rows] == [("a", "u1", "file"), ("default", "u2", "file")]
    assert rows[1]["asked_at"] == "2026-06-02T08:00:00+00:00" and "stratum" not in rows[0]
    assert [q.text for q in lab.datasets.read_queries(out)] == ["Where do I live?", "Was ist mein Job?"]
    assert "dropped" not in result.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(memlab.errors.FixtureError, match="no queries"):
        lab.datasets.read_plain_queries(empty)


def test_import_drops_repeated_queries_keeps_the_first_and_says_how_many(tmp_path):
    """A real log repeats questions: the same user of the same app asking the same text, at another time or the
    same one, is one query (its first asking); another user, app or text is another query."""

    def line(text: str = "Where do I live?", at: str = "2026-06-01T12:00:00+00:00", **scope: str) -> str:
        return json.dumps({"app": "a", "user": "u1", "text": text, "asked_at": at} | scope)

    lines = [line(), line(at="2026-06-03T09:00:00+00:00"), line(user="u2"), line(app="b"), line(),
             line("  Where do I live? ", at="2026-06-04T09:00:00Z"), line("Where did I live?")]  # fmt: skip
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "queries.jsonl"
    result = CliRunner().invoke(app, ["queries", "import", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "(4 queries; dropped 3 repeated queries" in " ".join(result.output.split())
    rows = [json.loads(r) for r in out.read_text().splitlines()]
    assert [(r["app"], r["user"], r["text"]) for r in rows] == [
        ("a", "u1", "Where do I live?"), ("a", "u2", "Where do I live?"), ("b", "u1", "Where do I live?"),
        ("a", "u1", "Where did I live?")]  # fmt: skip
    assert rows[0]["asked_at"] == "2026-06-01T12:00:00+00:00", "the first asking is kept"
    assert len({r["query_id"] for r in rows}) == 4 and len(lab.datasets.read_queries(out)) == 4
