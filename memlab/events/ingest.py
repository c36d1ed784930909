"""Event memory's write path: filter a session's events, cut them into units, embed the texts not stored yet and
write them, batch after batch, each batch in one transaction (`add_checked`), safe to repeat and to run beside
erasures (write_guard). `EventMemory` checks each session first (`check`) and reports the ones it refuses."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import psycopg

import memlab.events.filters as filters
from memlab.embedding.cache import text_key
from memlab.events.batches import EMBED_CHUNK, IngestProgress, batch_sessions, planned_units
from memlab.events.core import MemoryCore, check_vectors, index_due
from memlab.events.renderings import render_units
from memlab.events.units import Unit, chunk_units, event_units
from memlab.events.write_guard import ERASED_DURING_INGEST, plan_generation, recheck
from memlab.inputs import check_session, text_problem
from memlab.models import deriving_from, scope_refs
from memlab.safety.redact import get_logger
from memlab.safety.split_secrets import split_secret_events
from memlab.storage import unit_housekeeping as housekeeping
from memlab.storage import units as sqlu
from memlab.types import Event, IngestReport, InputError, Session, SessionFailure

log = get_logger("memlab.events.memory")  # the memory's log, whichever part writes (redacts secrets: memlab.safety)

DUPLICATE_ID = "duplicate_id"  # an event id seen earlier in the same session: stored once, the repeat counted
SKIP_REASONS = (*filters.SKIP_REASONS, DUPLICATE_ID, ERASED_DURING_INGEST)  # every reason an event is skipped
# What PostgreSQL (or psycopg) says about data it cannot take: the session is at fault, not the server.
_REFUSED = (psycopg.DataError, psycopg.errors.ProgramLimitExceeded)

# The two write paths an IngestReport names (`path`, with `path_reason`). Both run batch after batch on the calling
# thread: filter, embed, then write the batch in one transaction.
# Every `add_session`, and `add_sessions` unless it is a first load: the units already stored are looked up and left
# out, the rest staged and merged (ON CONFLICT), the layer's HNSW index (if it has one) kept up row by row.
PATH_BATCHED = "batched"
# A bulk first load: `add_sessions` of at least one full batch (`batch_units`) for users holding nothing in the
# layer yet (an import of old conversations). Nothing stored is looked up before embedding (there is nothing; the
# locked re-check at write time still runs) and each batch is COPied straight into the table. Into a layer holding
# no more units than the load brings (a new or young layer), the layer's HNSW index is dropped for the load and
# built once after it, before the call returns, if the layer then needs one (more units than `auto` scans exactly:
# core.index_due); else it is built when the layer grows past that or a search first walks it. pgvector builds a
# graph several times faster than it inserts into one (`memlab bench` reports both rates). Meanwhile searches of
# the layer scan exactly and the build holds other writers of the unit table off, which is why a layer already
# holding more than the load keeps its index and takes every row into it as it comes.
PATH_FIRST_LOAD = "copy-first-load"
REBUILD_AT_MOST = 1.0  # a first load drops the index of a layer holding at most this many units per unit it brings


def _holds(stored: tuple[str, ...] | None, wanted: tuple[str, ...]) -> bool:
    """Whether a stored unit with event ids `stored` already covers `wanted`: the same events, or a longer run
    of the session that starts with them."""
    return stored is not None and stored[: len(wanted)] == wanted


@dataclass
class _Plan:
    """A batch of sessions filtered and cut into units, with the texts that may need embedding."""

    report: IngestReport
    sessions: list[tuple[sqlu.Scope, Session, list[Unit]]] = field(default_factory=list)
    texts: set[str] = field(default_factory=set)
    generation: int | None = None  # erasures marked after it are left out at write time (write_guard)
    first_load: bool = False  # PATH_FIRST_LOAD: nothing stored was looked up; write with copy_new_rows


@dataclass
class _Vectors:
    by_text: dict[str, np.ndarray]
    seconds: float


def record_failure(report: IngestReport, session: object, exc: Exception) -> None:
    """List a session left out of `add_sessions` in the report (and the log), with the reason."""
    ids = [getattr(session, name, None) for name in ("app_name", "user_id", "id")]
    failure = SessionFailure(*(v if isinstance(v, str) else repr(v) for v in ids), reason=str(exc).strip())
    log.warning("add_sessions left out session %r: %s", failure.session_id, failure.reason)
    report.failed.append(failure)


class Ingest:
    """The write path of one EventMemory (see the module docstring)."""

    def __init__(self, core: MemoryCore) -> None:
        self.core = core

    def kept_events(
        self, session: Session, *, known: frozenset[str] = frozenset()
    ) -> tuple[list[Event], Counter[str]]:
        """See `EventMemory.kept_events`."""
        kept: list[Event] = []
        seen: set[str] = set()
        skipped: Counter[str] = Counter()
        split = split_secret_events([e.text or "" for e in session.events]) if self.core.scan_secrets else set()
        for at, event in enumerate(session.events):
            reason = (
                None
                if event.id in known and event.id not in seen
                else filters.skip_reason(event, min_chars=self.core.min_chars, scan_secrets=self.core.scan_secrets)
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
        """See `EventMemory.units_of`."""
        if self.core.granularity == "event":
            units = event_units(session, kept)
        else:
            units = chunk_units(session, kept, self.core.chunk_size, self.core.chunk_overlap)
        keys = self.core.fact_keys
        facts = dict(keys.fact_lines(kept, session_id=session.id)) if keys is not None else None
        if self.core.rendering == "text" and not facts:
            return units
        return render_units(self.core.rendering, units, kept, facts, chunk=self.core.granularity != "event")

    def check(self, session: Session) -> None:
        """See `EventMemory.check`."""
        check_session(session, self.core.timestamps, limits=self.core.limits)
        limit = self.core.limits.text_bytes
        # Cheap bound first: a unit holds at most the whole session's turns (plus a rendering's few words each).
        if sum(len((e.text or "").encode()) + len(e.author.encode()) + 64 for e in session.events) <= limit:
            return
        if self.core.granularity == "event" and self.core.rendering == "text" and self.core.fact_keys is None:
            return  # a unit is its event's text, checked above
        kept, _ = self.kept_events(session)
        units = event_units(session, kept) if self.core.granularity == "event" else chunk_units(
            session, kept, self.core.chunk_size, self.core.chunk_overlap)  # fmt: skip
        if self.core.rendering != "text":
            units = render_units(self.core.rendering, units, kept, None, chunk=self.core.granularity != "event")
        for unit in units:
            what = "the chunk's joined text" if self.core.granularity != "event" else "the rendered text"
            problem = text_problem(unit.embed_text, what, empty_ok=True, max_bytes=limit,
                                   limit_name="InputLimits(text_bytes=...)")  # fmt: skip
            if problem:
                raise InputError(problem, app_name=session.app_name, user_id=session.user_id, session_id=session.id,
                                 event_id=unit.event_ids[0] if unit.event_ids else None)  # fmt: skip

    def call_generation(self, sessions: Iterable[Session]) -> int:
        """The erasure generation an `add_sessions` call starts at, drawn before it reads its sessions: every batch
        of the call is checked against it, so an erasure that commits while the call runs wins over all of it
        (a list's users are guarded one by one; an iterator's are not known yet: see `erasures.plan_generation`)."""
        with self.core.store.connection() as conn:
            return plan_generation(conn, sessions if isinstance(sessions, (list, tuple)) else None)

    def add_checked(self, items: list[Session], total: IngestReport, *, batch_units: int, progress: bool,
                    generation: int | None = None) -> None:  # fmt: skip
        """Write sessions that passed `check` into `total` (see `EventMemory.add_sessions`): batch after batch, each
        filtered, embedded and written in one transaction, on the calling thread, all at the erasure `generation`
        (the call's, `call_generation`; drawn here when not given). A failed batch stops the call: the batches
        before it stay written, none after it starts."""
        core = self.core
        if generation is None:
            generation = self.call_generation(items)
        total.path, total.path_reason, drop = self._write_path(items, batch_units)
        first_load = total.path == PATH_FIRST_LOAD
        batches = batch_sessions(items, batch_units, partial(
            planned_units, granularity=core.granularity, size=core.chunk_size, overlap=core.chunk_overlap))
        bar = IngestProgress(core.layer, sum(len(s.events) for s in items)) if progress else None
        if drop:
            core.store.drop_vector_index(core.model.model_id, core.layer)
            core.index_dropped()
        try:
            for batch in batches:
                total.merge(self.write_sessions(batch, generation, first_load=first_load, bar=bar))
                if bar is not None:
                    bar.advance(sum(len(s.events) for s in batch))
        except BaseException:
            self.index_if_due(total, dropped=drop, failing=True)
            raise
        else:
            self.index_if_due(total, dropped=drop)
        finally:
            if bar is not None:
                bar.close()

    def index_if_due(self, total: IngestReport, *, dropped: bool = False, failing: bool = False) -> None:
        """After a write (`add_session`, `add_sessions`): the layer indexed when the call returns if it now needs it,
        whatever happened (a rebuilding first load that failed half-way included: its committed batches are
        searchable through the index), its build in `total.timings`. A write that added nothing and dropped no
        index changed nothing that decides it, and looks nothing up (a failed one may have committed batches
        `total` has not counted yet: it looks). While a failure is on its way up, a second failure here (the
        server that just went away) is logged, not raised over it."""
        if not (total.added or dropped or failing):
            return
        try:
            built = self.core.index_if_due()
        except Exception as exc:
            if not failing:
                raise
            log.warning("the layer's HNSW index was not built after a failed ingest (%s); the next write or search "
                        "that needs it builds it", type(exc).__name__)  # fmt: skip
            return
        if built:
            total.timings["index_build"] += built

    def _write_path(self, items: list[Session], batch_units: int) -> tuple[str, str, bool]:
        """The path `add_sessions` takes (PATH_BATCHED or PATH_FIRST_LOAD), why (counts, never an id: reports get
        logged) and whether the layer's HNSW index is dropped for the load."""
        core = self.core
        planned = sum(planned_units(s, core.granularity, core.chunk_size, core.chunk_overlap) for s in items)
        if planned < max(1, batch_units):
            return PATH_BATCHED, (f"{planned} units planned, less than one batch ({batch_units}): not a bulk "
                                  "first load"), False  # fmt: skip
        users = sorted({(s.app_name, s.user_id) for s in items})
        policy = core.store.auto_policy()  # before a connection is taken (see Search._policy_for)
        with core.store.connection() as conn:
            holding = sqlu.users_holding(conn, core.layer, core.model.model_id, users)
            if holding:
                return PATH_BATCHED, (f"{holding} of {len(users)} users already hold units in this layer: not a "
                                      "first load"), False  # fmt: skip
            indexed, layer = core.index_state(conn)
        why = (f"{planned} units planned (at least one batch, {batch_units}) for {len(users)} users with no unit in "
               "this layer: first load, COPY without staging or stored-unit lookups")  # fmt: skip
        if core.store.read_only or (indexed and layer > REBUILD_AT_MOST * planned):
            return PATH_FIRST_LOAD, (f"{why}; the layer holds {layer} units, more than the load: its index stays and "
                                     "takes the rows as they come"), False  # fmt: skip
        why += f"; the layer holds {layer} units, no more than the load"
        if not index_due(layer + planned, policy):
            had = "its HNSW index is dropped" if indexed else "no HNSW index"
            return PATH_FIRST_LOAD, (f"{why}, and will hold at most {layer + planned}, which `auto` scans exactly "
                                     f"(up to {policy.exact_below}): {had}, built when the layer grows past that or "
                                     "a search first walks it"), indexed  # fmt: skip
        had = "its HNSW index is dropped for the load and" if indexed else "its HNSW index is"
        return PATH_FIRST_LOAD, (f"{why}, and will need an index (more than the {policy.exact_below} units `auto` "
                                 f"scans exactly): {had} built once after the load"), indexed  # fmt: skip

    def write_sessions(self, sessions: list[Session], generation: int | None = None, *, first_load: bool = False,
                       bar: IngestProgress | None = None) -> IngestReport:  # fmt: skip
        """One batch: filter and unit the sessions, embed the texts not stored yet, write them in one transaction.
        If PostgreSQL refuses the batch's data, each session is written again alone, so only the sessions it
        refuses fail (listed in the report)."""
        plan = self._prepare(sessions, generation=generation, first_load=first_load)
        if bar is not None:
            bar.planned(len(plan.texts))
        with deriving_from(_plan_refs(plan)):
            vectors = self._embed_texts(plan.texts, bar)
        try:
            report = self._write(plan, vectors)
        except psycopg.errors.UniqueViolation:
            if not plan.first_load:
                raise
            # A unit stored since the path was chosen (bulk_load, or an add of one of these sessions): this batch
            # again the batched way (stored units looked up and left out), with the vectors already embedded.
            report = self._write(self._prepare(sessions, generation=plan.generation), vectors)
        except _REFUSED:
            if len(sessions) == 1:
                raise
            report = IngestReport()
            for session in sessions:
                try:
                    report.merge(self.write_sessions([session], plan.generation))
                except _REFUSED as exc:
                    record_failure(report, session, exc)
        if not report.path:
            report.path, report.path_reason = PATH_BATCHED, "sessions written in one batch, one transaction"
        return report

    def _prepare(self, sessions: list[Session], *, generation: int | None = None, first_load: bool = False) -> _Plan:
        """Filter the sessions' events and build their units; look up (without locking) which are stored.

        Events already stored in this layer are not filtered again (a re-ingest costs lookups, not secret
        scans): an event is stored only after it passed the filters, and its identity never changes. The
        lookups cost four round trips per batch, whatever its number of sessions. The plan's erasure generation
        (`write_guard`) is drawn first, or kept from an earlier plan of the same sessions (`generation`)."""
        plan = _Plan(IngestReport(), first_load=first_load)
        started = time.perf_counter()
        keys = {(s.app_name, s.user_id, s.id): [e.id for e in s.events] for s in sessions}
        with self.core.store.connection() as conn:
            plan.generation = generation if generation is not None else plan_generation(conn, sessions)
            deleted = housekeeping.tombstoned_of(conn, keys)
            # In the event layer a unit's id is its event's id: the stored units name the events already kept.
            known = (
                sqlu.existing_units_of(conn, self.core.layer, self.core.model.model_id, keys)
                if self.core.granularity == "event" and not first_load else {}
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
                    plan.sessions.append((self.core.scope(session.app_name, session.user_id), session, units))
            t1 = time.perf_counter()
            plan.report.timings["filter"] += t1 - t0
            # An event unit's id is its event's id, so the event layer's lookup above already holds every stored
            # unit of these sessions; only chunks need a lookup of their own.
            event_layer = self.core.granularity == "event"
            stored = known if event_layer or first_load else self._stored_units(conn, plan.sessions)
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
        return sqlu.existing_units_of(conn, self.core.layer, self.core.model.model_id, wanted)

    def _embed_texts(self, wanted: set[str], bar: IngestProgress | None = None) -> _Vectors:
        """Embed texts outside any transaction (no lock is held while the model runs).

        Texts go to the model longest first in chunks of EMBED_CHUNK: the model pads each of its batches to its
        longest text, so sorting by length across all of them keeps padding as low as one call would, while
        the progress display moves per chunk."""
        texts = sorted(wanted, key=lambda t: (-len(t), t))
        if not texts:
            return _Vectors({}, 0.0)
        started = time.perf_counter()
        parts = []
        for at in range(0, len(texts), EMBED_CHUNK):
            chunk = texts[at : at + EMBED_CHUNK]
            vectors = self.core.embedder.embed_documents(chunk)
            check_vectors(vectors, len(chunk), self.core.model.dimension, self.core.model.model_id)
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
            with self.core.store.transaction() as conn:
                plan.sessions, erased = recheck(conn, plan.sessions, self.core.model.model_id, plan.generation)
                report.skipped.update(erased)
                sqlu.lock_keys(
                    conn,
                    (("units", scope.app_name, scope.user_id, session.id, scope.layer, scope.model.model_id)
                     for scope, session, _ in plan.sessions),
                )  # fmt: skip
                todo: list[tuple[sqlu.Scope, Unit]] = []
                # A first load looks nothing up: its users held no unit when the path was chosen, and a unit stored
                # since (a writer that takes no lock: bulk_load, or an add of the same session) makes its COPY
                # raise UniqueViolation, and the batch is written the normal way (`_write_isolated`).
                held = {} if plan.first_load else self._stored_units(conn, plan.sessions)
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
                    self.core.forget_cached({(self.core.model.model_id, text_key(t)) for t in embedded})  # unused
                    return report
                missing = sorted({u.embed_text for _, u in todo} - vectors.by_text.keys())
                if missing:  # stored when we looked, deleted by another writer since: embed them now (rare)
                    with deriving_from(_plan_refs(plan)):
                        late = self.core.embedder.embed_documents(missing)
                    check_vectors(late, len(missing), self.core.model.dimension, self.core.model.model_id)
                    vectors.by_text.update(zip(missing, late, strict=True))
                    embedded += missing
                report.embedded = len(todo)
                rows = [sqlu.unit_row(scope, u, vectors.by_text[u.embed_text]) for scope, u in todo]
                copy = sqlu.copy_new_rows if plan.first_load and not report.replaced else sqlu.copy_rows
                report.added = copy(conn, rows) - report.replaced
                copied = time.perf_counter()
                report.timings["write"] += copied - started
            report.timings["commit"] += time.perf_counter() - copied
        except BaseException:
            # Nothing was written: leave no cached vector of a text that is not stored either.
            self.core.forget_cached({(self.core.model.model_id, text_key(t)) for t in embedded})
            raise
        # Texts embedded for units another writer stored meanwhile, and a replaced chunk's old body, are stored
        # nowhere: their cached vectors go.
        written = {(self.core.model.model_id, text_key(u.embed_text)) for _, u in todo}
        unused = {(self.core.model.model_id, text_key(t)) for t in embedded} - written
        self.core.forget_cached(unused | (replaced.text_keys - written))
        self.core.changed({(scope.app_name, scope.user_id) for scope, _ in todo})
        return report


def _plan_refs(plan: _Plan) -> list[str]:
    """The refs (memlab.models.refs) of the users, sessions and events whose texts the plan embeds: an erasure of
    any of them while the model runs cancels the caching of the vectors (memlab.embedding.vector_cache)."""
    return list(dict.fromkeys(ref for scope, session, units in plan.sessions
                              for ref in scope_refs(scope.app_name, scope.user_id, session.id,
                                                    [e for u in units for e in u.event_ids])))  # fmt: skip
