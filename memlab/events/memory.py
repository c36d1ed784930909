"""EventMemory: filtered session events (or chunks of them) embedded into PostgreSQL + pgvector, searched
per app and user with a distance cut-off and explicit index settings.

Identity: an event is (app, user, session, event id). ADK event ids are unique within a session, not across a
user's sessions, so the same id in two sessions is two memories (both stored); the same id twice within one
session is stored once and the repeat is counted as skipped (`duplicate_id`).

Input is checked before anything is embedded or written, by the checks fact memory and the ADK services share
(`memlab.inputs`): ids must be non-empty strings of at most `MAX_ID_BYTES` UTF-8 bytes, no text may hold a NUL
character or a lone surrogate (PostgreSQL cannot store either), a unit's text (an event's, or a chunk's joined
turns) may have at most `InputLimits.text_bytes` (1,000,000 by default) and a query `query_bytes`, timestamps
must be timezone-aware and inside the memory's `TimestampWindow` (1970 .. now + 1 day by default). A malformed
session is refused whole with an `InputError` naming the session, event and limit, so nothing half-written is
left behind; `add_sessions` records it in `IngestReport.failed` and writes the others. Every read and erasure
checks its ids the same way.

Erasure (`forget_user`, `forget_session`, `delete_memory`, `purge_before`) also removes the embedding-cache
entries of the texts it deletes, and with `vacuum=` VACUUMs (levels: memlab.storage.disk_erasure). An erasure wins
against an add in flight (`memlab.events.write_guard`): the write checks tombstones and erasure markers again
inside its transaction, so nothing erased is stored afterwards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from datetime import datetime

import numpy as np

import memlab.events.bulk as bulk
import memlab.events.filters as filters
from memlab.embedding.base import Embedder
from memlab.embedding.cache import EmbeddingCache
from memlab.errors import ConfigError
from memlab.events.answerability import AnswerabilityGate
from memlab.events.core import MemoryCore
from memlab.events.forgetting import Forgetting
from memlab.events.ingest import DUPLICATE_ID, SKIP_REASONS, Ingest, record_failure
from memlab.events.migration import MigrationReport, migrate_embeddings
from memlab.events.query_log import QueryLog, QueryRecorder, check_context, event_hits
from memlab.events.renderings import check_rendering, rendered_layer
from memlab.events.search import GATE_COUNT_LIMIT, Explain, Search
from memlab.events.units import Unit, layer_name
from memlab.inputs import DEFAULT_LIMITS, InputLimits
from memlab.storage import units as sqlu
from memlab.storage.store import Store
from memlab.types import (
    DeletionReport,
    Event,
    FactKeys,
    Hits,
    IngestReport,
    InputError,
    SearchSettings,
    Session,
    TimestampWindow,
)

__all__ = ["DUPLICATE_ID", "GATE_COUNT_LIMIT", "SKIP_REASONS", "EventMemory", "Explain", "MigrationReport",
           "migrate_embeddings"]  # fmt: skip


class EventMemory:
    """Event or chunk memory over a `Store`.

    granularity="event" stores one unit per kept event; "chunk" stores windows of `chunk_size` consecutive
    kept events overlapping by `chunk_overlap`. Each granularity (and chunk shape) is its own layer: searches
    never mix them. The work is done by three collaborators sharing one `MemoryCore`: `Ingest` (write path),
    `Search` (read path) and `Forgetting` (erasure); this class is their one public face.
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
        timestamps: TimestampWindow | None = None,
        rendering: str = "text",
        fact_keys: FactKeys | None = None,
        limits: InputLimits | None = None,
        query_log: QueryLog | None = None,
    ) -> None:
        # `query_log`: QueryLog(enabled=True) records the queries `search` and `search_fused` serve (off by default).
        # `layer` names a separate corpus with its own HNSW index (benchmarks use it to stay apart).
        # The rendering (what is embedded) and fact keys are part of the layer, so they coexist in one table.
        rendering = check_rendering(rendering)
        if fact_keys is not None and not callable(getattr(fact_keys, "fact_lines", None)):
            raise ConfigError("fact_keys must be a memlab.types.FactKeys (e.g. memlab.facts.ExtractorKeys(extractor)), "
                              f"got {type(fact_keys).__name__}.")  # fmt: skip
        if timestamps is not None and not isinstance(timestamps, TimestampWindow):
            raise ConfigError(f"timestamps must be a memlab.TimestampWindow, got {type(timestamps).__name__}.")
        if limits is not None and not isinstance(limits, InputLimits):
            raise ConfigError(f"limits must be a memlab.inputs.InputLimits, got {type(limits).__name__}.")
        layer = layer or rendered_layer(
            layer_name(granularity, chunk_size, chunk_overlap), rendering, getattr(fact_keys, "name", None)
        )
        model = store.register_model(embedder.model_id, embedder.dimension)
        self._core = MemoryCore(
            store=store, embedder=embedder, model=model, layer=layer, granularity=granularity, chunk_size=chunk_size,
            chunk_overlap=chunk_overlap, min_chars=min_chars, scan_secrets=scan_secrets,
            timestamps=timestamps or TimestampWindow(),  # the event times accepted on ingest
            limits=limits or DEFAULT_LIMITS,  # the longest texts and queries accepted
            rendering=rendering, fact_keys=fact_keys,
        )  # fmt: skip
        # The layer's shared HNSW index is built once the layer needs one (MemoryCore.index_if_due: more units
        # than `auto` scans exactly, or a search that walks it), not while every search of the layer scans exactly.
        self.index_name = store.register_layer(model.model_id, layer)
        self._core.index_if_due()
        self._ingest = Ingest(self._core)
        self._search = Search(self._core)
        self._forgetting = Forgetting(self._core)
        self._queries = QueryRecorder(store, query_log, "events", layer)

    # -- settings, read-only ----------------------------------------------------------------------------
    store = property(lambda self: self._core.store)
    embedder = property(lambda self: self._core.embedder)
    model = property(lambda self: self._core.model)
    layer = property(lambda self: self._core.layer)
    granularity = property(lambda self: self._core.granularity)
    chunk_size = property(lambda self: self._core.chunk_size)
    chunk_overlap = property(lambda self: self._core.chunk_overlap)
    min_chars = property(lambda self: self._core.min_chars)
    scan_secrets = property(lambda self: self._core.scan_secrets)
    timestamps = property(lambda self: self._core.timestamps)
    limits = property(lambda self: self._core.limits)
    rendering = property(lambda self: self._core.rendering)
    fact_keys = property(lambda self: self._core.fact_keys)
    query_log = property(lambda self: self._queries)  # its settings, and counts of queries recorded and skipped

    def scope(self, app_name: str, user_id: str) -> sqlu.Scope:
        return self._core.scope(app_name, user_id)

    # -- ingest -----------------------------------------------------------------------------------------
    def kept_events(self, session: Session, *, known: frozenset[str] = frozenset()) -> tuple[list[Event], Counter]:
        """The events worth remembering, and how many were skipped for which reason. An event whose id was
        already kept earlier in the session is skipped as `duplicate_id` (the first one is stored). Events
        whose ids are in `known` (already stored, so already filtered once) skip the filters. Events that form
        a secret only together (a private key's BEGIN line, body and END line in three events) are skipped as
        `secret` too (memlab.safety.split_secrets)."""
        return self._ingest.kept_events(session, known=known)

    def units_of(self, session: Session, kept: list[Event]) -> list[Unit]:
        """The session's units, each with the text its rendering (and fact keys) embed."""
        return self._ingest.units_of(session, kept)

    def check(self, session: Session) -> None:
        """Raise `InputError` (naming the session and event) if the session cannot be stored as given, before
        anything is embedded: a chunk (or a rendering) longer than `limits.text_bytes` too, though each of its
        events fits."""
        self._ingest.check(session)

    def add_session(self, session: Session) -> IngestReport:
        """Store the session's kept events (or chunks). Safe to call any number of times, from any thread:
        units already stored are neither embedded nor written again. A malformed session raises `InputError`
        (a `ConfigError`) naming the session and event, and nothing of it is written."""
        self.check(session)
        report = self._ingest.write_sessions([session])
        self._ingest.index_if_due(report)  # the write that takes the layer past `auto`'s exact scans builds it
        return report

    def add_sessions(
        self, sessions: Iterable[Session], *, batch_units: int = 1024, progress: bool = False
    ) -> IngestReport:
        """Add many sessions; one merged report. Sessions are written in batches of about `batch_units`
        units, each batch filtered, embedded (its texts in one length-sorted pass) and written in one transaction,
        so the model embeds full, length-sorted batches instead of one small batch per session (`memlab bench`
        measures the sizes: on long turns 1,024 runs faster than 64 or 256). Batches run one after another on the
        calling thread; a session is never split across two.

        Two write paths (`report.path`, and `path_reason` says why: memlab.events.ingest.PATH_*). `batched`: the
        units already stored are looked up and left out, the others merged into the table, the layer's HNSW index
        (if it has one) kept up row by row. `copy-first-load`, a bulk first load: a call of at least one batch of
        units, for users holding nothing in this layer (an import of old conversations), looks nothing stored up
        and COPies each batch straight into the table. Into a layer holding no more units than the load brings (a
        new or young one) the layer's HNSW index is dropped for the load and built once after it, before the call
        returns, if the layer then needs one (`timings["index_build"]`; searches of the layer scan exactly
        meanwhile, and the build holds other writers of the table off); a layer already holding more keeps its
        index and takes the rows into it as they come. The HNSW index is shared by every user of the layer; a layer
        small enough for `auto` to scan every user exactly (at most the policy's `exact_below` units) has none
        until a search asks to walk it (`build_index`), and the write that takes a layer past `exact_below` builds
        it. Either way the memory is searchable on return.

        One bad session never blocks the others: a malformed session (or one PostgreSQL refuses) is left out
        whole and listed in `report.failed` with the reason; every other session is written.

        The call is planned once, when it starts: a `forget_user` or `forget_session` that commits while it runs
        wins over every batch of it, planned before or after the erasure (`skipped["erased_during_ingest"]`)."""
        total = IngestReport()
        generation = self._ingest.call_generation(sessions)  # erasures committed from here on win (write_guard)
        items: list[Session] = []
        for session in sessions:
            try:
                self.check(session)
            except InputError as exc:
                record_failure(total, session, exc)
            else:
                items.append(session)
        self._ingest.add_checked(items, total, batch_units=batch_units, progress=progress, generation=generation)
        return total

    def bulk_load(self, rows: Iterable[tuple[str, str, Unit, np.ndarray]], *, batch_rows: int = 5_000) -> int:
        """Load many (app, user, unit, vector) rows fast, for benchmarks and imports.

        HNSW maintenance dominates row-by-row loading, so the model's index is dropped, rows are written
        with binary COPY in batches, and the index is rebuilt once and statistics refreshed at the end.
        Searches of this model fall back to exact scans while it runs. Returns rows added.

        The rows pass ingest's guards (memlab.events.bulk): a unit holding a credential (with `scan_secrets`), or
        an event deleted with `delete_memory` (a tombstone), is left out, and so is every row of a user or session
        forgotten while the load runs; the counts left out are logged."""
        return bulk.bulk_load(self._core, rows, batch_rows=batch_rows)

    # -- search -----------------------------------------------------------------------------------------
    def search(
        self,
        app_name: str,
        user_id: str,
        query: str,
        settings: SearchSettings | None = None,
        *,
        asked_at: datetime | None = None,
        gate: AnswerabilityGate | None = None,
        context: Sequence[str] = (),
    ) -> Hits:
        """The user's best units for `query`, best first, cut off at `settings.max_distance` (see
        `SearchSettings` for the vector, lexical and hybrid modes and time handling; `asked_at`, the moment
        the question is asked, lets time phrases in it count). With an answerability `gate` (fitted by the
        workbench's retrieval sweep, `AnswerabilityGate.load("answerability.json")`) a question the gate
        judges unanswerable gets no hits (`dropped_by_cutoff` counts them). The query is embedded without
        being written to the embedding cache (it is the user's data too). With recording on (`query_log=`) the
        query is recorded after it was served, unless it holds a credential, alone or read with `context` (the
        turns said just before it, oldest first: the agent's question it may answer) or with the user's previous
        logged query, as ingest reads a turn with the turns before it; the context is never stored."""
        context = check_context(context, app_name, user_id)
        generation = self._queries.begin(app_name, user_id)
        hits = self._search.search(app_name, user_id, query, settings, asked_at=asked_at, gate=gate)
        self._record(app_name, user_id, query, asked_at, settings, hits, generation, gate=gate is not None,
                     context=context)  # fmt: skip
        return hits

    def search_fused(
        self,
        app_name: str,
        user_id: str,
        query: str,
        vector: np.ndarray,
        settings: SearchSettings,
        *,
        asked_at: datetime | None = None,
        context: Sequence[str] = (),
    ) -> Hits:
        """Lexical, hybrid, time-aware, author-preferring or per-session-capped search with the query's text and
        its vector already embedded: each list `settings.candidates` deep (the vector list ordered with the
        preferred author's margin), fused by reciprocal rank, re-ranked by the
        question's time window, spread by the per-session cap, then cut to `top_k` and `max_distance`. The
        query text is used as given (`search` renders it first). Recorded like `search` when recording is on."""
        context = check_context(context, app_name, user_id)
        generation = self._queries.begin(app_name, user_id)
        hits = self._search.search_fused(app_name, user_id, query, vector, settings, asked_at=asked_at)
        self._record(app_name, user_id, query, asked_at, settings, hits, generation, context=context)
        return hits

    def _record(self, app_name: str, user_id: str, query: str, asked_at: datetime | None,
                settings: SearchSettings | None, hits: Hits, generation: int | None, *,
                gate: bool = False, context: Sequence[str] = ()) -> None:  # fmt: skip
        """Record a served query (a no-op unless recording is on; never raises). A vector-only search
        (`search_vector`, `explain*`) has no text to record and is never recorded."""
        if not self._queries.enabled:
            return
        scope = self._core.scope(app_name, user_id)
        self._queries.record(app_name, user_id, query, asked_at, {**asdict(settings or SearchSettings()), "gate": gate},
                             event_hits(hits), lambda conn: self._core.scope_facts(conn, scope).units,
                             generation, context)  # fmt: skip

    def search_vector(
        self, app_name: str, user_id: str, vector: np.ndarray, settings: SearchSettings | None = None
    ) -> Hits:
        """`search` with a query vector already embedded (sweeps embed each question once)."""
        return self._search.search_vector(app_name, user_id, vector, settings)

    def explain(self, app_name: str, user_id: str, query: str, settings: SearchSettings | None = None) -> Explain:
        """Run the search under EXPLAIN (ANALYZE, BUFFERS) with the same settings and report the plan."""
        return self._search.explain(app_name, user_id, query, settings)

    def explain_vector(
        self, app_name: str, user_id: str, vector: np.ndarray, settings: SearchSettings | None = None
    ) -> Explain:
        """`explain` with a query vector already embedded (the workbench's sweeps and bench read the plan and
        the rows the scope filter removed of the very search they time)."""
        return self._search.explain_vector(app_name, user_id, vector, settings)

    def build_index(self) -> None:
        """Build the layer's shared HNSW index now if it is missing. memlab builds it by itself once the layer holds
        more units than `auto` scans exactly, or on the first search that walks it (a fixed `hnsw` or `planner`
        strategy); call this first where that search's time counts (a latency measurement, a sweep of
        `ef_search`). A read-only store builds nothing."""
        self._core.ensure_index()

    def maintain(self, app_name: str | None = None) -> list[str]:
        """Build a per-tenant partial HNSW index for every user of this layer and model (of one app, or all)
        holding at least the policy's `tenant_index_above` units, so `auto` serves them from a graph dense in
        their own rows. Run it after large loads (or on a schedule); returns the indexes created. With a
        `query_log`, it also deletes logged queries older than its retention (`purge_queries`)."""
        created = self._search.maintain(app_name)
        self.purge_queries(app_name=app_name)
        return created

    def purge_queries(self, *, now: datetime | None = None, app_name: str | None = None) -> int:
        """Delete logged queries (of every user, or of one app) recorded more than this memory's
        `query_log.retention` before `now`; nothing when the memory has no `query_log`. Returns rows deleted."""
        return self._queries.purge(now=now, app_name=app_name)

    def count(self, app_name: str, user_id: str) -> int:
        """How many units of this layer and model the user has (the count the triggers keep: no scan)."""
        return self._search.count(app_name, user_id)

    # -- erasure, retention, migration ------------------------------------------------------------------
    def caches(self) -> list[EmbeddingCache]:
        """The embedding caches erasure clears: the embedder's own (through any wrapping) and every shared
        cache this process opened."""
        return self._core.caches()

    def delete_memory(
        self, app_name: str, user_id: str, memory_id: str, *, session_id: str | None = None, vacuum: bool | str = False
    ) -> int:
        """Delete one memory (a unit id or an event id) in every layer and model; re-ingesting it later is
        refused. An event id names an event in one session: pass `session_id` to delete only that session's
        event, else the id is deleted (and refused later) in every session of the user. The cached vectors of
        the deleted texts are dropped; `vacuum=True` (or "full") VACUUMs the tables afterwards. An add of the
        memory in flight (embedding when this runs) leaves it out and counts it in `skipped["deleted"]`: a
        deleted memory never comes back. Returns units deleted."""
        return self._forgetting.delete_memory(app_name, user_id, memory_id, session_id=session_id, vacuum=vacuum)

    def forget_session(
        self, app_name: str, user_id: str, session_id: str, *, vacuum: bool | str = False
    ) -> DeletionReport:
        """Delete every unit of one session stored with this memory's model (all layers), the session's
        tombstones once no unit of it is left in any model, and the cached vectors of the deleted texts;
        `vacuum=True` (or "full") VACUUMs the tables afterwards. An add of the session planned before this call
        (embedding when it runs) writes nothing of it (`skipped["erased_during_ingest"]`); one that starts
        after it stores the session again."""
        return self._forgetting.forget_session(app_name, user_id, session_id, vacuum=vacuum)

    def forget_user(self, app_name: str, user_id: str, *, vacuum: bool | str = False) -> int:
        """Delete every stored unit of the user (all layers and models), the user's tombstones and per-tenant
        indexes, and the cached vectors of the deleted texts. `vacuum` is the erasure level, run afterwards on
        every table holding users' rows (both memories': see memlab.storage.disk_erasure): True runs VACUUM
        (ANALYZE) and compacts the cache file, its bytes may stay on disk; "full" runs VACUUM FULL (exclusive
        locks) so no table or index file holds the deleted bytes; "wal" also purges them from the WAL.
        Once it returns, no unit of an add planned before it is stored: such an add (embedding meanwhile)
        writes nothing of the user and counts those events in `skipped["erased_during_ingest"]`; an add that
        starts after it stores the user afresh. Returns units deleted."""
        return self._forgetting.forget_user(app_name, user_id, vacuum=vacuum)

    def purge_before(
        self, cutoff: datetime, *, app_name: str | None = None, user_id: str | None = None, vacuum: bool | str = False
    ) -> int:
        """Retention by age: delete units that occurred before `cutoff` (all users unless scoped), and the
        cached vectors of their texts; returns units deleted."""
        return self._forgetting.purge_before(cutoff, app_name=app_name, user_id=user_id, vacuum=vacuum)

    def migrate_embeddings(
        self, old_model: str, new_embedder: Embedder, *, batch_size: int = 512, progress: bool = False
    ) -> MigrationReport:
        """Re-embed every unit stored under `old_model` with `new_embedder`, from the stored rendered text, and
        write the new rows beside the old ones (same ids, new model id). Resumable: rows already migrated
        are skipped, and so are units erased while their batch was being embedded. Reads flip by opening an
    EventMemory with the new embedder; then `store.drop_model(old)`."""
        return migrate_embeddings(self.store, old_model, new_embedder, batch_size=batch_size, progress=progress)
