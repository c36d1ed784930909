"""memlab-synth's gold fact candidates: quoted from the turn that states them, registered, carried through the
saved forms, and, replayed through real fact memory, they end at the generator's own truths."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

import memlab
from memlab import FactMemory, lab
from memlab.facts import Candidate, LabelledExtractor, default_registry
from memlab.facts.memory import SUBJECT
from memlab.lab.datasets.synth import read_json, write_json
from memlab.lab.datasets.synth.generator import FACTS
from memlab.lab.systems.kinds import make_extractor

REGISTRY = default_registry()
SPECS = {spec.predicate: spec for spec in FACTS}
EVENT = {"id": "e1", "author": "user", "at": "2026-01-01T10:00:00Z", "text": "I live in Oslo now."}
SESSION = {"type": "session", "app": "a", "user": "u", "id": "s1", "events": [EVENT]}
FACT = {"subject": "user", "predicate": "home_city", "value": "Oslo", "quote": "I live in Oslo"}


@pytest.fixture(scope="module")
def synth():
    return lab.generate_synth(0, users=24, max_events=400)


def gold(dataset):
    """(user, session, candidate) for every gold candidate of the set."""
    return [(u, sid, c) for u in dataset.users for sid, cands in u.gold_candidates.items() for c in cands]


def truths(user) -> dict[tuple[str, str], list[str]]:
    """The generator's profile of a user, read from its description ("home_city: Pune -> Adelaide; ..."):
    (subject, predicate) -> values oldest first, as gold values."""
    out = {}
    for part in user.description.split(". ", 1)[1].split("; "):
        m = re.fullmatch(r"(\w+)(?: \((.+?)\))?: (.+)", part)
        spec = SPECS.get(m.group(1)) if m else None
        if spec is None:
            continue  # an episode (trip shortlist, gift ideas): not a registry fact
        extra = m.group(2) or ""
        named = [f"{extra} named {v}" if spec.predicate == "pet" else v for v in m.group(3).split(" -> ")]
        out[(spec.subject.format(x=extra), spec.predicate)] = [REGISTRY.normalize(spec.predicate, v) for v in named]
    return out


def test_every_fact_statement_yields_gold_quoted_from_its_own_user_turn(synth):
    events = {e.id: (s.id, e) for s in synth.sessions() for e in s.events}
    rows = gold(synth)
    assert len(rows) > 150 and any(c.negated for _, _, c in rows)
    for user, sid, c in rows:
        session_id, event = events[c.event_id]
        assert session_id == sid == c.session_id and c.event_time == event.timestamp
        assert event.author == "user" and c.basis == "stated"
        assert c.quote and c.quote in event.text, (c, event.text)
        assert c.event_id.startswith(f"{user.user_id}-")
    # every user turn a question cites as stating a fact value carries that fact's gold
    cited = {c.event_id for _, _, c in rows}
    for q in synth.questions:
        if q.qtype in ("single_fact", "knowledge_update"):
            assert any(e in cited for e in q.relevant if events[e][1].author == "user"), q


def test_gold_uses_registered_predicates_with_valid_subjects_and_normalised_values(synth):
    for _, _, c in gold(synth):
        assert REGISTRY.knows(c.predicate), c
        assert SUBJECT.fullmatch(c.subject), c
        assert c.value.strip() and REGISTRY.normalize(c.predicate, c.value) == c.value, c


def test_gold_agrees_with_the_questions(synth):
    """A fact question's answer is a value some gold candidate of its key states, in one of its relevant events."""
    by_key: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for user, _, c in gold(synth):
        if not c.negated:
            by_key.setdefault((user.user_id, f"{c.subject}/{c.predicate}"), set()).add((c.value, c.event_id))
    checked = 0
    for q in synth.questions:
        if q.qtype in ("single_fact", "knowledge_update") and q.fact_key:
            predicate = q.fact_key.split("/")[1]
            stated = by_key[(q.user_id, q.fact_key)]
            if predicate == "pet":
                assert any(v.endswith(f" named {q.answer.lower()}") for v, _ in stated)
                continue
            value = REGISTRY.normalize(predicate, q.answer)
            assert any(v == value and e in q.relevant for v, e in stated), q
            checked += 1
    assert checked > 20


def test_a_change_that_names_the_old_value_retracts_it(synth):
    for user, _, c in gold(synth):
        if c.negated:
            values = truths(user)[(c.subject, c.predicate)]
            assert c.value in values[:-1], c  # only ever an older value, never the last one


def test_the_labelled_extractor_replays_the_gold_per_session(synth):
    extractor = LabelledExtractor.from_set(synth)
    assert extractor.gold and make_extractor("labelled", synth, {}).gold == extractor.gold
    with_gold = [s for s in synth.sessions() if s.id in extractor.gold]
    assert len(with_gold) > 30
    for session in with_gold[:40]:
        out = extractor.extract(session.events, session_id=session.id, registry=REGISTRY)
        assert out == extractor.gold[session.id]
        first = out[0].event_id
        later = [e for e in session.events if e.id != first]  # a watermark past that event: its gold is gone
        assert all(c.event_id != first for c in extractor.extract(later, session_id=session.id, registry=REGISTRY))
    assert not extractor.extract(next(s for s in synth.sessions() if s.id not in extractor.gold).events,
                                 session_id="elsewhere", registry=REGISTRY)  # fmt: skip
    # the workbench adds the labelled fact system wherever a data set has gold
    names = [s.name for s in lab.SWEEPS["granularity"].systems(synth, {"extractors": ["labelled", "rules"]}, None)]
    assert "facts-labelled" in names and "facts-rules" in names


def test_fact_memory_fed_the_gold_ends_at_the_generators_truths(store, embedder, app_name):
    data = lab.generate_synth(5, users=6, max_events=150).namespaced(app_name)
    facts = FactMemory(store, embedder, extractor=LabelledExtractor.from_set(data))
    try:
        for session in data.sessions():
            report = facts.add_session(session)
            assert not report.dropped, (session.id, dict(report.dropped), report.notes)
            assert len(report.accepted) == len(data.user(session.app_name, session.user_id).gold_candidates.get(
                session.id, []))  # fmt: skip
        checked = 0
        for user in data.users:
            current: dict[tuple[str, str], set[str]] = {}
            for f in facts.current(user.app_name, user.user_id):
                current.setdefault(f.key, set()).add(f.value)
            expected = truths(user)
            assert set(current) == set(expected), user.user_id  # nothing invented, nothing lost
            for key, values in expected.items():
                if REGISTRY.get(key[1]).cardinality == "one":
                    assert current[key] == {values[-1]}, (user.user_id, key, values, current[key])
                    checked += 1
                else:  # many-valued: the last value is current, and every value a change retracted is not
                    retracted = {c.value for cs in user.gold_candidates.values() for c in cs
                                 if c.negated and c.key == key}  # fmt: skip
                    assert values[-1] in current[key] and not (current[key] & retracted), (key, values, current[key])
        assert checked >= 10
    finally:
        for user in data.users:
            facts.forget_user(user.app_name, user.user_id)


def test_saved_forms_carry_the_gold(synth, tmp_path):
    back = read_json(write_json(synth, tmp_path / "synth.json"))
    assert back == synth
    assert [u.gold_candidates for u in back.users] == [u.gold_candidates for u in synth.users]
    raw = json.loads((tmp_path / "synth.json").read_text())
    session = next(s for u in raw["users"] for s in u["sessions"] if s.get("facts"))
    assert set(session["facts"][0]) >= {"subject", "predicate", "value", "quote", "event"}

    again = lab.load_jsonl(lab.datasets.write_jsonl(synth, tmp_path / "synth.jsonl"))
    assert {u.user_id: u.gold_candidates for u in again.users} == {u.user_id: u.gold_candidates for u in synth.users}
    assert LabelledExtractor.from_set(again).gold == LabelledExtractor.from_set(synth).gold


def write(tmp_path, *records):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def with_facts(*facts, event_id: str = "e1") -> dict:
    events = [dict(e, facts=list(facts)) if e["id"] == event_id else e for e in SESSION["events"]]
    return {**SESSION, "events": events}


def test_jsonl_facts_are_parsed_into_gold_candidates(tmp_path):
    retract = {**FACT, "value": "Bergen", "quote": "Oslo now", "negated": True}
    question = {"type": "question", "id": "q1", "app": "a", "user": "u", "text": "Where?", "relevant": ["e1"]}
    data = lab.load_jsonl(write(tmp_path, with_facts(FACT, retract), question))
    (cands,) = data.users[0].gold_candidates.values()
    at = data.users[0].sessions[0].events[0].timestamp
    assert cands == [
        Candidate("user", "home_city", "Oslo", "I live in Oslo", event_id="e1", event_time=at,
                                     session_id="s1"),
        Candidate("user", "home_city", "Bergen", "Oslo now", negated=True, event_id="e1",
                                     event_time=at, session_id="s1"),
    ]  # fmt: skip
    # without `facts` a file loads as before, with no gold
    assert lab.load_jsonl(write(tmp_path, SESSION, question)).users[0].gold_candidates == {}


@pytest.mark.parametrize(
    ("fact", "message"),
    [
        ({**FACT, "quote": "I live in Bergen"}, "quote 'I live in Bergen' is not in the text of event 'e1'"),
        ({**FACT, "predicate": "city"}, "predicate 'city' is not in the registry (nearest registered: 'home_city')"),
        ({**FACT, "subject": "User Name"}, "subject 'User Name' must be"),
        ({**FACT, "negated": "yes"}, "`negated` must be true or false"),
        ({**FACT, "basis": "guessed"}, "`basis` must be"),
        ({**FACT, "colour": "red"}, "unknown key(s) ['colour']"),
        ({k: v for k, v in FACT.items() if k != "value"}, "`value` must be a non-empty string"),
        ("home_city=Oslo", "facts[0]: expected an object"),
    ],
)
def test_a_malformed_jsonl_fact_names_the_line_and_the_fix(tmp_path, fact, message):
    other = {**SESSION, "id": "s0", "events": [{**SESSION["events"][0], "id": "e0"}]}
    with pytest.raises(memlab.errors.FixtureError) as err:
        lab.load_jsonl(write(tmp_path, other, with_facts(fact)))
    assert message in str(err.value)
    assert "d.jsonl:2:" in str(err.value) and "events[0]" in str(err.value)


def test_gold_of_a_session_the_user_does_not_have_is_refused(synth, tmp_path):
    broken = replace(synth.users[0], gold_candidates={"nope": []})
    with pytest.raises(ValueError, match="does not have"):
        write_json(lab.Dataset("x", [broken], []), tmp_path / "x.json")
