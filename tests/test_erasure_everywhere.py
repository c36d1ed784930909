"""Erasure across both memories: a user with event memory, chunk memory and fact memory (facts, observations,
watermarks, the served fact lines ranked by the embedder) is forgotten with `EventMemory.forget_user` and
`FactMemory.forget_user`, in either order. Afterwards no table of the schema (every table pg_tables lists, so a
table added later cannot escape) and no entry of the embedding cache holds a trace of that user: ids, texts, fact
values, or the hash of any text embedded for them (searches' queries included). tests/events/test_erasure.py
covers event memory alone."""

from __future__ import annotations

import hashlib
import sqlite3
import uuid
from contextlib import closing
from datetime import UTC, datetime, timedelta

import pytest
from psycopg import sql

import memlab


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_keys(path) -> set[str]:
    with closing(sqlite3.connect(path)) as db:
        return {k for (k,) in db.execute("SELECT text_sha256 FROM embedding")}


def table_traces(store, needles: list[str]) -> dict[str, list[str]]:
    """needle -> the tables (every table of the schema) and index definitions whose text holds it."""
    found: dict[str, list[str]] = {}
    with store.connection() as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
        ).fetchall()]  # fmt: skip
        assert {"memory_unit", "memory_tombstone", "semantic_fact", "semantic_fact_observation",
                "fact_watermark"} <= set(tables)  # fmt: skip
        for table in tables:
            rows = conn.execute(sql.SQL("SELECT t::text FROM {} AS t").format(sql.Identifier(table))).fetchall()
            for needle in needles:
                if any(needle in r[0] for r in rows):
                    found.setdefault(needle, []).append(table)
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
        ).fetchall()
        for needle in needles:
            found.setdefault(needle, []).extend(n for n, d in indexes if needle in d)
    return {k: v for k, v in found.items() if v}


def sessions(app: str, user: str, tag: str, facts: list[str]) -> list[memlab.Session]:
    start = datetime.now(UTC) - timedelta(days=2)  # recent: the facts are served (and so embedded)
    out = []
    for k, lines in enumerate([facts[:2], facts[2:]]):
        texts = [*lines, f"Remember that the {tag}{k} project ships on the first Monday of each quarter."]
        events = [memlab.Event(f"e{i}", "user", start + timedelta(hours=k, minutes=i), t) for i, t in enumerate(texts)]
        out.append(memlab.Session(app, user, f"s-{tag}-{k}", events))
    return out


class Forgotten:
    """A kept user and a forgotten one in one app (events, chunks, facts, a private cache), the forgotten one
    erased with EventMemory.forget_user and FactMemory.forget_user in the given order."""

    def __init__(self, store, embedder, cache_path, order: str) -> None:
        self.store, self.cache_path = store, cache_path
        cached = memlab.CachedEmbedder(embedder.inner, memlab.EmbeddingCache(cache_path))
        events = memlab.EventMemory(store, cached)
        chunks = memlab.EventMemory(store, cached, "chunk", chunk_size=2, chunk_overlap=1)
        facts = memlab.FactMemory(store, cached, extractor=memlab.RuleExtractor())
        app, tag = "erasure-app", uuid.uuid4().hex[:8]
        gone, keep = f"gone-{tag}", f"keep-{tag}"
        marker = f"zq{tag}"

        def fill(user: str, lines: list[str], who: str) -> None:
            for session in sessions(app, user, f"{who}{tag}", lines):
                events.add_session(session)
                chunks.add_session(session)
                facts.add_session(session)
            assert facts.search(app, user, f"what does {user} eat and which languages does {user} write?")
            assert events.search(app, user, f"when does the project of {user} ship?")

        fill(keep, ["I am vegetarian these days.", "I program in Rust and Go.", "I have a dog named Rex."], "k")
        self.kept_keys = cache_keys(cache_path)
        fill(gone, ["I went pescatarian last month.", "I program in Haskell and Elixir.",
                    f"I have a cat named {marker}."], "g")  # fmt: skip
        store.create_tenant_index(events.model.model_id, events.layer, app, gone)  # its definition names the user
        self.gone_keys = cache_keys(cache_path) - self.kept_keys
        self.needles = [gone, f"s-g{tag}-0", f"s-g{tag}-1", f"g{tag}0", f"g{tag}1", marker, "Haskell", "pescatarian"]
        assert set(table_traces(store, self.needles)) == set(self.needles), "every needle is stored before"
        assert len(self.gone_keys) >= 5 + 3, "the user's bodies and chunks (and fact lines) were embedded"

        steps = [lambda: events.forget_user(app, gone), lambda: facts.forget_user(app, gone)]
        for step in steps if order == "events-then-facts" else steps[::-1]:
            step()
        assert facts.current(app, keep) and events.count(app, keep) == 5 and chunks.count(app, keep) == 3
        assert not facts.rows(app, gone) and events.count(app, gone) == chunks.count(app, gone) == 0


ORDERS = ["events-then-facts", "facts-then-events"]


@pytest.mark.parametrize("order", ORDERS)
def test_forget_user_in_both_memories_leaves_no_trace_in_any_table(scratch_store, embedder, tmp_path, order):
    w = Forgotten(scratch_store, embedder, tmp_path / "cache" / "embeddings.sqlite", order)
    assert table_traces(scratch_store, w.needles) == {}
    assert w.kept_keys <= cache_keys(w.cache_path), "the other user's cached texts stay"


@pytest.mark.parametrize("order", ORDERS)
def test_forget_user_in_both_memories_leaves_no_trace_in_the_embedding_cache(scratch_store, embedder, tmp_path, order):
    w = Forgotten(scratch_store, embedder, tmp_path / "cache" / "embeddings.sqlite", order)
    left = w.gone_keys & cache_keys(w.cache_path)
    assert not left, f"{len(left)} of the {len(w.gone_keys)} cache entries of the forgotten user's texts are left"
