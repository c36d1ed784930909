"""Replays the gold candidates written in fact fixtures: the upper bound any extractor can reach."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlab.facts.registry import PredicateRegistry
from memlab.facts.types import Candidate
from memlab.types import Event


class LabelledExtractor:
    """Returns, for a session, the gold candidates of the events it is given (so watermarks still apply)."""

    name = "labelled"

    def __init__(self, gold: dict[str, list[Candidate]]) -> None:
        self.gold = gold

    @classmethod
    def from_set(cls, labelled: Any) -> LabelledExtractor:
        """From any data set with `users` that carry `gold_candidates` (the workbench's Dataset); typed loosely
        so the memory library does not import the workbench."""
        gold: dict[str, list[Candidate]] = {}
        for user in labelled.users:
            gold.update(user.gold_candidates)
        return cls(gold)

    def extract(
        self,
        events: Sequence[Event],
        *,
        session_id: str,
        registry: PredicateRegistry,
        current_keys: Sequence[tuple[str, str]] = (),
    ) -> list[Candidate]:
        ids = {e.id for e in events}
        return [c for c in self.gold.get(session_id, []) if c.event_id in ids]
