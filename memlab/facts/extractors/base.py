"""The extractor seam: a finished (part of a) session in, candidate facts out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memlab.facts.registry import PredicateRegistry, default_registry
from memlab.facts.types import Candidate
from memlab.types import Event


@runtime_checkable
class Extractor(Protocol):
    """Turns the fresh events of one session into candidates.

    `events` are the kept events (no partial, no content-less ones) in time order; `session_id` is theirs;
    `current_keys` are the (subject, predicate) keys the user already has, so an extractor can reuse them
    instead of inventing near-synonyms. Every candidate's `quote` must be a verbatim substring of the text of
    its event (`event_id`); `basis` is `stated` for user-authored text and `inferred` for anything else."""

    name: str

    def extract(
        self,
        events: Sequence[Event],
        *,
        session_id: str,
        registry: PredicateRegistry,
        current_keys: Sequence[tuple[str, str]] = (),
    ) -> list[Candidate]: ...


def basis_for(author: str) -> str:
    """User text is stated; agent ("model") and tool text can only ever be inferred."""
    return "stated" if author == "user" else "inferred"


class ExtractorKeys:
    """An extractor seen as event memory's `FactKeys` (memlab.types): the facts it reads from a session's kept
    events, as one 'subject predicate: value' line per fact under the event it came from. Pass it as
    `EventMemory(fact_keys=ExtractorKeys(extractor))` to embed each unit with its facts."""

    def __init__(self, extractor: Extractor, registry: PredicateRegistry | None = None) -> None:
        self.extractor = extractor
        self.registry = registry or default_registry()
        self.name = extractor.name

    def fact_lines(self, events: Sequence[Event], *, session_id: str) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for c in self.extractor.extract(events, session_id=session_id, registry=self.registry):
            value = f"not {c.value}" if c.negated else c.value
            found.setdefault(c.event_id or "", []).append(f"{c.subject} {c.predicate.replace('_', ' ')}: {value}")
        return found
