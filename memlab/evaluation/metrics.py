"""Retrieval metrics as pure functions of ranked ids; they never modify their inputs.

Labels live at the event level: a retrieved unit covers the events it holds, so `events_in_rank_order` maps
any granularity's ranking to an event ranking before label metrics are computed.
"""

from __future__ import annotations

from collections.abc import Sequence

# Which direction is better, for plots and regression gates.
HIGHER_IS_BETTER = {
    "recall_at_k": True,
    "recall_vs_exact": True,
    "hit_rate": True,
    "mrr": True,
    "empty_rate": False,
    "correct_empty_rate": True,
    "latency_ms": False,
    "context_chars": False,
}


def events_in_rank_order(unit_event_ids: Sequence[Sequence[str]]) -> list[str]:
    """Flatten the event ids of ranked units, keeping the first position of each event."""
    seen: dict[str, None] = {}
    for ids in unit_event_ids:
        for event_id in ids:
            seen.setdefault(event_id, None)
    return list(seen)


def recall(retrieved: Sequence[str], relevant: set[str] | frozenset[str]) -> float:
    """Share of relevant ids that were retrieved (NaN-free: a question with nothing relevant scores 1.0)."""
    if not relevant:
        return 1.0
    return len(relevant.intersection(retrieved)) / len(relevant)


def reciprocal_rank(retrieved: Sequence[str], relevant: set[str] | frozenset[str]) -> float:
    """1 / rank of the first relevant id, 0 if none was retrieved."""
    for rank, item in enumerate(retrieved, start=1):
        if item in relevant:
            return 1.0 / rank
    return 0.0


def recall_vs_exact(approx: Sequence[str], exact: Sequence[str], k: int) -> float:
    """ANN recall@k: share of the exact top-k that the approximate search also returned in its top k.

    A short approximate result counts as misses. If the exact search has nothing (empty memory), there is
    nothing to miss: 1.0.
    """
    truth = list(exact)[:k]
    if not truth:
        return 1.0
    return len(set(truth).intersection(list(approx)[:k])) / len(truth)
