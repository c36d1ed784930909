"""Plain data types shared by every layer: sessions and events (shaped like Google ADK's), hits, reports.

They are frozen dataclasses so they can be hashed, compared in tests and passed between threads.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from memlab.errors import ConfigError

Strategy = Literal["auto", "hnsw", "exact", "planner"]
IterativeScan = Literal["off", "relaxed_order", "strict_order"]
STRATEGIES: tuple[str, ...] = ("auto", "hnsw", "exact", "planner")
ITERATIVE_SCANS: tuple[str, ...] = ("off", "relaxed_order", "strict_order")
SearchMode = Literal["vector", "lexical", "hybrid"]
SEARCH_MODES: tuple[str, ...] = ("vector", "lexical", "hybrid")
TimeHandling = Literal["off", "filter", "boost"]
TIME_HANDLING: tuple[str, ...] = ("off", "filter", "boost")
EARLIEST_TIMESTAMP = datetime(1970, 1, 1, tzinfo=UTC)
DEFAULT_AHEAD = timedelta(days=1)
HNSW_MAX_EF_SEARCH = 1000  # pgvector's ceiling of hnsw.ef_search: an HNSW walk returns at most this many rows
MAX_INT4 = 2**31 - 1  # PostgreSQL's integer settings (hnsw.max_scan_tuples) and the LIMITs memlab sends


class InputError(ConfigError, ValueError):
    """A session, event or argument that cannot be stored or searched as given (a NUL character, a lone
    surrogate, a non-string id, an implausible timestamp, a text over its limit, ...). The message names the
    app, user, session and event it is about; the same names are attributes, so a caller can route the failure.
    It is a ValueError too, so code that caught ValueError for a malformed id keeps working."""

    def __init__(
        self,
        problem: str,
        *,
        app_name: object = None,
        user_id: object = None,
        session_id: object = None,
        event_id: object = None,
    ) -> None:
        self.problem = problem
        self.app_name, self.user_id, self.session_id, self.event_id = app_name, user_id, session_id, event_id
        where = ", ".join(
            f"{name} {value!r}"
            for name, value in (("app", app_name), ("user", user_id), ("session", session_id), ("event", event_id))
            if value is not None
        )
        super().__init__(f"{where}: {problem}" if where else problem)


@dataclass(frozen=True)
class TimestampWindow:
    """The event times memory accepts: from `earliest` to `ahead` past the current time (clock skew).

    A timestamp outside it is a broken clock or a unit mix-up (seconds read as milliseconds); stored, it would
    sort before or after everything the user said. Far outside it is worse: a time after 9999-12-31 in UTC
    (year 9999 in a negative UTC offset) is stored by PostgreSQL but cannot be read back into Python, so every
    later search of the user fails. Pass another window to `EventMemory(timestamps=...)` or
    `FactMemory(timestamps=...)` to replay old data."""

    earliest: datetime = EARLIEST_TIMESTAMP
    ahead: timedelta = DEFAULT_AHEAD

    def __post_init__(self) -> None:
        if not isinstance(self.earliest, datetime) or self.earliest.utcoffset() is None:
            raise ConfigError(f"TimestampWindow.earliest must be a timezone-aware datetime, got {self.earliest!r}.")
        if not isinstance(self.ahead, timedelta) or self.ahead < timedelta(0):
            raise ConfigError(f"TimestampWindow.ahead must be a timedelta >= 0, got {self.ahead!r}.")

    def latest(self, now: datetime | None = None) -> datetime:
        """The latest accepted time: now + `ahead`, and never past what Python can read back (9999 in UTC)."""
        now = now or datetime.now(UTC)
        ceiling = datetime.max.replace(tzinfo=UTC)
        return ceiling if self.ahead >= ceiling - now else now + self.ahead

    def problem(self, timestamp: datetime, now: datetime | None = None) -> str | None:
        """Why `timestamp` is refused, or None when it is inside the window."""
        latest = self.latest(now)
        earliest = max(self.earliest, datetime.min.replace(tzinfo=UTC))  # before year 1 in UTC: unreadable too
        if timestamp < earliest or timestamp > latest:
            return (
                f"timestamp {timestamp.isoformat()} is outside the accepted window {earliest.isoformat()} .. "
                f"{latest.isoformat()} (now + {self.ahead}); fix the event's clock, or widen the memory's window: "
                "EventMemory(timestamps=TimestampWindow(earliest=..., ahead=...)) or FactMemory(timestamps=...)."
            )
        return None


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
        if not isinstance(self.id, str) or not self.id:
            raise ConfigError(
                f"Event.id {self.id!r} is not a non-empty string: every event needs a stable string id "
                "(re-ingest is keyed on it)."
            )
        if not isinstance(self.author, str):
            raise ConfigError(f"Event {self.id!r}: author {self.author!r} is not a string.")
        if self.text is not None and not isinstance(self.text, str):
            raise ConfigError(f"Event {self.id!r}: text must be a string or None, got {type(self.text).__name__}.")
        if not isinstance(self.timestamp, datetime):
            raise ConfigError(
                f"Event {self.id!r}: timestamp {self.timestamp!r} is not a datetime; pass an aware datetime, "
                "e.g. datetime(..., tzinfo=timezone.utc)."
            )
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
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ConfigError(
                    f"Session {self.id!r}: {name} {value!r} is a {type(value).__name__}, not a string "
                    "(memory is scoped by app, user and session ids, which are strings)."
                )
            if not value:
                raise ConfigError(f"Session.{name} is empty: memory is scoped by app, user and session.")
        object.__setattr__(self, "events", tuple(self.events))


class FactKeys(Protocol):
    """What event memory needs of fact memory to add a unit's facts to the text it embeds ("fact keys"):
    a name (part of the layer) and, for a session's kept events, event id -> lines such as
    'user lives in: Lisbon'. Fact memory provides it (`memlab.facts.ExtractorKeys`); event memory imports
    nothing of fact memory, which builds on it."""

    name: str

    def fact_lines(self, events: Sequence[Event], *, session_id: str) -> Mapping[str, list[str]]: ...


@dataclass(frozen=True)
class SearchSettings:
    """How one search runs. The defaults are the safe production choice: `auto` scores every row of a user
    who has at most `exact_below` units (perfect recall, a few ms; None = the store's calibrated `AutoPolicy`),
    searches a user's own partial HNSW index where one exists (`EventMemory.maintain` builds them for large
    users), and otherwise walks the shared HNSW index with iterative scans and a scan budget sized to the user's
    share of the table. With `strategy="auto"`, `ef_search`, `iterative_scan` and `max_scan_tuples` come from
    the policy too; set a fixed strategy to choose them yourself.

    `mode` picks the ranking: `vector` (cosine distance), `lexical` (PostgreSQL full-text search over the
    rendered text: units matching every query word first, then any word, by BM25 over the user's units) or `hybrid`
    (reciprocal rank fusion of the two lists, each `candidates` deep: score = sum of weight / (rrf_k + rank)).
    `max_distance` is always the cosine distance of a hit's embedding to the query, in every mode: a lexical
    or fused hit beyond it is dropped too (None keeps every hit).

    `time` uses the moment a question is asked (`search(..., asked_at=)`): time phrases in the query ("last
    month", "in May", "two weeks ago") become a window on the memory's time; an event the question names
    ("before I moved") is found in the user's memory and its time bounds the window. `boost` fuses a third list
    of the candidates inside the window, weighted `time_weight`; for "currently"/"latest" questions it orders
    the top k newest first (same weight) without pulling in others, so the older of two conflicting memories
    stays. `filter` keeps only candidates inside the window (all of them if none is). `off` ignores time.

    `query_rendering="first_person"` puts a question asked about "the user" (as an agent's memory tool call
    is) in the first person the memory was written in, before it is embedded and searched.

    `per_session` caps the hits one session may hold in the top k (None: no cap); the places it frees are
    filled from deeper candidates (`candidates` deep), and when there are not enough of those the capped hits
    come back, so a cap never returns fewer hits. Questions whose answer is spread over several conversations
    ("how many times...", "what changed") otherwise get k turns of the one conversation nearest to them.

    `prefer_author` ranks that author's units (e.g. "user") as if they were `author_margin` nearer to the query
    in the vector list, in vector and hybrid modes; each hit keeps its true distance, which `max_distance` reads.
    A user's own turns state the user's facts, while the assistant's replies around them are often longer and
    closer to the question's topic. The default margin, 0.05, was chosen on memlab-synth: over 3 seeds of 32 users,
    margins of 0.03-0.07 gained about a point of recall@10 and 0.10 less.

    `literal_scope` writes app, user and the query into the statement as SQL literals instead of bound
    parameters, so the planner can prove a per-tenant partial HNSW index's predicate (`Store.create_tenant_index`,
    `EventMemory.maintain`) and serve a fixed strategy from the user's own graph; `auto` does this by itself for a
    user who has one. It is how a benchmark measures that index with a strategy of its choosing."""

    top_k: int = 10
    max_distance: float | None = None
    strategy: Strategy = "auto"
    ef_search: int = 40
    iterative_scan: IterativeScan = "relaxed_order"
    max_scan_tuples: int = 20_000
    exact_below: int | None = None
    mode: SearchMode = "vector"
    rrf_k: int = 60
    vector_weight: float = 1.0
    lexical_weight: float = 1.0
    candidates: int = 50
    time: TimeHandling = "off"
    time_weight: float = 1.0
    query_rendering: str = "as_is"
    per_session: int | None = None
    prefer_author: str | None = None
    author_margin: float = 0.05
    literal_scope: bool = False

    def fused(self, timed: bool) -> bool:
        """Whether this search needs the candidate lists (full-text, a time window, a per-session cap, a
        preferred author) rather than the plain vector top k; `timed`: the question's time is known."""
        return (self.mode != "vector" or (self.time != "off" and timed) or self.per_session is not None
                or self.prefer_author is not None)  # fmt: skip

    def __post_init__(self) -> None:
        for name, allowed in (("strategy", STRATEGIES), ("iterative_scan", ITERATIVE_SCANS), ("mode", SEARCH_MODES),
                              ("time", TIME_HANDLING), ("query_rendering", ("as_is", "first_person"))):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, str) or value not in allowed:
                raise ConfigError(f"SearchSettings.{name} {value!r} is unknown; use one of {allowed}.")
        exact = self.strategy == "exact"
        walk = (f"with strategy={self.strategy!r} a search may walk an HNSW index, which returns at most ef_search "
                f"rows, and pgvector caps ef_search at {HNSW_MAX_EF_SEARCH}; for more rows use strategy='exact'")
        deepest = MAX_INT4 if exact else HNSW_MAX_EF_SEARCH
        setting = "SearchSettings."
        check_number(self.top_k, setting + "top_k", low=1, high=deepest, integer=True, why="" if exact else walk)
        check_number(self.candidates, setting + "candidates", low=1, high=deepest, integer=True,
                     why="each candidate list is this deep" + ("" if exact else f"; {walk}"))
        check_number(self.ef_search, setting + "ef_search", low=1, high=HNSW_MAX_EF_SEARCH, integer=True,
                     why="pgvector's range of hnsw.ef_search")
        check_number(self.max_scan_tuples, setting + "max_scan_tuples", low=1, high=MAX_INT4, integer=True,
                     why="pgvector's range of hnsw.max_scan_tuples")
        if self.exact_below is not None:
            check_number(self.exact_below, setting + "exact_below", low=0, high=2**63 - 1, integer=True,
                         why="a unit count (None: the store's calibrated policy)")
        check_number(self.rrf_k, setting + "rrf_k", low=0, high=1_000_000, integer=True,
                     why="reciprocal rank fusion's constant (60 is usual)")
        if self.per_session is not None:
            check_number(self.per_session, setting + "per_session", low=1, high=MAX_INT4, integer=True,
                         why="hits one session may hold (None: no cap)")
        for name in ("vector_weight", "lexical_weight", "time_weight"):
            check_number(getattr(self, name), setting + name, low=0.0, high=1e6, integer=False, why="a fusion weight")
        check_number(self.author_margin, setting + "author_margin", low=0.0, high=2.0, integer=False,
                     why="a cosine distance")
        if self.max_distance is not None:
            check_number(self.max_distance, setting + "max_distance", low=0.0, high=2.0, integer=False,
                         why="a cosine distance (None keeps every hit)")
        if not isinstance(self.literal_scope, bool):
            raise ConfigError(f"SearchSettings.literal_scope must be True or False, got {self.literal_scope!r}.")
        if self.prefer_author is not None and (not isinstance(self.prefer_author, str) or not self.prefer_author):
            raise ConfigError(f"SearchSettings.prefer_author must be None or an author's name such as 'user', got "
                              f"{self.prefer_author!r}.")  # fmt: skip


def check_number(value: object, what: str, *, low: float, high: float, integer: bool, why: str = "") -> None:
    """Refuse (ConfigError naming `what`, the value, the allowed range and `why`) a number that is not an int
    (or, unless `integer`, a finite float) in low..high. Bools, strings and NaN are refused: a setting read from
    text ('1e9') must be converted by its reader, not compared here."""
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    finite = ok and (integer or math.isfinite(value))  # type: ignore[arg-type]
    if not finite or isinstance(value, bool) or not low <= value <= high:  # type: ignore[operator]
        kind = "an integer" if integer else "a finite number"
        bounds = f"{low:,}..{high:,}" if integer else f"{low:g}..{high:g}"
        shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:37]}..."
        because = f" ({why})." if why else "."
        raise ConfigError(f"{what}={shown} is refused: it must be {kind} in {bounds}{because}")


@dataclass(frozen=True)
class AutoPolicy:
    """How `strategy="auto"` picks a strategy from a user's unit count, calibrated by `memlab bench` against
    FAISS exact and stored with the store (`Store.save_auto_policy`). The defaults are the calibration of a
    2-core machine; `calibrated_on` says which run a stored policy came from.

    - at most `exact_below` units: exact scan of the user's rows (recall 1.0, cost grows with the user only);
    - a per-tenant partial HNSW index exists (`EventMemory.maintain` builds one for users with at least
      `tenant_index_above` units): that index, with `tenant_ef_search`;
    - otherwise exact again while units^2 <= `scan_factor` x `ef_search` x the table's rows (walking the shared
      index to find k of this user's rows would visit more tuples than the user has), else the shared HNSW
      index with `iterative_scan`, `ef_search` and a scan budget of that walk, at least `max_scan_tuples`.
    An explicit `SearchSettings.exact_below` replaces the first threshold and skips the walk rule."""

    exact_below: int = 5_000
    tenant_index_above: int = 10_000
    ef_search: int = 100
    # at 100 or 200 a 100,000-row tenant's recall sits on the 0.99 goal's edge, above or below it build to build
    tenant_ef_search: int = 400
    iterative_scan: str = "relaxed_order"
    max_scan_tuples: int = 20_000
    scan_factor: float = 4.0
    calibrated_on: str = "default"

    def __post_init__(self) -> None:
        if min(self.exact_below, self.tenant_index_above, self.max_scan_tuples) < 0 or self.scan_factor <= 0:
            raise ConfigError(f"AutoPolicy needs non-negative thresholds and scan_factor > 0, got {self}.")
        if not (1 <= self.ef_search <= 1000 and 1 <= self.tenant_ef_search <= 1000):
            raise ConfigError(f"AutoPolicy ef_search values must be in 1..1000, got {self}.")
        if self.iterative_scan not in ITERATIVE_SCANS:
            raise ConfigError(f"AutoPolicy.iterative_scan {self.iterative_scan!r}: use one of {ITERATIVE_SCANS}.")


@dataclass(frozen=True)
class Hit:
    """One retrieved memory unit. `distance` is cosine distance (0 = same direction, 2 = opposite), also after a
    re-ranker (`rerank`, the workbench's re-rank stage) has re-ordered the hits."""

    unit_id: str
    text: str
    distance: float
    author: str | None = None
    timestamp: datetime | None = None
    session_id: str | None = None
    event_ids: tuple[str, ...] = ()
    lexical: float | None = None  # full-text BM25 score over the rendered text; None where full-text search was not run
    coverage: float | None = None  # share of the query's IDF mass the unit holds (full-text search), 0..1
    score: float | None = None  # the fused score in hybrid or time-aware searches (higher is better)
    event_sessions: tuple[str, ...] = ()  # the session of each event id, where a unit spans sessions (a fact)
    rerank: float | None = None  # a re-ranker's score (higher = more relevant); `distance` stays the embedding's


class Hits(list[Hit]):
    """The ranked hits of one search, plus how they were found (`plan`: which access path PostgreSQL took;
    `window`: the time window read from the question, if any)."""

    def __init__(
        self, hits: list[Hit] | None = None, *, plan: str = "", dropped_by_cutoff: int = 0, window: object = None
    ) -> None:
        super().__init__(hits or [])
        self.plan = plan
        self.dropped_by_cutoff = dropped_by_cutoff
        self.window = window

    @property
    def unit_ids(self) -> list[str]:
        return [h.unit_id for h in self]


@dataclass(frozen=True)
class SessionFailure:
    """A session `add_sessions` could not store (nothing of it was written) and why."""

    app_name: str
    user_id: str
    session_id: str
    reason: str


@dataclass
class IngestReport:
    """What one `add_session` did: units written, already present, replaced, and events skipped by reason.
    `failed` lists the sessions `add_sessions` refused (malformed input); the other sessions were written."""

    added: int = 0
    already_stored: int = 0
    replaced: int = 0
    embedded: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    failed: list[SessionFailure] = field(default_factory=list)
    # seconds spent per stage: filter (incl. secret scan), lookup, embed, write (COPY with index upkeep), commit
    timings: Counter[str] = field(default_factory=Counter)
    # which write path ran ("batched" or "copy-first-load": memlab.events.ingest) and why it was chosen
    path: str = ""
    path_reason: str = ""

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    @property
    def ok(self) -> bool:
        """True when no session failed."""
        return not self.failed

    def merge(self, other: IngestReport) -> IngestReport:
        """Add another report into this one (for multi-session loads); returns self."""
        self.added += other.added
        self.already_stored += other.already_stored
        self.replaced += other.replaced
        self.embedded += other.embedded
        self.skipped.update(other.skipped)
        self.failed.extend(other.failed)
        self.timings.update(other.timings)
        self.path, self.path_reason = self.path or other.path, self.path_reason or other.path_reason
        return self


@dataclass(frozen=True)
class DeletionReport:
    """What an erasure removed: memory units, tombstones, embedding-cache entries (of the deleted texts),
    per-tenant indexes, logged queries (memlab.QueryLog), cached model replies derived from the deleted data
    (memlab.models.forget_model_replies), and which tables were vacuumed afterwards."""

    units: int = 0
    tombstones: int = 0
    cache_entries: int = 0
    tenant_indexes: int = 0
    vacuumed: tuple[str, ...] = ()
    queries: int = 0
    model_replies: int = 0
