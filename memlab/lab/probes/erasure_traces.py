"""Erasure: after forget_user no table of the schema and no cache entry holds the user."""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

from psycopg import sql

import memlab
from memlab.lab.probes.family import Family

# -- erasure ----------------------------------------------------------------------------------------------------



def _table_traces(store: memlab.Store, needles: list[str]) -> list[str]:
    """`table: needle` for every table of the schema (and index definition) whose text holds a needle."""
    found = []
    with store.connection() as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1").fetchall()]  # fmt: skip
        for table in tables:
            rows = conn.execute(sql.SQL("SELECT t::text FROM {} AS t").format(sql.Identifier(table))).fetchall()
            found += [f"{table}: {n}" for n in needles if any(n in r[0] for r in rows)]
        for name, definition in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
        ).fetchall():
            found += [f"index {name}: {n}" for n in needles if n in definition]
    return found


def _cache_keys(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as db:
        return {k for (k,) in db.execute("SELECT text_sha256 FROM embedding")}


class _ErasureCase:
    """A kept user and a forgotten one in one app, in event and chunk memory (and fact memory unless
    `events-only`), with a private cache file."""

    def __init__(self, db: memlab.Store, inner: memlab.Embedder, case: str, cache_path: Path) -> None:
        self.db, self.case, self.cache_path = db, case, cache_path
        cached = memlab.CachedEmbedder(inner, memlab.EmbeddingCache(cache_path))
        self.events = memlab.EventMemory(db, cached)
        self.chunks = memlab.EventMemory(db, cached, "chunk", chunk_size=2, chunk_overlap=1)
        self.facts = memlab.FactMemory(db, cached, extractor=memlab.RuleExtractor())
        self.app, self.tag = "erasure", uuid.uuid4().hex[:8]
        self.start = datetime.now(UTC) - timedelta(days=2)  # recent: facts are served (and so embedded)

    def fill(self, user: str, lines: list[str], who: str) -> list[str]:
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
        if self.case != "events-only":
            self.facts.search(self.app, user, f"what does {user} eat and which languages does {user} write?")
        self.events.search(self.app, user, f"when does the project of {user} ship?")
        return sids

    def run(self, family: Family) -> None:
        gone, keep, marker = f"gone-{self.tag}", f"keep-{self.tag}", f"zq{self.tag}"
        self.fill(keep, ["I am vegetarian these days.", "I program in Rust and Go.", "I have a dog named Rex."], "k")
        kept = _cache_keys(self.cache_path)
        lines = ["I went pescatarian last month.", "I program in Haskell and Elixir.", f"I have a cat named {marker}."]
        sids = self.fill(gone, lines, "g")
        self.db.create_tenant_index(self.events.model.model_id, self.events.layer, self.app, gone)
        needles = [gone, *sids, f"g{self.tag}0", f"g{self.tag}1", marker]
        gone_keys = _cache_keys(self.cache_path) - kept
        if not _table_traces(self.db, needles) or not gone_keys:
            family.problem("table_traces", f"{self.case}: the forgotten user was not stored to begin with")
        order = {"events-only": ["events"], "events-then-facts": ["events", "facts"],
                 "facts-then-events": ["facts", "events"]}[self.case]  # fmt: skip
        for step in order:
            memory = self.events if step == "events" else self.facts
            memory.forget_user(self.app, gone)
        family.add("cases")
        for trace in _table_traces(self.db, needles):
            family.problem("table_traces", f"{self.case}: {trace}")
        left = gone_keys & _cache_keys(self.cache_path)
        if self.case == "events-only" and left:
            family.problem("event_cache_traces", f"{self.case}: {len(left)} cache entries of the user's texts left")
            family.add("event_cache_traces", len(left) - 1)
        elif left:
            family.add("fact_memory_cache_traces", len(left))
        if not kept <= _cache_keys(self.cache_path):
            family.notes.append(f"{self.case}: erasure also dropped cache entries of the user kept")


def erasure_family(db: memlab.Store, embedder: memlab.Embedder, workdir: Path) -> Family:
    family = Family("erasure", {"cases": 0, "tables_scanned": 0, "table_traces": 0, "event_cache_traces": 0,
                                "fact_memory_cache_traces": 0},
                    must_be_zero=["table_traces", "event_cache_traces", "fact_memory_cache_traces"])  # fmt: skip
    inner = getattr(embedder, "inner", embedder)
    for case in ("events-only", "events-then-facts", "facts-then-events"):
        _ErasureCase(db, inner, case, workdir / f"erasure-{case}" / "embeddings.sqlite").run(family)
    with db.connection() as conn:
        query = "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        family.figures["tables_scanned"] = conn.execute(query).fetchone()[0]
    return family


