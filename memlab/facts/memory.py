"""FactMemory: sessions in, consolidated facts out, served as short dated lines with provenance.

Ingest reads only events newer than the session's watermark, asks the extractor for candidates, drops (and
counts) those with an unregistered predicate, a malformed subject or a quote that is not in the transcript,
then consolidates each with `decide()` in one transaction that locks the keys it touches.

App-wide facts live under the reserved user `_domain` and are written only through `add_domain_fact` and
`add_domain_session`: ingesting a session whose user id is `_domain` is refused, so an end user (an ADK session
id is enough) can never plant facts into every user's block. `forget_events` and `forget_session` remove the
observations of events and re-derive the keys they touched from the evidence that is left.

Input is checked as event memory checks it, by the same code (`memlab.inputs`): ids, texts, timestamps (the
memory's `TimestampWindow`) and lengths (`InputLimits`) are refused with an `InputError` before anything is
extracted or written, on every write, read and erasure; a candidate whose subject or value cannot be stored is
dropped and counted (`unstorable`). A fact stated at a time Python cannot read back would otherwise make every
later read of the user, and through `_domain` of every user of the app, fail."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

import memlab.facts.confirmation as confirmation
import memlab.facts.stored as stored
import memlab.facts.write_guard as fact_guard
import memlab.storage.fact_tables as tables
from memlab.embedding.base import Embedder
from memlab.embedding.cache import caches_of, embed_query_transient, embed_transient, erasure_caches
from memlab.errors import ConfigError
from memlab.events.forgetting import forget_in_process
from memlab.events.query_log import QueryLog, QueryRecorder, check_context, fact_hits
from memlab.events.units import render_lines
from memlab.events.write_guard import ERASED_DURING_INGEST, erasing
from memlab.facts.decide import decide, observe, resolve
from memlab.facts.extractors.base import Extractor
from memlab.facts.extractors.rules import RuleExtractor
from memlab.facts.registry import PredicateRegistry, default_registry
from memlab.facts.render import preload_text, render_fact
from memlab.facts.results import FactForgetReport, FactHit, FactIngestReport, Provenance
from memlab.facts.staleness import serving_state
from memlab.facts.types import DOMAIN_USER, Candidate, Cardinality, Fact, Sensitivity
from memlab.inputs import (
    DEFAULT_LIMITS,
    MAX_ID_BYTES,
    InputLimits,
    check_datetime,
    check_ids,
    check_number,
    check_session,
    check_text,
    text_problem,
    timestamp_problem,
)
from memlab.models import deriving_from, event_ref, scope_refs, session_ref, user_ref
from memlab.safety.clean_texts import holds_secret
from memlab.safety.redact import plain_digest
from memlab.safety.split_secrets import split_secret_events
from memlab.storage import erasures
from memlab.storage import query_log as sql_log
from memlab.storage.disk_erasure import after_erasure, check_level
from memlab.storage.schema import SCHEMA_LOCK_KEY
from memlab.storage.store import Store
from memlab.storage.unit_housekeeping import erase_user as erase_units_of_user
from memlab.types import Event, InputError, Session, TimestampWindow

SUBJECT = re.compile(r"user(\.[a-z][a-z_]*)?|[a-z][a-z_]*:[\w.-]+")
USER_SUBJECT = re.compile(r"user(\.[a-z][a-z_]*)?")
DOMAIN_DIRECT_SESSION = "__domain_direct__"  # session id of facts written with add_domain_fact
DEFAULT_THRESHOLD = 0.7
DEFAULT_LIMIT = 12


def fact_events(session: Session) -> list[Event]:
    """Events a fact can come from: complete, with text, holding no credential, alone or together with the
    events next to it (a private key pasted over three events: memlab.safety.split_secrets)."""
    split = split_secret_events([e.text or "" for e in session.events])
    texts = [(at, e) for at, e in enumerate(session.events) if not e.partial and (e.text or "").strip()]
    return [e for at, e in texts if at not in split and not holds_secret(e.text or "")]


class FactMemory:
    """Fact memory of a `Store`. `extractor` turns sessions into candidates (RuleExtractor, LlmExtractor,
    LabelledExtractor); the embedder ranks served facts by relevance to the query."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        extractor: Extractor | None = None,
        *,
        registry: PredicateRegistry | None = None,
        timestamps: TimestampWindow | None = None,
        limits: InputLimits | None = None,
        query_log: QueryLog | None = None,
    ) -> None:
        """`timestamps`: the times a fact may be stated at (1970 .. now + 1 day by default; widen it to replay
        old data); `limits`: the longest texts, queries and values accepted (see `memlab.inputs.InputLimits`);
        `query_log`: QueryLog(enabled=True) records the queries `search` serves (off by default)."""
        self.query_log = QueryRecorder(store, query_log, "facts", "facts")  # settings, counts recorded/skipped
        if timestamps is not None and not isinstance(timestamps, TimestampWindow):
            raise ConfigError(f"timestamps must be a memlab.TimestampWindow, got {type(timestamps).__name__}.")
        if limits is not None and not isinstance(limits, InputLimits):
            raise ConfigError(f"limits must be a memlab.inputs.InputLimits, got {type(limits).__name__}.")
        self.timestamps = timestamps or TimestampWindow()
        self.limits = limits or DEFAULT_LIMITS
        self.store = store
        self.embedder = embedder
        if extractor is None:
            extractor = RuleExtractor()
        self.extractor = extractor
        self.registry = registry or default_registry()
        if store.read_only:  # a read-only store (a probe) creates nothing: the tables must be there
            store.require_tables(tables.FACT_TABLES, "fact memory")
            return
        with store.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK_KEY])
            tables.ensure_schema(conn)

    # -- ingest ---------------------------------------------------------------------------------------
    def add_session(self, session: Session) -> FactIngestReport:
        """Extract and consolidate the session's events newer than its watermark. Re-adding a session
        never reinforces anything twice. A session of the reserved user `_domain` is refused (ConfigError):
        app-wide facts are written with `add_domain_session` or `add_domain_fact`. A session that cannot be
        stored as given (see `memlab.inputs`) raises `InputError` and nothing of it is written."""
        check_session(session, self.timestamps, limits=self.limits)
        if session.user_id == DOMAIN_USER:
            raise ConfigError(
                f"user id {DOMAIN_USER!r} is reserved for app-wide facts shared by every user of app "
                f"{session.app_name!r}; a session of it is never ingested as a user session. Write app-wide facts "
                "explicitly with FactMemory.add_domain_session(session) or FactMemory.add_domain_fact(...)"
            )
        return self._ingest(session, session.user_id)

    def add_domain_session(self, session: Session) -> FactIngestReport:
        """Extract app-wide facts from a trusted session (an admin's notes, a curated fixture) and store them
        under the reserved user `_domain`, whatever the session's user id; they are served to every user of
        the app under their own heading. Candidates about the user (`user`, `user.<relation>`) are dropped:
        a domain fact is about teams, services, products (`<kind>:<id>`), never about whoever reads it.
        Never call this with sessions whose content end users control."""
        check_session(session, self.timestamps, limits=self.limits)
        return self._ingest(session, DOMAIN_USER)

    def add_domain_fact(
        self,
        app_name: str,
        subject: str,
        predicate: str,
        value: str,
        *,
        quote: str | None = None,
        at: datetime | None = None,
        negated: bool = False,
    ) -> FactIngestReport:
        """Write one app-wide fact (`team:payments deploy_tool = Argo CD`) under the reserved user `_domain`,
        consolidated like any stated fact (a later value supersedes, `negated=True` retracts). `subject` must be
        `<kind>:<id>` and `predicate` registered (ConfigError otherwise); `at` defaults to now and must be inside
        the memory's `TimestampWindow`; texts are checked as any input (InputError). A value or quote holding a
        credential is not written, as ingest leaves such an event out (`report.skipped["secret"]`)."""
        check_ids(app_name, DOMAIN_USER)
        where = {"app_name": app_name, "user_id": DOMAIN_USER}
        check_text(subject, "the subject", max_bytes=MAX_ID_BYTES, **where)
        check_text(predicate, "the predicate", max_bytes=MAX_ID_BYTES, **where)
        self._check_value(value, **where)
        if quote is not None:
            check_text(quote, "the quote", max_bytes=self.limits.text_bytes, limit_name="InputLimits(text_bytes=...)",
                       **where)  # fmt: skip
        if not isinstance(negated, bool):
            raise InputError(f"negated={negated!r} must be True or False", **where)
        self._check_at(at, **where)
        if not self.registry.knows(predicate):
            raise ConfigError(
                f"unknown predicate {predicate!r} (nearest registered: {self.registry.nearest(predicate)!r})"
            )
        if not SUBJECT.fullmatch(subject or "") or USER_SUBJECT.fullmatch(subject):
            raise ConfigError(f"subject {subject!r} of a domain fact must be '<kind>:<id>' (e.g. 'team:payments'), "
                              "never the user")  # fmt: skip
        normalized = self.registry.normalize(predicate, value)
        if not normalized.strip():
            raise ConfigError(f"value {value!r} of {predicate} is empty after normalising")
        when = at or datetime.now(UTC)
        text = quote or f"{subject} {predicate} = {value}"
        if any(holds_secret(t) for t in {text, f"{subject} {predicate} = {value}"}):  # as ingest filters events
            return FactIngestReport(events=1, skipped=Counter(secret=1),
                                    notes=["the value or quote holds a credential: nothing was written"])
        made = plain_digest("\x1f".join((subject, predicate, normalized, str(negated), when.isoformat(), text)),
                            prefix="direct-")  # fmt: skip
        cand = Candidate(subject, predicate, normalized, text, basis="stated", negated=negated,
                         event_id=made, event_time=when, session_id=DOMAIN_DIRECT_SESSION)  # fmt: skip
        report = FactIngestReport(events=1, candidates=1, accepted=[cand])
        self._write(app_name, DOMAIN_USER, [cand], report)
        return report

    def _check_at(self, at: object, **where: object) -> datetime:
        """`at` (None: now) as a time the memory accepts: aware and inside its `TimestampWindow`."""
        if at is None:
            return datetime.now(UTC)
        check_datetime(at, "at", **where)
        problem = timestamp_problem(at, self.timestamps)
        if problem:
            raise InputError(f"at={at.isoformat()}: {problem}", **where)
        return at  # type: ignore[return-value]

    def _check_value(self, value: object, **where: object) -> None:
        check_text(value, "the value", max_bytes=self.limits.fact_value_bytes,
                   limit_name="InputLimits(fact_value_bytes=...)", **where)  # fmt: skip

    def _ingest(self, session: Session, user: str) -> FactIngestReport:
        app = session.app_name
        report = FactIngestReport()
        with self.store.connection() as conn:
            generation = fact_guard.plan_generation(conn, app, user)  # erasures after it win (write_guard)
            mark = tables.get_watermark(conn, app, user, session.id)
            keys = sorted({f.key for _, f in stored.user_facts(conn, app, [user], statuses=["current"])})
        fresh = [e for e in fact_events(session) if mark is None or e.timestamp > mark]
        texts = [e for e in session.events if not e.partial and (e.text or "").strip()]
        secrets = sum(mark is None or e.timestamp > mark for e in texts) - len(fresh)
        if secrets:
            report.skipped["secret"] = secrets
        report.events = len(fresh)
        if not fresh:
            return report
        with deriving_from(scope_refs(app, user, session.id, [e.id for e in fresh])):  # a model's cached reply
            raw = self.extractor.extract(fresh, session_id=session.id, registry=self.registry, current_keys=keys)
        report.candidates = len(raw)
        accepted = self._check(raw, fresh, session.id, report)
        if user == DOMAIN_USER:
            about_user = [c for c in accepted if USER_SUBJECT.fullmatch(c.subject)]
            for c in about_user:
                report.dropped["user_subject_in_domain"] += 1
                report.notes.append(f"{c.subject} {c.predicate} = {c.value!r} is about the user, not the app: "
                                    "a domain session only yields '<kind>:<id>' facts")  # fmt: skip
            accepted = [c for c in accepted if not USER_SUBJECT.fullmatch(c.subject)]
        report.accepted = list(accepted)
        self._write(app, user, accepted, report, session_id=session.id, mark=max(e.timestamp for e in fresh),
                    generation=generation)
        return report

    def _write(self, app: str, user: str, accepted: list[Candidate], report: FactIngestReport, *,
               session_id: str | None = None, mark: datetime | None = None,
               generation: int | None = None) -> None:  # fmt: skip
        """Consolidate accepted candidates in one transaction; with `session_id`, under the session's lock and
        watermark (moved to `mark`). What was erased since the plan's `generation` is left out (and the
        user forgotten meanwhile gets nothing written at all): see `memlab.facts.write_guard`."""
        with self.store.transaction() as conn:
            gone, kept = fact_guard.recheck(conn, app, user, session_id, accepted, generation)
            if len(kept) < len(accepted):
                report.dropped[ERASED_DURING_INGEST] += len(accepted) - len(kept)
            if gone:
                return
            accepted = kept
            if session_id is not None:
                tables.lock_fact_key(conn, app, user, "session", session_id)
                last = tables.get_watermark(conn, app, user, session_id)  # another writer may have moved it
                if last is not None:
                    accepted = [c for c in accepted if c.event_time > last]
            for subject, predicate in sorted({c.key for c in accepted}):
                tables.lock_fact_key(conn, app, user, subject, predicate)
            for cand in sorted(accepted, key=lambda c: (c.event_time, c.subject, c.predicate, c.value)):
                self._consolidate(conn, app, user, cand, report)
            if session_id is not None and mark is not None:
                tables.set_watermark(conn, app, user, session_id, mark)

    def _check(self, raw: Sequence[Candidate], fresh: list[Event], session_id: str, report) -> list[Candidate]:
        """Registry, subject and quote checks; values normalised. Refused candidates are counted."""
        transcript = render_lines(fresh)
        events = {e.id: e for e in fresh}
        accepted = []
        for c in raw:
            if not self.registry.knows(c.predicate):
                report.dropped["unknown_predicate"] += 1
                report.notes.append(
                    f"unknown predicate {c.predicate!r} (nearest registered: {self.registry.nearest(c.predicate)!r})"
                )
            elif not SUBJECT.fullmatch(c.subject or ""):
                report.dropped["bad_subject"] += 1
                report.notes.append(f"subject {c.subject!r} is not 'user', 'user.<relation>' or '<kind>:<id>'")
            elif not c.quote or c.quote not in transcript:
                report.dropped["quote_not_in_transcript"] += 1
                report.notes.append(f"quote {c.quote[:60]!r} for {c.predicate} is not in the transcript")
            elif unstorable := (text_problem(c.subject, "the subject", max_bytes=MAX_ID_BYTES)
                                or text_problem(c.value, "the value", max_bytes=self.limits.fact_value_bytes,
                                                limit_name="InputLimits(fact_value_bytes=...)")):  # fmt: skip
                report.dropped["unstorable"] += 1
                report.notes.append(f"{c.predicate}: {unstorable}")
            elif not str(c.value).strip():
                report.dropped["empty_value"] += 1
            else:
                event = events.get(c.event_id) or next((e for e in fresh if c.quote in (e.text or "")), None)
                if event is None:
                    report.dropped["unknown_event"] += 1
                    continue
                accepted.append(
                    replace(
                        c,
                        value=self.registry.normalize(c.predicate, c.value),
                        event_id=event.id,
                        event_time=event.timestamp,
                        session_id=session_id,
                        basis="stated" if event.author == "user" and c.basis == "stated" else "inferred",
                    )
                )
        return accepted

    def _shape(self, predicate: str, rows: Sequence[Fact]) -> tuple[Cardinality, Sensitivity]:
        if self.registry.knows(predicate):
            p = self.registry.get(predicate)
            return p.cardinality, p.sensitivity
        return (rows[0].cardinality, rows[0].sensitivity) if rows else ("one", "normal")

    def _consolidate(self, conn, app: str, user: str, cand: Candidate, report: FactIngestReport) -> None:
        if stored.observed(conn, app, user, cand):
            report.duplicates += 1
            return
        predicate = self.registry.get(cand.predicate)
        rows = stored.key_facts(conn, app, user, cand.subject, cand.predicate)
        decision = decide(cand, rows, predicate.cardinality)
        after = [
            replace(r, sensitivity=predicate.sensitivity, cardinality=predicate.cardinality) for r in decision.rows
        ]
        stored.write_facts(conn, app, user, rows, after)
        stored.log_candidate(conn, app, user, cand, decision.action, decision.reason)
        report.count(decision.action)
        report.actions.append((cand.subject, cand.predicate, cand.value, decision.action))

    # -- reading --------------------------------------------------------------------------------------
    def current(self, app_name: str, user_id: str) -> list[Fact]:
        """Every current fact of the user (all sensitivities, any confidence)."""
        check_ids(app_name, user_id)
        with self.store.connection() as conn:
            return [f for _, f in stored.user_facts(conn, app_name, [user_id], statuses=["current"])]

    def rows(self, app_name: str, user_id: str) -> list[Fact]:
        """Current and history rows."""
        check_ids(app_name, user_id)
        with self.store.connection() as conn:
            return [f for _, f in stored.user_facts(conn, app_name, [user_id])]

    def search(
        self,
        app_name: str,
        user_id: str,
        query: str,
        *,
        allow: Sequence[str] = (),
        threshold: float = DEFAULT_THRESHOLD,
        limit: int = DEFAULT_LIMIT,
        now: datetime | None = None,
        include_domain: bool = True,
        context: Sequence[str] = (),
    ) -> list[FactHit]:
        """Current facts worth serving, as of `now` (the question's time; default now): decayed confidence >=
        `threshold`, or a high-impact fact (registry `impact: high`) whatever its decay, with `FactHit.stale` set
        when it should be confirmed first (past its `confirm_after_days` or below the threshold: see
        `memlab.facts.staleness`); sensitivity `normal` unless listed
        in `allow` ('personal', 'health'), ranked by relevance to `query` then by recency, at most `limit`.
        Facts of the reserved user `_domain` (app-wide) are searched alongside (`FactHit.is_domain`); a
        `_domain` row about the user (`user...` subject, written before such ingests were refused) is never
        served. Recorded when recording is on (`query_log=`), unless the query holds a credential, alone or read
        with `context` (the turns said just before it) or the user's previous query, as `EventMemory.search`."""
        context = check_context(context, app_name, user_id)
        generation = self.query_log.begin(app_name, user_id)
        hits = self._search(app_name, user_id, query, allow, threshold, limit, now, include_domain)
        if generation is not None:  # recording on: nothing to build per search otherwise
            self.query_log.record(app_name, user_id, query, now, {"allow": list(allow), "threshold": threshold,
                                  "limit": limit, "include_domain": include_domain}, fact_hits(hits),
                                  lambda conn: tables.fact_count(conn, app_name, user_id), generation, context)
        return hits

    def _search(self, app_name: str, user_id: str, query: str, allow: Sequence[str], threshold: float, limit: int,
                now: datetime | None, include_domain: bool) -> list[FactHit]:  # fmt: skip
        self._check_search(app_name, user_id, query, allow, threshold, limit, now, include_domain)
        now = now or datetime.now(UTC)
        users = [user_id, DOMAIN_USER] if include_domain and user_id != DOMAIN_USER else [user_id]
        with self.store.connection() as conn:
            rows = stored.user_facts(conn, app_name, users, statuses=["current"])
            provenance = tables.provenance_events(conn, app_name, users)
        served = []
        for owner, fact in rows:
            if fact.sensitivity != "normal" and fact.sensitivity not in allow:
                continue
            if owner == DOMAIN_USER and owner != user_id and USER_SUBJECT.fullmatch(fact.subject):
                continue  # an app-wide row can never be a fact about whoever is asking
            predicate = self.registry.get(fact.predicate) if self.registry.knows(fact.predicate) else None
            state = serving_state(fact, predicate, now, threshold)
            if state.state != "hidden":
                served.append((owner, fact, state))
        if not served:
            return []
        lines = [render_fact(f) for _, f, _ in served]
        keys = [f"{f.subject} {f.predicate.replace('_', ' ')}: {f.value}" for _, f, _ in served]
        vectors = embed_transient(self.embedder, keys)  # derived from the user's facts: never written to disk
        distances = 1.0 - vectors @ embed_query_transient(self.embedder, query)
        hits = []
        for (owner, fact, state), line, d in zip(served, lines, distances, strict=True):
            events = provenance.get((owner, *fact.key, fact.value), [])
            hits.append(FactHit(fact, line, float(d), round(state.confidence, 4), owner, tuple(e for _, e in events),
                                tuple(s for s, _ in events), stale=state.state == "stale"))  # fmt: skip
        hits.sort(key=lambda h: (round(h.distance, 6), -h.fact.confirmed_at.timestamp()))
        return hits[:limit]

    def _check_search(self, app_name: object, user_id: object, query: object, allow: object, threshold: object,
                      limit: object, now: object, include_domain: object) -> None:  # fmt: skip
        """`search`'s arguments, each refused with a memlab error naming it before any SQL runs."""
        check_ids(app_name, user_id)
        where = {"app_name": app_name, "user_id": user_id}
        check_text(query, "the query", empty_ok=True, max_bytes=self.limits.query_bytes,
                   limit_name="InputLimits(query_bytes=...)", **where)  # fmt: skip
        if isinstance(allow, str) or not all(isinstance(a, str) for a in allow):  # type: ignore[attr-defined]
            raise InputError(f"allow={allow!r} must be a sequence of sensitivities, e.g. ('personal', 'health')",
                             **where)  # fmt: skip
        unknown = set(allow) - {"personal", "health"}  # type: ignore[call-overload]
        if unknown:
            raise ConfigError(f"allow may hold 'personal' and 'health', got {sorted(unknown)}")
        check_number(threshold, "FactMemory.search threshold", low=0.0, high=1.0, integer=False,
                     why="a decayed confidence")
        check_number(limit, "FactMemory.search limit", low=1, high=2**31 - 1, integer=True, why="facts served at most")
        if now is not None:
            check_datetime(now, "now", **where)
        if not isinstance(include_domain, bool):
            raise InputError(f"include_domain={include_domain!r} must be True or False", **where)

    def preload_block(self, app_name: str, user_id: str, query: str, **kwargs) -> str:
        """The text to put before a model request, fenced by `PRELOAD_OPEN` / `PRELOAD_CLOSE`: facts about
        the user under a heading saying they are data, not instructions, then app-wide facts under their own
        heading (`DOMAIN_HEADING`: about the app, not the user), then stale high-impact facts, each with its
        date, under `STALE_HEADING` (confirm with the user first). Empty when nothing is served."""
        hits = self.search(app_name, user_id, query, **kwargs)
        fresh, stale = [h for h in hits if not h.stale], [h.text for h in hits if h.stale]
        if user_id == DOMAIN_USER:
            return preload_text([], [h.text for h in fresh], stale)
        return preload_text([h.text for h in fresh if not h.is_domain], [h.text for h in fresh if h.is_domain], stale)

    def confirm(self, app_name: str, user_id: str, key: str | tuple[str, str], session_id: str,
                at: datetime | None = None) -> list[Fact]:  # fmt: skip
        """Record that the user confirmed the key's current value(s) in `session_id` at `at` (default now), after
        the app asked (a stale fact: `FactHit.stale`). `key`: 'home_city', 'user.daughter/allergy' or a pair. The
        value is served as current again and `why()` shows "confirmed by the user on <date> in session <id>";
        erasing that session or the user erases the confirmation. UnknownPredicateError for an unregistered
        predicate, InputError when the key has no current value. Returns the key's current rows."""
        subject, predicate = confirmation.parse_key(key)
        check_ids(app_name, user_id, session_id=session_id)
        self._check_key(app_name, user_id, subject, predicate)
        when = self._check_at(at, app_name=app_name, user_id=user_id)
        spec = self.registry.get(predicate)
        with self.store.transaction() as conn:
            return confirmation.confirm_key(conn, app_name, user_id, subject, spec, session_id, when)

    def why(self, app_name: str, user_id: str, subject: str, predicate: str) -> list[Provenance]:
        """The provenance trail of one key: every observation, oldest first, with its value's status now."""
        self._check_key(app_name, user_id, subject, predicate)
        with self.store.connection() as conn:
            status = {f.value: f.status for f in stored.key_facts(conn, app_name, user_id, subject, predicate)}
            obs = tables.observations(conn, app_name, user_id, subject, predicate)
        return [
            Provenance(value=o[0], status=status.get(o[0], "unknown"), negated=o[1], basis=o[2], session_id=o[3],
                       event_id=o[4], said_at=o[5], quote=o[6], action=o[7], reason=o[8])
            for o in obs
        ]  # fmt: skip

    def delete_fact(
        self, app_name: str, user_id: str, subject: str, predicate: str, value: str, *, vacuum: bool | str = False
    ) -> int:
        """Forget one value of a key (row and observations) and re-resolve the values left (a value the
        deleted one had replaced is current again); returns rows deleted. `vacuum` as in `forget_user`."""
        self._check_key(app_name, user_id, subject, predicate)
        check_text(value, "the value", empty_ok=True, app_name=app_name, user_id=user_id)
        check_level(vacuum)
        with self.store.transaction() as conn:
            erasing(conn, app_name, user_id, [erasures.facts_value(app_name, user_id, subject, predicate, value)])
            tables.lock_fact_key(conn, app_name, user_id, subject, predicate)
            read = {o[4] for o in tables.observations(conn, app_name, user_id, subject, predicate) if o[0] == value}
            deleted = tables.delete_value(conn, app_name, user_id, subject, predicate, value)
            rows = stored.key_facts(conn, app_name, user_id, subject, predicate)
            if deleted and rows:
                cardinality, sensitivity = self._shape(predicate, rows)
                after = [replace(r, cardinality=cardinality, sensitivity=sensitivity)
                         for r in resolve(rows, cardinality)]  # fmt: skip
                stored.write_facts(conn, app_name, user_id, rows, after)
        forget_in_process([event_ref(app_name, user_id, e) for e in read])  # replies that read the value
        self._vacuum(vacuum)
        return deleted

    def _vacuum(self, vacuum: bool | str) -> tuple[str, ...]:
        """After an erasure committed: the level's VACUUM of every table holding users' rows (both memories'
        tables: see memlab.storage.disk_erasure) and, from True on, the embedding caches' files compacted."""
        done = after_erasure(self.store, vacuum)
        if vacuum:
            for cache in caches_of(self.embedder):
                cache.vacuum()
        return done

    @staticmethod
    def _check_key(app_name: object, user_id: object, subject: object, predicate: object) -> None:
        check_ids(app_name, user_id)
        for what, text in (("the subject", subject), ("the predicate", predicate)):
            check_text(text, what, app_name=app_name, user_id=user_id)

    # -- erasure of evidence ----------------------------------------------------------------------------
    def forget_events(
        self, app_name: str, user_id: str, event_ids: Iterable[str], *, session_id: str | None = None,
        vacuum: bool | str = False,
    ) -> FactForgetReport:  # fmt: skip
        """Remove every observation read from these events (of `session_id` only, if given) and re-derive
        each key they touched from the observations left: a value with no evidence left is deleted, one the
        removed evidence had superseded or retracted is current again if nothing else replaced it. The
        session's watermark stays, so re-adding the same session does not bring the facts back. `vacuum` as
        in `forget_user`."""
        check_ids(app_name, user_id, optional={"session_id": session_id})
        check_level(vacuum)
        ids = sorted({event_ids} if isinstance(event_ids, str) else set(event_ids))
        for event_id in ids:
            check_text(event_id, "an event id", max_bytes=MAX_ID_BYTES, app_name=app_name, user_id=user_id)
        if not ids:
            return FactForgetReport(vacuumed=self._vacuum(vacuum))
        return self._forget(app_name, user_id, ids, session_id, vacuum)

    def forget_session(
        self, app_name: str, user_id: str, session_id: str, *, vacuum: bool | str = False
    ) -> FactForgetReport:
        """`forget_events` for every event of one session: all facts the session produced go, the keys it
        touched are re-derived from the rest of the history. The watermark stays (re-adding it is a no-op).
        `vacuum` as in `forget_user`."""
        check_ids(app_name, user_id, session_id=session_id)
        check_level(vacuum)
        return self._forget(app_name, user_id, None, session_id, vacuum)

    def _forget(
        self, app: str, user: str, event_ids: list[str] | None, session_id: str | None, vacuum: bool | str = False
    ) -> FactForgetReport:
        report = FactForgetReport()
        marks = ([erasures.facts_session(app, user, session_id), sql_log.marker_session(app, user, session_id)]
                 if event_ids is None and session_id is not None
                 else [erasures.facts_event(app, user, session_id, e) for e in event_ids or ()])  # fmt: skip
        with self.store.transaction() as conn:
            erasing(conn, app, user, marks)  # an add extracting these events meanwhile leaves them out
            if session_id is not None:
                tables.lock_fact_key(conn, app, user, "session", session_id)
            keys = sorted(tables.observation_keys(conn, app, user, event_ids=event_ids, session_id=session_id))
            for subject, predicate in keys:
                tables.lock_fact_key(conn, app, user, subject, predicate)
            removed = tables.delete_observations(conn, app, user, event_ids=event_ids, session_id=session_id)
            if event_ids is None and session_id is not None:  # the queries whose hits the session held
                report.queries = sql_log.delete_sessions(conn, app, user, [session_id])
            report.observations = len(removed)
            touched = sorted(set(keys) | set(removed))
            for subject, predicate in sorted(set(removed) - set(keys)):  # written since the keys were read
                tables.lock_fact_key(conn, app, user, subject, predicate)
            report.keys = touched
            for subject, predicate in touched:
                self._rederive(conn, app, user, subject, predicate, report)
        scope = [session_ref(app, user, session_id)] if event_ids is None and session_id is not None else []
        report.model_replies = forget_in_process([*scope, *(event_ref(app, user, e) for e in event_ids or ())])
        report.vacuumed = self._vacuum(vacuum)
        return report

    def _rederive(self, conn, app: str, user: str, subject: str, predicate: str, report: FactForgetReport) -> None:
        """Rebuild the value rows of one key from its observation log (the order-free fold of `decide`)."""
        before = stored.key_facts(conn, app, user, subject, predicate)
        cardinality, sensitivity = self._shape(predicate, before)
        rows: list[Fact] = []
        for value, negated, basis, session, event, said_at, quote_text, *_ in tables.observations(
            conn, app, user, subject, predicate
        ):
            if negated and basis == "inferred":
                continue  # decide() never lets agent text retract; such observations are logged, not folded
            cand = Candidate(subject, predicate, value, quote_text, basis=basis, negated=negated, event_id=event,
                             event_time=said_at, session_id=session)  # fmt: skip
            rows = observe(rows, cand, cardinality=cardinality, sensitivity=sensitivity)
        after = [replace(r, cardinality=cardinality, sensitivity=sensitivity) for r in resolve(rows, cardinality)]
        kept = {r.value for r in after}
        old = {r.value: r for r in before}
        gone = [r for r in before if r.value not in kept]
        tables.delete_values(conn, app, user, subject, predicate, [r.value for r in gone])
        stored.write_facts(conn, app, user, [r for r in before if r.value in kept], after)
        report.removed.extend((subject, predicate, r.value, r.status) for r in gone)
        for r in after:
            was = old[r.value].status if r.value in old else None
            if was != r.status:
                report.changed.append((subject, predicate, r.value, was or "absent", r.status))
                if r.status == "current":
                    report.restored.append((subject, predicate, r.value))

    def forget_user(self, app_name: str, user_id: str, *, vacuum: bool | str = False) -> dict[str, int]:
        """Delete the user's facts, history, watermarks, stored units (every layer and model) and the cached
        vectors of those units' texts; counts per table (and `cache_entries`). Once it returns, an add of the
        user planned before it (extracting or embedding meanwhile) writes nothing of the user: it counts the
        candidates in `dropped["erased_during_ingest"]`.

        `vacuum` is the erasure level, as in `EventMemory.forget_user`: False (rows deleted, bytes stay on disk),
        True (VACUUM ANALYZE; statistics no longer sample the erased values), "full" (VACUUM FULL: no table or
        index file holds the bytes), "wal" (also `purge_wal`); `counts["vacuumed"]` (with a level) counts the
        tables vacuumed."""
        check_ids(app_name, user_id)
        check_level(vacuum)
        with self.store.transaction() as conn:
            # an add of the user in flight (either memory) writes nothing of the user afterwards
            erasing(conn, app_name, user_id, [erasures.facts_user(app_name, user_id),
                                              erasures.units_user(app_name, user_id),
                                              sql_log.marker_user(app_name, user_id)])  # fmt: skip
            counts = tables.forget_user(conn, app_name, user_id)
            counts[sql_log.QUERY_LOG_TABLE] = sql_log.delete_user(conn, app_name, user_id)  # every memory's
            deleted = erase_units_of_user(conn, app_name, user_id)
        counts["memory_unit"] = deleted.units
        refs = [*deleted.model_refs(), user_ref(app_name, user_id)]  # an embedding in flight of them stores nothing
        counts["cache_entries"] = sum(c.forget_erased(deleted.text_keys, refs) for c in erasure_caches(self.embedder))
        counts["model_replies"] = forget_in_process(refs)
        if vacuum:
            counts["vacuumed"] = len(self._vacuum(vacuum))
        return counts


def state_of(facts: Sequence[Fact]) -> set[tuple[str, str, str, str]]:
    """The comparable current state: (subject, predicate, value, basis) of current rows."""
    return {(f.subject, f.predicate, f.value, f.basis) for f in facts if f.status == "current"}
