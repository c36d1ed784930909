"""Rule gates: words derived from each rule's regex, one of which every match holds, so the rule extractor skips
rules a sentence cannot match. They must never change what is extracted, only how fast."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memlab
from memlab import lab
from memlab.facts.extractors import rules
from memlab.safety.pattern_gates import Gates, fold, required_words
from tests.conftest import ROOT, examples


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"\bI\s+moved\s+to\s+\w+", {"moved"}),  # the longest literal run
        (r"\b(?:I|we)\s+(?:moved|relocated)\s+(?:back\s+)?to", {"moved", "relocated"}),  # a group it must pass
        (r"colou?r", {"colo"}),  # an optional letter ends the run
        (r"(?:moved|x+)", None),  # one way through needs only "x": too short to be worth a check
        (r"[A-Z]\w+", None),  # classes require no word
        (r"(?:the\s+)?budget", {"budget"}),  # an optional group requires nothing
        (r"MOVED", {"moved"}),  # words are case-folded
    ],
)
def test_required_words_of_small_patterns(pattern, words):
    found = required_words(re.compile(pattern, re.IGNORECASE))
    assert (None if found is None else set(found)) == words


def test_gates_find_words_that_overlap_or_prefix_each_other():
    gates = Gates([frozenset({"move"}), frozenset({"moved"}), frozenset({"vegan"}), frozenset({"oved"}), None])
    assert gates.candidates(fold("We MOVED to Pune")) == [0, 1, 3, 4]  # "move" is a prefix of "moved"
    assert gates.candidates(fold("I eat vegan food")) == [2, 4]
    assert gates.candidates(fold("We are living in Pune")) == [4]
    assert gates.candidates("nothing here") == [4], "a pattern without a gate is always tried"


_LETTERS = st.sampled_from(list("abkeyé ß\u0130-_"))


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.text(_LETTERS, min_size=1, max_size=4), max_size=12),
       text=st.text(_LETTERS, max_size=60))  # fmt: skip
def test_present_finds_exactly_the_words_a_substring_test_finds(words, text):
    """One pass over the text finds every gate word it holds, nested, overlapping or repeated, and no other."""
    gates = Gates([frozenset(words[i : i + 3]) or None for i in range(0, max(len(words), 1), 3)])
    assert gates.present(text) == frozenset(w for w in words if w in text)


def test_most_rules_have_a_gate():
    gated = [r for r in rules._rules() if required_words(r.first) is not None]
    assert len(gated) >= 0.9 * len(rules._rules())


_GATED = [(pattern, gate) for r in rules._rules()
          for pattern in (r.first, r.second) if (gate := required_words(pattern)) is not None]  # fmt: skip


# 200 texts drawn from patterns picked at random (359 gated patterns) in CI; run once at 30 per pattern, every
# gate held.
@settings(max_examples=examples(200), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.sampled_from(_GATED).flatmap(lambda pg: st.tuples(st.just(pg), st.from_regex(pg[0]))))
def test_no_rule_gate_is_narrower_than_its_pattern(drawn):
    (pattern, gate), text = drawn
    if pattern.search(text):
        assert Gates([gate]).candidates(fold(text)) == [0], (pattern.pattern[:80], text)


def test_gates_change_no_extracted_fact_on_real_conversations(monkeypatch):
    """The same candidates with gates and with every rule tried on every sentence: long real turns, generated
    sessions and the labelled fact fixtures."""
    sets = [
        lab.datasets.load_longmemeval(ROOT / "datasets/longmemeval/longmemeval_s_knowledge_update.json.gz", limit=1),
        lab.load_dataset({"name": "s", "format": "synth", "users": 4, "max_events": 200, "seed": 3}),
        lab.load_fixtures(ROOT / "fixtures/facts"),
    ]
    sessions = [s for ds in sets for u in ds.users for s in u.sessions]
    registry = memlab.facts.default_registry()

    def extract():
        extractor = memlab.RuleExtractor()
        return [extractor.extract(list(s.events), session_id=s.id, registry=registry) for s in sessions]

    gated = extract()
    everything = Gates([None] * len(rules._rules()))
    monkeypatch.setattr(rules, "_gates", lambda: (everything, everything))
    assert extract() == gated
    assert sum(map(len, gated)) > 50, "the check needs facts to compare"
