"""Reading users' sessions back out of event memory, read-only: labelling one's own traffic (the workbench's judged
sets) needs the sessions the agent's memory holds, with the event ids its hits and judgments name.

Only an event layer can be read back event by event: its unit id is the event id and its body the event's text
(a rendering changes what is embedded, not the body). A chunk joins several events into one text, so a chunk
layer is refused. What memory keeps is what ingest kept: events filtered out (too short, holding a secret) or
erased are not there, and the sessions read back hold only the kept ones.

The connection is read-only (`default_transaction_read_only`, and a read-only transaction): nothing is created,
not even memlab's tables, so pointing it at an agent's production database changes nothing. Every read is scoped
by app, user and layer in SQL. Errors go through memlab's redactor, which also knows the DSN's password."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import psycopg

from memlab.config import configured_dsn, db_timeout
from memlab.errors import ConfigError, DatabaseUnavailableError
from memlab.events.units import EVENT_LAYER
from memlab.inputs import check_ids
from memlab.safety.redact import dsn_secrets, redact
from memlab.storage import unit_housekeeping as housekeeping
from memlab.storage.read_only import connect_read_only
from memlab.storage.store import _first_line
from memlab.types import Event, Session


def _session(app_name: str, user_id: str, session_id: str, rows: list[tuple], layer: str) -> Session:
    events = []
    for _, unit_id, event_ids, author, at, body in rows:
        if len(event_ids) != 1 or event_ids[0] != unit_id:
            raise ConfigError(f"layer {layer!r} of {app_name}/{user_id} holds chunks (unit {unit_id!r} joins events "
                              f"{list(event_ids)[:4]}), whose events cannot be read back one by one; name an "
                              f"event layer (e.g. {EVENT_LAYER!r})")  # fmt: skip
        events.append(Event(id=unit_id, author=author or "", timestamp=at, text=body))
    return Session(app_name=app_name, user_id=user_id, id=session_id, events=events)


def read_stored_sessions(
    dsn: str | None, app_name: str, user_ids: Sequence[str], *, layer: str = EVENT_LAYER,
    home: str | Path | None = None, timeout: float | None = None,
) -> dict[str, list[Session]]:  # fmt: skip
    """user id -> that user's sessions as event memory holds them in `layer` (events in time order, with their
    stored ids, authors, times and texts), for exactly the users named; a user with nothing stored maps to [].
    `dsn` None means what `open_store()` opens (MEMLAB_DSN, else the embedded server under `home`)."""
    for user_id in user_ids:
        check_ids(app_name, user_id, layer=layer)
    conn, shown = connect_read_only(dsn, home, db_timeout(timeout), doing="read stored sessions from")
    out: dict[str, list[Session]] = {}
    try:
        with conn, conn.transaction():
            for user_id in dict.fromkeys(user_ids):
                by_session: dict[str, list[tuple]] = {}
                for row in housekeeping.stored_units(conn, app_name, user_id, layer):
                    by_session.setdefault(row[0], []).append(row)
                out[user_id] = [_session(app_name, user_id, sid, rows, layer) for sid, rows in by_session.items()]
    except psycopg.errors.UndefinedTable:
        raise ConfigError(f"{shown} holds no event memory (no memlab tables); give the DSN of the database the "
                          "agent's EventMemory writes to") from None  # fmt: skip
    except psycopg.Error as exc:
        raise DatabaseUnavailableError(redact(f"reading stored sessions from {shown} failed: {_first_line(exc)}",
                                              known=dsn_secrets(configured_dsn(dsn)))) from None  # fmt: skip
    return out


def stored_layers(dsn: str | None, app_name: str, user_id: str, *, home: str | Path | None = None,
                  timeout: float | None = None) -> list[str]:  # fmt: skip
    """The layers one user has memory in (read-only), to say which to name when a layer holds nothing."""
    check_ids(app_name, user_id)
    conn, shown = connect_read_only(dsn, home, db_timeout(timeout), doing="read stored sessions from")
    try:
        with conn, conn.transaction():
            return housekeeping.stored_layers(conn, app_name, user_id)
    except psycopg.errors.UndefinedTable:
        raise ConfigError(f"{shown} holds no event memory (no memlab tables)") from None


__all__ = ["read_stored_sessions", "stored_layers"]
