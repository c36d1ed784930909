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

import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np
import psycopg

from memlab.embedding.base import Embedder
from memlab.embedding.cache import EmbeddingCache, caches_of, embed_query_transient, forget_transient, text_key
from memlab.errors import ConfigError, DimensionError
from memlab.events import filters
from memlab.events.answerability import AnswerabilityGate
from memlab.events.fusion import apply_time, cap_per_session, fuse, prefer_author
from memlab.events.renderings import check_rendering, render_query, render_units, rendered_layer
from memlab.events.split_secrets import split_secret_events
from memlab.events.units import Unit, chunk_units, event_units, layer_name
from memlab.events.write_guard import ERASED_DURING_INGEST, erasing, plan_generation, recheck, still_stored
from memlab.inputs import (
    DEFAULT_LIMITS,
    MAX_ID_BYTES,
    InputLimits,
    check_ids,
    check_session,
    check_settings,
    check_text,
    text_problem,
    timestamp_problem,
)
from memlab.redact import get_logger
from memlab.storage import disk_erasure, erasures
from memlab.storage import unit_housekeeping as housekeeping
from memlab.storage import units as sqlu
from memlab.storage.store import Store
from memlab.types import (
    AutoPolicy,
    DeletionReport,
    Event,
    Hits,
    IngestReport,
    InputError,
    SearchSettings,
    Session,
    SessionFailure,
    Strategy,
    TimestampWindow,
)

if TYPE_CHECKING:
    from memlab.facts.extractors.base import Extractor

log = get_logger(__name__)  # redacts secrets in its records (memlab.redact)

GATE_COUNT_LIMIT = 1_000_000  # the gate reads log(memory size): counting further changes nothing it can see
# `auto` reads a user's unit count and tenant index (one round trip) to pick a strategy; it keeps what it read
# this long, so a burst of searches pays that trip once. Writes and deletes through this EventMemory drop it at
# once; another process's writes are seen within this many seconds (a stale count only picks a slower or
# faster plan for that while, never other users' rows or wrong ones).
STRATEGY_FACTS_SECONDS = 5.0
_STRATEGY_FACTS_MAX = 10_000  # users remembered at most; beyond that the memory starts again
DUPLICATE_ID = "duplicate_id"  # an event id seen earlier in the same session: stored once, the repeat counted
SKIP_REASONS = (*filters.SKIP_REASONS, DUPLICATE_ID, ERASED_DURING_INGEST)  # every reason an event is skipped
# What PostgreSQL (or psycopg) says about data it cannot take: the session is at fault, not the server.
_REFUSED = (psycopg.DataError, psycopg.errors.ProgramLimitExceeded)


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


def _holds(stored: tuple[str, ...] | None, wanted: tuple[str, ...]) -> bool:
    """Whether a stored unit with event ids `stored` already covers `wanted`: the same events, or a longer run
    of the session that starts with them."""
    return stored is not None and stored[: len(wanted)] == wanted


class IngestAborted(Exception):
    """A queued batch dropped because an earlier one failed (never seen by callers: the first error is)."""


@dataclass
class _Plan:
    """A batch of sessions filtered and cut into units, with the texts that may need embedding."""

    report: IngestReport
    sessions: list[tuple[sqlu.Scope, Session, list[Unit]]] = field(default_factory=list)
    texts: set[str] = field(default_factory=set)
    generation: int | None = None  # erasures marked after it are left out at write time (write_guard)


@dataclass
class _Vectors:
    by_text: dict[str, np.ndarray]
    seconds: float


class _IngestProgress:
    """One rich display of an ingest: texts embedded (advanced per chunk of the model's work, so it moves
    smoothly) and events written (advanced per batch). Totals grow as batches are filtered."""

    def __init__(self, layer: str, events: int) -> None:
        from rich.progress import Progress

        self._bar = Progress(transient=False)
        self._bar.start()
        self._embed = self._bar.add_task(f"embed ({layer})", total=0)
        self._write = self._bar.add_task(f"write ({layer})", total=max(events, 1))
        self._texts = 0

    def planned(self, texts: int) -> None:
        self._texts += texts
        self._bar.update(self._embed, total=self._texts)

    def embedded(self, texts: int) -> None:
        self._bar.advance(self._embed, texts)

    def advance(self, events: int) -> None:
        self._bar.advance(self._write, events)

    def close(self) -> None:
        self._bar.stop()


EMBED_CHUNK = 256  # texts per call to the model within a batch: progress moves per chunk, padding stays minimal
FIRST_BATCH_SHARE = 8  # add_sessions' first and last batches hold about 1/8 of batch_units (batch_sessions)


def batch_sessions(sessions: Sequence[Session], batch_units: int) -> list[list[Session]]:
    """Group sessions, in order, into batches of about `batch_units` events. A job of more than one batch gets
    small batches at both ends: nothing overlaps the first batch's filtering and secret scan (the model has
    nothing to embed yet) or the last batch's write (the model is done), so the first batch holds about
    1/FIRST_BATCH_SHARE of `batch_units` and the last stretch of at most `batch_units` is halved down to that
    size. A job of one batch stays whole: split, its two halves' extra round trips and smaller model calls
    cost more than the overlap saves (fixtures, 162 short texts: median ratio 0.79 split vs 1.0 whole)."""
    remaining = sum(len(s.events) for s in sessions)
    small = max(1, batch_units // FIRST_BATCH_SHARE) if remaining > batch_units else batch_units
    batches: list[list[Session]] = [[]]
    size, limit = 0, small
    for session in sessions:
        if batches[-1] and size >= limit:
            batches.append([])
            size = 0
            limit = batch_units if remaining > batch_units else max(small, remaining // 2)
        batches[-1].append(session)
        size += len(session.events)
        remaining -= len(session.events)
    return batches


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
        timestamps: TimestampWindow | None = None,
        rendering: str = "text",
        fact_keys: Extractor | None = None,
        limits: InputLimits | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.granularity = granularity
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        # `layer` names a separate corpus with its own HNSW index (benchmarks use it to stay apart)
        # The rendering (what is embedded) and fact keys are part of the layer, so they coexist in one table.
        self.rendering = check_rendering(rendering)
        self.fact_keys = fact_keys
        self.layer = layer or rendered_layer(
            layer_name(granularity, chunk_size, chunk_overlap), rendering, getattr(fact_keys, "name", None)
        )
        self.min_chars = min_chars
        self.scan_secrets = scan_secrets
        if timestamps is not None and not isinstance(timestamps, TimestampWindow):
            raise ConfigError(f"timestamps must be a memlab.TimestampWindow, got {type(timestamps).__name__}.")
        self.timestamps = timestamps or TimestampWindow()  # the event times accepted on ingest
        if limits is not None and not isinstance(limits, InputLimits):
            raise ConfigError(f"limits must be a memlab.inputs.InputLimits, got {type(limits).__name__}.")
        self.limits = limits or DEFAULT_LIMITS  # the longest texts and queries accepted
        self.model = store.register_model(embedder.model_id, embedder.dimension)
        self.index_name = store.ensure_vector_index(self.model.model_id, self.layer)
        self._strategy_facts: dict[tuple[str, str], tuple[float, sqlu.ScopeFacts]] = {}

    def scope(self, app_name: str, user_id: str) -> sqlu.Scope:
        check_ids(app_name, user_id)  # memory is always scoped to one user of one app
        return sqlu.Scope(app_name, user_id, self.layer, self.model)

    # -- ingest ---------------------------------------------------------------------------------------
    def kept_events(
        self, session: Session, *, known: frozenset[str] = frozenset()
    ) -> tuple[list[Event], Counter[str]]:
        """The events worth remembering, and how many were skipped for which reason. An event whose id was
        already kept earlier in the session is skipped as `duplicate_id` (the first one is stored). Events
        whose ids are in `known` (already stored, so already filtered once) skip the filters. Events that form
        a secret only together (a private key's BEGIN line, body and END line in three events) are skipped as
        `secret` too (memlab.events.split_secrets)."""
        kept: list[Event] = []
        seen: set[str] = set()
        skipped: Counter[str] = Counter()
        split = split_secret_events([e.text or "" for e in session.events]) if self.scan_secrets else set()
        for at, event in enumerate(session.events):
            reason = (
                None
                if event.id in known and event.id not in seen
                else filters.skip_reason(event, min_chars=self.min_chars, scan_secrets=self.scan_secrets)
            )
            if reason is None and at in split and event.id not in known:
                reason = filters.SECRET
            if reason is None and event.id in seen:
                reason = DUPLICATE_ID
            if reason is None:
                kept.append(event)
                seen.add(event.id)
            else:
                skipped[reason] += 1
        return kept, skipped

    def units_of(self, session: Session, kept: list[Event]) -> list[Unit]:
        """The session's units, each with the text its rendering (and fact keys) embed."""
        if self.granularity == "event":
            units = event_units(session, kept)
        else:
            units = chunk_units(session, kept, self.chunk_size, self.chunk_overlap)
        facts = self._fact_lines(session, kept) if self.fact_keys is not None else None
        if self.rendering == "text" and not facts:
            return units
        return render_units(self.rendering, units, kept, facts, chunk=self.granularity != "event")

    def _fact_lines(self, session: Session, kept: list[Event]) -> dict[str, list[str]]:
        """event id -> 'subject predicate: value' of every fact the fact-key extractor reads from it."""
        from memlab.facts.registry import default_registry  # fact memory builds on event memory, not back

        assert self.fact_keys is not None
        found: dict[str, list[str]] = {}
        for c in self.fact_keys.extract(kept, session_id=session.id, registry=default_registry()):
            value = f"not {c.value}" if c.negated else c.value
            found.setdefault(c.event_id or "", []).append(f"{c.subject} {c.predicate.replace('_', ' ')}: {value}")
        return found

    def check(self, session: Session) -> None:
        """Raise `InputError` (naming the session and event) if the session cannot be stored as given, before
        anything is embedded: a chunk (or a rendering) longer than `limits.text_bytes` too, though each of its
        events fits."""
        check_session(session, self.timestamps, limits=self.limits)
        limit = self.limits.text_bytes
        # Cheap bound first: a unit holds at most the whole session's turns (plus a rendering's few words each).
        if sum(len((e.text or "").encode()) + len(e.author.encode()) + 64 for e in session.events) <= limit:
            return
        if self.granularity == "event" and self.rendering == "text" and self.fact_keys is None:
            return  # a unit is its event's text, checked above
        kept, _ = self.kept_events(session)
        units = event_units(session, kept) if self.granularity == "event" else chunk_units(
            session, kept, self.chunk_size, self.chunk_overlap)  # fmt: skip
        if self.rendering != "text":
            units = render_units(self.rendering, units, kept, None, chunk=self.granularity != "event")
        for unit in units:
            what = "the chunk's joined text" if self.granularity != "event" else "the rendered text"
            problem = text_problem(unit.embed_text, what, empty_ok=True, max_bytes=limit,
                                   limit_name="InputLimits(text_bytes=...)")  # fmt: skip
            if problem:
                raise InputError(problem, app_name=session.app_name, user_id=session.user_id, session_id=session.id,
                                 event_id=unit.event_ids[0] if unit.event_ids else None)  # fmt: skip

    def add_session(self, session: Session) -> IngestReport:
        """Store the session's kept events (or chunks). Safe to call any number of times, from any thread:
        units already stored are neither embedded nor written again. A malformed session raises `InputError`
        (a `ConfigError`) naming the session and event, and nothing of it is written."""
        self.check(session)
        return self._ingest([session])

    def add_sessions(
        self, sessions: Iterable[Session], *, batch_units: int = 1024, progress: bool = False
    ) -> IngestReport:
        """Add many sessions; one merged report. Sessions are written in batches of about `batch_units`
        units, so the model embeds full, length-sorted batches instead of one small batch per session
        (`memlab bench` measures the sizes: on long turns 1,024 ran 1.4x faster than 64 and 1.1x faster than 256).
        In a job of several batches the first and last are small (`batch_sessions`): the model starts sooner
        and the last write is short.

        The work is pipelined: while one batch is written, the next is embedded and the one after that is
        filtered, so the model (which releases the GIL) rarely waits for PostgreSQL or the secret scan.

        One bad session never blocks the others: a malformed session (or one PostgreSQL refuses) is left out
        whole and listed in `report.failed` with the reason; every other session is written."""
        total = IngestReport()
        items: list[Session] = []
        for session in sessions:
            try:
                self.check(session)
            except InputError as exc:
                self._failed(total, session, exc)
            else:
                items.append(session)
        batches = batch_sessions(items, batch_units)
        events = sum(len(s.events) for s in items)
        bar = _IngestProgress(self.layer, events) if progress else None
        stop = threading.Event()  # set when a batch fails: queued batches then touch nothing
        try:
            with ThreadPoolExecutor(1, "memlab-embed") as embedding, ThreadPoolExecutor(1, "memlab-write") as writing:
                in_flight: list[tuple[list[Session], Future[IngestReport]]] = []
                try:
                    for batch in batches:
                        plan = self._prepare(batch, stop)
                        if bar is not None:
                            bar.planned(len(plan.texts))
                        vectors = embedding.submit(self._embed_plan, plan, stop, bar)
                        in_flight.append((batch, writing.submit(self._write_isolated, batch, plan, vectors, stop)))
                        while len(in_flight) > 2:  # at most two batches embedded ahead of the writer
                            self._collect(total, *in_flight.pop(0), bar)
                    while in_flight:
                        self._collect(total, *in_flight.pop(0), bar)
                except BaseException as exc:
                    stop.set()  # the batches still queued are dropped: nothing is half-written, nothing retried
                    for _, done in in_flight:
                        done.cancel()
                    if isinstance(exc, IngestAborted):  # raise the failure that stopped the pipeline instead
                        for _, done in in_flight:
                            first = None if done.cancelled() else done.exception()
                            if first is not None and not isinstance(first, IngestAborted):
                                raise first from None
                    raise
        finally:
            if bar is not None:
                bar.close()
        return total

    @staticmethod
    def _collect(total: IngestReport, batch: list[Session], done: Future[IngestReport], bar) -> None:
        total.merge(done.result())
        if bar is not None:
            bar.advance(sum(len(s.events) for s in batch))

    def _write_isolated(
        self, batch: list[Session], plan: _Plan, vectors: Future[_Vectors], stop: threading.Event
    ) -> IngestReport:
        """`_write` of a batch; if PostgreSQL refuses the batch's data, each session is ingested again alone so
        only the sessions it refuses fail. Does nothing once an earlier batch failed (`stop`), and stops the
        pipeline when it fails itself, so no later call reaches a server that just went away."""
        try:
            embedded = None if stop.is_set() else vectors.result()
            if embedded is None or stop.is_set():
                raise IngestAborted("an earlier batch failed")
            return self._write(plan, embedded)
        except _REFUSED:
            if len(batch) == 1:
                stop.set()
                raise
        except BaseException:
            stop.set()
            raise
        report = IngestReport()
        for session in batch:
            try:
                report.merge(self._ingest([session], plan.generation))
            except _REFUSED as exc:
                self._failed(report, session, exc)
        return report

    @staticmethod
    def _failed(report: IngestReport, session: object, exc: Exception) -> None:
        ids = [getattr(session, name, None) for name in ("app_name", "user_id", "id")]
        failure = SessionFailure(*(v if isinstance(v, str) else repr(v) for v in ids), reason=str(exc).strip())
        log.warning("add_sessions left out session %r: %s", failure.session_id, failure.reason)
        report.failed.append(failure)

    def _ingest(self, sessions: list[Session], generation: int | None = None) -> IngestReport:
        """Filter, unit, embed and write sessions: the three stages of `add_sessions`, one after the other."""
        plan = self._prepare(sessions, generation=generation)
        return self._write(plan, self._embed_plan(plan))

    def _prepare(
        self, sessions: list[Session], stop: threading.Event | None = None, *, generation: int | None = None
    ) -> _Plan:
        """Filter the sessions' events and build their units; look up (without locking) which are stored.

        Events already stored in this layer are not filtered again (a re-ingest costs lookups, not secret
        scans): an event is stored only after it passed the filters, and its identity never changes. The
        lookups cost four round trips per batch, whatever its number of sessions. The plan's erasure generation
        (`write_guard`) is drawn first, or kept from an earlier plan of the same sessions (`generation`)."""
        if stop is not None and stop.is_set():
            raise IngestAborted("an earlier batch failed")
        plan = _Plan(IngestReport())
        started = time.perf_counter()
        keys = {(s.app_name, s.user_id, s.id): [e.id for e in s.events] for s in sessions}
        with self.store.connection() as conn:
            plan.generation = generation if generation is not None else plan_generation(conn, sessions)
            deleted = housekeeping.tombstoned_of(conn, keys)
            # In the event layer a unit's id is its event's id: the stored units name the events already kept.
            known = (
                sqlu.existing_units_of(conn, self.layer, self.model.model_id, keys)
                if self.granularity == "event" else {}
            )  # fmt: skip
            plan.report.timings["lookup"] += time.perf_counter() - started
            t0 = time.perf_counter()
            for session in sessions:
                key = (session.app_name, session.user_id, session.id)
                kept, skipped = self.kept_events(session, known=frozenset(known.get(key, ())))
                gone = [e for e in kept if (*key, e.id) in deleted]
                if gone:
                    skipped[filters.DELETED] += len(gone)
                    kept = [e for e in kept if e not in gone]
                plan.report.skipped.update(skipped)
                units = self.units_of(session, kept)
                if units:
                    plan.sessions.append((self.scope(session.app_name, session.user_id), session, units))
            t1 = time.perf_counter()
            plan.report.timings["filter"] += t1 - t0
            # An event unit's id is its event's id, so the event layer's lookup above already holds every stored
            # unit of these sessions; only chunks need a lookup of their own.
            stored = known if self.granularity == "event" else self._stored_units(conn, plan.sessions)
            for scope, session, units in plan.sessions:
                held = stored.get((scope.app_name, scope.user_id, session.id), {})
                plan.texts.update(u.embed_text for u in units if not _holds(held.get(u.unit_id), u.event_ids))
            plan.report.timings["lookup"] += time.perf_counter() - t1
        return plan

    def _stored_units(
        self, conn: psycopg.Connection, planned: list[tuple[sqlu.Scope, Session, list[Unit]]]
    ) -> dict[sqlu.SessionKey, dict[str, tuple[str, ...]]]:
        """(app, user, session) -> unit id -> stored event ids, for the planned units already stored."""
        wanted = {(scope.app_name, scope.user_id, session.id): [u.unit_id for u in units]
                  for scope, session, units in planned}  # fmt: skip
        return sqlu.existing_units_of(conn, self.layer, self.model.model_id, wanted)

    def _embed_plan(
        self, plan: _Plan, stop: threading.Event | None = None, bar: _IngestProgress | None = None
    ) -> _Vectors:
        """Embed every text the plan may need, outside any transaction (no lock is held while the model runs).

        Texts go to the model longest first in chunks of EMBED_CHUNK: the model pads each of its batches to its
        longest text, so sorting by length across the whole plan keeps padding as low as one call would, while
        the progress display moves per chunk and a failure elsewhere stops the work between chunks."""
        texts = sorted(plan.texts, key=lambda t: (-len(t), t))
        if not texts or (stop is not None and stop.is_set()):
            return _Vectors({}, 0.0)
        started = time.perf_counter()
        parts = []
        for at in range(0, len(texts), EMBED_CHUNK):
            if stop is not None and stop.is_set():
                raise IngestAborted("an earlier batch failed")
            chunk = texts[at : at + EMBED_CHUNK]
            vectors = self.embedder.embed_documents(chunk)
            check_vectors(vectors, len(chunk), self.model.dimension, self.model.model_id)
            parts.append(vectors)
            if bar is not None:
                bar.embedded(len(chunk))
        vectors = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return _Vectors(dict(zip(texts, vectors, strict=True)), time.perf_counter() - started)

    def _write(self, plan: _Plan, vectors: _Vectors) -> IngestReport:
        """Lock each session's key (sorted, so two writers never deadlock), leave out units erased since the plan
        (`write_guard.recheck`: a delete that ran while the add embedded wins) and units stored meanwhile,
        replace chunks that grew, and COPY the rest in one transaction."""
        report = plan.report
        report.timings["embed"] += vectors.seconds
        if not plan.sessions:
            return report
        embedded = list(vectors.by_text)
        replaced = sqlu.Deleted()
        started = time.perf_counter()
        try:
            with self.store.transaction() as conn:
                plan.sessions, erased = recheck(conn, plan.sessions, self.model.model_id, plan.generation)
                report.skipped.update(erased)
                sqlu.lock_keys(
                    conn,
                    (("units", scope.app_name, scope.user_id, session.id, scope.layer, scope.model.model_id)
                     for scope, session, _ in plan.sessions),
                )  # fmt: skip
                todo: list[tuple[sqlu.Scope, Unit]] = []
                held = self._stored_units(conn, plan.sessions)
                for scope, session, units in plan.sessions:
                    stored = held.get((scope.app_name, scope.user_id, session.id), {})
                    # A stored chunk holding more of the session than this snapshot (a late, older copy) stays:
                    # chunks only grow, so the chunk layer does not depend on the order snapshots arrive in.
                    fresh = [u for u in units if not _holds(stored.get(u.unit_id), u.event_ids)]
                    report.already_stored += len(units) - len(fresh)
                    stale = [u.unit_id for u in fresh if u.unit_id in stored]  # a chunk that grew since last time
                    if stale:
                        replaced.merge(sqlu.delete_units(conn, scope, session.id, stale))
                    todo.extend((scope, u) for u in fresh)
                report.replaced = replaced.units
                if not todo:
                    report.timings["write"] += time.perf_counter() - started
                    self._forget_cached({(self.model.model_id, text_key(t)) for t in embedded})  # stored nowhere
                    return report
                missing = sorted({u.embed_text for _, u in todo} - vectors.by_text.keys())
                if missing:  # stored when we looked, deleted by another writer since: embed them now (rare)
                    late = self.embedder.embed_documents(missing)
                    check_vectors(late, len(missing), self.model.dimension, self.model.model_id)
                    vectors.by_text.update(zip(missing, late, strict=True))
                    embedded += missing
                report.embedded = len(todo)
                rows = [sqlu.unit_row(scope, u, vectors.by_text[u.embed_text]) for scope, u in todo]
                report.added = sqlu.copy_rows(conn, rows) - report.replaced
                copied = time.perf_counter()
                report.timings["write"] += copied - started
            report.timings["commit"] += time.perf_counter() - copied
        except BaseException:
            # Nothing was written: leave no cached vector of a text that is not stored either.
            self._forget_cached({(self.model.model_id, text_key(t)) for t in embedded})
            raise
        # Texts embedded for units another writer stored meanwhile, and a replaced chunk's old body, are stored
        # nowhere: their cached vectors go.
        written = {(self.model.model_id, text_key(u.embed_text)) for _, u in todo}
        unused = {(self.model.model_id, text_key(t)) for t in embedded} - written
        self._forget_cached(unused | (replaced.text_keys - written))
        self._changed()
        return report

    # -- erasure --------------------------------------------------------------------------------------
    def caches(self) -> list[EmbeddingCache]:
        """The embedding caches erasure clears: the embedder's own (through any wrapping) and every shared
        cache this process opened."""
        return caches_of(self.embedder)

    def _forget_cached(self, keys: set[tuple[str, str]]) -> int:
        if not keys:
            return 0
        return sum(cache.forget_keys(keys) for cache in self.caches())

    @staticmethod
    def _check_vacuum(vacuum: bool | str) -> None:
        disk_erasure.check_level(vacuum)

    def _finish_erasure(self, deleted: sqlu.Deleted, vacuum: bool | str) -> DeletionReport:
        """After the delete committed: drop the cached vectors of the deleted texts, then VACUUM if asked."""
        self._changed()
        cache_entries = self._forget_cached(deleted.text_keys)
        forget_transient()
        filters.forget_scans()  # digests of the erased texts, among others: they only cost a scan again
        vacuumed: tuple[str, ...] = ()
        if vacuum:
            vacuumed = disk_erasure.after_erasure(self.store, vacuum)  # every table holding users' rows
            for cache in self.caches():
                cache.vacuum()
        return DeletionReport(
            units=deleted.units,
            tombstones=deleted.tombstones,
            cache_entries=cache_entries,
            tenant_indexes=deleted.tenant_indexes,
            vacuumed=vacuumed,
        )

    def delete_memory(
        self, app_name: str, user_id: str, memory_id: str, *, session_id: str | None = None, vacuum: bool | str = False
    ) -> int:
        """Delete one memory (a unit id or an event id) in every layer and model; re-ingesting it later is
        refused. An event id names an event in one session: pass `session_id` to delete only that session's
        event, else the id is deleted (and refused later) in every session of the user. The cached vectors of
        the deleted texts are dropped; `vacuum=True` (or "full") VACUUMs the tables afterwards. An add of the
        memory in flight (embedding when this runs) leaves it out and counts it in `skipped["deleted"]`: a
        deleted memory never comes back. Returns units deleted."""
        check_ids(app_name, user_id, memory_id=memory_id, optional={"session_id": session_id})
        self._check_vacuum(vacuum)
        with self.store.transaction() as conn:
            erasing(conn, app_name, user_id)  # its tombstones stop adds in flight (write_guard.recheck)
            deleted = housekeeping.delete_memory(conn, app_name, user_id, memory_id, session_id)
        return self._finish_erasure(deleted, vacuum).units

    def forget_session(
        self, app_name: str, user_id: str, session_id: str, *, vacuum: bool | str = False
    ) -> DeletionReport:
        """Delete every unit of one session stored with this memory's model (all layers), the session's
        tombstones once no unit of it is left in any model, and the cached vectors of the deleted texts;
        `vacuum=True` (or "full") VACUUMs the tables afterwards. An add of the session planned before this call
        (embedding when it runs) writes nothing of it (`skipped["erased_during_ingest"]`); one that starts
        after it stores the session again."""
        check_ids(app_name, user_id, session_id=session_id)
        self._check_vacuum(vacuum)
        with self.store.transaction() as conn:
            marker = erasures.units_session(app_name, user_id, session_id, self.model.model_id)
            erasing(conn, app_name, user_id, [marker])  # an add of the session in flight writes nothing of it
            deleted = housekeeping.erase_session(conn, app_name, user_id, session_id, self.model.model_id)
        return self._finish_erasure(deleted, vacuum)

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
                self._check_unit(app_name, user_id, unit)
                batch.append(sqlu.unit_row(self.scope(app_name, user_id), unit, np.asarray(vector, dtype=np.float32)))
                if len(batch) >= batch_rows:
                    added += self._copy_checked(batch)
                    batch = []
            added += self._copy_checked(batch)
        finally:
            self.store.ensure_vector_index(self.model.model_id, self.layer)
            self.store.analyze()
        self._changed()
        return added

    def _check_unit(self, app_name: str, user_id: str, unit: Unit) -> None:
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
            or text_problem(unit.embed_text, "the unit's text", empty_ok=True, max_bytes=self.limits.text_bytes,
                            limit_name="InputLimits(text_bytes=...)")
            or timestamp_problem(unit.occurred_at, self.timestamps, datetime.now(UTC))
        )
        if problem:
            raise InputError(problem, **where)

    def _copy_checked(self, rows: list[tuple]) -> int:
        if not rows:
            return 0
        check_vectors(np.vstack([r[-1] for r in rows]), len(rows), self.model.dimension, self.model.model_id)
        with self.store.transaction() as conn:
            return sqlu.copy_rows(conn, rows)

    # -- search ---------------------------------------------------------------------------------------
    def search(
        self,
        app_name: str,
        user_id: str,
        query: str,
        settings: SearchSettings | None = None,
        *,
        asked_at: datetime | None = None,
        gate: AnswerabilityGate | None = None,
    ) -> Hits:
        """The user's best units for `query`, best first, cut off at `settings.max_distance` (see
        `SearchSettings` for the vector, lexical and hybrid modes and time handling; `asked_at`, the moment
        the question is asked, lets time phrases in it count). With an answerability `gate` (fitted by the
        workbench's retrieval sweep, `AnswerabilityGate.load("answerability.json")`) a question the gate
        judges unanswerable gets no hits (`dropped_by_cutoff` counts them). The query is embedded without
        being written to the embedding cache (it is the user's data too)."""
        hits = self._search(app_name, user_id, query, settings, asked_at)
        if gate is None or not hits:
            return hits
        with self.store.connection() as conn:  # the kept count, as auto last read it: no trip per gated search
            size = min(self._scope_facts(conn, self.scope(app_name, user_id)).units, GATE_COUNT_LIMIT)
        if gate.answerable(hits, size):
            return hits
        return Hits([], plan=hits.plan, dropped_by_cutoff=hits.dropped_by_cutoff + len(hits), window=hits.window)

    def _search(
        self, app_name: str, user_id: str, query: str, settings: SearchSettings | None, asked_at: datetime | None
    ) -> Hits:
        settings = check_settings(settings)
        self.scope(app_name, user_id)
        if asked_at is not None and (not isinstance(asked_at, datetime) or asked_at.tzinfo is None):
            raise ConfigError(f"asked_at must be a timezone-aware datetime, got {asked_at!r}.")
        query = render_query(query, settings.query_rendering) if isinstance(query, str) else query
        vector = self._embed_query(app_name, user_id, query)
        if not settings.fused(asked_at is not None):
            return self.search_vector(app_name, user_id, vector, settings)
        return self.search_fused(app_name, user_id, query, vector, settings, asked_at=asked_at)

    def search_fused(
        self,
        app_name: str,
        user_id: str,
        query: str,
        vector: np.ndarray,
        settings: SearchSettings,
        *,
        asked_at: datetime | None = None,
    ) -> Hits:
        """Lexical, hybrid, time-aware, author-preferring or per-session-capped search with the query's text and
        its vector already embedded: each list `settings.candidates` deep (the vector list ordered with the
        preferred author's margin), fused by reciprocal rank, re-ranked by the
        question's time window, spread by the per-session cap, then cut to `top_k` and `max_distance`. The
        query text is used as given (`search` renders it first)."""
        self._check_query(app_name, user_id, query)
        depth = max(settings.candidates, settings.top_k)
        lists: list[tuple[list, float]] = []
        plan = "lexical"
        if settings.mode in ("vector", "hybrid"):
            found = self.search_vector(app_name, user_id, vector, replace(settings, top_k=depth, max_distance=None))
            found_list = prefer_author(list(found), settings.prefer_author, settings.author_margin)
            lists.append((found_list, settings.vector_weight if settings.mode == "hybrid" else 1.0))
            plan = found.plan if settings.mode == "vector" else f"{found.plan}+lexical"
        if settings.mode in ("lexical", "hybrid"):
            scope = self.scope(app_name, user_id)
            vector = np.asarray(vector, dtype=np.float32)
            check_vectors(vector.reshape(1, -1), 1, self.model.dimension, self.model.model_id)
            with self.store.transaction() as conn:
                lexical = sqlu.lexical_search(conn, scope, query, vector, depth)
            lists.append((lexical, settings.lexical_weight if settings.mode == "hybrid" else 1.0))
        ranked = fuse(lists, settings.rrf_k)
        window = None
        if settings.time != "off" and asked_at is not None:
            window = self._time_window(app_name, user_id, query, asked_at, settings.strategy)
        ranked = apply_time(ranked, window, settings.time, settings.time_weight, settings.rrf_k, settings.top_k)
        ranked = cap_per_session(ranked, settings.per_session, settings.top_k)
        if settings.max_distance is None:
            return Hits(ranked, plan=plan, window=window)
        kept = [h for h in ranked if h.distance <= settings.max_distance]
        return Hits(kept, plan=plan, dropped_by_cutoff=len(ranked) - len(kept), window=window)

    def _time_window(self, app_name: str, user_id: str, query: str, asked_at: datetime, strategy: Strategy):
        """The question's time window: a calendar phrase ("last month") resolved against `asked_at`, else an
        event the question names ("before I moved") found in the user's own memory (its nearest unit, asked
        before `asked_at`), whose time is the boundary. None when neither is there."""
        from memlab.events.timewords import event_anchor, resolve_time  # only time-aware searches read them

        window = resolve_time(query, asked_at)
        anchor = None if window is not None else event_anchor(query)
        if anchor is None:
            return window
        found = self.search_vector(app_name, user_id, self._embed_query(app_name, user_id, anchor.event),
                                   SearchSettings(top_k=1, strategy=strategy))  # fmt: skip
        if not found or found[0].timestamp is None or found[0].timestamp > asked_at:
            return None
        return anchor.window(found[0].timestamp)

    def _check_query(self, app_name: str, user_id: str, query: object) -> None:
        check_text(query, "the query", empty_ok=True, max_bytes=self.limits.query_bytes,
                   limit_name="InputLimits(query_bytes=...)", app_name=app_name, user_id=user_id)  # fmt: skip

    def _embed_query(self, app_name: str, user_id: str, query: str) -> np.ndarray:
        self._check_query(app_name, user_id, query)
        return embed_query_transient(self.embedder, query)

    def search_vector(
        self, app_name: str, user_id: str, vector: np.ndarray, settings: SearchSettings | None = None
    ) -> Hits:
        """`search` with a query vector already embedded (sweeps embed each question once)."""
        settings = check_settings(settings)
        scope = self.scope(app_name, user_id)
        vector = np.asarray(vector, dtype=np.float32)
        check_vectors(vector.reshape(1, -1), 1, self.model.dimension, self.model.model_id)
        policy = self._policy_for(settings)
        with self.store.transaction() as conn:
            settings, literal = self._resolve(conn, scope, settings, policy)
            sqlu.apply_settings(conn, settings)
            plan = "tenant-index" if literal else settings.strategy
            if settings.strategy == "planner":
                _, plan = sqlu.explain_search(conn, scope, vector, settings, analyze=False)
            found = sqlu.run_search(conn, scope, vector, settings, literal=literal)
        if settings.max_distance is None:
            return Hits(found, plan=plan)
        kept = [h for h in found if h.distance <= settings.max_distance]
        return Hits(kept, plan=plan, dropped_by_cutoff=len(found) - len(kept))

    def _policy_for(self, settings: SearchSettings) -> AutoPolicy | None:
        """The store's policy, read before the search opens its transaction: reading it inside would take a
        second pooled connection while holding the first (8 threads on a 2-connection pool deadlock)."""
        return self.store.auto_policy() if settings.strategy == "auto" else None

    def _resolve(
        self, conn, scope: sqlu.Scope, settings: SearchSettings, policy: AutoPolicy | None
    ) -> tuple[SearchSettings, bool]:
        """Turn `auto` into a fixed strategy for this user (see `memlab.AutoPolicy`): exact for a small user,
        the user's own partial HNSW index where one exists, else the shared index with a scan budget sized to
        the user's share of the table. Returns the settings and whether to inline values (a partial index is
        only usable with the user's ids in the statement)."""
        if settings.strategy != "auto" or policy is None:
            return settings, False
        explicit = settings.exact_below is not None  # the caller's own threshold is taken as given
        exact_below = settings.exact_below if explicit else policy.exact_below
        facts = self._scope_facts(conn, scope)
        units = facts.units
        if units <= exact_below:
            return replace(settings, strategy="exact"), False
        if facts.tenant_index:
            return replace(settings, strategy="hnsw", ef_search=max(policy.tenant_ef_search, settings.top_k),
                           iterative_scan=policy.iterative_scan), True  # fmt: skip
        # On the shared index, finding k of a user's rows means walking about scan_factor x ef_search / share
        # tuples; below units^2 = scan_factor x ef_search x table rows that walk is longer than the user's rows.
        total = max(facts.table_rows, units)
        walk = policy.scan_factor * policy.ef_search * total / units
        if not explicit and walk >= units:
            return replace(settings, strategy="exact"), False
        budget = max(policy.max_scan_tuples, int(min(walk, units)))
        return replace(settings, strategy="hnsw", ef_search=max(policy.ef_search, settings.top_k),
                       iterative_scan=policy.iterative_scan, max_scan_tuples=budget), False  # fmt: skip

    def _changed(self) -> None:
        """Every path that writes, erases or (re)indexes this memory's rows calls this: the users' counts and
        tenant indexes kept for `auto` and the gate (see _scope_facts) may be stale."""
        self._strategy_facts.clear()

    def _scope_facts(self, conn, scope: sqlu.Scope) -> sqlu.ScopeFacts:
        """The user's count and tenant index as last read (by auto or the gate), if less than
        STRATEGY_FACTS_SECONDS ago; else read now."""
        key, now = (scope.app_name, scope.user_id), time.monotonic()
        kept = self._strategy_facts.get(key)
        if kept is not None and now - kept[0] < STRATEGY_FACTS_SECONDS:
            return kept[1]
        facts = sqlu.scope_facts(conn, scope)
        if len(self._strategy_facts) >= _STRATEGY_FACTS_MAX:
            self._strategy_facts.clear()
        self._strategy_facts[key] = (now, facts)
        return facts

    def maintain(self, app_name: str | None = None) -> list[str]:
        """Build a per-tenant partial HNSW index for every user of this layer and model (of one app, or all)
        holding at least the policy's `tenant_index_above` units, so `auto` serves them from a graph dense in
        their own rows. Run it after large loads (or on a schedule); returns the indexes created."""
        if app_name is not None:
            check_text(app_name, "the app id", max_bytes=MAX_ID_BYTES, app_name=app_name)
        policy = self.store.auto_policy()
        with self.store.connection() as conn:
            users = sqlu.large_scopes(conn, self.layer, self.model.model_id, policy.tenant_index_above, app_name)
        created = []
        for app, user in users:
            name = sqlu.tenant_index_name(self.model.model_id, self.layer, app, user)
            with self.store.connection() as conn:
                if sqlu.index_exists(conn, name):
                    continue
            created.append(self.store.create_tenant_index(self.model.model_id, self.layer, app, user))
        self._changed()
        return created

    def explain(self, app_name: str, user_id: str, query: str, settings: SearchSettings | None = None) -> Explain:
        """Run the search under EXPLAIN (ANALYZE, BUFFERS) with the same settings and report the plan."""
        settings = check_settings(settings)
        scope = self.scope(app_name, user_id)
        vector = self._embed_query(app_name, user_id, query)
        policy = self._policy_for(settings)
        with self.store.transaction() as conn:
            settings, literal = self._resolve(conn, scope, settings, policy)
            sqlu.apply_settings(conn, settings)
            text, path = sqlu.explain_search(conn, scope, vector, settings, analyze=True, literal=literal)
        return Explain(plan=text, access_path=path)

    def count(self, app_name: str, user_id: str) -> int:
        """How many units of this layer and model the user has (the count the triggers keep: no scan)."""
        with self.store.connection() as conn:
            return sqlu.scope_facts(conn, self.scope(app_name, user_id)).units

    # -- deletion, retention, migration ---------------------------------------------------------------
    def forget_user(self, app_name: str, user_id: str, *, vacuum: bool | str = False) -> int:
        """Delete every stored unit of the user (all layers and models), the user's tombstones and per-tenant
        indexes, and the cached vectors of the deleted texts. `vacuum` is the erasure level, run afterwards on
        every table holding users' rows (both memories': see memlab.storage.disk_erasure): True runs VACUUM
        (ANALYZE) and compacts the cache file, its bytes may stay on disk; "full" runs VACUUM FULL (exclusive
        locks) so no table or index file holds the deleted bytes; "wal" also purges them from the WAL.
        Once it returns, no unit of an add planned before it is stored: such an add (embedding meanwhile)
        writes nothing of the user and counts those events in `skipped["erased_during_ingest"]`; an add that
        starts after it stores the user afresh. Returns units deleted."""
        self.scope(app_name, user_id)
        self._check_vacuum(vacuum)
        with self.store.transaction() as conn:
            erasing(conn, app_name, user_id, [erasures.units_user(app_name, user_id)])
            deleted = housekeeping.erase_user(conn, app_name, user_id)
        return self._finish_erasure(deleted, vacuum).units

    def purge_before(
        self, cutoff: datetime, *, app_name: str | None = None, user_id: str | None = None, vacuum: bool | str = False
    ) -> int:
        """Retention by age: delete units that occurred before `cutoff` (all users unless scoped), and the
        cached vectors of their texts; returns units deleted."""
        if not isinstance(cutoff, datetime) or cutoff.tzinfo is None:
            raise ConfigError("purge_before needs a timezone-aware cutoff datetime.")
        for name, value in (("app", app_name), ("user", user_id)):
            if value is not None:
                check_text(value, f"the {name} id", max_bytes=MAX_ID_BYTES, app_name=app_name, user_id=user_id)
        self._check_vacuum(vacuum)
        with self.store.transaction() as conn:
            deleted = housekeeping.erase_before(conn, cutoff, app_name, user_id)
        return self._finish_erasure(deleted, vacuum).units

    def migrate_embeddings(
        self, old_model: str, new_embedder: Embedder, *, batch_size: int = 512, progress: bool = False
    ) -> MigrationReport:
        """Re-embed every unit stored under `old_model` with `new_embedder`, from the stored rendered text, and
        write the new rows beside the old ones (same ids, new model id). Resumable: rows already migrated
        are skipped, and so are units erased while their batch was being embedded. Reads flip by opening an
    EventMemory with the new embedder; then `store.drop_model(old)`."""
        return migrate_embeddings(self.store, old_model, new_embedder, batch_size=batch_size, progress=progress)


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
        from rich.progress import track

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
