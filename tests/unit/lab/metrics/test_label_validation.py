"""The label validation's arithmetic (memlab.lab.metrics.label_validation) on tiny hand-made runs, values checked by
hand.

Three systems, two questions of one user, one event per unit, all in session s1, k = 3:
    A: q1 [e1 x1 x2]   q2 [x3 e3 x4]          gold q1 {e1, e2}, q2 {e3}
    B: q1 [x1 e2 x5]   q2 [x6 x7 x8]
    C: q1 [x9 x10 e2]  q2 [e3 x11 x12]
Full recall@3: A 0.75, B 0.25, C 0.75."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from memlab.lab.datasets.model import Question
from memlab.lab.metrics.label_validation import (
    agreement,
    capture_share,
    conclusions,
    generated_vs_own,
    largest_swap,
    leave_one_out,
    make_pool,
    mean_recall,
    per_question_recall,
    pooled_labels,
    ranked_events,
    ranking_tau,
    validate,
)
from memlab.lab.runs.records import RUN_COLUMNS, SESSION_COLUMNS

RANKS = {
    "A": {"q1": ["e1", "x1", "x2"], "q2": ["x3", "e3", "x4"]},
    "B": {"q1": ["x1", "e2", "x5"], "q2": ["x6", "x7", "x8"]},
    "C": {"q1": ["x9", "x10", "e2"], "q2": ["e3", "x11", "x12"]},
}


def run_frame(ranks: dict[str, dict[str, list[str]]]) -> pd.DataFrame:
    rows = [(system, qid, rank, event, [event], 0.1 * rank, 10, 1.0, "", np.nan, np.nan, np.nan, "s1", ["s1"])
            for system, by_q in ranks.items() for qid, events in by_q.items()
            for rank, event in enumerate(events, start=1)]  # fmt: skip
    return pd.DataFrame(rows, columns=[*RUN_COLUMNS, *SESSION_COLUMNS])


def question(qid: str, *gold: str) -> Question:
    return Question(qid, "app", "u", f"question {qid}", tuple(gold), evidence=tuple(("s1", g) for g in gold))


QUESTIONS = [question("q1", "e1", "e2"), question("q2", "e3")]
RUN = run_frame(RANKS)


def test_the_pool_is_the_union_of_each_systems_first_d_events():
    pool = make_pool(ranked_events(RUN), ["A", "B"], 2)
    assert pool["q1"] == {("s1", "e1"), ("s1", "x1"), ("s1", "e2")}
    assert pool["q2"] == {("s1", "x3"), ("s1", "e3"), ("s1", "x6"), ("s1", "x7")}


@pytest.mark.parametrize(("systems", "depth", "share"), [(["A", "B"], 1, 1 / 3), (["A", "B"], 2, 1.0),
                                                         (["A", "C"], 1, 2 / 3), (["B"], 1, 0.0)])  # fmt: skip
def test_capture_share_counts_gold_events_in_the_pool(systems, depth, share):
    assert capture_share(QUESTIONS, make_pool(ranked_events(RUN), systems, depth)) == pytest.approx(share)


def test_pooled_labels_keep_the_captured_gold_and_turn_a_missed_question_into_no_answer():
    labels = {q.id: q for q in pooled_labels(QUESTIONS, make_pool(ranked_events(RUN), ["A", "B"], 1))}
    assert labels["q1"].evidence == (("s1", "e1"),) and labels["q1"].relevant == ("e1",)
    assert set(labels["q1"].judged) == {("s1", "e1"), ("s1", "x1")}
    assert not labels["q2"].answerable


def test_recall_on_full_and_pooled_labels_and_kendall_tau():
    full = mean_recall(per_question_recall(RUN, QUESTIONS, 3))
    assert full.to_dict() == pytest.approx({"A": 0.75, "B": 0.25, "C": 0.75})
    pooled = mean_recall(per_question_recall(RUN, pooled_labels(QUESTIONS, make_pool(ranked_events(RUN),
                                                                                      ["A", "B"], 1)), 3))  # fmt: skip
    assert pooled.to_dict() == pytest.approx({"A": 1.0, "B": 0.0, "C": 0.0}), "only q1 is left, gold {e1}"
    # tau-b: A>B concordant, A/C tied in full, B/C tied in pooled: (1 - 0) / sqrt(2 * 2)
    assert ranking_tau(full, pooled) == pytest.approx(0.5)
    assert ranking_tau(full, full) == pytest.approx(1.0)
    assert np.isnan(ranking_tau(full, pd.Series({"A": 0.5, "B": 0.5, "C": 0.5})))
    assert largest_swap(full, pooled) == 0.0, "ties are not swaps"
    assert largest_swap(full, pd.Series({"A": 0.1, "B": 0.9, "C": 0.8})) == pytest.approx(0.5), "A-B swapped, 0.5 apart"


def test_leave_one_out_measures_the_bias_against_the_system_outside_the_pool():
    full = mean_recall(per_question_recall(RUN, QUESTIONS, 3))
    loo = leave_one_out(RUN, ranked_events(RUN), QUESTIONS, ["A", "B", "C"], 2, 3, full).set_index("system")
    # without B the depth-2 pool of A and C misses e2: q1 gold {e1}, q2 gold {e3}; B finds neither
    assert loo.loc["B", "pooled_without"] == pytest.approx(0.0)
    assert loo.loc["B", "bias"] == pytest.approx(-0.25)
    # B's gap to the others: full 0.25 - 0.75 = -0.5; without B 0 - mean(1.0, 0.5) = -0.75
    assert loo.loc["B", "gap_change"] == pytest.approx(-0.25)
    assert loo.loc["B", "pooled_with"] == pytest.approx(0.25), "with all three pooled, every gold is captured here"


def test_paired_conclusions_and_their_agreement():
    rows = [{"dataset": "labels", "system": s, "question_id": f"q{i}", "answerable": True, "recall": v}
            for i in range(30) for s, v in (("low", 0.0), ("high", 1.0), ("same", 0.0))]  # fmt: skip
    found = conclusions(pd.DataFrame(rows), ["low", "high", "same"], 10)
    assert found == {("low", "high"): 1, ("low", "same"): 0, ("high", "same"): -1}
    assert agreement(found, {**found, ("low", "same"): 1}) == (2, 3)


def test_validate_skips_pools_larger_than_the_systems_and_reports_every_table():
    result = validate(RUN, QUESTIONS, ["A", "B", "C"], depths=[1, 2], sizes=[2, 5], k=3, loo_depth=2)
    assert list(result.pools.pool) == ["d1n2", "d2n2"], "5 systems cannot be pooled from 3"
    first = result.pools.set_index("pool").loc["d1n2"]
    assert first.capture == pytest.approx(1 / 3)
    # every 2-subset at depth 1: AB 1/3, AC 2/3, BC 1/3
    assert (first.capture_mean, first.capture_min, first.capture_max) == pytest.approx((4 / 9, 1 / 3, 2 / 3))
    assert first.answerable_pooled == 1 and first.tau == pytest.approx(0.5)
    assert first.outside_bias == pytest.approx(0.0 - 0.75), "C, outside the pool, is scored 0 on pooled labels"
    assert set(result.recall.columns) == {"system", "full", "d1n2", "d2n2"}
    assert list(result.leave_one_out.system) == ["A", "B", "C"]


def test_generated_against_own_questions_says_which_are_easier():
    generated = run_frame({"A": {"g1": ["e1"]}, "B": {"g1": ["x1"]}})
    table = generated_vs_own(RUN, QUESTIONS, generated, [question("g1", "e1")], 3).set_index("system")
    assert table.loc["A", "difference"] == pytest.approx(1.0 - 0.75)
    assert table.loc["B", "difference"] == pytest.approx(0.0 - 0.25)
    assert table.loc["A", "generated_questions"] == 1 and table.loc["A", "own_questions"] == 2
