"""Fact memory's side of `memlab.storage.erasures`: what `forget_user`, `forget_session`, `forget_events` and
`delete_fact` mark, and what a fact write checks again inside its transaction, so a fact erased while an add was
extracting it is never written back.

An add that planned before `forget_user` writes nothing of the user (no row, observation or watermark). One
that planned before `forget_session`, `forget_events` or `delete_fact` leaves out the candidates of what was
forgotten and still moves the session's watermark, exactly as if it had run first and been forgotten after
(so re-adding the session stays a no-op). The candidates left out are counted in
`report.dropped["erased_during_ingest"]`.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from memlab.events.write_guard import ERASED_DURING_INGEST
from memlab.facts.types import Candidate
from memlab.storage import erasures


def plan_generation(conn: psycopg.Connection, app: str, user: str) -> int:
    """The generation an add of the user's facts starts at (see `erasures.plan_generation`)."""
    return erasures.plan_generation(conn, [(app, user)])


def recheck(
    conn: psycopg.Connection, app: str, user: str, session_id: str | None, accepted: Sequence[Candidate],
    generation: int | None,
) -> tuple[bool, list[Candidate]]:  # fmt: skip
    """Take the user's shared guard in the caller's (write) transaction, then return whether the user was
    forgotten since `generation`, and the candidates no erasure since then named."""
    erasures.guard(conn, [(app, user)], exclusive=False)
    if generation is None:
        return False, list(accepted)
    names = {erasures.facts_user(app, user)}
    if session_id is not None:
        names.add(erasures.facts_session(app, user, session_id))
    for c in accepted:
        names |= {erasures.facts_event(app, user, c.session_id, c.event_id),
                  erasures.facts_event(app, user, None, c.event_id),
                  erasures.facts_value(app, user, c.subject, c.predicate, c.value)}  # fmt: skip
    marked = erasures.erased_after(conn, names, generation)
    if erasures.facts_user(app, user) in marked:
        return True, []
    if session_id is not None and erasures.facts_session(app, user, session_id) in marked:
        return False, []
    kept = [c for c in accepted
            if not marked & {erasures.facts_event(app, user, c.session_id, c.event_id),
                             erasures.facts_event(app, user, None, c.event_id),
                             erasures.facts_value(app, user, c.subject, c.predicate, c.value)}]  # fmt: skip
    return False, kept


__all__ = ["ERASED_DURING_INGEST", "plan_generation", "recheck"]
