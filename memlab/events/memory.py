"""EventMemory: filtered session events (or chunks of them) embedded into PostgreSQL + pgvector, searched
per app and user with a distance cut-off and explicit index settings."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from memlab.embedding.base import Embedder
from memlab.errors import ConfigError, DimensionError
from memlab.events import filters
from memlab.events.units import Unit, chunk_units, event_units, layer_name
from memlab.storage import units as sqlu
from memlab.storage.store import Store
from memlab.types import Event, Hits, IngestReport, SearchSettings, Session


@dataclass(frozen=True)
class Explain:
    """The `EXPLAIN (ANALYZE, BUFFERS)` of one search and which access path PostgreSQL took."""

    plan: str
    access_path: str

    @property
    def uses_hnsw(self) -> bool:
        return self.access_path == "hnsw"


@dataclass(frozen=True)
class MigrationReport:
    old_model: str
    new_model: str
    rows_read: int
    rows_added: int
    seconds: float


def check_vectors(vectors: np.ndarray, expected_rows: int, dimension: int, model_id: str) -> None:
    """Refuse vectors of the wrong shape before anything is written."""
    if vectors.ndim != 2 or vectors.shape[0] != expected_rows or vectors.shape[1] != dimension:
        raise DimensionError(
            f"Embedder {model_id!r} returned vectors of shape {vectors.shape}, expected ({expected_rows}, "
            f"{dimension}): model {model_id!r} is registered as {dimension}-d. Nothing was written. Fix the "
            "embedder, or give a model with another dimension its own model id."
        )
    if not np.isfinite(vectors).all():
        raise DimensionError(f"Embedder {model_id!r} returned NaN or infinite values; nothing was written.")


class EventMemory:
    """Event or chunk memory over a `Store`.

    granularity="event" stores one unit per kept event; "chunk" stores windows of `chunk_size` consecutive
    kept events overlapping by `chunk_overlap`. Each granularity (and chunk shape) is its own layer: searches
    never mix them.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        granularity: str = "event",
        *,
        chunk_size: int = 4,
        chunk_overlap: int = 1,
        min_chars: int = filters.DEFAULT_MIN_CHARS,
        scan_secrets: bool = True,
        layer: str | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.granularity = granularity
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        # `layer` names a separate corpus with its own HNSW index (benchmarks use it to stay apart)
        self.layer = layer or layer_name(granularity, chunk_size, chunk_overlap)
        self.min_chars = min_chars
        self.scan_secrets = scan_secrets
        self.model = store.register_model(embedder.model_id, embedder.dimension)
        self.index_name = store.ensure_vector_index(self.model.model_id, self.layer)

    def scope(self, app_name: str, user_id: str) -> sqlu.Scope:
        if not app_name or not user_id:
            raise ConfigError("app_name and user_id are required: memory is always scoped to one user of one app.")
        return sqlu.Scope(app_name, user_id, self.layer, self.model)

    # -- ingest ---------------------------------------------------------------------------------------
    def kept_events(self, session: Session) -> tuple[list[Event], Counter[str]]:
        """The events worth remembering, and how many were skipped for which reason."""
        kept: list[Event] = []
        skipped: Counter[str] = Counter()
        for event in session.events:
            reason = filters.skip_reason(event, min_chars=self.min_chars, scan_secrets=self.scan_secrets)
            if reason is None:
                kept.append(event)
            else:
                skipped[reason] += 1
        return kept, skipped

    def units_of(self, session: Session, kept: list[Event]) -> list[Unit]:
        if self.granularity == "event":
            return event_units(session, kept)
        return chunk_units(session, kept, self.chunk_size, self.chunk_overlap)

    def add_session(self, session: Session) -> IngestReport:
        """Store the session's kept events (or chunks). Safe to call any number of times, from any thread:
        units already stored are neither embedded nor written again."""
        return self._ingest([session])

    def add_sessions(
        self, sessions: Iterable[Session], *, batch_units: int = 256, progress: bool = False
    ) -> IngestReport:
        """Add many sessions; one merged report. Sessions are written in batches of about `batch_units`
        units, so the model embeds full batches instead of one small batch per session."""
        total = IngestReport()
        items = list(sessions)
        batches: list[list[Session]] = [[]]
        size = 0
        for session in items:
            if size >= batch_units:
                batches.append([])
                size = 0
            batches[-1].append(session)
            size += len(session.events)
        if progress:
            from rich.progress import Progress

            with Progress() as bar:
                task = bar.add_task(f"ingest ({self.layer})", total=len(items))
                for batch in batches:
                    total.merge(self._ingest(batch))
                    bar.advance(task, len(batch))
            return total
        for batch in batches:
            total.merge(self._ingest(batch))
        return total

    def _ingest(self, sessions: list[Session]) -> IngestReport:
        """Filter, unit and write sessions in one transaction, embedding all new units in one call.

        Each session's key is locked first (sorted, so two writers never deadlock), then units already
        stored are left out; a chunk whose events changed (the session grew) is replaced."""
        report = IngestReport()
        planned: list[tuple[sqlu.Scope, Session, list[Unit]]] = []
        deleted = self._tombstones(sessions)
        for session in sessions:
            kept, skipped = self.kept_events(session)
            gone = [e for e in kept if (session.app_name, session.user_id, e.id) in deleted]
            if gone:
                skipped[filters.DELETED] += len(gone)
                kept = [e for e in kept if e not in gone]
            report.skipped.update(skipped)
            units = self.units_of(session, kept)
            if units:
                planned.append((self.scope(session.app_name, session.user_id), session, units))
        if not planned:
            return report
        with self.store.transaction() as conn:
            for scope, session, _ in sorted(planned, key=lambda p: (p[0].app_name, p[0].user_id, p[1].id)):
                sqlu.lock_key(
                    conn, "units", scope.app_name, scope.user_id, session.id, scope.layer, scope.model.model_id
                )
            todo: list[tuple[sqlu.Scope, Unit]] = []
            for scope, _, units in planned:
                stored = sqlu.existing_units(conn, scope, [u.unit_id for u in units])
                fresh = [u for u in units if stored.get(u.unit_id) != u.event_ids]
                report.already_stored += len(units) - len(fresh)
                stale = [u.unit_id for u in fresh if u.unit_id in stored]  # a chunk that grew since last time
                if stale:
                    report.replaced += sqlu.delete_units(conn, scope, stale)
                todo.extend((scope, u) for u in fresh)
            if not todo:
                return report
            vectors = self.embedder.embed_documents([u.body for _, u in todo])
            check_vectors(vectors, len(todo), self.model.dimension, self.model.model_id)
            report.embedded = len(todo)
            rows = [sqlu.unit_row(scope, u, v) for (scope, u), v in zip(todo, vectors, strict=True)]
            report.added = sqlu.copy_rows(conn, rows) - report.replaced
        return report

    def _tombstones(self, sessions: list[Session]) -> set[tuple[str, str, str]]:
        """(app, user, event id) of events deleted on purpose: they are never ingested again."""
        out: set[tuple[str, str, str]] = set()
        with self.store.connection() as conn:
            for (app, user), ids in _ids_by_user(sessions).items():
                out |= {(app, user, e) for e in sqlu.tombstoned(conn, app, user, ids)}
        return out

    def delete_memory(self, app_name: str, user_id: str, memory_id: str) -> int:
        """Delete one memory (a unit id or an event id) in every layer; re-ingesting it later is refused."""
        self.scope(app_name, user_id)
        with self.store.transaction() as conn:
            return sqlu.delete_memory(conn, app_name, user_id, memory_id)

    def bulk_load(self, rows: Iterable[tuple[str, str, Unit, np.ndarray]], *, batch_rows: int = 5_000) -> int:
        """Load many (app, user, unit, vector) rows fast, for benchmarks and imports.

        HNSW maintenance dominates row-by-row loading, so the model's index is dropped, rows are written
        with binary COPY in batches, and the index is rebuilt once and statistics refreshed at the end.
        Searches of this model fall back to exact scans while it runs. Returns rows added."""
        self.store.drop_vector_index(self.model.model_id, self.layer)
        added = 0
        batch: list[tuple] = []
        try:
            for app_name, user_id, unit, vector in rows:
                batch.append(sqlu.unit_row(self.scope(app_name, user_id), unit, np.asarray(vector, dtype=np.float32)))
                if len(batch) >= batch_rows:
                    added += self._copy_checked(batch)
                    batch = []
            added += self._copy_checked(batch)
        finally:
            self.store.ensure_vector_index(self.model.model_id, self.layer)
            self.store.analyze()
        return added

    def _copy_checked(self, rows: list[tuple]) -> int:
        if not rows:
            return 0
        check_vectors(np.vstack([r[-1] for r in rows]), len(rows), self.model.dimension, self.model.model_id)
        with self.store.transaction() as conn:
            return sqlu.copy_rows(conn, rows)

    # -- search ---------------------------------------------------------------------------------------
    def search(self, app_name: str, user_id: str, query: str, settings: SearchSettings | None = None) -> Hits:
        """The user's nearest units to `query`, nearest first, cut off at `settings.max_distance`."""
        return self.search_vector(app_name, user_id, self.embedder.embed_query(query), settings)

    def search_vector(
        self, app_name: str, user_id: str, vector: np.ndarray, settings: SearchSettings | None = None
    ) -> Hits:
        """`search` with a query vector already embedded (sweeps embed each question once)."""
        settings = settings or SearchSettings()
        scope = self.scope(app_name, user_id)
        vector = np.asarray(vector, dtype=np.float32)
        check_vectors(vector.reshape(1, -1), 1, self.model.dimension, self.model.model_id)
        with self.store.transaction() as conn:
            settings = self._resolve(conn, scope, settings)
            sqlu.apply_settings(conn, settings)
            plan = settings.strategy
            if settings.strategy == "planner":
                _, plan = sqlu.explain_search(conn, scope, vector, settings, analyze=False)
            found = sqlu.run_search(conn, scope, vector, settings)
        if settings.max_distance is None:
            return Hits(found, plan=plan)
        kept = [h for h in found if h.distance <= settings.max_distance]
        return Hits(kept, plan=plan, dropped_by_cutoff=len(found) - len(kept))

    @staticmethod
    def _resolve(conn, scope: sqlu.Scope, settings: SearchSettings) -> SearchSettings:
        """Turn `auto` into `exact` for users with at most `exact_below` units, else `hnsw`."""
        if settings.strategy != "auto":
            return settings
        small = sqlu.count_units(conn, scope, limit=settings.exact_below + 1) <= settings.exact_below
        return replace(settings, strategy="exact" if small else "hnsw")

    def explain(self, app_name: str, user_id: str, query: str, settings: SearchSettings | None = None) -> Explain:
        """Run the search under EXPLAIN (ANALYZE, BUFFERS) with the same settings and report the plan."""
        settings = settings or SearchSettings()
        scope = self.scope(app_name, user_id)
        vector = self.embedder.embed_query(query)
        with self.store.transaction() as conn:
            settings = self._resolve(conn, scope, settings)
            sqlu.apply_settings(conn, settings)
            text, path = sqlu.explain_search(conn, scope, vector, settings, analyze=True)
        return Explain(plan=text, access_path=path)

    def count(self, app_name: str, user_id: str) -> int:
        """How many units of this layer and model the user has."""
        with self.store.connection() as conn:
            return sqlu.count_units(conn, self.scope(app_name, user_id))

    # -- deletion, retention, migration ---------------------------------------------------------------
    def forget_user(self, app_name: str, user_id: str) -> int:
        """Delete every stored unit of the user (all layers and models); returns rows deleted."""
        self.scope(app_name, user_id)
        with self.store.transaction() as conn:
            return sqlu.delete_user(conn, app_name, user_id)

    def purge_before(self, cutoff: datetime, *, app_name: str | None = None, user_id: str | None = None) -> int:
        """Retention by age: delete units that occurred before `cutoff` (all users unless scoped)."""
        if cutoff.tzinfo is None:
            raise ConfigError("purge_before needs a timezone-aware cutoff datetime.")
        with self.store.transaction() as conn:
            return sqlu.delete_before(conn, cutoff, app_name, user_id)

    def migrate_embeddings(
        self, old_model: str, new_embedder: Embedder, *, batch_size: int = 512, progress: bool = False
    ) -> MigrationReport:
        """Re-embed every unit stored under `old_model` with `new_embedder`, from the stored body text, and
        write the new rows beside the old ones (same ids, new model id). Resumable: rows already migrated
        are skipped. Reads flip by opening an EventMemory with the new embedder; then `store.drop_model(old)`."""
        return migrate_embeddings(self.store, old_model, new_embedder, batch_size=batch_size, progress=progress)


def _ids_by_user(sessions: list[Session]) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for s in sessions:
        out.setdefault((s.app_name, s.user_id), []).extend(e.id for e in s.events)
    return out


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
        rows = sqlu.units_to_migrate(conn, old.model_id, new.model_id, app_name, layers)
    added = 0
    batches = range(0, len(rows), batch_size)
    if progress:
        from rich.progress import track

        batches = track(batches, description=f"migrate -> {new.model_id}")
    for start in batches:
        batch = rows[start : start + batch_size]
        vectors = new_embedder.embed_documents([r[8] for r in batch])
        check_vectors(vectors, len(batch), new.dimension, new.model_id)
        with store.transaction() as conn:
            added += sqlu.copy_rows(conn, [(*r, new.model_id, v) for r, v in zip(batch, vectors, strict=True)])
    scope = set(layers) if layers is not None else set(store.vector_indexes(old.model_id))
    for layer in sorted({r[3] for r in rows} | scope):
        store.ensure_vector_index(new.model_id, layer)
    return MigrationReport(old.model_id, new.model_id, len(rows), added, time.perf_counter() - started)
