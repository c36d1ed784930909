"""`EventMemory.bulk_load`: units and their vectors given directly (benchmarks, imports), checked as sessions
are, and COPied with the model's HNSW index dropped and rebuilt once."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import numpy as np

from memlab.events.core import MemoryCore, check_vectors
from memlab.events.units import Unit
from memlab.inputs import MAX_ID_BYTES, text_problem, timestamp_problem
from memlab.storage import units as sqlu
from memlab.types import InputError


def bulk_load(core: MemoryCore, rows: Iterable[tuple[str, str, Unit, np.ndarray]], *, batch_rows: int = 5_000) -> int:
    """See `EventMemory.bulk_load`."""
    core.store.drop_vector_index(core.model.model_id, core.layer)
    added = 0
    batch: list[tuple] = []
    try:
        for app_name, user_id, unit, vector in rows:
            check_unit(core, app_name, user_id, unit)
            batch.append(sqlu.unit_row(core.scope(app_name, user_id), unit, np.asarray(vector, dtype=np.float32)))
            if len(batch) >= batch_rows:
                added += _copy_checked(core, batch)
                batch = []
        added += _copy_checked(core, batch)
    finally:
        core.store.ensure_vector_index(core.model.model_id, core.layer)
        core.store.analyze()
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


def _copy_checked(core: MemoryCore, rows: list[tuple]) -> int:
    if not rows:
        return 0
    check_vectors(np.vstack([r[-1] for r in rows]), len(rows), core.model.dimension, core.model.model_id)
    with core.store.transaction() as conn:
        return sqlu.copy_rows(conn, rows)
