"""FactMemory: sessions in, consolidated facts out, served as short dated lines with provenance.

Ingest reads only events newer than the session's watermark, asks the extractor for candidates, drops (and
counts) those with an unregistered predicate, a malformed subject or a quote that is not in the transcript,
then consolidates each with `decide()` in one transaction that locks the keys it touches."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from memlab.embedding.base import Embedder
from memlab.errors import ConfigError
from memlab.events.filters import find_secrets
from memlab.events.units import render_lines
from memlab.facts.decide import decide
from memlab.facts.extractors.base import Extractor
from memlab.facts.registry import PredicateRegistry, default_registry
from memlab.facts.render import preload_text, render_fact
from memlab.facts.types import DOMAIN_USER, Candidate, Fact
from memlab.storage import facts_sql
from memlab.storage.schema import SCHEMA_LOCK_KEY
from memlab.storage.store import Store
from memlab.storage.units import delete_user as delete_units_of_user
from memlab.types import Event, Session

SUBJECT = re.compile(r"user(\.[a-z][a-z_]*)?|[a-z][a-z_]*:[\w.-]+")
DEFAULT_THRESHOLD = 0.7
DEFAULT_LIMIT = 12


@dataclass
class FactIngestReport:
    """What one `add_session` did. `dropped` counts candidates refused before consolidation, by reason."""

    events: int = 0
    candidates: int = 0
    inserted: int = 0
    reinforced: int = 0
    superseded: int = 0
    disputed: int = 0
    retracted: int = 0
    ignored: int = 0
    duplicates: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    actions: list[tuple[str, str, str, str]] = field(default_factory=list)  # (subject, predicate, value, action)
    accepted: list[Candidate] = field(default_factory=list)  # candidates that passed the checks, normalised
    notes: list[str] = field(default_factory=list)  # why each dropped candidate was dropped, with the fix

    def count(self, action: str) -> None:
        name = {"insert": "inserted", "reinforce": "reinforced", "supersede": "superseded", "dispute": "disputed",
                "retract": "retracted", "ignore": "ignored"}[action]  # fmt: skip
        setattr(self, name, getattr(self, name) + 1)


@dataclass(frozen=True)
class FactHit:
    """A served fact: the rendered line in `text`, cosine `distance` to the query, provenance event ids."""

    fact: Fact
    text: str
    distance: float
    confidence: float
    user_id: str
    event_ids: tuple[str, ...] = ()

    @property
    def unit_id(self) -> str:
        return f"{self.user_id}/{self.fact.subject}/{self.fact.predicate}={self.fact.value}"


@dataclass(frozen=True)
class Provenance:
    """One observation in a key's trail, with the status its value has now."""

    value: str
    status: str
    negated: bool
    basis: str
    session_id: str
    event_id: str
    said_at: datetime
    quote: str
    action: str
    reason: str


def fact_events(session: Session) -> list[Event]:
    """Events a fact can come from: complete, with text, holding no credential."""
    return [e for e in session.events if not e.partial and (e.text or "").strip() and not find_secrets(e.text or "")]


def decayed(confidence: float, confirmed_at: datetime, half_life_days: float, now: datetime) -> float:
    age_days = max((now - confirmed_at).total_seconds() / 86400.0, 0.0)
    return confidence * math.pow(0.5, age_days / half_life_days)


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
    ) -> None:
        self.store = store
        self.embedder = embedder
        if extractor is None:
            from memlab.facts.extractors.rules import RuleExtractor

            extractor = RuleExtractor()
        self.extractor = extractor
        self.registry = registry or default_registry()
        with store.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK_KEY])
            facts_sql.ensure_schema(conn)

    # -- ingest ---------------------------------------------------------------------------------------
    def add_session(self, session: Session) -> FactIngestReport:
        """Extract and consolidate the session's events newer than its watermark. Re-adding a session
        never reinforces anything twice."""
        app, user = session.app_name, session.user_id
        report = FactIngestReport()
        with self.store.connection() as conn:
            mark = facts_sql.get_watermark(conn, app, user, session.id)
            keys = sorted({f.key for _, f in facts_sql.user_rows(conn, app, [user], statuses=["current"])})
        fresh = [e for e in fact_events(session) if mark is None or e.timestamp > mark]
        report.events = len(fresh)
        if not fresh:
            return report
        raw = self.extractor.extract(fresh, session_id=session.id, registry=self.registry, current_keys=keys)
        report.candidates = len(raw)
        accepted = self._check(raw, fresh, session.id, report)
        report.accepted = list(accepted)
        with self.store.transaction() as conn:
            facts_sql.lock_fact_key(conn, app, user, "session", session.id)
            mark = facts_sql.get_watermark(conn, app, user, session.id)  # another writer may have moved it
            if mark is not None:
                accepted = [c for c in accepted if c.event_time > mark]
            for subject, predicate in sorted({c.key for c in accepted}):
                facts_sql.lock_fact_key(conn, app, user, subject, predicate)
            for cand in sorted(accepted, key=lambda c: (c.event_time, c.subject, c.predicate, c.value)):
                self._consolidate(conn, app, user, cand, report)
            facts_sql.set_watermark(conn, app, user, session.id, max(e.timestamp for e in fresh))
        return report

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

    def _consolidate(self, conn, app: str, user: str, cand: Candidate, report: FactIngestReport) -> None:
        if facts_sql.observation_exists(conn, app, user, cand):
            report.duplicates += 1
            return
        predicate = self.registry.get(cand.predicate)
        rows = facts_sql.key_rows(conn, app, user, cand.subject, cand.predicate)
        decision = decide(cand, rows, predicate.cardinality)
        after = [
            replace(r, sensitivity=predicate.sensitivity, cardinality=predicate.cardinality) for r in decision.rows
        ]
        facts_sql.write_rows(conn, app, user, rows, after)
        facts_sql.log_observation(conn, app, user, cand, decision.action, decision.reason)
        report.count(decision.action)
        report.actions.append((cand.subject, cand.predicate, cand.value, decision.action))

    # -- reading --------------------------------------------------------------------------------------
    def current(self, app_name: str, user_id: str) -> list[Fact]:
        """Every current fact of the user (all sensitivities, any confidence)."""
        with self.store.connection() as conn:
            return [f for _, f in facts_sql.user_rows(conn, app_name, [user_id], statuses=["current"])]

    def rows(self, app_name: str, user_id: str) -> list[Fact]:
        """Current and history rows."""
        with self.store.connection() as conn:
            return [f for _, f in facts_sql.user_rows(conn, app_name, [user_id])]

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
    ) -> list[FactHit]:
        """Current facts worth serving: decayed confidence >= `threshold`, sensitivity `normal` unless listed
        in `allow` ('personal', 'health'), ranked by relevance to `query` then by recency, at most `limit`.
        Facts of the reserved user `_domain` are searched alongside."""
        unknown = set(allow) - {"personal", "health"}
        if unknown:
            raise ConfigError(f"allow may hold 'personal' and 'health', got {sorted(unknown)}")
        now = now or datetime.now(UTC)
        users = [user_id, DOMAIN_USER] if include_domain and user_id != DOMAIN_USER else [user_id]
        with self.store.connection() as conn:
            rows = facts_sql.user_rows(conn, app_name, users, statuses=["current"])
            provenance = facts_sql.provenance_events(conn, app_name, users)
        served = []
        for owner, fact in rows:
            if fact.sensitivity != "normal" and fact.sensitivity not in allow:
                continue
            half_life = self.registry.get(fact.predicate).half_life_days if self.registry.knows(fact.predicate) else 365
            confidence = decayed(fact.confidence, fact.confirmed_at, half_life, now)
            if confidence >= threshold:
                served.append((owner, fact, confidence))
        if not served:
            return []
        lines = [render_fact(f) for _, f, _ in served]
        vectors = self.embedder.embed_documents(
            [f"{f.subject} {f.predicate.replace('_', ' ')}: {f.value}" for _, f, _ in served]
        )
        distances = 1.0 - vectors @ self.embedder.embed_query(query)
        hits = [
            FactHit(
                fact, line, float(d), round(conf, 4), owner, tuple(provenance.get((owner, *fact.key, fact.value), ()))
            )
            for (owner, fact, conf), line, d in zip(served, lines, distances, strict=True)
        ]
        hits.sort(key=lambda h: (round(h.distance, 6), -h.fact.confirmed_at.timestamp()))
        return hits[:limit]

    def preload_block(self, app_name: str, user_id: str, query: str, **kwargs) -> str:
        """The text to put before a model request: a heading saying the lines are data, then the lines."""
        return preload_text([h.text for h in self.search(app_name, user_id, query, **kwargs)])

    def why(self, app_name: str, user_id: str, subject: str, predicate: str) -> list[Provenance]:
        """The provenance trail of one key: every observation, oldest first, with its value's status now."""
        with self.store.connection() as conn:
            status = {f.value: f.status for f in facts_sql.key_rows(conn, app_name, user_id, subject, predicate)}
            obs = facts_sql.observations(conn, app_name, user_id, subject, predicate)
        return [
            Provenance(value=o[0], status=status.get(o[0], "unknown"), negated=o[1], basis=o[2], session_id=o[3],
                       event_id=o[4], said_at=o[5], quote=o[6], action=o[7], reason=o[8])
            for o in obs
        ]  # fmt: skip

    def delete_fact(self, app_name: str, user_id: str, subject: str, predicate: str, value: str) -> int:
        """Forget one value of a key (row and observations); returns rows deleted."""
        with self.store.transaction() as conn:
            facts_sql.lock_fact_key(conn, app_name, user_id, subject, predicate)
            return facts_sql.delete_value(conn, app_name, user_id, subject, predicate, value)

    def forget_user(self, app_name: str, user_id: str) -> dict[str, int]:
        """Delete the user's facts, history, watermarks and stored embeddings; counts per table."""
        with self.store.transaction() as conn:
            counts = facts_sql.forget_user(conn, app_name, user_id)
            counts["memory_unit"] = delete_units_of_user(conn, app_name, user_id)
        return counts


def state_of(facts: Sequence[Fact]) -> set[tuple[str, str, str, str]]:
    """The comparable current state: (subject, predicate, value, basis) of current rows."""
    return {(f.subject, f.predicate, f.value, f.basis) for f in facts if f.status == "current"}
