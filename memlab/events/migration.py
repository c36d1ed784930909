"""Moving a store from one embedding model to another: every unit re-embedded from its stored rendered text and
written beside the old rows under the new model id, resumable, leaving out what is erased meanwhile."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.progress import track

from memlab.embedding.base import Embedder
from memlab.errors import ConfigError
from memlab.events.core import check_vectors
from memlab.events.write_guard import still_stored
from memlab.storage import unit_housekeeping as housekeeping
from memlab.storage import units as sqlu
from memlab.storage.store import Store


@dataclass(frozen=True)
class MigrationReport:
    """What `migrate_embeddings` did: rows read under the old model, rows added under the new one, and its time."""

    old_model: str
    new_model: str
    rows_read: int
    rows_added: int
    seconds: float


def migrate_embeddings(
    store: Store,
    old_model: str,
    new_embedder: Embedder,
    *,
    app_name: str | None = None,
    layers: list[str] | None = None,
    batch_size: int = 512,
    progress: bool = False,
) -> MigrationReport:
    """See `EventMemory.migrate_embeddings`; every layer and user at once unless scoped to one app and some
    layers (a migration is usually rolled out app by app)."""
    started = time.perf_counter()
    old = store.model(old_model)
    new = store.register_model(new_embedder.model_id, new_embedder.dimension)
    if new.model_id == old.model_id:
        raise ConfigError(f"migrate_embeddings: the new embedder has the same model id {old.model_id!r}.")
    with store.connection() as conn:
        rows = housekeeping.units_to_migrate(conn, old.model_id, new.model_id, app_name, layers)
    added = 0
    batches = range(0, len(rows), batch_size)
    if progress:
        batches = track(batches, description=f"migrate -> {new.model_id}")
    for start in batches:
        batch = rows[start : start + batch_size]
        vectors = new_embedder.embed_documents([r[9] if r[9] is not None else r[8] for r in batch])
        check_vectors(vectors, len(batch), new.dimension, new.model_id)
        with store.transaction() as conn:
            rows_of = {id(r): (*r, new.model_id, v) for r, v in zip(batch, vectors, strict=True)}
            added += sqlu.copy_rows(conn, [rows_of[id(r)] for r in still_stored(conn, batch, old.model_id)])
    scope = set(layers) if layers is not None else set(store.vector_indexes(old.model_id))
    for layer in sorted({r[3] for r in rows} | scope):
        store.ensure_vector_index(new.model_id, layer)
    return MigrationReport(old.model_id, new.model_id, len(rows), added, time.perf_counter() - started)
