"""`memlab probe`: a labelled set asked of a live store through a SELECT-only role, with alerts, the
Prometheus textfile, stale labels, drift against the previous probe, and clear errors on bad input."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import psycopg
import pytest
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app as cli
from tests.conftest import make_session
from tests.integration.lab.live.test_probe_store import select_only_role

USERS = {
    "u1": [["I moved to Lyon last spring.", "My sister Ana plays the cello in an orchestra."],
           ["I am allergic to peanuts and shellfish.", "Our dog Rex is a border collie."]],
    "u2": [["I work as a nurse at the night shift.", "My favourite dish is mushroom risotto."],
           ["We are planning a trip to Norway in June.", "My car is an old red Volvo."]],
    "u3": [["I started learning the violin this year.", "My daughter turns seven next week."],
           ["I switched to a vegetarian diet.", "My office is on the tenth floor downtown."]],
}  # fmt: skip
QUESTIONS = [
    ("q1", "u1", "Which city do I live in?", [("s0", 0)]),
    ("q2", "u1", "What food allergies do I have?", [("s1", 0)]),
    ("q3", "u2", "What is my job?", [("s0", 0)]),
    ("q4", "u2", "Where are we travelling this summer?", [("s1", 0)]),
    ("q5", "u3", "Which instrument am I learning?", [("s0", 0)]),
    ("q6", "u3", "What do I eat these days?", [("s1", 0), ("s0", 1)]),
]


def fill(store: memlab.Store, embedder, app: str) -> None:
    memory = memlab.EventMemory(store, embedder)
    for user, sessions in USERS.items():
        for i, texts in enumerate(sessions):
            memory.add_session(make_session(app, user, f"{user}-s{i}", texts))


def write_labels(path: Path, app: str, questions=QUESTIONS) -> Path:
    lines = [json.dumps({"type": "question", "id": qid, "app": app, "user": user, "text": text,
                         "relevant": [event_id(user, s, e) for s, e in labels]})
             for qid, user, text, labels in questions]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def event_id(user: str, session: str, index: int) -> str:
    return f"{user}-{session}-e{index}"


@pytest.fixture(scope="module")
def live(store, embedder, tmp_path_factory):
    """A store filled through the public API, its labels, and the DSN of a role with SELECT only."""
    app = f"probe-{uuid.uuid4().hex[:8]}"
    fill(store, embedder, app)
    labels = write_labels(tmp_path_factory.mktemp("labels") / "labels.jsonl", app)
    return app, labels, select_only_role(store)


def probe(*args: str):
    return CliRunner().invoke(cli, ["probe", *args])


def test_an_alert_that_holds_exits_3_and_writes_the_textfile(live, tmp_path):
    app, labels, dsn = live
    prom = tmp_path / "memlab.prom"
    result = probe("--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "run"), "--alert", "recall@10<1.01",
                   "--alert", "empty_rate>0.5", "--textfile", str(prom))  # fmt: skip
    assert result.exit_code == 3, result.output
    text = prom.read_text()
    assert f'memlab_probe_metric{{app="{app}",metric="recall@10"}} 1' in text
    assert 'memlab_probe_alert_firing{alert="recall@10<1.01"} 1' in text
    assert 'memlab_probe_alert_firing{alert="empty_rate>0.5"} 0' in text
    assert "memlab_probe_questions 6" in text and "memlab_probe_stale_labels 0" in text
    folder = lab.RunFolder(tmp_path / "run")  # the workbench reads it like any run
    assert folder.manifest["format_version"] == lab.runs.FORMAT_VERSION, "a probe writes the run folder format"
    assert folder.scores.query("metric == 'recall@10'").value.iloc[0] == 1.0
    assert len(folder.question_scores) == 6
    report = (tmp_path / "run" / "report.md").read_text()
    for section in ("## Probe of the live store", "### Stale labels", "### Alerts", "## Index health"):
        assert section in report
    assert (tmp_path / "run" / "report.html").exists()


def test_an_alert_that_does_not_hold_exits_0(live, tmp_path):
    _, labels, dsn = live
    result = probe("--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "run"), "--alert", "recall@10<0.5")
    assert result.exit_code == 0, result.output


def test_an_erased_label_is_stale_not_a_miss(store, embedder, tmp_path):
    app = f"probe-{uuid.uuid4().hex[:8]}"
    fill(store, embedder, app)
    labels = write_labels(tmp_path / "labels.jsonl", app)
    dsn = select_only_role(store)
    before = lab.run_probe(labels, tmp_path / "before", dsn=dsn, embedder=embedder, health=False)
    memory = memlab.EventMemory(store, embedder)
    memory.delete_memory(app, "u2", event_id("u2", "s0", 0), session_id="u2-s0")  # q3's only label
    memory.delete_memory(app, "u3", event_id("u3", "s1", 0), session_id="u3-s1")  # one of q6's two labels
    after = lab.run_probe(labels, tmp_path / "after", dsn=dsn, embedder=embedder, health=False)
    assert len(after.stale) == 2 and set(after.stale.question_id) == {"q3", "q6"}
    assert after.stale.set_index("question_id").question_left_out.to_dict() == {"q3": True, "q6": False}
    assert after.questions == before.questions - 1  # q3 left the denominator
    recall = {r.question_id: r.recall for r in lab.RunFolder(after.folder).question_scores.itertuples()}
    was = {r.question_id: r.recall for r in lab.RunFolder(before.folder).question_scores.itertuples()}
    assert "q3" not in recall and recall["q6"] == 1.0
    assert {q: v for q, v in recall.items() if q != "q6"} == {q: v for q, v in was.items() if q not in ("q3", "q6")}
    assert after.metrics["stale_rate"] == pytest.approx(2 / 7)
    assert "2 labelled event(s) no longer exist" in (after.folder / "report.md").read_text()


class Rotated:
    """The same model id and dimension, other vectors: every vector turned by one fixed random rotation (a model
    swapped under the same name)."""

    def __init__(self, inner, seed: int = 7):
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(inner.dimension, inner.dimension)))
        self.rotation = q.astype(np.float32)

    def embed_documents(self, texts):
        return np.asarray(self.inner.embed_documents(texts), dtype=np.float32) @ self.rotation

    def embed_query(self, text):
        return np.asarray(self.inner.embed_query(text), dtype=np.float32) @ self.rotation


def test_a_swapped_embedder_is_reported_as_drift(live, embedder, tmp_path):
    _, labels, dsn = live
    first = lab.run_probe(labels, tmp_path / "first", dsn=dsn, embedder=embedder, health=False)
    same = lab.run_probe(labels, tmp_path / "same", dsn=dsn, embedder=embedder, against=first.folder, health=False)
    swapped = lab.run_probe(labels, tmp_path / "swapped", dsn=dsn, embedder=Rotated(embedder), against=first.folder,
                            alerts=["drift_p<0.01"], health=False)  # fmt: skip
    assert same.drift_p > 0.5
    assert swapped.drift_p < 0.01 and [a.alert.text for a in swapped.firing] == ["drift_p<0.01"]
    assert "drift_p = " in (swapped.folder / "report.md").read_text()


def test_a_database_without_memlab_tables_is_a_clear_error(live, store, scratch_db, tmp_path):
    _, labels, _ = live
    dsn = psycopg.conninfo.make_conninfo(store.dsn, dbname=scratch_db)
    result = probe("--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "run"))
    assert result.exit_code == 2, result.output
    assert "not a memlab store" in result.output and "memory_unit" in result.output


def test_a_label_naming_an_unknown_user_is_a_clear_error(live, tmp_path):
    app, _, dsn = live
    labels = write_labels(tmp_path / "labels.jsonl", app, [*QUESTIONS, ("q9", "nobody", "Who am I?", [("s0", 0)])])
    result = probe("--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "run"))
    assert result.exit_code == 2, result.output
    assert f"{app}/nobody" in result.output


def test_a_config_data_set_and_system(live, tmp_path):
    app, labels, dsn = live
    sessions = [json.dumps({"type": "session", "app": app, "user": user, "id": f"{user}-s{i}",
                            "events": [{"id": f"{user}-s{i}-e{j}", "author": "user", "at": "2026-03-02T09:00:00Z",
                                        "text": text} for j, text in enumerate(texts)]})
                for user, history in USERS.items() for i, texts in enumerate(history)]  # fmt: skip
    (tmp_path / "mine.jsonl").write_text("\n".join(sessions) + "\n" + labels.read_text())
    (tmp_path / "experiment.yaml").write_text(
        "name: probe-config\nk: 2\ndatasets:\n  - {name: mine, format: memlab, path: mine.jsonl}\n"
        "systems:\n  - {name: exact-cut, strategy: exact, max_distance: 0.9}\n  - {name: other}\n")
    result = probe("--dsn", dsn, "--labels", str(tmp_path / "experiment.yaml"), "--system", "exact-cut",
                   "--out", str(tmp_path / "run"), "--alert", "recall@2<0")  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["probe"]["system"] == "exact-cut" and manifest["config"]["resolved"]["k"] == 2
    assert manifest["config"]["resolved"]["systems"][0]["settings"]["max_distance"] == 0.9
    scores = lab.RunFolder(tmp_path / "run").scores
    assert scores.query("metric == 'recall@2' and group == ''").dataset.tolist() == ["mine"]
    wrong = probe("--dsn", dsn, "--labels", str(tmp_path / "experiment.yaml"), "--system", "nope",
                  "--out", str(tmp_path / "run2"))  # fmt: skip
    assert wrong.exit_code == 2 and "exact-cut" in wrong.output
