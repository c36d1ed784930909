"""The predicate registry: shape of the data file, normalisation, and the unknown-predicate error."""

from __future__ import annotations

import pytest

import memlab
from memlab.facts import PredicateRegistry, UnknownPredicateError, default_registry


def test_registry_file_has_25_to_40_complete_predicates():
    reg = default_registry()
    assert 25 <= len(reg.names()) <= 40
    for name in ("home_city", "diet", "allergy", "owned_product", "preferred_language", "employer",
                 "partner_name", "timezone", "budget", "pet"):  # fmt: skip
        assert reg.knows(name), name
    for p in reg.predicates.values():
        assert p.meaning and p.cardinality in ("one", "many") and p.sensitivity in ("normal", "personal", "health")
        assert p.half_life_days > 0
    assert reg.get("home_city").cardinality == "one" and reg.get("allergy").cardinality == "many"
    assert reg.get("allergy").sensitivity == "health"


@pytest.mark.parametrize(
    ("predicate", "raw", "canonical"),
    [
        ("home_city", "Bangalore", "Bengaluru"),
        ("home_city", "  new   delhi. ", "New Delhi"),
        ("diet", "Veggie", "vegetarian"),
        ("diet", "Pescatarian", "pescatarian"),
        ("home_airport", "Heathrow", "LHR"),
        ("owned_product", "kindle paperwhite", "Kindle Paperwhite"),
        ("deploy_tool", "argocd", "Argo CD"),
    ],
)
def test_values_are_normalised(predicate, raw, canonical):
    assert default_registry().normalize(predicate, raw) == canonical


@pytest.mark.parametrize(("unknown", "nearest"), [("location", "home_city"), ("homecity", "home_city"),
                                                  ("wife", "partner_name"), ("diets", "diet")])  # fmt: skip
def test_unknown_predicate_error_names_the_nearest(unknown, nearest):
    with pytest.raises(UnknownPredicateError, match=f"Nearest registered name: '{nearest}'"):
        default_registry().get(unknown)
    assert issubclass(UnknownPredicateError, memlab.ConfigError)


def test_malformed_registry_is_refused(tmp_path):
    bad = tmp_path / "r.yaml"
    bad.write_text("predicates:\n  home_city:\n    meaning: x\n    cardinality: several\n    sensitivity: normal\n")
    with pytest.raises(memlab.ConfigError, match="cardinality must be 'one' or 'many'"):
        PredicateRegistry.load(bad)


def test_fact_fixtures_use_registered_predicates_and_canonical_values(fact_set):
    reg = default_registry()
    for user in fact_set.users:
        for cands in user.gold_candidates.values():
            for c in cands:
                assert reg.knows(c.predicate), (user.source, c.predicate)
                assert reg.normalize(c.predicate, c.value) == c.value, (user.source, c.predicate, c.value)
