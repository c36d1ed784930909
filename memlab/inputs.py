"""The one input check of memlab's memories (EventMemory, FactMemory) and of the ADK services built on them.

Everything a caller hands in is checked here before it is embedded, written or sent to PostgreSQL, so every
entry point refuses the same things with the same `InputError` (naming app, user, session and event, the
limit and the fix) instead of a psycopg error later:

- ids (app, user, session, event) must be non-empty strings of at most `MAX_ID_BYTES` UTF-8 bytes: they are
  parts of btree keys, and PostgreSQL text cannot hold a NUL character or a lone surrogate;
- texts (event texts, queries, fact values and quotes) must be strings without NUL or lone surrogates, and
  no longer than the memory's `InputLimits`: a text is refused whole before the model embeds it;
- timestamps must be timezone-aware and inside the memory's `TimestampWindow` (1970 .. now + 1 day by
  default): a time after year 9999 in UTC is stored by PostgreSQL but cannot be read back by Python, which
  would make every later read of the user (and, for app-wide facts, of every user of the app) fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from memlab.errors import ConfigError
from memlab.types import Event, InputError, SearchSettings, Session, TimestampWindow, check_number

MAX_ID_BYTES = 256  # app, user, session and event ids (UTF-8): the unique keys must fit a btree entry
MAX_UNIT_ID_BYTES = 2 * MAX_ID_BYTES  # a unit id names a chunk: its session id, layer and position
MAX_AUTHOR_BYTES = 256  # an author is a name (ADK: the agent's name or "user")
# PostgreSQL's full-text index (tsvector) holds at most 1,048,575 bytes of distinct words per text; a rendering
# (speaker, date, fact keys) adds a little to a unit's text, so a unit's text may have at most 1,000,000.
TSVECTOR_MAX_BYTES = 1_048_575
MAX_TEXT_BYTES = 1_000_000
DEFAULT_QUERY_BYTES = 65_536  # a question, not a document: the model reads only its first 256 word pieces
# A fact's value is part of two btree keys next to up to six ids of MAX_ID_BYTES: a btree entry holds 2,704 bytes.
MAX_FACT_VALUE_BYTES = 1_000

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_ID_BYTES",
    "InputError",
    "InputLimits",
    "TimestampWindow",
    "check_datetime",
    "check_ids",
    "check_number",
    "check_session",
    "check_settings",
    "check_text",
    "text_problem",
    "timestamp_problem",
]


@dataclass(frozen=True)
class InputLimits:
    """How long the texts a memory accepts may be, in UTF-8 bytes; longer ones are refused up front with an
    `InputError` naming the limit (memlab never truncates or splits a text silently: split long documents into
    several events yourself). Pass `EventMemory(limits=InputLimits(...))` or `FactMemory(limits=...)`.

    - `text_bytes`: one unit's text: an event's text, a chunk's joined turns (chunk granularity), a fact's quote.
      At most 1,000,000, because PostgreSQL's full-text index of a text holds at most 1,048,575 bytes of words.
    - `query_bytes`: a search query (the ADK services' queries, the preload callback's message too).
    - `fact_value_bytes`: a fact's value (part of the fact tables' keys); at most 1,000."""

    text_bytes: int = MAX_TEXT_BYTES
    query_bytes: int = DEFAULT_QUERY_BYTES
    fact_value_bytes: int = MAX_FACT_VALUE_BYTES

    def __post_init__(self) -> None:
        for name, ceiling, why in (
            ("text_bytes", MAX_TEXT_BYTES, f"PostgreSQL's full-text index holds at most {TSVECTOR_MAX_BYTES:,} "
                                           "bytes of words per text, and renderings add a little"),
            ("query_bytes", MAX_TEXT_BYTES, "the query is indexed for full-text search like a text"),
            ("fact_value_bytes", MAX_FACT_VALUE_BYTES, "a fact's value is part of a btree key of at most 2,704 "
                                                       "bytes, next to up to six ids"),
        ):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= ceiling:
                raise ConfigError(f"InputLimits.{name} must be an integer in 1..{ceiling:,}, got {value!r}: {why}.")


DEFAULT_LIMITS = InputLimits()


def text_problem(value: object, what: str, *, max_bytes: int | None = None, empty_ok: bool = False,
                 limit_name: str | None = None) -> str | None:  # fmt: skip
    """Why `value` cannot be stored as the text `what`, or None. `limit_name` names the setting that raises
    `max_bytes` (e.g. 'InputLimits(text_bytes=...)'); without it the limit is a fixed one (ids)."""
    if not isinstance(value, str):
        return f"{what} {_short(value)} is a {type(value).__name__}, not a string"
    if not value and not empty_ok:
        return f"{what} is empty"
    if max_bytes is not None and len(value) > max_bytes:  # a character is at least one byte: no need to encode
        return _too_long(what, f"more than {max_bytes:,}", max_bytes, limit_name)
    if "\x00" in value:
        return f"{what} holds a NUL character (\\x00), which PostgreSQL text cannot store; strip it first"
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        return (
            f"{what} holds a lone surrogate ({value[exc.start]!r} at position {exc.start}), which is not valid "
            "Unicode text; decode the source with errors='replace' first"
        )
    if max_bytes is not None and size > max_bytes:
        return _too_long(what, f"{size:,}", max_bytes, limit_name)
    return None


def _too_long(what: str, size: str, max_bytes: int, limit_name: str | None) -> str:
    if limit_name is None:
        return f"{what} is {size} bytes long in UTF-8; it may have at most {max_bytes:,}"
    return (f"{what} is {size} bytes long in UTF-8; the limit is {max_bytes:,} bytes ({limit_name}): split it, "
            "or raise the limit")  # fmt: skip


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def check_text(value: object, what: str, *, max_bytes: int | None = None, empty_ok: bool = False,
               limit_name: str | None = None, **where: object) -> str:  # fmt: skip
    """`value` if it can be stored as the text `what`; else `InputError` naming `where` (app_name, user_id...)."""
    problem = text_problem(value, what, max_bytes=max_bytes, empty_ok=empty_ok, limit_name=limit_name)
    if problem:
        raise InputError(problem, **_printable(where))
    return value  # type: ignore[return-value]


def check_ids(app_name: object, user_id: object, /, *, optional: Mapping[str, object] | None = None,
              **ids: object) -> None:
    """Refuse (InputError) an app, user or other id (`session_id=`, `event_id=`, `memory_id=`) that is not a
    non-empty string of at most MAX_ID_BYTES UTF-8 bytes (a memory id, which may name a chunk, twice that)
    without NUL or lone surrogates. Ids in `optional` may also be None (not given)."""
    given = {k: v for k, v in (optional or {}).items() if v is not None}
    where = _printable({"app_name": app_name, "user_id": user_id,
                        "session_id": ids.get("session_id", given.get("session_id"))})  # fmt: skip
    for name, value in (("app_name", app_name), ("user_id", user_id), *ids.items(), *given.items()):
        limit = MAX_UNIT_ID_BYTES if name == "memory_id" else MAX_ID_BYTES
        problem = text_problem(value, name, max_bytes=limit)
        if problem:
            raise InputError(problem, **where)


def _printable(where: Mapping[str, object]) -> dict[str, object]:
    """Ids as an error message may show them: a megabyte id is cut, not printed whole."""
    return {k: (v if not isinstance(v, str) or len(v) <= 120 else f"{v[:100]}...({len(v):,} characters)")
            for k, v in where.items() if k in ("app_name", "user_id", "session_id", "event_id")}  # fmt: skip


def timestamp_problem(timestamp: object, timestamps: TimestampWindow, now: datetime | None = None) -> str | None:
    """Why `timestamp` cannot be stored (not an aware datetime, or outside the window), or None."""
    if not isinstance(timestamp, datetime) or timestamp.utcoffset() is None:
        return f"timestamp {_short(timestamp)} is not a timezone-aware datetime"
    return timestamps.problem(timestamp, now or datetime.now(UTC))


def check_datetime(value: object, what: str, **where: object) -> datetime:
    """`value` if it is a timezone-aware datetime (a time a search or decay is computed at), else InputError."""
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise InputError(f"{what}={_short(value)} must be a timezone-aware datetime, e.g. datetime.now(UTC)",
                         **_printable(where))  # fmt: skip
    return value


def check_session(session: object, timestamps: TimestampWindow, *, limits: InputLimits = DEFAULT_LIMITS,
                  now: datetime | None = None) -> None:  # fmt: skip
    """Raise `InputError` (naming the session and event) unless every id, text and timestamp of the session
    can be stored as given."""
    ids = {name: getattr(session, attr, None) for name, attr in (("app", "app_name"), ("user", "user_id"),
                                                                 ("session", "id"))}  # fmt: skip
    where = _printable({"app_name": ids["app"], "user_id": ids["user"], "session_id": ids["session"]})
    if not isinstance(session, Session):
        raise InputError(f"expected a memlab.Session, got {type(session).__name__}", **where)
    for name, value in ids.items():
        problem = text_problem(value, f"the {name} id", max_bytes=MAX_ID_BYTES)
        if problem:
            raise InputError(problem, **where)
    now = now or datetime.now(UTC)
    for position, event in enumerate(session.events):
        event_id = getattr(event, "id", None)
        if not isinstance(event, Event):
            raise InputError(f"event #{position} is a {type(event).__name__}, not a memlab.Event", **where)
        problem = (
            text_problem(event_id, "the event id", max_bytes=MAX_ID_BYTES)
            or text_problem(event.author, "the author", empty_ok=True, max_bytes=MAX_AUTHOR_BYTES)
            or (None if event.text is None else text_problem(event.text, "the text", empty_ok=True,
                                                              max_bytes=limits.text_bytes,
                                                              limit_name="InputLimits(text_bytes=...)"))
            or timestamp_problem(event.timestamp, timestamps, now)
        )  # fmt: skip
        if problem:
            shown = _printable({"event_id": event_id if isinstance(event_id, str) else repr(event_id)})
            raise InputError(problem, **where, **shown)


def check_settings(settings: object) -> SearchSettings:
    """`settings` if it is a SearchSettings (None: the defaults), else ConfigError (a dict is not read)."""
    if settings is None:
        return SearchSettings()
    if not isinstance(settings, SearchSettings):
        raise ConfigError(f"settings must be a memlab.SearchSettings (or None for the defaults), got "
                          f"{type(settings).__name__}; build one: SearchSettings(top_k=..., ...).")  # fmt: skip
    return settings
