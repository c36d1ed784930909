"""A conversation between two people: one memlab user per conversation, each speaker as the
event's author. Features that read author 'user' (the rule fact extractor, first-person queries, prefer_author)
find nothing in such data; the run says so instead of reporting 0 facts and recall 0.000 without a word."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from tests.conftest import ROOT

TURNS = [("Alice", "I adopted a grey cat called Miso last week."), ("Bob", "Nice! I work as a nurse in Leeds."),
         ("Alice", "My sister Clara moved to Porto in March."), ("Bob", "I am allergic to peanuts, sadly."),
         ("Alice", "I started learning the cello this spring."), ("Bob", "My favourite food is ramen.")]  # fmt: skip


def write_two_speakers(path) -> None:
    events = [{"id": f"D1:{i + 1}", "author": who, "at": f"2026-03-02T09:0{i}:00Z", "text": text}
              for i, (who, text) in enumerate(TURNS)]  # fmt: skip
    records = [{"type": "session", "app": "talks", "user": "conv-1", "id": "s1", "events": events},
               {"type": "question", "id": "q1", "app": "talks", "user": "conv-1", "text": "What is Alice's cat called?",
                "relevant": ["D1:1"]},
               {"type": "question", "id": "q2", "app": "talks", "user": "conv-1", "text": "Where does Bob work?",
                "relevant": ["D1:2"]}]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_two_speaker_data_set_warns_where_a_feature_needs_author_user(tmp_path, memlab_home, store):
    data = tmp_path / "two.jsonl"
    write_two_speakers(data)
    config = {"name": "two", "datasets": [{"name": "two-speakers", "format": "memlab", "path": str(data)}],
              "systems": [{"name": "facts-rules", "extractor": "rules"},
                          {"name": "prefer-user", "strategy": "exact", "prefer_author": "user",
                           "query_rendering": "first_person"}],
              "sweeps": []}  # fmt: skip
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["eval", "--config", str(path), "--out", str(out)])
    assert res.exit_code == 0, res.output
    warnings = json.loads((out / "manifest.json").read_text())["warnings"]
    assert len(warnings) == 3, warnings
    text = " ".join(warnings)
    assert all("data set 'two-speakers'" in w for w in warnings)
    assert "rule fact extractor (system 'facts-rules')" in text
    assert "prefer_author 'user' (system 'prefer-user')" in text and "first-person" in text
    assert all("author 'user'" in w and "author-neutral" in w for w in warnings), "each names the fix"
    assert "'Alice' 3, 'Bob' 3" in text, "the authors the data has"
    log = " ".join(res.output.split())
    assert "warning: data set 'two-speakers'" in log and "rule fact extractor" in log, "said in the run log"
    assert "## Warnings" in (out / "report.md").read_text() and "rule fact extractor" in (out / "report.md").read_text()


def test_no_warning_where_nothing_needs_author_user_or_the_data_has_it(tmp_path):
    data = tmp_path / "two.jsonl"
    write_two_speakers(data)
    two = lab.load_dataset({"name": "two-speakers", "format": "memlab", "path": str(data)})
    neutral = {"systems": [{"name": "plain", "strategy": "exact"}, {"name": "alice", "prefer_author": "Alice"}],
               "sweeps": ["cutoff"], "options": {}}  # fmt: skip
    assert lab.datasets.dataset_warnings([two], neutral) == [], "author-neutral settings need no author 'user'"
    sweeps = {"systems": [], "sweeps": ["granularity", "retrieval", "facts"], "options": {}}
    found = lab.datasets.dataset_warnings([two], sweeps)
    assert any("rule fact extractor" in w and "sweep granularity" in w for w in found), found
    assert any("first-person" in w and "sweep retrieval" in w for w in found), found
    only_other = {**sweeps, "options": {"granularity": {"datasets": ["other"]}, "retrieval": {"datasets": ["other"]},
                                        "facts": {"datasets": ["other"]}}}  # fmt: skip
    assert lab.datasets.dataset_warnings([two], only_other) == [], "sweeps that do not run on it do not count"
    mine = lab.load_jsonl(ROOT / "fixtures" / "jsonl" / "example.jsonl", name="mine")
    assert lab.datasets.dataset_warnings([mine], sweeps) == [], "the agent's user is author 'user'"


def test_the_documented_example_loads_and_is_warned_about():
    path = ROOT / "docs" / "examples" / "two-speakers.jsonl"  # docs/tutorials/your-own-data.md shows it
    data = lab.load_dataset({"name": "dialogues", "format": "jsonl", "path": str(path)})
    assert data.summary()["users"] == 2 and {e.author for s in data.sessions() for e in s.events} == {
        "Alice", "Bob", "Carol", "Dan"}  # fmt: skip
    found = lab.datasets.dataset_warnings([data], {"systems": [{"name": "f", "extractor": "rules"}], "sweeps": []})
    assert len(found) == 1 and "in 2 of 2 user(s)" in found[0]


def test_check_dataset_notes_a_data_set_without_author_user(tmp_path):
    data = tmp_path / "two.jsonl"
    write_two_speakers(data)
    res = CliRunner().invoke(app, ["check-dataset", str(data)])
    out = " ".join(res.output.split())
    assert res.exit_code == 0 and "ok" in out
    assert "no event has author 'user'" in out and "'Alice' 3, 'Bob' 3" in out and "rule fact extractor" in out
    mine = CliRunner().invoke(app, ["check-dataset", str(ROOT / "fixtures" / "jsonl" / "example.jsonl")])
    assert mine.exit_code == 0 and "author 'user'" not in mine.output
