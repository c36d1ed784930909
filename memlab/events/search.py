"""Event memory's read path: a query embedded once, then vector search (`auto` resolved per user: exact for a small
user, the user's own HNSW index, or the shared one with a scan budget), or lexical/hybrid/time-aware search fused
by reciprocal rank; the answerability gate; EXPLAIN of the same statement; the per-tenant indexes `auto` uses."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import psycopg

from memlab.errors import ConfigError
from memlab.events.answerability import AnswerabilityGate
from memlab.events.core import MemoryCore
from memlab.events.fusion import apply_time, cap_per_session, fuse, prefer_author
from memlab.events.renderings import render_query
from memlab.events.timewords import event_anchor, resolve_time
from memlab.inputs import MAX_ID_BYTES, check_settings, check_text
from memlab.storage import units as sqlu
from memlab.types import AutoPolicy, Hits, SearchSettings, Strategy

# Fixed strategies that may walk the layer's shared HNSW index (`planner` lets PostgreSQL choose it).
WALKING_STRATEGIES: tuple[Strategy, ...] = ("hnsw", "planner")
GATE_COUNT_LIMIT = 1_000_000  # the gate reads log(memory size): counting further changes nothing it can see


@dataclass(frozen=True)
class Explain:
    """The `EXPLAIN (ANALYZE, BUFFERS)` of one search and which access path PostgreSQL took."""

    plan: str
    access_path: str
    rows_removed_by_filter: int = 0  # rows the scan read and the app/user filter threw away

    @property
    def uses_hnsw(self) -> bool:
        return self.access_path == "hnsw"


def resolve_auto(settings: SearchSettings, policy: AutoPolicy, facts: sqlu.ScopeFacts) -> tuple[SearchSettings, bool]:
    """`auto` turned into a fixed strategy for a user of these facts (see `memlab.AutoPolicy`), and whether to inline
    values (a partial index is usable only with the user's ids in the statement). A pure function: the search and the
    workbench's index health (which reads the facts itself, read-only) decide the same way."""
    explicit = settings.exact_below is not None  # the caller's own threshold is taken as given
    exact_below = settings.exact_below if explicit else policy.exact_below
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


class Search:
    """The read path of one EventMemory (see the module docstring)."""

    def __init__(self, core: MemoryCore) -> None:
        self.core = core

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
        """See `EventMemory.search`."""
        hits = self.embed_and_search(app_name, user_id, query, settings, asked_at)
        if gate is None or not hits:
            return hits
        with self.core.store.connection() as conn:  # the kept count, as auto last read it: no trip per gated search
            size = min(self.core.scope_facts(conn, self.core.scope(app_name, user_id)).units, GATE_COUNT_LIMIT)
        if gate.answerable(hits, size):
            return hits
        return Hits([], plan=hits.plan, dropped_by_cutoff=hits.dropped_by_cutoff + len(hits), window=hits.window)

    def embed_and_search(
        self, app_name: str, user_id: str, query: str, settings: SearchSettings | None, asked_at: datetime | None
    ) -> Hits:
        settings = check_settings(settings)
        self.core.scope(app_name, user_id)
        if asked_at is not None and (not isinstance(asked_at, datetime) or asked_at.tzinfo is None):
            raise ConfigError(f"asked_at must be a timezone-aware datetime, got {asked_at!r}.")
        query = render_query(query, settings.query_rendering) if isinstance(query, str) else query
        vector = self.core.embed_query(app_name, user_id, query)
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
        """See `EventMemory.search_fused`."""
        self.core.check_query(app_name, user_id, query)
        depth = max(settings.candidates, settings.top_k)
        lists: list[tuple[list, float]] = []
        plan = "lexical"
        if settings.mode in ("vector", "hybrid"):
            found = self.search_vector(app_name, user_id, vector, replace(settings, top_k=depth, max_distance=None))
            found_list = prefer_author(list(found), settings.prefer_author, settings.author_margin)
            lists.append((found_list, settings.vector_weight if settings.mode == "hybrid" else 1.0))
            plan = found.plan if settings.mode == "vector" else f"{found.plan}+lexical"
        if settings.mode in ("lexical", "hybrid"):
            scope = self.core.scope(app_name, user_id)
            vector = self.core.check_vector(vector)
            with self.core.store.transaction() as conn:
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
        window = resolve_time(query, asked_at)
        anchor = None if window is not None else event_anchor(query)
        if anchor is None:
            return window
        found = self.search_vector(app_name, user_id, self.core.embed_query(app_name, user_id, anchor.event),
                                   SearchSettings(top_k=1, strategy=strategy))  # fmt: skip
        if not found or found[0].timestamp is None or found[0].timestamp > asked_at:
            return None
        return anchor.window(found[0].timestamp)

    def search_vector(
        self, app_name: str, user_id: str, vector: np.ndarray, settings: SearchSettings | None = None
    ) -> Hits:
        """See `EventMemory.search_vector`."""
        with self._vector_search(app_name, user_id, vector, settings) as (conn, scope, vector, settings, own_index):
            literal = own_index or settings.literal_scope
            plan = "tenant-index" if own_index else settings.strategy
            if settings.strategy == "planner":
                _, plan, _ = sqlu.explain_search(conn, scope, vector, settings, analyze=False, literal=literal)
            elif settings.strategy in WALKING_STRATEGIES and not own_index and not self.core.index_present(conn):
                plan = self._unindexed_plan(conn, scope, vector, settings, literal)
            found = sqlu.run_search(conn, scope, vector, settings, literal=literal)
        if settings.max_distance is None:
            return Hits(found, plan=plan)
        kept = [h for h in found if h.distance <= settings.max_distance]
        return Hits(kept, plan=plan, dropped_by_cutoff=len(found) - len(kept))

    @staticmethod
    def _unindexed_plan(conn, scope: sqlu.Scope, vector: np.ndarray, settings: SearchSettings, literal: bool) -> str:
        """What an `hnsw` search ran on a layer without its shared HNSW index (a read-only store builds none): the
        planner's access path, read by EXPLAIN. A user's own partial index is `tenant-index`; any other path
        scored every row of the user, so the search was `exact` and ef_search had no effect. A hit is never
        labelled with a plan that did not run."""
        _, path, _ = sqlu.explain_search(conn, scope, vector, settings, analyze=False, literal=literal)
        if path == "hnsw":
            return "hnsw"
        own = sqlu.tenant_index_name(scope.model.model_id, scope.layer, scope.app_name, scope.user_id)
        return "tenant-index" if path == f"index:{own}" else "exact"

    @contextmanager
    def _vector_search(
        self, app_name: str, user_id: str, vector: np.ndarray, settings: SearchSettings | None
    ) -> Iterator[tuple[psycopg.Connection, sqlu.Scope, np.ndarray, SearchSettings, bool]]:
        """What a vector search and its EXPLAIN share: the inputs checked, `auto` resolved for this user and the
        settings applied, in one transaction; yields (conn, scope, vector, resolved settings, own_index)."""
        settings = check_settings(settings)
        scope = self.core.scope(app_name, user_id)
        vector = self.core.check_vector(vector)
        policy = self._policy_for(settings)
        for attempt in (1, 2):
            with self.core.store.transaction() as conn:
                resolved, own_index, applied = self._resolve(conn, scope, settings, policy)
                # A search that may walk the layer's shared index finds it built: it is not kept while the layer
                # is small enough for `auto` to scan every user exactly (MemoryCore.index_if_due). The build runs
                # outside this transaction (a second pooled connection while holding one can deadlock the pool).
                walks = resolved.strategy in WALKING_STRATEGIES and not own_index
                if attempt == 2 or not walks or self.core.index_present(conn):
                    if not applied:
                        sqlu.apply_settings(conn, resolved)
                    yield conn, scope, vector, resolved, own_index
                    return
            self.core.ensure_index()

    def _policy_for(self, settings: SearchSettings) -> AutoPolicy | None:
        """The store's policy, read before the search opens its transaction: reading it inside would take a
        second pooled connection while holding the first (8 threads on a 2-connection pool deadlock)."""
        return self.core.store.auto_policy() if settings.strategy == "auto" else None

    def _resolve(
        self, conn, scope: sqlu.Scope, settings: SearchSettings, policy: AutoPolicy | None
    ) -> tuple[SearchSettings, bool, bool]:
        """Turn `auto` into a fixed strategy for this user (see `memlab.AutoPolicy`): exact for a small user,
        the user's own partial HNSW index where one exists, else the shared index with a scan budget sized to
        the user's share of the table. Returns the settings, whether to inline values (a partial index is
        only usable with the user's ids in the statement) and whether the settings are already SET LOCAL.

        Facts kept from an earlier search but older than STRATEGY_FACTS_SECONDS are re-read by the statement that
        sets the strategy they gave, and set again only if the new facts give another: a user who searches now and
        then pays no extra round trip for their count (a round trip is a large share of a small user's exact
        search)."""
        if settings.strategy != "auto" or policy is None:
            return settings, False, False
        kept, fresh = self.core.kept_scope_facts(scope)
        if kept is None:
            return (*resolve_auto(settings, policy, self.core.read_scope_facts(conn, scope)), False)
        guess = resolve_auto(settings, policy, kept)
        if fresh:
            return (*guess, False)
        facts = self.core.read_scope_facts(conn, scope, sqlu.search_knobs(guess[0]))
        resolved = resolve_auto(settings, policy, facts)
        return (*resolved, resolved == guess)

    def maintain(self, app_name: str | None = None) -> list[str]:
        """See `EventMemory.maintain`."""
        if app_name is not None:
            check_text(app_name, "the app id", max_bytes=MAX_ID_BYTES, app_name=app_name)
        policy = self.core.store.auto_policy()
        with self.core.store.connection() as conn:
            users = sqlu.large_scopes(
                conn, self.core.layer, self.core.model.model_id, policy.tenant_index_above, app_name
            )
        created = []
        for app, user in users:
            name = sqlu.tenant_index_name(self.core.model.model_id, self.core.layer, app, user)
            with self.core.store.connection() as conn:
                if sqlu.index_exists(conn, name):
                    continue
            created.append(self.core.store.create_tenant_index(self.core.model.model_id, self.core.layer, app, user))
        self.core.changed()
        return created

    def explain(self, app_name: str, user_id: str, query: str, settings: SearchSettings | None = None) -> Explain:
        """See `EventMemory.explain`."""
        settings = check_settings(settings)
        self.core.scope(app_name, user_id)
        vector = self.core.embed_query(app_name, user_id, query)
        return self.explain_vector(app_name, user_id, vector, settings)

    def explain_vector(
        self, app_name: str, user_id: str, vector: np.ndarray, settings: SearchSettings | None = None
    ) -> Explain:
        """See `EventMemory.explain_vector`."""
        with self._vector_search(app_name, user_id, vector, settings) as (conn, scope, vector, settings, own_index):
            text, path, removed = sqlu.explain_search(conn, scope, vector, settings, analyze=True,
                                                      literal=own_index or settings.literal_scope)  # fmt: skip
        return Explain(plan=text, access_path=path, rows_removed_by_filter=removed)

    def count(self, app_name: str, user_id: str) -> int:
        """See `EventMemory.count`."""
        with self.core.store.connection() as conn:
            return sqlu.scope_facts(conn, self.core.scope(app_name, user_id)).units
