"""Plain data types shared by every layer: sessions and events (shaped like Google ADK's), hits, reports.

They are frozen dataclasses so they can be hashed, compared in tests and passed between threads.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memlab.errors import ConfigError

Strategy = Literal["auto", "hnsw", "exact", "planner"]
IterativeScan = Literal["off", "relaxed_order", "strict_order"]
STRATEGIES: tuple[str, ...] = ("auto", "hnsw", "exact", "planner")
ITERATIVE_SCANS: tuple[str, ...] = ("off", "relaxed_order", "strict_order")


@dataclass(frozen=True)
class FunctionCall:
    """A tool call the agent made (ADK `function_call` part)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class FunctionResponse:
    """A tool's answer (ADK `function_response` part)."""

    name: str
    response: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class Event:
    """One turn of a session. `timestamp` must be timezone-aware: memory is ordered by when things were said."""

    id: str
    author: str
    timestamp: datetime
    text: str | None = None
    function_calls: tuple[FunctionCall, ...] = ()
    function_responses: tuple[FunctionResponse, ...] = ()
    partial: bool = False

    def __post_init__(self) -> None:
        if not self.id:
            raise ConfigError("Event.id is empty: every event needs a stable id (re-ingest is keyed on it).")
        if self.timestamp.tzinfo is None or self.timestamp.utcoffset() is None:
            raise ConfigError(
                f"Event {self.id!r}: timestamp {self.timestamp.isoformat()} has no timezone; "
                "pass an aware datetime, e.g. datetime(..., tzinfo=timezone.utc)."
            )


@dataclass(frozen=True)
class Session:
    """A conversation of one user with one app, as ADK's `Session` (app name, user id, id, events)."""

    app_name: str
    user_id: str
    id: str
    events: tuple[Event, ...] | list[Event] = ()

    def __post_init__(self) -> None:
        for name in ("app_name", "user_id", "id"):
            if not getattr(self, name):
                raise ConfigError(f"Session.{name} is empty: memory is scoped by app, user and session.")
        object.__setattr__(self, "events", tuple(self.events))


@dataclass(frozen=True)
class SearchSettings:
    """How one search runs. The defaults are the safe production choice: `auto` scores every row of a user
    who has at most `exact_below` units (perfect recall, a few ms) and otherwise walks the HNSW index with
    relaxed iterative scans."""

    top_k: int = 10
    max_distance: float | None = None
    strategy: Strategy = "auto"
    ef_search: int = 40
    iterative_scan: IterativeScan = "relaxed_order"
    max_scan_tuples: int = 20_000
    exact_below: int = 2_000

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ConfigError(f"SearchSettings.top_k must be >= 1, got {self.top_k}.")
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"SearchSettings.strategy {self.strategy!r} is unknown; use one of {STRATEGIES}.")
        if self.iterative_scan not in ITERATIVE_SCANS:
            raise ConfigError(
                f"SearchSettings.iterative_scan {self.iterative_scan!r} is unknown; use one of {ITERATIVE_SCANS}."
            )
        if not 1 <= self.ef_search <= 1000:
            raise ConfigError(f"SearchSettings.ef_search must be in 1..1000 (pgvector's range), got {self.ef_search}.")
        if self.exact_below < 0:
            raise ConfigError(f"SearchSettings.exact_below must be >= 0, got {self.exact_below}.")
        if self.max_scan_tuples < 1:
            raise ConfigError(f"SearchSettings.max_scan_tuples must be >= 1, got {self.max_scan_tuples}.")
        if self.max_distance is not None and not 0.0 <= self.max_distance <= 2.0:
            raise ConfigError(f"SearchSettings.max_distance is a cosine distance in [0, 2], got {self.max_distance}.")


@dataclass(frozen=True)
class Hit:
    """One retrieved memory unit. `distance` is cosine distance (0 = same direction, 2 = opposite)."""

    unit_id: str
    text: str
    distance: float
    author: str | None = None
    timestamp: datetime | None = None
    session_id: str | None = None
    event_ids: tuple[str, ...] = ()


class Hits(list[Hit]):
    """The ranked hits of one search, plus how they were found (`plan`: which access path PostgreSQL took)."""

    def __init__(self, hits: list[Hit] | None = None, *, plan: str = "", dropped_by_cutoff: int = 0) -> None:
        super().__init__(hits or [])
        self.plan = plan
        self.dropped_by_cutoff = dropped_by_cutoff

    @property
    def unit_ids(self) -> list[str]:
        return [h.unit_id for h in self]


@dataclass
class IngestReport:
    """What one `add_session` did: units written, already present, replaced, and events skipped by reason."""

    added: int = 0
    already_stored: int = 0
    replaced: int = 0
    embedded: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def merge(self, other: IngestReport) -> IngestReport:
        """Add another report into this one (for multi-session loads); returns self."""
        self.added += other.added
        self.already_stored += other.already_stored
        self.replaced += other.replaced
        self.embedded += other.embedded
        self.skipped.update(other.skipped)
        return self
