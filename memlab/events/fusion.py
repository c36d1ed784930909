"""Rank fusion and time handling over candidate hits: pure functions, so hybrid and time-aware search can be
tested and swept without a database.

Reciprocal rank fusion (Cormack et al., 2009) adds weight / (rrf_k + rank) over the lists a unit appears in;
it needs no score calibration between cosine distances and full-text ranks, which live on unrelated scales.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from memlab.types import Hit


class Window(Protocol):
    """A time window read from a question (see `memlab.events.timewords.TimeWindow`)."""

    start: datetime | None
    end: datetime | None
    kind: str


def hit_key(hit: Hit) -> tuple[str | None, str]:
    """A unit's identity among hits: unit ids are unique within a session."""
    return (hit.session_id, hit.unit_id)


def fuse(lists: Sequence[tuple[Sequence[Hit], float]], rrf_k: int) -> list[Hit]:
    """Reciprocal rank fusion of ranked hit lists (each with its weight); hits carry their fused `score` and
    the full-text rank of the lexical list when they appear in it. Ties keep the first list's order."""
    scores: dict[tuple[str | None, str], float] = {}
    merged: dict[tuple[str | None, str], Hit] = {}
    first_seen: dict[tuple[str | None, str], int] = {}
    for hits, weight in lists:
        for rank, hit in enumerate(hits, start=1):
            key = hit_key(hit)
            scores[key] = scores.get(key, 0.0) + weight / (rrf_k + rank)
            if key not in merged:
                merged[key] = hit
                first_seen[key] = len(first_seen)
            elif hit.lexical is not None and merged[key].lexical is None:
                merged[key] = replace(merged[key], lexical=hit.lexical, coverage=hit.coverage)
    order = sorted(scores, key=lambda k: (-scores[k], first_seen[k]))
    return [replace(merged[k], score=round(scores[k], 9)) for k in order]


def in_window(hit: Hit, window: Window) -> bool:
    """Whether the hit's memory happened inside the window (a hit without a time is outside)."""
    if hit.timestamp is None:
        return False
    if window.start is not None and hit.timestamp < window.start:
        return False
    return not (window.end is not None and hit.timestamp >= window.end)


def apply_time(
    hits: list[Hit], window: Window | None, how: str, weight: float, rrf_k: int, top_k: int | None = None
) -> list[Hit]:
    """Re-rank fused candidates by the question's time: `filter` keeps the ones inside the window (all, if
    none is), `boost` fuses a list of the in-window ones with `weight`. A recency question ("currently",
    "latest") names no window: `boost` fuses a newest-first list within the first `top_k` only, so the newer of
    two conflicting memories ranks first and the older one stays (pulling new candidates in from further down
    would push it out; the reader needs both to see what changed); equal fused scores go to the newer memory.
    No window, or `how == "off"`, leaves the order alone."""
    if window is None or how == "off" or not hits:
        return hits
    if window.kind == "recency":
        if how == "filter":
            return hits  # "currently" names no window to filter by; newer-first is a boost
        head, rest = (hits[:top_k], hits[top_k:]) if top_k is not None else (hits, [])
        newest = sorted(head, key=_newness, reverse=True)
        # Equal fused scores go to the newer memory: with the same weight, two neighbours (the older one a place
        # nearer the question) tie exactly, and "currently" asks for the newer. sorted() is stable otherwise.
        fused = fuse([(head, 1.0), (newest, weight)], rrf_k)
        return sorted(fused, key=lambda h: (-(h.score or 0.0), -_newness(h))) + rest
    inside = [h for h in hits if in_window(h, window)]
    if how == "filter":
        return inside or hits
    return fuse([(hits, 1.0), (inside, weight)], rrf_k)


def _newness(hit: Hit) -> float:
    """A hit's time as a number to sort by (a hit without a time is the oldest)."""
    return hit.timestamp.timestamp() if hit.timestamp else float("-inf")


def prefer_author(hits: list[Hit], author: str | None, margin: float) -> list[Hit]:
    """Vector hits re-ordered as if `author`'s were `margin` nearer (stable: ties keep their order); the hits
    keep their true distances. No author leaves the order alone."""
    if author is None:
        return hits
    return sorted(hits, key=lambda h: h.distance - (margin if h.author == author else 0.0))


def cap_per_session(hits: list[Hit], cap: int | None, k: int) -> list[Hit]:
    """The first `k` hits in order, at most `cap` from one session; when fewer than `k` pass the cap, the
    skipped hits fill the rest in their order (a cap spreads the top k, it never shortens it)."""
    if cap is None:
        return hits[:k]
    taken: dict[str | None, int] = {}
    kept, skipped = [], []
    for hit in hits:
        if len(kept) == k:
            break
        if taken.get(hit.session_id, 0) < cap:
            taken[hit.session_id] = taken.get(hit.session_id, 0) + 1
            kept.append(hit)
        else:
            skipped.append(hit)
    return kept + skipped[: k - len(kept)]


__all__ = ["apply_time", "cap_per_session", "fuse", "hit_key", "in_window", "prefer_author"]
