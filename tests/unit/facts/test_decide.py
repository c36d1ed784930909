"""`decide()` row by row (the article's table plus the order cases it gets wrong), and order independence."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlab.facts import Candidate, Fact, decide, state_of
from memlab.facts.decide import resolve
from tests.conftest import examples

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def cand(value, day, *, pred="home_city", basis="stated", negated=False, session=None, subject="user"):
    return Candidate(
        subject=subject, predicate=pred, value=value, quote=f"q {value}", basis=basis, negated=negated,
        event_id=f"e{day}", event_time=T0 + timedelta(days=day), session_id=session or f"s{day}",
    )  # fmt: skip


def replay(cands, cardinality="one") -> list[Fact]:
    rows: list[Fact] = []
    for c in cands:
        rows = list(decide(c, rows, cardinality).rows)
    return rows


def current(rows):
    return {(r.value, r.basis) for r in rows if r.status == "current"}


def test_insert_into_an_empty_key():
    d = decide(cand("Pune", 1), [], "one")
    assert d.action == "insert" and current(d.rows) == {("Pune", "stated")}
    assert d.row("Pune").confidence == pytest.approx(0.95)


def test_reinforce_by_a_new_session_raises_confidence_and_confirmation():
    rows = replay([cand("Pune", 1)])
    d = decide(cand("Pune", 5), rows, "one")
    assert d.action == "reinforce"
    row = d.row("Pune")
    assert row.confidence > rows[0].confidence
    assert row.confirmed_at == T0 + timedelta(days=5) and row.confirmed_by == "s5"
    assert row.source_ts == T0 + timedelta(days=1), "source stays the first time it was said"


def test_newer_stated_value_supersedes():
    d = decide(cand("Bengaluru", 10), replay([cand("Pune", 1)]), "one")
    assert d.action == "supersede" and current(d.rows) == {("Bengaluru", "stated")}
    assert d.row("Pune").status == "superseded"


def test_late_older_statement_is_ignored_and_kept_as_history():
    d = decide(cand("Pune", 1), replay([cand("Bengaluru", 10)]), "one")
    assert d.action == "ignore" and current(d.rows) == {("Bengaluru", "stated")}
    assert d.row("Pune").status == "superseded"


def test_inferred_never_supersedes_stated_it_is_disputed():
    d = decide(cand("Mumbai", 10, basis="inferred"), replay([cand("Pune", 1)]), "one")
    assert d.action == "dispute" and current(d.rows) == {("Pune", "stated")}
    assert d.row("Mumbai").status == "disputed"


def test_stated_beats_inferred_even_when_older():
    d = decide(cand("Pune", 1), replay([cand("Mumbai", 10, basis="inferred")]), "one")
    assert d.action == "supersede" and current(d.rows) == {("Pune", "stated")}


def test_inferred_fact_starts_below_the_serving_threshold():
    d = decide(cand("true", 1, pred="likes_spicy", basis="inferred"), [], "one")
    assert d.action == "insert" and d.row("true").confidence == pytest.approx(0.4)


def test_retract_a_current_value():
    d = decide(cand("Pune", 5, negated=True), replay([cand("Pune", 1)]), "one")
    assert d.action == "retract" and current(d.rows) == set()
    assert d.row("Pune").status == "retracted" and d.row("Pune").retracted_at == T0 + timedelta(days=5)


def test_retraction_before_insert_keeps_the_older_statement_retracted():
    rows = replay([cand("Pune", 5, negated=True)])
    assert decide(cand("Pune", 5, negated=True), [], "one").action == "ignore"
    d = decide(cand("Pune", 1), rows, "one")  # the old session arrives late
    assert d.action == "ignore" and current(d.rows) == set()
    assert decide(cand("Pune", 9), rows, "one").action == "insert", "said again after the retraction"


def test_old_retraction_does_not_remove_a_newer_statement():
    d = decide(cand("Pune", 3, negated=True), replay([cand("Pune", 1), cand("Pune", 7)]), "one")
    assert d.action == "ignore" and current(d.rows) == {("Pune", "stated")}


def test_inferred_text_never_retracts():
    d = decide(cand("Pune", 5, negated=True, basis="inferred"), replay([cand("Pune", 1)]), "one")
    assert d.action == "ignore" and current(d.rows) == {("Pune", "stated")}


def test_after_a_retracted_statement_a_newer_inference_is_current():
    rows = replay([cand("Pune", 1), cand("Pune", 2, negated=True)])
    d = decide(cand("Mumbai", 3, basis="inferred"), rows, "one")
    assert d.action == "insert" and current(d.rows) == {("Mumbai", "inferred")}


def test_many_valued_values_accumulate_and_retract_one_by_one():
    rows = replay([cand("peanuts", 1, pred="allergy"), cand("shellfish", 2, pred="allergy")], "many")
    assert current(rows) == {("peanuts", "stated"), ("shellfish", "stated")}
    d = decide(cand("peanuts", 3, pred="allergy", negated=True), rows, "many")
    assert d.action == "retract" and current(d.rows) == {("shellfish", "stated")}


def test_many_valued_retraction_before_insert():
    rows = replay([cand("Kindle", 9, pred="owned_product", negated=True)], "many")
    assert decide(cand("Kindle", 2, pred="owned_product"), rows, "many").action == "ignore"


def test_candidate_without_time_is_refused():
    with pytest.raises(ValueError, match="event_time"):
        decide(Candidate("user", "diet", "vegan", "q"), [], "one")


def test_decide_does_not_modify_its_input():
    rows = replay([cand("Pune", 1)])
    snapshot = list(rows)
    decide(cand("Bengaluru", 4), rows, "one")
    assert rows == snapshot


# -- order independence -----------------------------------------------------------------------------

KEYS = [("home_city", "one"), ("diet", "one"), ("allergy", "many")]
VALUES = ["a", "b", "c"]

observation = st.tuples(
    st.sampled_from(range(len(KEYS))), st.sampled_from(VALUES), st.integers(0, 6),
    st.sampled_from(["stated", "inferred"]), st.booleans(),
)  # fmt: skip


def _state(cands) -> set:
    by_key: dict[str, list] = {}
    for c in cands:
        by_key.setdefault(c.predicate, []).append(c)
    out = set()
    for pred, items in by_key.items():
        card = dict(KEYS)[pred]
        out |= {(pred, v, b) for v, b in current(replay(items, card))}
    return out


@settings(max_examples=examples(300), deadline=None)
@given(obs=st.lists(observation, min_size=1, max_size=12), seed=st.integers(0, 10_000))
def test_final_state_does_not_depend_on_order_or_repeats(obs, seed):
    cands = [
        cand(v, day, pred=KEYS[k][0], basis=basis, negated=neg, session=f"s{i}")
        for i, (k, v, day, basis, neg) in enumerate(obs)
    ]
    rng = random.Random(seed)
    shuffled = cands + rng.sample(cands, k=min(3, len(cands)))  # repeats, as a re-ingest would bring
    rng.shuffle(shuffled)
    assert _state(cands) == _state(shuffled)


def test_resolve_is_a_function_of_the_rows_not_their_order():
    rows = replay([cand("Pune", 1), cand("Bengaluru", 4), cand("Mumbai", 6, basis="inferred")])
    assert state_of(resolve(rows, "one")) == state_of(resolve(list(reversed(rows)), "one"))
