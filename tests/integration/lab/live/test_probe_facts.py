"""`memlab probe` of fact memory: a config's fact system asks the live store's fact tables read-only (a
SELECT-only role), hits are scored on the events their facts cite, and a label no event layer row nor fact
observation of the user cites any more is stale, not a miss."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app as cli
from tests.conftest import make_session
from tests.integration.lab.live.test_probe_store import select_only_role

# user -> sessions of user/model turns; the rules extractor reads one fact from each user turn
USERS = {
    "u1": [["I live in Lyon.", "Nice city."], ["I am allergic to peanuts.", "Noted."]],
    "u2": [["I work as a nurse.", "A demanding job."], ["I am vegetarian.", "Good to know."]],
}
QUESTIONS = [  # (id, user, text, labelled event)
    ("q1", "u1", "Which city do I live in?", "u1-s0-e0"),
    ("q2", "u1", "What food allergies do I have?", "u1-s1-e0"),
    ("q3", "u2", "What is my job?", "u2-s0-e0"),
    ("q4", "u2", "What diet do I follow?", "u2-s1-e0"),
]
ASKED = "2026-03-03T09:00:00Z"  # the day after the sessions: facts that decay are still served
CONFIG = "name: live-facts\nk: 3\ndatasets:\n  - {name: live, format: memlab, path: labels.jsonl}\n" \
         "systems:\n  - {name: facts, extractor: rules}\n  - {name: vector}\n"  # fmt: skip


def write_set(folder: Path, app: str) -> tuple[Path, Path]:
    labels = folder / "labels.jsonl"
    labels.write_text("".join(json.dumps({"type": "question", "id": qid, "app": app, "user": user, "text": text,
                                          "asked_at": ASKED, "relevant": [event]}) + "\n"
                              for qid, user, text, event in QUESTIONS))  # fmt: skip
    (folder / "experiment.yaml").write_text(CONFIG)
    return labels, folder / "experiment.yaml"


def fill(store: memlab.Store, embedder, app: str, *, events_of: tuple[str, ...] = ()) -> memlab.FactMemory:
    """Fact memory of every user through the public API (the rules extractor: no model); `events_of` users' events
    go to event memory too."""
    facts = memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor())
    events = memlab.EventMemory(store, embedder)
    for user, sessions in USERS.items():
        for i, texts in enumerate(sessions):
            session = make_session(app, user, f"{user}-s{i}", texts)
            assert facts.add_session(session).inserted == 1
            if user in events_of:
                events.add_session(session)
    return facts


@pytest.fixture(scope="module")
def live(store, embedder, tmp_path_factory):
    app = f"pfacts-{uuid.uuid4().hex[:8]}"
    folder = tmp_path_factory.mktemp("facts")
    fill(store, embedder, app)
    return app, *write_set(folder, app), select_only_role(store)


def test_a_fact_system_probes_the_fact_tables_with_select_only(live, tmp_path):
    _, labels, config, dsn = live
    result = CliRunner().invoke(cli, ["probe", "--dsn", dsn, "--labels", str(labels), "--config", str(config),
                                      "--system", "facts", "--out", str(tmp_path / "run")])  # fmt: skip
    assert result.exit_code == 0, result.output
    folder = lab.RunFolder(tmp_path / "run")
    assert folder.manifest["probe"]["system"] == "facts" and folder.manifest["probe"]["stale_labels"] == 0
    assert folder.manifest["config"]["resolved"]["systems"][0]["kind"] == "facts"
    recall = {r.question_id: r.recall for r in folder.question_scores.itertuples()}
    assert recall == dict.fromkeys(["q1", "q2", "q3", "q4"], 1.0)  # each fact cites the labelled event
    top = lab.question_hits(folder, "labels", "q1").query("rank == 1").iloc[0]
    assert list(top.event_ids) == ["u1-s0-e0"] and "I live in Lyon" in top.text  # the observation's quote


def test_erased_facts_make_their_labels_stale_not_misses(store, embedder, tmp_path, live):
    _, _, _, dsn = live
    app = f"pfacts-{uuid.uuid4().hex[:8]}"
    labels, config = write_set(tmp_path, app)
    facts = fill(store, embedder, app, events_of=("u2",))  # u2's events are in event memory as well
    facts.forget_session(app, "u1", "u1-s0")  # q1's only label: no fact and no event cites it any more
    facts.forget_session(app, "u2", "u2-s0")  # q3's label: its fact is gone, its event is still in event memory
    result = lab.run_probe(labels, tmp_path / "run", dsn=dsn, config=config, system="facts", embedder=embedder,
                           health=False)  # fmt: skip
    assert result.stale[["question_id", "event_id", "question_left_out"]].values.tolist() == [["q1", "u1-s0-e0", True]]
    assert result.questions == 3 and result.metrics["stale_rate"] == pytest.approx(1 / 4)
    recall = {r.question_id: r.recall for r in lab.RunFolder(result.folder).question_scores.itertuples()}
    assert recall == {"q2": 1.0, "q3": 0.0, "q4": 1.0}  # q3 is a real miss: the store holds its event


def test_a_user_without_events_or_facts_is_refused(live, tmp_path):
    app, _, config, dsn = live
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"type": "question", "id": "q9", "app": app, "user": "nobody", "text": "Who?",
                                  "relevant": ["x-e0"]}) + "\n")  # fmt: skip
    with pytest.raises(memlab.ConfigError, match=f"{app}/nobody"):
        lab.run_probe(labels, tmp_path / "run", dsn=dsn, config=config, system="facts", health=False)


def test_search_flags_on_a_fact_system_are_refused(live, tmp_path):
    _, labels, config, dsn = live
    with pytest.raises(memlab.ConfigError, match=r"fact system.*strategy"):
        lab.run_probe(labels, tmp_path / "run", dsn=dsn, config=config, system="facts", strategy="exact")
