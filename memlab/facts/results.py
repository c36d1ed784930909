"""What FactMemory hands back: the report of an ingest or an erasure, a served fact, one step of a key's trail."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from memlab.facts.ids import fact_id
from memlab.facts.types import DOMAIN_USER, Candidate, Fact


@dataclass
class FactIngestReport:
    """What one `add_session` did. `dropped` counts candidates refused before consolidation, by reason."""

    events: int = 0
    candidates: int = 0
    inserted: int = 0
    reinforced: int = 0
    superseded: int = 0
    disputed: int = 0
    retracted: int = 0
    ignored: int = 0
    duplicates: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)  # events left out before extraction: `secret`
    actions: list[tuple[str, str, str, str]] = field(default_factory=list)  # (subject, predicate, value, action)
    accepted: list[Candidate] = field(default_factory=list)  # candidates that passed the checks, normalised
    notes: list[str] = field(default_factory=list)  # why each dropped candidate was dropped, with the fix

    def count(self, action: str) -> None:
        name = {"insert": "inserted", "reinforce": "reinforced", "supersede": "superseded", "dispute": "disputed",
                "retract": "retracted", "ignore": "ignored"}[action]  # fmt: skip
        setattr(self, name, getattr(self, name) + 1)


@dataclass(frozen=True)
class FactHit:
    """A served fact: the rendered line in `text`, cosine `distance` to the query, provenance event ids and the
    session of each (an event id is unique within its session only)."""

    fact: Fact
    text: str
    distance: float
    confidence: float
    user_id: str
    event_ids: tuple[str, ...] = ()
    event_sessions: tuple[str, ...] = ()
    stale: bool = False  # served under STALE_HEADING: confirm with the user first (memlab.facts.staleness)

    @property
    def unit_id(self) -> str:
        return fact_id(self.user_id, self.fact.subject, self.fact.predicate, self.fact.value)

    @property
    def is_domain(self) -> bool:
        """An app-wide fact (reserved user `_domain`), not a fact about the user."""
        return self.user_id == DOMAIN_USER


@dataclass
class FactForgetReport:
    """What `forget_events` / `forget_session` did: observations removed, keys re-derived from what is left,
    value rows deleted (no evidence left; with the status they had), values current again, other changes."""

    observations: int = 0
    keys: list[tuple[str, str]] = field(default_factory=list)
    removed: list[tuple[str, str, str, str]] = field(default_factory=list)  # (subject, predicate, value, status)
    restored: list[tuple[str, str, str]] = field(default_factory=list)  # (subject, predicate, value)
    changed: list[tuple[str, str, str, str, str]] = field(default_factory=list)  # (s, p, value, before, after)
    vacuumed: tuple[str, ...] = ()  # what the `vacuum=` level vacuumed afterwards (memlab.storage.disk_erasure)
    queries: int = 0  # logged queries whose hits touched the forgotten session (memlab.QueryLog)
    model_replies: int = 0  # cached model replies derived from the forgotten events (memlab.models.refs)


@dataclass(frozen=True)
class Provenance:
    """One observation in a key's trail, with the status its value has now."""

    value: str
    status: str
    negated: bool
    basis: str
    session_id: str
    event_id: str
    said_at: datetime
    quote: str
    action: str
    reason: str
