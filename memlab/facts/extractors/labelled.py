"""Replays the gold candidates written in fact fixtures: the upper bound any extractor can reach."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlab.facts.registry import PredicateRegistry
from memlab.facts.types import Candidate
from memlab.types import Event


class LabelledExtractor:
    """Returns, for a session, the gold candidates of the events it is given (so watermarks still apply). An
    event is (app, user, session, event id), but an extractor is told the session id only, and public data sets
    reuse session and event ids in every conversation: a candidate is replayed for the event with its id, its
    time and its quote in the text, so another user's session of the same ids does not get it."""

    name = "labelled"

    def __init__(self, gold: dict[str, list[Candidate]]) -> None:
        self.gold = gold

    @classmethod
    def from_set(cls, labelled: Any) -> LabelledExtractor:
        """From any data set with `users` that carry `gold_candidates` (the workbench's Dataset); typed loosely
        so the memory library does not import the workbench."""
        gold: dict[str, list[Candidate]] = {}
        for user in labelled.users:  # session ids repeat across users: their candidates are pooled, not replaced
            for session_id, candidates in user.gold_candidates.items():
                gold.setdefault(session_id, []).extend(candidates)
        return cls(gold)

    def extract(
        self,
        events: Sequence[Event],
        *,
        session_id: str,
        registry: PredicateRegistry,
        current_keys: Sequence[tuple[str, str]] = (),
    ) -> list[Candidate]:
        by_id: dict[str, list[Event]] = {}
        for e in events:
            by_id.setdefault(e.id, []).append(e)
        return [c for c in self.gold.get(session_id, []) if any(_states(c, e) for e in by_id.get(c.event_id, ()))]


def _states(candidate: Candidate, event: Event) -> bool:
    """Whether `event` is the one the candidate was written on: same time (where the candidate has one) and its
    quote in the event's text."""
    same_time = candidate.event_time is None or candidate.event_time == event.timestamp
    return same_time and (not candidate.quote or candidate.quote in (event.text or ""))
