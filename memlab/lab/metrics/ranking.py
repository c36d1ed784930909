"""Pure helpers for retrieval metrics that IR libraries do not cover; they never modify their inputs.

Label metrics (recall, precision, MRR, nDCG, hit rate) come from ir-measures in memlab.lab.metrics.scoring.
Labels live at the event level: `events_in_rank_order` maps any granularity's ranking to an event ranking."""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def events_in_rank_order(unit_event_ids: Sequence[Sequence[Hashable]]) -> list:
    """Flatten the events of ranked units, keeping the first position of each event. Pass event keys
    ((session, event id), memlab.lab.base.identity) where ids repeat across sessions: bare ids would merge them."""
    seen: dict = {}
    for ids in unit_event_ids:
        for event_id in ids:
            seen.setdefault(event_id, None)
    return list(seen)


def recall_vs_exact(approx: Sequence[Hashable], exact: Sequence[Hashable], k: int) -> float:
    """ANN recall@k: share of the exact top-k that the approximate search also returned in its top k.

    Units are compared by (session, unit id) where ids repeat across sessions. A short approximate result counts
    as misses. If the exact search has nothing (empty memory), there is
    nothing to miss: 1.0.
    """
    truth = list(exact)[:k]
    if not truth:
        return 1.0
    return len(set(truth).intersection(list(approx)[:k])) / len(truth)
