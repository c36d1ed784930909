"""`memlab export`: a run's rankings and labels as TREC run and qrels files, read back with ir-measures, give the
recall@10 memlab reports, per question and on average, on a data set whose event ids repeat in every session of
every user (so the docid must name the session and user, not the event id alone)."""

from __future__ import annotations

import json
from collections import defaultdict

import ir_measures
import pandas as pd
import pytest
import yaml
from ir_measures import R
from typer.testing import CliRunner

from memlab.cli import app

TOPICS = {
    "trip": ["I am flying to Oslo in March for a conference.", "The hotel near the station costs 120 a night.",
             "My flight leaves at 6 in the morning from gate B.", "I will take the airport train to the city."],
    "food": ["I cook lentil soup every Sunday evening.", "My favourite spice is smoked paprika.",
             "I stopped eating red meat last year.", "The bakery on the corner sells rye bread."],
    "work": ["My manager moved our standup to 9:30.", "I am writing the quarterly report on churn.",
             "The new intern starts on Monday.", "Our team switched from Jira to Linear."],
    "pets": ["My cat Miso is afraid of the vacuum.", "The vet appointment is on Thursday at five.",
             "Miso eats salmon kibble twice a day.", "I bought a scratching post for the hallway."],
}  # fmt: skip
QUESTIONS = [("trip", 2, "When does my flight leave?"), ("food", 3, "Do I eat meat?"),
             ("work", 1, "When is the standup now?"), ("pets", 2, "When is the vet appointment?"),
             ("trip", 1, "How much is the hotel?"), ("pets", 3, "What does my cat eat?")]  # fmt: skip


def write_repeating_ids(path) -> None:
    """Two users, four sessions each; every session numbers its turns D1:0..D1:3, so every event id is held by
    eight events. Each question's label names its session."""
    lines = []
    for u, user in enumerate(("ana", "ben")):
        for d, (topic, texts) in enumerate(TOPICS.items()):
            events = [{"id": f"D1:{i}", "author": "user", "at": f"2026-0{d + 1}-0{u + 1}T10:0{i}:00Z", "text": text}
                      for i, text in enumerate(texts)]  # fmt: skip
            lines.append({"type": "session", "app": "chat", "user": user, "id": topic, "events": events})
        for n, (topic, turn, text) in enumerate(QUESTIONS):
            lines.append({"type": "question", "id": f"{user} q{n}", "app": "chat", "user": user, "text": text,
                          "asked_at": "2026-06-01T12:00:00Z", "relevant": [f"D1:{turn}"],
                          "relevant_sessions": [topic]})  # fmt: skip
        lines.append({"type": "question", "id": f"{user} none", "app": "chat", "user": user,
                      "text": "What is my sister's name?", "asked_at": "2026-06-01T12:00:00Z", "relevant": []})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")


@pytest.fixture(scope="module")
def exported(tmp_path_factory, memlab_home, store):
    folder = tmp_path_factory.mktemp("export")
    data = folder / "turns.jsonl"
    write_repeating_ids(data)
    config = {"name": "turns", "k": 10, "datasets": [{"name": "turns", "format": "memlab", "path": str(data)}],
              "systems": [{"name": "event-exact", "strategy": "exact"},
                          {"name": "chunk2", "granularity": "chunk", "chunk_size": 2, "chunk_overlap": 0,
                           "strategy": "exact"}], "sweeps": []}  # fmt: skip
    (folder / "turns.yaml").write_text(yaml.safe_dump(config))
    run = folder / "run"
    result = CliRunner().invoke(app, ["eval", "--config", str(folder / "turns.yaml"), "--out", str(run)])
    assert result.exit_code == 0, result.output
    out = folder / "trec"
    result = CliRunner().invoke(app, ["export", "--run", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return run, out


def test_ir_measures_reads_back_memlabs_recall(exported):
    run, out = exported
    index = json.loads((out / "export.json").read_text())
    assert {f["system"] for f in index["files"]} >= {"event-exact", "chunk2"}
    scores = pd.read_csv(run / "scores.csv")
    per_question = pd.read_parquet(run / "question_scores.parquet")
    means = []
    for entry in index["files"]:
        if entry["system"] not in ("event-exact", "chunk2"):
            continue
        qrels = list(ir_measures.read_trec_qrels(str(out / entry["qrels"])))
        ranked = list(ir_measures.read_trec_run(str(out / entry["run"])))
        mine = per_question[(per_question.system == entry["system"]) & per_question.answerable]
        theirs = {m.query_id: m.value for m in ir_measures.iter_calc([R @ 10], qrels, ranked)}
        expected = {qid.replace(" ", "%20"): value for qid, value in zip(mine.question_id, mine.recall, strict=True)}
        assert theirs == pytest.approx(expected) and len(expected) == 12, entry["system"]
        mean = scores[(scores.system == entry["system"]) & (scores.metric == "recall@10") & scores.group.isna()]\
            .value.iloc[0]  # fmt: skip
        assert ir_measures.calc_aggregate([R @ 10], qrels, ranked)[R @ 10] == pytest.approx(mean)
        means.append(mean)
    assert any(0 < m < 1 for m in means), "a figure that can go wrong both ways"


def test_docids_keep_events_of_different_sessions_apart(exported):
    _, out = exported
    lines = (out / "turns__event-exact.run").read_text().splitlines()
    assert all(len(line.split()) == 6 for line in lines), "qid Q0 docid rank score tag, no stray whitespace"
    ids_per_question: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for line in lines:
        qid, _, doc, _rank, _score, tag = line.split()
        app_name, user, session, event = doc.split("/")
        assert app_name == "turns%2Fchat" and event.startswith("D1%3A") and tag == "event-exact"
        assert user == qid.split("%20")[0], "every hit comes from the asking user's memory"
        ids_per_question[qid][event].add(session)
    assert all(any(len(s) > 1 for s in events.values()) for events in ids_per_question.values()), \
        "each question retrieved one event id from several sessions: the docid tells them apart"  # fmt: skip
    qrels = (out / "turns.qrels").read_text().splitlines()
    assert "ana%20q0 0 turns%2Fchat/ana/trip/D1%3A2 1" in qrels and len(qrels) == 12


def test_export_never_writes_into_someone_elses_folder(exported, tmp_path):
    run, _ = exported
    (tmp_path / "notes.txt").write_text("mine")
    result = CliRunner().invoke(app, ["export", "--run", str(run), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "not empty" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
