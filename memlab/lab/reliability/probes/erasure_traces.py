"""Erasure: after forget_user no table of the schema and no cache entry holds the user."""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

from psycopg import sql

import memlab
from memlab.lab.reliability.probes.family import Family

ERASURE_CASES = ("events-only", "events-then-facts", "facts-then-events")


def table_traces(store: memlab.Store, needles: list[str]) -> dict[str, list[str]]:
    """needle -> every table of the schema (pg_tables: a table added later cannot escape) with a row whose text
    holds it, and every index whose definition does (`index <name>`)."""
    found: dict[str, list[str]] = {}
    with store.connection() as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1").fetchall()]  # fmt: skip
        for table in tables:
            rows = conn.execute(sql.SQL("SELECT t::text FROM {} AS t").format(sql.Identifier(table))).fetchall()
            for needle in needles:
                if any(needle in r[0] for r in rows):
                    found.setdefault(needle, []).append(table)
        for name, definition in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
        ).fetchall():
            for needle in needles:
                if needle in definition:
                    found.setdefault(needle, []).append(f"index {name}")
    return found


def cache_keys(path: Path) -> set[str]:
    """The text hashes an embedding cache file holds."""
    with closing(sqlite3.connect(path)) as db:
        return {k for (k,) in db.execute("SELECT text_sha256 FROM embedding")}


class ErasureCase:
    """A kept user and a forgotten one in one app, in event and chunk memory (and fact memory unless
    `events-only`), with a private cache file; `run` forgets one in the case's order and checks every table and
    the cache for a trace of it, and that the kept user keeps everything."""

    def __init__(self, db: memlab.Store, inner: memlab.Embedder, case: str, cache_path: Path) -> None:
        self.db, self.case, self.cache_path = db, case, cache_path
        cached = memlab.embedding.CachedEmbedder(inner, memlab.embedding.EmbeddingCache(cache_path))
        log = memlab.QueryLog(enabled=True)  # the searches' queries are recorded: the query log must forget them too
        self.events = memlab.EventMemory(db, cached, query_log=log)
        self.chunks = memlab.EventMemory(db, cached, "chunk", chunk_size=2, chunk_overlap=1, query_log=log)
        self.facts = memlab.FactMemory(db, cached, extractor=memlab.RuleExtractor(), query_log=log)
        self.app, self.tag = "erasure", uuid.uuid4().hex[:8]
        self.start = datetime.now(UTC) - timedelta(days=2)  # recent: facts are served (and so embedded)

    def fill(self, family: Family, user: str, lines: list[str], who: str) -> list[str]:
        sids = []
        for k, part in enumerate([lines[:2], lines[2:]]):
            texts = [*part, f"Remember that the {who}{self.tag}{k} project ships on the first Monday of each quarter."]
            sid = f"s-{who}{self.tag}-{k}"
            events = [memlab.Event(f"e{i}", "user", self.start + timedelta(hours=k, minutes=i), t)
                      for i, t in enumerate(texts)]  # fmt: skip
            session = memlab.Session(self.app, user, sid, events)
            sids.append(sid)
            self.events.add_session(session)
            self.chunks.add_session(session)
            if self.case != "events-only":
                self.facts.add_session(session)
        if self.case != "events-only" and not self.facts.search(
            self.app, user, f"what does {user} eat and which languages does {user} write?"
        ):
            family.problem("table_traces", f"{self.case}: {user}'s facts were not served to begin with")
        if not self.events.search(self.app, user, f"when does the project of {user} ship?"):
            family.problem("table_traces", f"{self.case}: {user}'s events were not found to begin with")
        if not memlab.events.logged_queries(self.db, self.app, user):
            family.problem("table_traces", f"{self.case}: {user}'s queries were not recorded to begin with")
        return sids

    def run(self, family: Family) -> None:
        gone, keep, marker = f"gone-{self.tag}", f"keep-{self.tag}", f"zq{self.tag}"
        self.fill(family, keep, ["I am vegetarian these days.", "I program in Rust and Go.", "I have a dog named Rex."],
                  "k")  # fmt: skip
        kept = cache_keys(self.cache_path)
        lines = ["I went pescatarian last month.", "I program in Haskell and Elixir.", f"I have a cat named {marker}."]
        sids = self.fill(family, gone, lines, "g")
        self.db.create_tenant_index(self.events.model.model_id, self.events.layer, self.app, gone)  # names the user
        needles = [gone, *sids, f"g{self.tag}0", f"g{self.tag}1", marker, "Haskell", "pescatarian"]
        gone_keys = cache_keys(self.cache_path) - kept
        missing = set(needles) - set(table_traces(self.db, needles))
        if missing or len(gone_keys) < 5 + 3:  # the user's bodies and chunks (and fact lines) were embedded
            family.problem("table_traces", f"{self.case}: the forgotten user was not stored to begin with "
                           f"({sorted(missing)} missing, {len(gone_keys)} cache entries)")  # fmt: skip
        order = {"events-only": ["events"], "events-then-facts": ["events", "facts"],
                 "facts-then-events": ["facts", "events"]}[self.case]  # fmt: skip
        for step in order:
            memory = self.events if step == "events" else self.facts
            memory.forget_user(self.app, gone)
        family.add("cases")
        for needle, places in table_traces(self.db, needles).items():
            family.problem("table_traces", f"{self.case}: {needle} in {', '.join(places)}")
        left = gone_keys & cache_keys(self.cache_path)
        if self.case == "events-only" and left:
            family.problem("event_cache_traces", f"{self.case}: {len(left)} cache entries of the user's texts left")
            family.add("event_cache_traces", len(left) - 1)
        elif left:
            family.add("fact_memory_cache_traces", len(left))
        if not kept <= cache_keys(self.cache_path):
            family.problem("kept_user_lost", f"{self.case}: erasure also dropped cache entries of the user kept")
        counts = (self.events.count(self.app, keep), self.chunks.count(self.app, keep))
        if counts != (5, 3) or (self.case != "events-only" and not self.facts.current(self.app, keep)):
            family.problem("kept_user_lost", f"{self.case}: the kept user has {counts} units (5, 3 stored) and "
                           f"{len(self.facts.current(self.app, keep))} current facts")  # fmt: skip


def erasure_figures() -> Family:
    """The erasure family before any case ran: every figure at zero, the must-be-zero ones named."""
    return Family("erasure", {"cases": 0, "tables_scanned": 0, "table_traces": 0, "event_cache_traces": 0,
                              "fact_memory_cache_traces": 0, "kept_user_lost": 0},
                  must_be_zero=["table_traces", "event_cache_traces", "fact_memory_cache_traces",
                                "kept_user_lost"])  # fmt: skip


def erasure_family(db: memlab.Store, embedder: memlab.Embedder, workdir: Path) -> Family:
    family = erasure_figures()
    inner = getattr(embedder, "inner", embedder)
    for case in ERASURE_CASES:
        ErasureCase(db, inner, case, workdir / f"erasure-{case}" / "embeddings.sqlite").run(family)
    with db.connection() as conn:
        query = "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        family.figures["tables_scanned"] = conn.execute(query).fetchone()[0]
    return family
