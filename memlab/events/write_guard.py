"""Event memory's side of `memlab.storage.erasures`: what an erasure takes and marks, and what a write checks
again inside its transaction, so a memory erased while an add of it was embedding is never stored.

Contract (docs/explanation/erasure.md): once `delete_memory`, `forget_session` or `forget_user` returns, no unit it
erased, and no unit of an add planned before it, is stored or found afterwards; the add reports the units it
left out under `skipped["deleted"]` (a tombstone) or `skipped["erased_during_ingest"]` (a forgotten session
or user). An add planned after the erasure stores the session again (only `delete_memory` is a tombstone). An
`add_sessions` call is planned once, when it starts: none of its batches stores what an erasure committed while
the call ran took away, whenever the batch was filtered. `bulk_load` is held to the same rules.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import psycopg

from memlab.events.filters import DELETED
from memlab.events.units import Unit
from memlab.storage import erasures
from memlab.storage import unit_housekeeping as housekeeping
from memlab.storage import units as sqlu
from memlab.types import Session

ERASED_DURING_INGEST = "erased_during_ingest"  # the user or session was forgotten while the add was in flight

Planned = list[tuple[sqlu.Scope, Session, list[Unit]]]


def erasing(conn: psycopg.Connection, app_name: str, user_id: str, names: Iterable[erasures.Name] = ()) -> None:
    """Start an erasure of one user's memory in the caller's transaction: take the user's guard exclusively
    (writes of the user wait, and later writes see what it erased) and mark `names` for adds in flight."""
    erasures.guard(conn, [(app_name, user_id)], exclusive=True)
    names = list(names)
    if names:
        erasures.record(conn, names)


def plan_generation(conn: psycopg.Connection, sessions: Iterable[Session] | None) -> int:
    """The generation an add's plan of these sessions starts at (see `erasures.plan_generation`); None: sessions
    not read yet (an iterator), ordered against every erasure instead. Malformed ids (refused later) name no
    user to guard."""
    if sessions is None:
        return erasures.plan_generation(conn, None)
    users = {(s.app_name, s.user_id) for s in sessions
             if isinstance(getattr(s, "app_name", None), str) and isinstance(getattr(s, "user_id", None), str)}
    return erasures.plan_generation(conn, users)


def recheck(
    conn: psycopg.Connection, planned: Planned, model_id: str, generation: int | None
) -> tuple[Planned, Counter[str]]:
    """Take the planned users' shared guard in the caller's (write) transaction, then leave out what was erased
    since the plan: every unit of a session or user forgotten after `generation`, and every unit holding an
    event (or named by an id) tombstoned meanwhile. Returns the units left and the events left out, by reason."""
    kept, skipped = recheck_units(conn, [(scope, session.id, units) for scope, session, units in planned], model_id,
                                  generation)  # fmt: skip
    return [(scope, session, units) for (scope, session, _), units in zip(planned, kept, strict=True) if units], skipped


def recheck_units(
    conn: psycopg.Connection, planned: list[tuple[sqlu.Scope, str, list[Unit]]], model_id: str,
    generation: int | None,
) -> tuple[list[list[Unit]], Counter[str]]:  # fmt: skip
    """`recheck` of (scope, session id, units) entries, for any writer of units (an add's plan, `bulk_load`'s
    rows): each entry's units that no erasure since `generation` and no tombstone took away, in order."""
    skipped: Counter[str] = Counter()
    erasures.guard(conn, {(scope.app_name, scope.user_id) for scope, _, _ in planned}, exclusive=False)
    if not planned:
        return [], skipped
    gone: set[sqlu.SessionKey] = set()
    if generation is not None:
        names = {_key(scope, session): (
            erasures.units_user(scope.app_name, scope.user_id),
            erasures.units_session(scope.app_name, scope.user_id, session, model_id),
        ) for scope, session, _ in planned}  # fmt: skip
        marked = erasures.erased_after(conn, {n for pair in names.values() for n in pair}, generation)
        gone = {key for key, pair in names.items() if marked.intersection(pair)}
    # An event unit's id is its event's id: each id is asked about once.
    wanted: dict[sqlu.SessionKey, list[str]] = {}
    for scope, session, units in planned:
        key = _key(scope, session)
        if key not in gone:
            wanted[key] = list(dict.fromkeys([*wanted.get(key, ()), *_events(units), *(u.unit_id for u in units)]))
    stones = housekeeping.tombstoned_of(conn, wanted)
    kept: list[list[Unit]] = []
    for scope, session, units in planned:
        key = _key(scope, session)
        if key in gone:
            skipped[ERASED_DURING_INGEST] += len(_events(units))
            kept.append([])
            continue
        dead = {name for (*where, name) in stones if tuple(where) == key}
        if dead:
            skipped[DELETED] += len(dead.intersection([*_events(units), *(u.unit_id for u in units)]))
            units = [u for u in units if u.unit_id not in dead and not dead.intersection(u.event_ids)]
        kept.append(units)
    return kept, skipped


def _key(scope: sqlu.Scope, session_id: str) -> sqlu.SessionKey:
    return (scope.app_name, scope.user_id, session_id)


def _events(units: list[Unit]) -> list[str]:
    """The distinct event ids of units, in order."""
    return list(dict.fromkeys(e for u in units for e in u.event_ids))


def still_stored(conn: psycopg.Connection, rows: list[tuple], model_id: str) -> list[tuple]:
    """The rows of a migration batch (`units_to_migrate` order: app, user, session, layer, unit id, ...) whose
    source unit under `model_id` is still stored, read under the users' shared guard in the caller's (write)
    transaction: a unit erased while the batch was being embedded is not copied back under the new model."""
    erasures.guard(conn, {(r[0], r[1]) for r in rows}, exclusive=False)
    kept: list[tuple] = []
    for layer in sorted({r[3] for r in rows}):
        wanted: dict[sqlu.SessionKey, list[str]] = {}
        for r in rows:
            if r[3] == layer:
                wanted.setdefault((r[0], r[1], r[2]), []).append(r[4])
        found = sqlu.existing_units_of(conn, layer, model_id, wanted)
        kept += [r for r in rows if r[3] == layer and r[4] in found.get((r[0], r[1], r[2]), {})]
    return kept
