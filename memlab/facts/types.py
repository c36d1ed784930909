"""Fact-memory data: candidates an extractor proposes, stored facts, and consolidation decisions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

Basis = Literal["stated", "inferred"]
Status = Literal["current", "superseded", "disputed", "retracted"]
Action = Literal["insert", "reinforce", "supersede", "dispute", "retract", "ignore"]
Cardinality = Literal["one", "many"]
Sensitivity = Literal["normal", "personal", "health"]
Impact = Literal["high", "normal"]  # high: acting on a wrong value harms or costs the user (see registry.yaml)
DOMAIN_USER = "_domain"  # reserved user id for facts shared by every user of an app


@dataclass(frozen=True)
class Candidate:
    """One fact an extractor read in a session: `subject` has `predicate` = `value` (or, if `negated`, no
    longer has it). `quote` is the span of the transcript it came from; `basis` is `stated` for the user's own
    words and `inferred` for anything taken from agent or tool text."""

    subject: str
    predicate: str
    value: str
    quote: str
    basis: Basis = "stated"
    negated: bool = False
    event_id: str = ""
    event_time: datetime | None = None
    confidence: float = 1.0
    session_id: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.subject, self.predicate)


@dataclass(frozen=True)
class Fact:
    """One stored row: a value of a (subject, predicate) key, with its status and provenance.

    A row stands for every observation of that value: `source_*` is the first time it was said,
    `confirmed_*` the last; `last_stated_at`, `last_inferred_at` and `retracted_at` are the times
    consolidation reasons with, which is what makes the outcome independent of ingestion order."""

    subject: str
    predicate: str
    value: str
    status: Status
    basis: Basis
    confidence: float
    source_session: str
    source_ts: datetime
    quote: str
    confirmed_at: datetime
    confirmed_by: str | None = None
    sensitivity: Sensitivity = "normal"
    cardinality: Cardinality = "one"
    last_stated_at: datetime | None = None
    last_inferred_at: datetime | None = None
    retracted_at: datetime | None = None
    retracted_by: str | None = None
    sessions: tuple[str, ...] = ()
    id: int | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.subject, self.predicate)


@dataclass(frozen=True)
class Decision:
    """What consolidating one candidate does: the action (the article's table) and the rows it leaves.

    `rows` is the complete new state of the key (every value row, with statuses recomputed); the store
    writes the rows that differ from what it read."""

    action: Action
    value: str
    reason: str
    rows: tuple[Fact, ...] = field(default=(), repr=False)

    def row(self, value: str) -> Fact | None:
        return next((r for r in self.rows if r.value == value), None)
