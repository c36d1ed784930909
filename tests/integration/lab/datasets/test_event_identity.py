"""An event is (app, user, session, event id): public benchmarks number turns per conversation (`D1:2` in every
conversation), so the same event id in another session or another user is another event. Labels, runs, scores
and the viewer must all tell them apart."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from memlab import lab
from memlab.embedding import embed_queries
from memlab.errors import FixtureError
from memlab.lab.datasets.synth import explain_questions, sample_transcript
from tests.support.scores import labelled

K = 1  # one hit per question: a hit of the right id from the wrong session cannot hide behind the right one
TEXTS = {
    ("u1", "s1"): ["I bake sourdough bread every Sunday morning.",
                   "My sister Claire adopted a grey kitten named Pixel.",
                   "The train to work was delayed by forty minutes today."],
    ("u1", "s2"): ["I signed up for a pottery class on Thursday evenings.",
                   "I moved into a small flat in Lyon last March.",
                   "My laptop battery barely lasts two hours now."],
    ("u2", "s1"): ["I started learning the cello at the community music school.",
                   "My brother lent me his old bicycle for the summer.",
                   "We planted tomatoes and basil on the balcony."],
    ("u2", "s2"): ["I switched jobs and now work as a nurse at the city hospital.",
                   "I ran my first half marathon in under two hours.",
                   "My grandmother turns ninety next week."],
}  # fmt: skip
IDS = ["D1:1", "D1:2", "D1:3"]  # the same three ids in every session of every user
QUESTIONS = [
    # (id, user, text, evidence [(session, event)], relevant_sessions)
    ("q-city", "u1", "Which city did I move to?", [("s2", "D1:2")], ["s2"]),
    # labelled at s2's D1:2 while the text matches s1's D1:2: a hit on s1's D1:2 is not the labelled event
    ("q-kitten", "u1", "What is the name of the grey kitten my sister Claire adopted?", [("s2", "D1:2")], ["s2"]),
    ("q-bread", "u1", "When do I bake sourdough bread?", [("s1", "D1:1")], ["s1"]),
    ("q-race", "u2", "How fast did I run my first half marathon?", [("s2", "D1:2")], ["s2"]),
    ("q-cello", "u2", "Which instrument am I learning at the music school?", [("s1", "D1:1")], ["s1"]),
    ("q-none", "u2", "What is my dog's name?", [], []),
]


def records() -> list[dict]:
    out: list[dict] = []
    for (user, sid), texts in TEXTS.items():
        day = 1 if sid == "s1" else 8
        out.append({"type": "session", "app": "bench", "user": user, "id": sid, "events": [
            {"id": eid, "author": "user", "at": f"2026-03-0{day}T09:0{i}:00Z", "text": text}
            for i, (eid, text) in enumerate(zip(IDS, texts, strict=True))]})  # fmt: skip
    for qid, user, text, evidence, sessions in QUESTIONS:
        out.append({"type": "question", "id": qid, "app": "bench", "user": user, "text": text,
                    "asked_at": "2026-04-01T12:00:00Z", "relevant": [{"session": s, "event": e} for s, e in evidence],
                    "relevant_sessions": sessions})  # fmt: skip
    return out


def q_time():
    from datetime import UTC, datetime

    return datetime(2026, 4, 1, 12, tzinfo=UTC)  # when the questions are asked (facts decay with time)


def write(path, recs: list[dict]):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


@pytest.fixture(scope="module")
def repeated_run(tmp_path_factory, memlab_home, store):
    folder = tmp_path_factory.mktemp("repeated-ids")
    data = write(folder / "repeated.jsonl", records())
    config = lab.parse_config({
        "name": "repeated-ids", "k": K,
        "datasets": [{"name": "rep", "format": "memlab", "path": str(data)}],
        "systems": [{"name": "pg-exact", "granularity": "event", "strategy": "exact"}],
    })  # fmt: skip
    return lab.RunFolder(lab.run_experiment(config, folder / "run"))


def brute_force(embedder) -> dict[str, dict[str, float]]:
    """recall@K and session_recall@K per answerable question, from an exact cosine ranking of the asker's six
    events computed here (numpy), not from anything memlab saved."""
    out = {}
    for qid, user, text, evidence, sessions in QUESTIONS:
        if not evidence:
            continue
        keys = [(sid, eid) for (u, sid), texts in TEXTS.items() if u == user for eid in IDS]
        docs = [TEXTS[(user, sid)][IDS.index(eid)] for sid, eid in keys]
        vectors = np.asarray(embedder.embed_documents(docs))
        query = np.asarray(embed_queries(embedder, [text])[0])
        top = [keys[i] for i in np.argsort(-(vectors @ query), kind="stable")[:K]]
        out[qid] = {"recall": len(set(evidence) & set(top)) / len(evidence),
                    "session_recall": len(set(sessions) & {s for s, _ in top}) / len(sessions)}  # fmt: skip
    return out


@pytest.mark.parametrize("system", ["pg-exact", "faiss-exact-event"])
def test_recall_and_session_recall_match_a_brute_force_recount(repeated_run, embedder, system):
    truth = brute_force(embedder)
    assert {v["recall"] for v in truth.values()} == {0.0, 1.0}, "the data set must tell right from wrong ids"
    qs = repeated_run.question_scores
    mine = qs[(qs.dataset == "rep") & (qs.system == system) & qs.answerable].set_index("question_id")
    for qid, want in truth.items():
        assert mine.at[qid, "recall"] == pytest.approx(want["recall"]), (system, qid)
        assert mine.at[qid, "session_recall"] == pytest.approx(want["session_recall"]), (system, qid)
    scores = labelled(repeated_run.scores).set_index(["system", "metric"]).value
    assert scores[(system, f"recall@{K}")] == pytest.approx(np.mean([v["recall"] for v in truth.values()]))
    assert scores[(system, f"session_recall@{K}")] == pytest.approx(
        np.mean([v["session_recall"] for v in truth.values()]))
    assert scores[("pg-exact", "recall_vs_exact")] == 1.0, "units are (session, unit id): same id, other session"


def test_labels_keep_the_session_of_each_event(repeated_run):
    questions = {q.id: q for q in repeated_run.questions("rep")}
    for qid, _, _, evidence, _ in QUESTIONS:
        assert list(questions[qid].evidence) == evidence, qid
    run = repeated_run.runs("rep")["pg-exact"].frame
    hits = run[run["rank"] > 0]
    assert hits.session_id.notna().all() and all(
        list(s) == [sid] * len(e) for sid, s, e in zip(hits.session_id, hits.event_sessions, hits.event_ids,
                                                      strict=True))  # fmt: skip


def test_the_viewer_marks_the_labelled_hit_not_the_same_id_of_another_session(repeated_run):
    hits = lab.question_hits(repeated_run, "rep")
    kitten = hits[(hits.question_id == "q-kitten") & (hits.system == "pg-exact")]
    assert list(kitten.event_ids.map(list)) == [["D1:2"]] and not kitten.relevant.any(), "s1's D1:2 is not gold"
    assert "kitten" in kitten.text.iloc[0], "the hit shows its own session's text"
    city = hits[(hits.question_id == "q-city") & (hits.system == "pg-exact")]
    assert city.relevant.all() and "Lyon" in city.text.iloc[0]
    page = lab.report.write_html(repeated_run, [], []).read_text()
    start = page.index("const DATA = ") + len("const DATA = ")
    data = json.loads(page[start:page.index(";\n", start)])
    shown = data["hits"]["rep"]["pg-exact"]
    assert [h[2] for h in shown["q-kitten"]] == [0] and [h[2] for h in shown["q-city"]] == [1]
    texts = data["texts"]["rep"]
    assert "kitten" in texts[shown["q-kitten"][0][4]] and "Lyon" in texts[shown["q-city"][0][4]]
    evidence = {q["id"]: q["evidence"] for q in data["questions"]}
    assert evidence["q-kitten"] == [["s2", "D1:2"]]


def test_an_ambiguous_label_is_refused_and_a_session_qualified_one_round_trips(tmp_path):
    recs = records()
    plain = [dict(r, relevant=["D1:2"], relevant_sessions=[]) if r.get("id") == "q-city" else r for r in recs]
    with pytest.raises(FixtureError, match=r"q-city.*D1:2.*s1.*s2"):
        lab.load_jsonl(write(tmp_path / "ambiguous.jsonl", plain))
    narrowed = [dict(r, relevant=["D1:2"]) if r.get("id") == "q-city" else r for r in recs]  # relevant_sessions: s2
    q = {q.id: q for q in lab.load_jsonl(write(tmp_path / "narrowed.jsonl", narrowed)).questions}["q-city"]
    assert q.evidence == (("s2", "D1:2"),) and q.relevant == ("D1:2",)
    dataset = lab.load_jsonl(write(tmp_path / "qualified.jsonl", recs))
    back = lab.load_jsonl(lab.datasets.write_jsonl(dataset, tmp_path / "back.jsonl"))
    assert [q.evidence for q in back.questions] == [q.evidence for q in dataset.questions]
    assert back.checksum() == dataset.checksum()
    moved = [dict(r, relevant=[{"session": "s1", "event": "D1:2"}]) if r.get("id") == "q-city" else r for r in recs]
    assert lab.load_jsonl(write(tmp_path / "moved.jsonl", moved)).checksum() != dataset.checksum()
    stray = [dict(r, relevant=[{"session": "s9", "event": "D1:2"}]) if r.get("id") == "q-city" else r for r in recs]
    with pytest.raises(FixtureError, match=r"s9"):
        lab.load_jsonl(write(tmp_path / "stray.jsonl", stray))


def test_scoring_keys_hits_by_session(tmp_path):
    """`score` on a hand-made run: the same event id from two sessions is two events (no database needed)."""
    q = lab.Question("q", "a", "u", "?", ("D1:2",), evidence=(("s2", "D1:2"),), relevant_sessions=("s2",))
    run = pd.DataFrame({"system": "x", "question_id": "q", "rank": [1, 2], "unit_id": ["D1:2", "D1:2"],
                        "session_id": ["s1", "s2"], "event_ids": [["D1:2"], ["D1:2"]],
                        "event_sessions": [["s1"], ["s2"]], "distance": [0.1, 0.2], "chars": 5,
                        "latency_ms": 1.0, "plan": ""})  # fmt: skip
    at1 = lab.metrics.score(run, [q], k=1)
    at2 = lab.metrics.score(run, [q], k=2)
    assert at1.recall.iloc[0] == 0.0 and at2.recall.iloc[0] == 1.0 and at2.mrr.iloc[0] == 0.5
    assert lab.metrics.session_recall(run, [q], 1).to_dict() == {"q": 0.0} and at1.session_recall.tolist() == [0.0]
    assert lab.metrics.session_recall(run, [q], 2).to_dict() == {"q": 1.0} and at2.session_recall.tolist() == [1.0]


def test_question_ids_are_unique_and_transcripts_show_each_labels_own_event(tmp_path):
    dataset = lab.load_jsonl(write(tmp_path / "rep.jsonl", records()))
    explained = explain_questions(dataset, "u1")
    kitten = explained.split("q-kitten")[1].split("q-bread")[0]
    assert "I moved into a small flat in Lyon" in kitten and "kitten named Pixel" not in kitten, "s2's D1:2"
    marked = sample_transcript(dataset, "u1", 2)
    assert [line for line in marked.splitlines() if "q-kitten" in line] == [
        "[D1:2] user: I moved into a small flat in Lyon last March.   <- q-city, q-kitten"]
    with pytest.raises(FixtureError, match="q-none"):  # runs and scores key a question by its id
        lab.Dataset("rep", dataset.users, [*dataset.questions, replace(dataset.questions[-1], user_id="u1")])


def test_a_hit_is_relevant_by_session_and_id():
    """What the quickstart notebook uses to mark hits: a unit's session, or each cited event's (a fact)."""
    import memlab

    q = lab.Question("q", "a", "u", "?", (), evidence=(("s2", "D1:2"),))
    assert not lab.is_relevant(memlab.Hit("D1:2", "t", 0.1, session_id="s1", event_ids=("D1:2",)), q)
    assert lab.is_relevant(memlab.Hit("D1:2", "t", 0.1, session_id="s2", event_ids=("D1:2",)), q)
    fact = memlab.Hit("f", "t", 0.1, event_ids=("D1:2", "D1:2"), event_sessions=("s1", "s2"))
    assert lab.is_relevant(fact, q) and not lab.is_relevant(fact, lab.Question("q", "a", "u", "?", (),
                                                                               evidence=(("s3", "D1:2"),)))


def test_fact_hits_name_the_session_of_each_event_they_cite(store, embedder, tmp_path, app_name):
    """A fact's provenance is (session, event id): `D1:2` is cited in s2 only, though s1 has a `D1:2` too."""
    import memlab

    recs = records()
    lyon = next(r for r in recs if r.get("user") == "u1" and r.get("id") == "s2")
    lyon["events"][1]["facts"] = [{"subject": "user", "predicate": "home_city", "value": "Lyon", "quote": "Lyon"}]
    dataset = lab.load_jsonl(write(tmp_path / "facts.jsonl", recs))
    facts = memlab.FactMemory(store, embedder, extractor=memlab.facts.LabelledExtractor.from_set(dataset))
    for s in dataset.sessions():
        if s.user_id == "u1":
            facts.add_session(replace(s, app_name=app_name))
    hits = facts.search(app_name, "u1", "Which city do I live in?", allow=("personal", "health"),
                        now=q_time())  # fmt: skip
    city = next(h for h in hits if h.fact.predicate == "home_city")
    assert (city.event_ids, city.event_sessions) == (("D1:2",), ("s2",))
    q = {q.id: q for q in dataset.questions}
    as_hit = memlab.Hit(city.unit_id, city.text, city.distance, event_ids=city.event_ids,
                        event_sessions=city.event_sessions)  # fmt: skip
    assert lab.is_relevant(as_hit, q["q-city"]) and not lab.is_relevant(as_hit, replace(
        q["q-city"], evidence=(("s1", "D1:2"),)))  # fmt: skip


def test_gold_facts_replay_for_their_own_user_when_session_and_event_ids_repeat(store, embedder, tmp_path,
                                                                                 app_name):  # fmt: skip
    """Both users have a session `s2` with an event `D1:1`/`D1:2`: each user's gold facts are replayed for that
    user only (the labelled extractor keyed them by session id, so the second user's replaced the first's)."""
    import memlab

    recs = records()
    by = {(r.get("user"), r.get("id")): r for r in recs}
    by[("u1", "s2")]["events"][1]["facts"] = [{"subject": "user", "predicate": "home_city", "value": "Lyon",
                                              "quote": "Lyon"}]  # fmt: skip
    by[("u2", "s2")]["events"][0]["facts"] = [{"subject": "user", "predicate": "job_title", "value": "nurse",
                                              "quote": "nurse"}]  # fmt: skip
    dataset = lab.load_jsonl(write(tmp_path / "gold.jsonl", recs))
    facts = memlab.FactMemory(store, embedder, extractor=memlab.facts.LabelledExtractor.from_set(dataset))
    for s in dataset.sessions():
        facts.add_session(replace(s, app_name=app_name))
    got = {u: {(f.predicate, f.value) for f in facts.current(app_name, u)} for u in ("u1", "u2")}
    assert got == {"u1": {("home_city", "Lyon")}, "u2": {("job_title", "nurse")}}
