"""`EventMemory.bulk_load`: units and their vectors given directly (benchmarks, imports), checked as sessions
are, and COPied with the model's HNSW index dropped and rebuilt once.

A fast path is no way around ingest's guards: a unit holding a credential is left out (the secret filter, on
its text alone and read with the session's other units of the batch, as ingest reads a session's events), and
every batch is written under its users' guard after the checks of an add's write (`write_guard.recheck_units`):
no unit holding a deleted event comes back, and a user or session forgotten while the load runs gets nothing
of it (the load's erasure generation is drawn when it starts)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime

import numpy as np

from memlab.events import filters
from memlab.events.core import MemoryCore, check_vectors
from memlab.events.units import Unit
from memlab.events.write_guard import plan_generation, recheck_units
from memlab.inputs import MAX_ID_BYTES, text_problem, timestamp_problem
from memlab.safety.clean_texts import holds_secret
from memlab.safety.redact import get_logger
from memlab.safety.split_secrets import split_secret_events
from memlab.storage import units as sqlu
from memlab.types import InputError

log = get_logger("memlab.events.memory")

_Row = tuple[sqlu.Scope, Unit, np.ndarray]


def bulk_load(core: MemoryCore, rows: Iterable[tuple[str, str, Unit, np.ndarray]], *, batch_rows: int = 5_000) -> int:
    """See `EventMemory.bulk_load`."""
    with core.store.connection() as conn:
        generation = plan_generation(conn, None)  # the rows' users are not known yet: ordered against every erasure
    core.store.drop_vector_index(core.model.model_id, core.layer)
    added = 0
    skipped: Counter[str] = Counter()
    batch: list[_Row] = []
    try:
        for app_name, user_id, unit, vector in rows:
            check_unit(core, app_name, user_id, unit)
            batch.append((core.scope(app_name, user_id), unit, np.asarray(vector, dtype=np.float32)))
            if len(batch) >= batch_rows:
                added += _write_batch(core, batch, generation, skipped)
                batch = []
        added += _write_batch(core, batch, generation, skipped)
    finally:
        core.store.ensure_vector_index(core.model.model_id, core.layer)
        core.store.analyze()
        left_out = +skipped
        if left_out:
            log.warning("bulk_load left out units: %s", ", ".join(f"{n} {why}" for why, n in sorted(left_out.items())))
    core.changed()
    return added


def check_unit(core: MemoryCore, app_name: str, user_id: str, unit: Unit) -> None:
    """The checks of `check_session`, for a unit given directly to `bulk_load`."""
    where = {"app_name": app_name, "user_id": user_id, "session_id": unit.session_id, "event_id": unit.unit_id}
    problem = (
        text_problem(app_name, "the app id", max_bytes=MAX_ID_BYTES)
        or text_problem(user_id, "the user id", max_bytes=MAX_ID_BYTES)
        or text_problem(unit.session_id, "the session id", max_bytes=MAX_ID_BYTES)
        or text_problem(unit.unit_id, "the unit id", max_bytes=2 * MAX_ID_BYTES)
        or next(
            filter(None, (text_problem(e, "an event id", max_bytes=MAX_ID_BYTES) for e in unit.event_ids)), None
        )
        or (None if unit.author is None else text_problem(unit.author, "the author", empty_ok=True))
        or text_problem(unit.body, "the body", empty_ok=True)
        or text_problem(unit.embed_text, "the unit's text", empty_ok=True, max_bytes=core.limits.text_bytes,
                        limit_name="InputLimits(text_bytes=...)")
        or timestamp_problem(unit.occurred_at, core.timestamps, datetime.now(UTC))
    )
    if problem:
        raise InputError(problem, **where)


def secret_units(units: list[Unit]) -> set[int]:
    """Indices of `units` (given directly, in any order) that ingest's secret filter refuses: a credential in a
    unit's body or embedded text, in the lines of one unit read together (a chunk's turns), or spread over units
    of one session read in time order (a password given as the reply to a question about it)."""
    found = {i for i, u in enumerate(units) if holds_secret(u.body)
             or (u.rendered is not None and holds_secret(u.rendered))
             or (len(lines := u.body.splitlines()) > 1 and split_secret_events(lines))}  # fmt: skip
    sessions: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        sessions.setdefault(u.session_id, []).append(i)
    for order in sessions.values():
        if len(order) > 1:
            order.sort(key=lambda i: units[i].occurred_at)
            found.update(order[k] for k in split_secret_events([units[i].body for i in order]))
    return found


def _write_batch(core: MemoryCore, batch: list[_Row], generation: int, skipped: Counter[str]) -> int:
    """Filter a batch as ingest filters (secrets, then tombstones and erasure markers under the users' guard in
    the write's own transaction) and COPY what is left; `skipped` counts what was left out, by reason."""
    if not batch:
        return 0
    check_vectors(np.vstack([v for _, _, v in batch]), len(batch), core.model.dimension, core.model.model_id)
    if core.scan_secrets:
        by_user: dict[tuple[str, str], list[int]] = {}
        for i, (scope, _, _) in enumerate(batch):
            by_user.setdefault((scope.app_name, scope.user_id), []).append(i)
        secret = {idx[k] for idx in by_user.values() for k in secret_units([batch[i][1] for i in idx])}
        skipped[filters.SECRET] += len(secret)
        batch = [row for i, row in enumerate(batch) if i not in secret]
    entries: dict[tuple[str, str, str], tuple[sqlu.Scope, list[Unit], list[np.ndarray]]] = {}
    for scope, unit, vector in batch:
        entry = entries.setdefault((scope.app_name, scope.user_id, unit.session_id), (scope, [], []))
        entry[1].append(unit)
        entry[2].append(vector)
    planned = [(scope, session_id, units) for (_, _, session_id), (scope, units, _) in entries.items()]
    with core.store.transaction() as conn:
        kept, erased = recheck_units(conn, planned, core.model.model_id, generation)
        skipped.update(erased)
        rows = []
        for (scope, units, vectors), left in zip(entries.values(), kept, strict=True):
            keep = {id(u) for u in left}
            rows += [sqlu.unit_row(scope, u, v) for u, v in zip(units, vectors, strict=True) if id(u) in keep]
        return sqlu.copy_rows(conn, rows)
