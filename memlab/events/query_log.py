"""Recording the queries a memory serves, for labelling your own traffic later (`memlab queries sample`).

Off unless a memory is given `QueryLog(enabled=True)`. A recorded row holds app, user, the memory kind and layer,
the query text, when it was asked, the search settings, and the unit ids, distances and sessions returned
(memlab.storage.query_log). The query text goes through the same secret filter as events on ingest, with the
same context: ingest reads a turn together with the turns before it, so a query is read together with the turns
before it in the conversation (the search's `context`, e.g. the agent's question it answers) and with the user's
previous logged query (`clean_texts.holds_secret_after`). A password typed as the reply to "what's the wifi
password?" is refused as ingest refuses it; a query holding a credential is not recorded, and the skip is counted
(`QueryRecorder.counts["secret"]`). The context itself is never stored.

An erasure wins against a search in flight, as against an add (memlab.storage.erasures): `begin` draws a
generation before the search runs; the row is written under the user's shared guard only if no `forget_user` of
the user, nor `forget_session` of a session its hits came from, marked an erasure since (else it is counted as
`erased_during_search`).

Recording never fails a search: a write that fails is logged as a warning and counted (`counts["failed"]`); the
query is not kept to retry, because a query waiting in memory could outlive an erasure of its user."""

from __future__ import annotations

import dataclasses
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta

import psycopg

from memlab.errors import ConfigError
from memlab.inputs import check_ids, check_text
from memlab.safety.clean_texts import holds_secret_after
from memlab.safety.redact import get_logger
from memlab.storage import erasures
from memlab.storage import query_log as sql_log
from memlab.storage.query_log import LoggedQuery
from memlab.storage.store import Store
from memlab.types import InputError

log = get_logger("memlab.events.query_log")
DEFAULT_RETENTION = timedelta(days=90)
# (unit id, distance, the hit's session, every session the hit touches)
Served = tuple[str, float, str, tuple[str, ...]]


@dataclasses.dataclass(frozen=True)
class QueryLog:
    """Whether a memory records the queries it serves, and how long rows are kept (`retention`, counted from
    when a row was recorded; `EventMemory.maintain` and `purge_query_log` delete older rows)."""

    enabled: bool = False
    retention: timedelta = DEFAULT_RETENTION

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise ConfigError(f"QueryLog.enabled must be True or False, got {self.enabled!r}.")
        if not isinstance(self.retention, timedelta) or self.retention <= timedelta(0):
            raise ConfigError(f"QueryLog.retention must be a positive timedelta (e.g. timedelta(days=90)), got "
                              f"{self.retention!r}.")  # fmt: skip


def check_query_log(value: object) -> QueryLog | None:
    """A memory's `query_log=` argument, refused unless a QueryLog (or None: recording off)."""
    if value is not None and not isinstance(value, QueryLog):
        raise ConfigError(f"query_log must be a memlab.QueryLog (e.g. QueryLog(enabled=True)), got "
                          f"{type(value).__name__}.")  # fmt: skip
    return value


def check_context(context: object, app_name: object, user_id: object) -> tuple[str, ...]:
    """A search's `context=` (the turns just before the query, oldest first) as a tuple of strings, or an
    InputError saying what is wrong."""
    if isinstance(context, str) or not isinstance(context, Sequence):
        raise InputError(f"context must be a list of the turns (strings) said just before the query, oldest first, "
                         f"got {type(context).__name__}; pass context=[previous_turn]", app_name=app_name,
                         user_id=user_id)  # fmt: skip
    for at, turn in enumerate(context):
        check_text(turn, f"context[{at}]", empty_ok=True, app_name=app_name, user_id=user_id)
    return tuple(context)


def event_hits(hits: Iterable) -> list[Served]:
    """Event-memory hits (memlab.Hit) as recorded."""
    return [(h.unit_id, h.distance, h.session_id or "", tuple(dict.fromkeys((h.session_id or "", *h.event_sessions))))
            for h in hits]  # fmt: skip


def fact_hits(hits: Iterable) -> list[Served]:
    """Fact-memory hits (FactHit) as recorded: a fact's session is the one it was last stated in."""
    return [(h.unit_id, h.distance, h.fact.source_session,
             tuple(dict.fromkeys((h.fact.source_session, *h.event_sessions)))) for h in hits]  # fmt: skip


def settings_json(settings: object) -> dict:
    """Search settings (a dataclass or a mapping) as JSON-ready values."""
    raw = dataclasses.asdict(settings) if dataclasses.is_dataclass(settings) else dict(settings)  # type: ignore[arg-type]
    return {k: v if v is None or isinstance(v, (bool, int, str)) or (isinstance(v, float) and math.isfinite(v))
            else str(v) for k, v in raw.items()}  # fmt: skip


class QueryRecorder:
    """Records one memory's served queries (see the module docstring). Thread-safe."""

    def __init__(self, store: Store, settings: QueryLog | None, kind: str, layer: str) -> None:
        self.store = store
        self.settings = check_query_log(settings)
        self.kind = kind
        self.layer = layer
        self._counts: Counter = Counter()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.settings is not None and self.settings.enabled

    @property
    def counts(self) -> dict[str, int]:
        """Queries recorded, and skipped by reason: `secret` (held a credential), `failed` (the write failed),
        `erased_during_search` (the user, or a session of its hits, was forgotten while it ran)."""
        with self._lock:
            return dict(self._counts)

    def _count(self, what: str) -> None:
        with self._lock:
            self._counts[what] += 1

    def _failed(self, app_name: str, user_id: str, exc: Exception) -> None:
        self._count("failed")
        log.warning("query log: a %s query of app %r user %r was not recorded (%s: %s); the search itself "
                    "succeeded", self.kind, app_name, user_id, type(exc).__name__, exc)  # fmt: skip

    def begin(self, app_name: str, user_id: str) -> int | None:
        """Before a search: the erasure generation it starts at (None when recording is off, or the draw failed:
        then the query is not recorded). Never raises."""
        if not self.enabled:
            return None
        try:
            with self.store.connection() as conn:
                return sql_log.generation(conn, app_name, user_id)
        except Exception as exc:  # recording must never fail the search
            self._failed(app_name, user_id, exc)
            return None

    def record(
        self, app_name: str, user_id: str, text: str, asked_at: datetime | None, settings: object,
        hits: Sequence[Served], size: Callable[[psycopg.Connection], int | None], generation: int | None,
        context: Sequence[str] = (),
    ) -> bool:  # fmt: skip
        """Record one served query when recording is on; `generation` is what `begin` drew before the search,
        `size` reads the user's memory size in the write's transaction, `context` holds the turns said just before
        the query (judged with it, never stored). Returns whether a row was written. Never raises."""
        if not self.enabled or generation is None:
            return False
        if holds_secret_after(text, context):
            self._count("secret")
            return False
        secret = False
        try:
            row = LoggedQuery(app_name, user_id, self.kind, self.layer, text, asked_at or datetime.now(UTC),
                              datetime.now(UTC), settings_json(settings), tuple(h[0] for h in hits),
                              tuple(float(h[1]) for h in hits), tuple(h[2] for h in hits),
                              tuple(dict.fromkeys(s for h in hits for s in h[3])), None)  # fmt: skip
            names = [sql_log.marker_user(app_name, user_id),
                     *(sql_log.marker_session(app_name, user_id, s) for s in row.sessions)]  # fmt: skip
            with self.store.transaction() as conn:
                erasures.guard(conn, [(app_name, user_id)], exclusive=False)  # an erasure waits, or is seen
                erased = bool(erasures.erased_after(conn, names, generation))
                previous = None if erased else sql_log.previous_query(conn, app_name, user_id, row.asked_at)
                secret = previous is not None and holds_secret_after(text, [previous])
                if not (erased or secret):
                    sql_log.insert(conn, dataclasses.replace(row, memory_size=size(conn)))
        except Exception as exc:  # a failed recording must never fail the search it describes
            self._failed(app_name, user_id, exc)
            return False
        self._count("erased_during_search" if erased else "secret" if secret else "recorded")
        return not (erased or secret)

    def purge(self, *, now: datetime | None = None, app_name: str | None = None) -> int:
        """Delete logged queries older than this memory's retention (nothing without a QueryLog)."""
        if self.settings is None:
            return 0
        return purge_query_log(self.store, self.settings.retention, now=now, app_name=app_name)


def purge_query_log(
    store: Store, retention: timedelta, *, now: datetime | None = None, app_name: str | None = None
) -> int:
    """Retention: delete every logged query (all users, or one app's) recorded more than `retention` before
    `now` (default: the current time); returns rows deleted."""
    if not isinstance(retention, timedelta) or retention <= timedelta(0):
        raise ConfigError(f"retention must be a positive timedelta, got {retention!r}.")
    if now is not None and (not isinstance(now, datetime) or now.tzinfo is None):
        raise ConfigError(f"now must be a timezone-aware datetime, got {now!r}.")
    with store.transaction() as conn:
        return sql_log.purge(conn, (now or datetime.now(UTC)) - retention, app_name)


def logged_queries(store: Store, app_name: str, user_id: str, *, kind: str | None = None) -> list[LoggedQuery]:
    """The user's logged queries, oldest first (`kind`: "events" or "facts" only)."""
    if kind is not None and kind not in sql_log.KINDS:
        raise ConfigError(f"kind must be one of {', '.join(sql_log.KINDS)} or None, got {kind!r}.")
    check_ids(app_name, user_id)
    with store.connection() as conn:
        return sql_log.user_queries(conn, app_name, user_id, kind)


def query_log_users(store: Store, app_name: str | None = None) -> list[tuple[str, str]]:
    """(app, user) of every user with logged queries (of one app, or all)."""
    with store.connection() as conn:
        return sql_log.logged_users(conn, app_name)


__all__ = ["DEFAULT_RETENTION", "LoggedQuery", "QueryLog", "QueryRecorder", "logged_queries", "purge_query_log",
           "query_log_users"]  # fmt: skip

