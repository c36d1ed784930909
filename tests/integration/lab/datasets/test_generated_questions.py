"""Generated questions, for users with no query log: from the facts the rule extractor finds in the
event fixtures' sessions, one template question per predicate with the fact's event as evidence; the written files
load as a judged set at once; a predicate without a template and a question holding its answer are counted, not
silently dropped; and a judged set mixing generated and real questions says so in its report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app
from memlab.lab.datasets.generated.written import Generation
from tests.conftest import make_session
from tests.integration.lab.datasets.test_two_speakers import write_two_speakers

APP = "gen-test"
SESSIONS = {  # user -> sessions of alternating user/model turns (event ids <sid>-e<i>)
    "u1": {"a1": ["I live in Lisbon now.", "Lisbon is lovely.", "I'm allergic to peanuts.", "Noted."],
           "a2": ["My partner Sam is a teacher.", "Nice.", "I have two kids.", "Busy house!"]},
    "u2": {"b1": ["I work as a nurse on night shifts.", "Night shifts are hard.", "I'm vegetarian.", "Good to know."]},
}  # fmt: skip


def write_sessions(path: Path) -> list[memlab.Session]:
    sessions = [make_session(APP, user, sid, texts) for user, by_id in SESSIONS.items() for sid, texts in by_id.items()]
    users = [lab.datasets.UserHistory(APP, u, [s for s in sessions if s.user_id == u]) for u in SESSIONS]
    lab.datasets.write_jsonl(lab.Dataset("logs", users, []), path)
    return sessions


def facts_of(data: lab.Dataset) -> dict[tuple[str, str], list]:
    """Every fact the rule extractor finds, by (app, user): what the questions must not give away."""
    out: dict[tuple[str, str], list] = {}
    extractor = memlab.RuleExtractor()
    for s in data.sessions():
        events = [e for e in s.events if e.text and e.text.strip()]
        out.setdefault((s.app_name, s.user_id), []).extend(
            extractor.extract(events, session_id=s.id, registry=memlab.facts.default_registry()))
    return out


@pytest.fixture(scope="module")
def generated(fixture_set) -> Generation:
    return lab.datasets.template_questions(fixture_set)


def test_template_questions_from_fixture_sessions_name_real_events_and_never_hold_the_answer(fixture_set, generated):
    assert len(generated.queries) >= 15 and sum(generated.made.values()) >= len(generated.queries)
    assert re.fullmatch(r"rule-templates@[0-9a-f]{10}", generated.generator)
    events = {(s.app_name, s.user_id): set() for s in fixture_set.sessions()}
    for s in fixture_set.sessions():
        events[(s.app_name, s.user_id)] |= {(s.id, e.id) for e in s.events}
    facts = facts_of(fixture_set)
    for q in generated.queries:
        assert q["origin"] == "generated" and q["generator"] == generated.generator and q["text"].endswith("?")
        evidence = generated.evidence[q["query_id"]]
        assert evidence and set(evidence) <= events[(q["app"], q["user"])]  # that user's own events
        for fact in facts[(q["app"], q["user"])]:
            assert fact.value.lower() not in q["text"].lower(), (q["text"], fact.value)
    assert {q["text"] for q in generated.queries} >= {"What is my partner's name?", "What is my diet?"}
    labelled = generated.questions()  # with complete labels assumed: what the labels sweep compares
    assert [(q.id, q.evidence, q.qtype) for q in labelled] == [
        (q["query_id"], tuple(generated.evidence[q["query_id"]]), "generated") for q in generated.queries]


def test_every_registry_predicate_has_a_shipped_template():
    assert sorted(lab.datasets.load_templates().templates) == memlab.facts.default_registry().names()


def test_a_predicate_without_a_template_is_counted_not_asked(fixture_set, generated, tmp_path):
    shipped = lab.datasets.load_templates().templates
    path = tmp_path / "templates.yaml"
    path.write_text(yaml.safe_dump({"templates": {k: v for k, v in shipped.items() if k != "partner_name"}}))
    fewer = lab.datasets.template_questions(fixture_set, lab.datasets.load_templates(path))
    assert fewer.skipped["no template: partner_name"] == generated.made["partner_name"] > 0
    assert "partner_name" not in fewer.made and fewer.generator != generated.generator  # new templates, new id
    assert len(fewer.queries) < len(generated.queries)


def test_a_template_that_would_hold_the_answer_is_dropped_and_counted(fixture_set, generated, tmp_path):
    path = tmp_path / "templates.yaml"
    path.write_text(yaml.safe_dump({"templates": {"diet": "Is {whose} diet vegetarian?"}}))
    leaky = lab.datasets.template_questions(fixture_set, lab.datasets.load_templates(path))
    vegetarian = sum(f.value == "vegetarian" for fs in facts_of(fixture_set).values() for f in fs
                     if f.predicate == "diet")  # fmt: skip
    assert vegetarian > 0 and leaky.skipped["answer in the question"] == vegetarian
    assert all("vegetarian" not in q["text"] for q in leaky.queries)


@pytest.mark.parametrize(("templates", "message"), [
    ({"diett": "What is {whose} diet?"}, r"'diett' is not a registry predicate \(did you mean 'diet'\?\)"),
    ({"diet": "What is {whose} {value}?"}, r"unknown field\(s\) \['value'\]"),
    ({"diet": "Tell me the diet"}, r"one question ending in '\?'"),
])  # fmt: skip
def test_bad_templates_are_config_errors_naming_the_fix(tmp_path, templates, message):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({"templates": templates}))
    with pytest.raises(memlab.ConfigError, match=message):
        lab.datasets.load_templates(path)


def generate(tmp_path: Path, *extra: str) -> dict[str, Path]:
    write_sessions(tmp_path / "logs.jsonl")
    out = tmp_path / "generated.jsonl"
    result = CliRunner().invoke(app, ["questions", "generate", "--sessions", str(tmp_path / "logs.jsonl"), "--out",
                                      str(out), *extra])  # fmt: skip
    assert result.exit_code == 0, result.output
    return {"queries": out, "sessions": tmp_path / "logs.jsonl", "pool": tmp_path / "generated.pool.json",
            "judgments": tmp_path / "generated.judgments.jsonl"}  # fmt: skip


def test_the_generated_files_load_as_a_judged_set_with_the_evidence_judged_by_the_generator(tmp_path):
    files = generate(tmp_path)
    queries = [json.loads(line) for line in files["queries"].read_text().splitlines()]
    assert queries and {q["origin"] for q in queries} == {"generated"}
    lines = [json.loads(line) for line in files["judgments"].read_text().splitlines()]
    assert {j["assessor"] for j in lines} == {f"generator:{queries[0]['generator']}"} and {j["relevance"] for j in
                                                                                          lines} == {1}  # fmt: skip
    data = lab.load_dataset({"name": "gen", "format": "judged", **{k: str(v) for k, v in files.items()}})
    assert {q.id for q in data.questions} == {q["query_id"] for q in queries}
    by_text = {(q.user_id, q.text): q for q in data.questions}
    assert by_text[("u1", "Which city is my home now?")].evidence == (("a1", "a1-e0"),)
    assert by_text[("u2", "What is my diet?")].evidence == (("b1", "b1-e2"),)
    assert all(q.qtype == "generated" for q in data.questions)
    assert data.pool["origins"] == {"generated": len(queries)} and data.pool["generators"] == [queries[0]["generator"]]
    text = " ".join(lab.report.judged_pool_lines(data.pool, ["event", "chunk3"], 5))
    assert "**Generated questions**" in text and "Not in the pool" not in text  # no system pooled: none flagged
    again = CliRunner().invoke(app, ["questions", "generate", "--sessions", str(files["sessions"]), "--out",
                                     str(files["queries"])])  # its own files: written again  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "note:" not in again.output, "users with author 'user' get no author note"
    files["pool"].write_text("{}")  # not a generated pool any more: never overwritten
    refused = CliRunner().invoke(app, ["questions", "generate", "--sessions", str(files["sessions"]), "--out",
                                       str(files["queries"])])  # fmt: skip
    assert refused.exit_code == 2 and "is not a generated pool file" in refused.output


def test_a_judged_set_mixing_generated_and_real_questions_labels_its_figures(tmp_path, memlab_home):
    """Generated questions plus two of the user's own (origin file), judged by hand on a pool of every event: the
    report's headline and data set section say the figures are mixed, and the per-origin breakdown is there."""
    files = generate(tmp_path)
    sessions = write_sessions(tmp_path / "logs.jsonl")
    generated = [json.loads(line) for line in files["queries"].read_text().splitlines()]
    at = "2026-12-01T10:00:00+00:00"
    own = [{"query_id": "own-city", "app": APP, "user": "u1", "text": "Where do I live?", "asked_at": at,
            "origin": "file"},
           {"query_id": "own-job", "app": APP, "user": "u2", "text": "What is my job?", "asked_at": at,
            "origin": "file"}]  # fmt: skip
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(q) + "\n" for q in [*generated, *own]))
    pooled = []
    for q in [*generated, *own]:
        pooled.append({**q, "hits": [{"event_id": e.id, "session": s.id, "text": e.text, "at": e.timestamp.isoformat(),
                                      "author": e.author, "found_by": [{"system": "event", "rank": 1}]}
                                     for s in sessions if s.user_id == q["user"] for e in s.events]})  # fmt: skip
    pool = tmp_path / "mixed.pool.json"
    pool.write_text(json.dumps({"memlab": "pool", "version": 1, "config": "c", "depth": 8, "created_at": at,
                                "systems": [{"name": "event"}], "queries": pooled}))  # fmt: skip
    judged = files["judgments"].read_text() + "".join(
        json.dumps({"query": qid, "event_id": eid, "relevance": 1, "assessor": "ana", "time": at}) + "\n"
        for qid, eid in (("own-city", "a1-e0"), ("own-job", "b1-e0")))  # fmt: skip
    (tmp_path / "mixed.judgments.jsonl").write_text(judged)
    entry = {"name": "mixed", "format": "judged", "queries": str(mixed), "sessions": str(files["sessions"]),
             "pool": str(pool), "judgments": str(tmp_path / "mixed.judgments.jsonl")}  # fmt: skip
    data = lab.load_dataset(entry)
    assert data.pool["origins"] == {"file": 2, "generated": len(generated)}
    config = {"name": "mixed-origins", "datasets": [entry], "k": 5, "sweeps": [], "options": {"ingest": {"repeat": 1}},
              "systems": [{"name": "event", "granularity": "event", "strategy": "exact"}]}  # fmt: skip
    out = lab.run_experiment(lab.parse_config(config, source="mixed-origins"), tmp_path / "run", home=memlab_home,
                             log=lambda *a: None)  # fmt: skip
    report = (out / "report.md").read_text()
    headline = next(line for line in report.splitlines() if line.startswith("- **mixed**"))
    assert f"[mixed origins: {len(generated)} generated and 2 real questions in one figure" in headline
    assert "**Mixed origins**" in report.split("## mixed", 1)[1]
    by_type = report.split("recall@5 by question type:", 1)[1].split("\n\n", 2)[1]
    assert "generated" in by_type.splitlines()[0] and "file" in by_type.splitlines()[0]


def test_the_command_shows_the_predicates_it_had_no_template_for(tmp_path):
    path = tmp_path / "templates.yaml"
    path.write_text(yaml.safe_dump({"templates": {"home_city": "Which city is {whose} home now?"}}))
    files = generate(tmp_path, "--templates", str(path))
    assert re.search(r"skipped: no template: diet\s*│\s*1", CliRunner().invoke(app, [
        "questions", "generate", "--sessions", str(files["sessions"]), "--out", str(files["queries"]), "--templates",
        str(path)]).output)  # fmt: skip
    assert [json.loads(line)["text"] for line in files["queries"].read_text().splitlines()] == [
        "Which city is my home now?"]
    wrong = CliRunner().invoke(app, ["questions", "generate", "--sessions", str(files["sessions"]), "--out",
                                     str(files["queries"]), "--generator", "model", "--templates", str(path)])
    assert wrong.exit_code == 2 and "--templates goes with --generator rules" in wrong.output


def test_rules_on_two_speakers_give_the_author_note_check_dataset_gives(tmp_path):
    """Two people talking, each speaker the author: the rule extractor reads only author 'user', so next to nothing
    is generated, and the command says why with the very note `memlab check-dataset` prints."""
    path = tmp_path / "two.jsonl"
    write_two_speakers(path)
    note = lab.datasets.author_note(lab.load_jsonl(path, name="two"))
    assert note is not None and "rule fact extractor" in note
    checked = CliRunner().invoke(app, ["check-dataset", str(path)])
    out = tmp_path / "q.jsonl"
    made = CliRunner().invoke(app, ["questions", "generate", "--sessions", str(path), "--out", str(out)])
    for result in (checked, made):
        assert f"note: {note}" in " ".join(result.output.split()), result.output
    assert made.exit_code == 2 and "no question was generated" in made.output
