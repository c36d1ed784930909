"""Metric helpers against hand-computed numbers."""

from __future__ import annotations

from memlab.lab.metrics.ranking import events_in_rank_order, recall_vs_exact


def test_events_in_rank_order_dedupes_keeping_first_rank():
    assert events_in_rank_order([("e1", "e2"), ("e2", "e3"), ("e4",)]) == ["e1", "e2", "e3", "e4"]


def test_recall_vs_exact_counts_short_results_as_misses():
    exact = ["a", "b", "c", "d"]
    assert recall_vs_exact(["a", "b"], exact, k=4) == 0.5
    assert recall_vs_exact(["d", "c", "b", "a"], exact, k=4) == 1.0
    assert recall_vs_exact(["a", "x", "y", "b"], exact, k=2) == 0.5  # only the top 2 of each count
    assert recall_vs_exact([], [], k=10) == 1.0


def test_inputs_are_not_modified():
    ranked, exact = ["a", "b"], ["b", "a"]
    recall_vs_exact(ranked, exact, 2)
    events_in_rank_order([ranked])
    assert ranked == ["a", "b"] and exact == ["b", "a"]
