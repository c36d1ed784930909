"""Old high-impact facts are served under memlab's confirm heading, never dropped; the rule is pure, tested alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import memlab
from memlab.facts import Fact, PredicateRegistry, default_registry
from memlab.facts.staleness import serving_state, stale_after_days

T0 = datetime(2025, 5, 1, tzinfo=UTC)
THRESHOLD = 0.7


def fact(predicate: str, value: str = "x", *, confidence: float = 0.95, basis: str = "stated") -> Fact:
    return Fact("user", predicate, value, "current", basis, confidence, "s1", T0, "q", T0, "s1")


def state(predicate: str, days: float, **kw) -> str:
    reg = default_registry()
    return serving_state(fact(predicate, **kw), reg.get(predicate), T0 + timedelta(days=days), THRESHOLD).state


def test_registry_declares_impact_and_a_confirm_clock_with_the_issue_defaults():
    reg = default_registry()
    assert {p.impact for p in reg.predicates.values()} == {"high", "normal"}
    assert reg.get("home_city").impact == "high" and reg.get("home_city").confirm_after_days == 365
    assert reg.get("diet").impact == "high" and reg.get("diet").confirm_after_days == 180
    assert reg.get("allergy").impact == "high" and reg.get("allergy").confirm_after_days is None  # never
    assert reg.get("seat_preference").impact == "normal"
    for p in reg.predicates.values():  # the clock, not decay, decides when to ask about a high-impact fact
        if p.impact == "high" and p.confirm_after_days is not None:
            assert stale_after_days(p, 0.95, THRESHOLD) == p.confirm_after_days, p.name


@pytest.mark.parametrize(("spec", "problem"), [("impact: huge", "impact must be 'high' or 'normal'"),
                                               ("confirm_after_days: 0", "confirm_after_days must be"),
                                               ("confirm_after_days: soon", "confirm_after_days must be")])  # fmt: skip
def test_a_malformed_impact_or_clock_is_refused(tmp_path, spec, problem):
    path = tmp_path / "r.yaml"
    path.write_text(f"predicates:\n  diet:\n    meaning: x\n    cardinality: one\n    sensitivity: normal\n"
                    f"    {spec}\n")  # fmt: skip
    with pytest.raises(memlab.ConfigError, match=problem):
        PredicateRegistry.load(path)


@pytest.mark.parametrize(
    ("predicate", "days", "expected"),
    [
        ("home_city", 30, "current"),
        ("home_city", 364, "current"),
        ("home_city", 366, "stale"),  # past confirm_after_days (365)
        ("home_city", 3000, "stale"),  # decayed far below 0.7: still served, never dropped
        ("diet", 179, "current"),
        ("diet", 181, "stale"),
        ("allergy", 700, "current"),  # no clock: never stale by age ...
        ("allergy", 900, "stale"),  # ... but below 0.7 (after ~804 days) it asks for confirmation, never dropped
        ("allergy", 20000, "stale"),
        ("seat_preference", 300, "current"),  # normal impact, half-life 730: 0.95 -> 0.72 after 300 days
        ("seat_preference", 700, "hidden"),  # 0.49: decay hides it silently, as before
        ("food_dislike", 200, "hidden"),  # normal impact below 0.7: not served, as before
        ("food_dislike", 100, "current"),
    ],
)
def test_the_serving_rule(predicate, days, expected):
    assert state(predicate, days) == expected


def test_an_inference_is_not_promoted_to_the_prompt_by_being_high_impact():
    assert state("home_city", 0, confidence=0.4, basis="inferred") == "hidden"
    assert state("home_city", 3000, confidence=0.4, basis="inferred") == "hidden"


def test_a_normal_fact_with_a_clock_is_stale_only_while_decay_still_serves_it(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("predicates:\n  plan:\n    meaning: x\n    cardinality: one\n    sensitivity: normal\n"
                    "    half_life_days: 365\n    confirm_after_days: 30\n")  # fmt: skip
    reg = PredicateRegistry.load(path)
    at = {d: serving_state(fact("plan"), reg.get("plan"), T0 + timedelta(days=d), THRESHOLD).state
          for d in (10, 40, 200)}  # fmt: skip
    assert at == {10: "current", 40: "stale", 200: "hidden"}
