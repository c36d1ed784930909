"""What keeps an erasure from losing a race with an add in flight.

An add plans (reads tombstones and what is stored), then embeds or extracts outside any transaction (seconds,
or an LLM call), then writes. An erasure that commits in between finds nothing to delete; unless the write
looks again, it stores what was just erased. Two rules close that window:

- The user guard: every erasure takes its user's guard exclusively in its own transaction; every write, and
  every plan while it draws its generation, takes it shared. An erasure and a write of the same user never
  overlap, and a write (READ COMMITTED) sees every erasure that committed before it got the guard. Writers of
  one user still run side by side (shared), and nothing is held while the model runs.
- The epoch: every erasure also holds one server-wide lock shared. A call that cannot name its users when it
  starts (`bulk_load` reads its rows as they come) or names too many to lock one by one draws its generation
  holding that lock exclusively: every erasure in flight has committed by then, and every later one draws a
  higher generation.
- Markers: tombstones (`delete_memory`) already outlive the delete, so a write reads them again under the
  guard. `forget_user` and `forget_session` leave no tombstone (a later add may store the user or session
  again), so they record a marker with a generation drawn from a sequence. A plan draws its own generation
  under the guard, so a marker with a higher generation is an erasure that committed after the plan began:
  the write leaves out everything that marker names and reports it.

A call of many batches (`add_sessions`, `bulk_load`) draws one generation when it starts and every batch's write
checks against it: an erasure that commits while the call runs wins over all of the call, not only over the
batches planned before it.

A marker holds the SHA-256 of the names it covers, never an app, user or session id in clear, and is deleted
after MARKER_HOURS (an add that spends longer than that between planning and writing is not covered).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import psycopg

MARKER_HOURS = 24  # how long a marker is kept: far longer than any add spends between its plan and its write
_GUARD_SEED = 2  # hashtextextended seed of the guard keys (session locks use 0, fact keys 1)
_EPOCH = "epoch"  # the epoch lock's key (a guard key always starts with "guard")
# Users a plan locks one by one at most; a call of more draws under the epoch lock (each advisory lock takes a
# slot of the server's shared lock table, max_locks_per_transaction x max_connections: 6,400 by default).
GUARD_USERS_AT_MOST = 512

Name = tuple[str, ...]  # what a marker covers, e.g. ("units", app, user) or ("facts", app, user, session)


def marker_key(name: Name) -> str:
    """The digest a marker is stored under (the ids themselves are not kept)."""
    return hashlib.sha256("\x1f".join(("memlab-erasure", *name)).encode()).hexdigest()


def guard(conn: psycopg.Connection, users: Iterable[tuple[str, str]], *, exclusive: bool) -> None:
    """Take the guard of each (app, user) until the transaction ends: exclusive for an erasure, shared for a
    write or a plan. Sorted, so two callers never deadlock on each other's guards."""
    keys = sorted({"\x1f".join(("guard", app, user)) for app, user in users})
    if not keys:
        return
    if exclusive:  # an erasure: calls drawing under the epoch lock wait for it to commit
        conn.execute("SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, %s))", [_EPOCH, _GUARD_SEED])
    how = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    conn.execute(
        f"SELECT count({how}(hashtextextended(k, {_GUARD_SEED}))) FROM unnest(%s::text[]) WITH ORDINALITY AS t(k, n)",
        [keys],
    )


def plan_generation(conn: psycopg.Connection, users: Iterable[tuple[str, str]] | None) -> int:
    """The generation an add's plan (or a whole call) starts at: drawn under the users' shared guard, in a
    transaction of its own, so every erasure of those users either committed before it (and the plan's reads see
    it) or draws a higher generation (and the write sees its marker). `users` None (not known yet) or more than
    GUARD_USERS_AT_MOST: drawn under the epoch lock instead, which orders it against every erasure."""
    wanted = None if users is None else set(users)
    with conn.transaction():
        if wanted is None or len(wanted) > GUARD_USERS_AT_MOST:
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))", [_EPOCH, _GUARD_SEED])
        else:
            guard(conn, wanted, exclusive=False)
        return int(conn.execute("SELECT nextval('memlab_erasure_generation')").fetchone()[0])


def record(conn: psycopg.Connection, names: Iterable[Name]) -> int:
    """Record markers for `names` in the caller's transaction (which holds the exclusive guard of their users)
    and delete markers older than MARKER_HOURS; returns the generation recorded."""
    keys = sorted({marker_key(n) for n in names})
    generation = int(conn.execute("SELECT nextval('memlab_erasure_generation')").fetchone()[0])
    conn.execute(
        "INSERT INTO memlab_erasure (scope_key, generation) SELECT k, %s FROM unnest(%s::text[]) AS k "
        "ON CONFLICT DO NOTHING",
        [generation, keys],
    )
    conn.execute("DELETE FROM memlab_erasure WHERE erased_at < now() - make_interval(hours => %s)", [MARKER_HOURS])
    return generation


def erased_after(conn: psycopg.Connection, names: Iterable[Name], generation: int) -> set[Name]:
    """Which of `names` an erasure marked after `generation` (call it under the users' shared guard)."""
    by_key = {marker_key(n): n for n in names}
    if not by_key:
        return set()
    rows = conn.execute(
        "SELECT DISTINCT scope_key FROM memlab_erasure WHERE scope_key = ANY(%s) AND generation > %s",
        [list(by_key), generation],
    ).fetchall()
    return {by_key[k] for (k,) in rows}


# The names each memory marks and checks.
def units_user(app: str, user: str) -> Name:
    return ("units", app, user)


def units_session(app: str, user: str, session: str, model_id: str) -> Name:
    return ("units", app, user, session, model_id)


def facts_user(app: str, user: str) -> Name:
    return ("facts", app, user)


def facts_session(app: str, user: str, session: str) -> Name:
    return ("facts", app, user, "session", session)


def facts_event(app: str, user: str, session: str | None, event_id: str) -> Name:
    """One event's facts, in one session (or, with `session` None, in every session of the user)."""
    return ("facts", app, user, "event", "" if session is None else session, event_id)


def facts_value(app: str, user: str, subject: str, predicate: str, value: str) -> Name:
    return ("facts", app, user, "value", subject, predicate, value)
