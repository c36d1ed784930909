"""Fixture parsing: the shipped fixtures load; malformed ones fail with file, line, key and what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

import memlab
from memlab.lab import load_fixture_file, load_fixtures

GOOD = """\
app: demo
user: u1
sessions:
  - id: s1
    events:
      - id: e1
        author: user
        at: 2026-03-02T09:15:00+01:00
        text: "We deploy the payments service with Argo CD."
      - id: e2
        author: model
        at: 2026-03-02T09:15:05+01:00
        function_call: {name: lookup, args: {x: 1}}
        skip: function_call
queries:
  - id: q1
    text: how is payments deployed?
    relevant: [e1]
  - id: q2
    text: what is my blood type?
    relevant: []
"""


def write(tmp_path: Path, text: str, name: str = "f.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_fixtures_meet_the_brief(fixture_set):
    summary = fixture_set.summary()
    assert summary["users"] >= 8
    assert all(len(u.sessions) >= 2 for u in fixture_set.users), "multi-session users"
    reasons = {r for u in fixture_set.users for r in u.expected_skips.values()}
    assert {"partial", "function_call", "secret", "too_short"} <= reasons
    assert summary["answerable"] >= 40 and summary["no_answer"] >= 9


def test_good_fixture_parses(tmp_path):
    history, questions = load_fixture_file(write(tmp_path, GOOD))
    assert history.app_name == "demo" and history.sessions[0].events[1].function_calls[0].name == "lookup"
    assert history.sessions[0].events[0].timestamp.utcoffset().total_seconds() == 3600
    assert history.expected_skips == {"e2": "function_call"}
    assert [q.answerable for q in questions] == [True, False]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "        at: 2026-03-02T09:15:00+01:00\n",
            "        at: 2026-03-02T09:15:00\n",
            r"f\.yaml:8: .*events\[0\]\.at.*no timezone",
        ),
        ("        author: user\n", "", r"f\.yaml:6: sessions\[0\]\.events\[0\]: required key 'author' is missing"),
        (
            "    relevant: [e1]\n",
            "    relevant: [e9]\n",
            r"f\.yaml:\d+: queries\[0\]\.relevant: event id 'e9' is not in this file",
        ),
        ("    relevant: [e1]\n", "    relevant: [e2]\n", r"expected to be skipped \(function_call\)"),
        ("    relevant: [e1]\n", "    relevent: [e1]\n", r"unknown key 'relevent'"),
        ("        skip: function_call\n", "        skip: weird\n", r"f\.yaml:14: .*unknown skip reason 'weird'"),
        ("  - id: q2\n", "  - id: q2\n    id: q3\n", r"f\.yaml:\d+: not valid YAML/JSON: duplicate key 'id'"),
        ("    text: how is payments deployed?\n", "    text: [unclosed\n", r"f\.yaml:\d+: not valid YAML/JSON"),
        ("        at: 2026-03-02T09:15:05+01:00\n", "        at: 2026-03-02T09:10:05+01:00\n", r"time order"),
        ("        at: 2026-03-02T09:15:00+01:00\n", "        at: yesterday\n", r"'yesterday' is not an ISO 8601"),
    ],
)
def test_malformed_fixture_errors_name_file_line_and_key(tmp_path, old, new, expected):
    assert old in GOOD
    with pytest.raises(memlab.errors.FixtureError, match=expected):
        load_fixture_file(write(tmp_path, GOOD.replace(old, new, 1)))


def test_ids_must_be_unique_across_files(tmp_path):
    write(tmp_path, GOOD, "a.yaml")
    write(tmp_path, GOOD.replace("user: u1", "user: u2"), "b.yaml")
    with pytest.raises(memlab.errors.FixtureError, match=r"b\.yaml: session id 's1' is also used in .*a\.yaml"):
        load_fixtures(tmp_path)


def test_json_fixtures_load_too(tmp_path):
    import json

    import yaml

    write(tmp_path, json.dumps(yaml.safe_load(GOOD), default=str), "f.json")
    labelled = load_fixtures(tmp_path)
    assert labelled.summary()["events"] == 2


def test_empty_folder_is_an_error(tmp_path):
    with pytest.raises(memlab.errors.FixtureError, match="no fixture files"):
        load_fixtures(tmp_path)
