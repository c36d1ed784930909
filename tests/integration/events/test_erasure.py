"""Erasure leaves no trace: after forget_user (and forget_session, delete_memory) no table of the database and no
entry of the embedding cache holds the texts, ids or query hashes of what was erased."""

from __future__ import annotations

import hashlib
import time
import uuid
from datetime import timedelta

import pytest

import memlab
from memlab.lab.reliability import probes
from tests.conftest import T0, make_session

KEPT = [
    "Our payments service runs in eu-west-1 and we deploy it with Argo CD.",
    "The nightly billing export job writes CSV files to an S3 bucket at 2am.",
    "My daughter starts piano lessons on Thursday afternoons.",
]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class World:
    """One app with a user to keep and a user to erase, in event and chunk layers, with a private cache."""

    def __init__(self, store, embedder, cache_path, app_name):
        self.store, self.app = store, app_name
        self.cache_path = cache_path
        self.cache = memlab.embedding.EmbeddingCache(cache_path)
        cached = memlab.embedding.CachedEmbedder(embedder.inner, self.cache)
        self.events = memlab.EventMemory(store, cached)
        self.chunks = memlab.EventMemory(store, cached, granularity="chunk", chunk_size=2, chunk_overlap=1)
        tag = uuid.uuid4().hex[:8]
        self.user = f"gone-{tag}"
        self.markers = [f"zq{tag}{i}x" for i in range(6)]
        texts = [f"Remember that the {m} project ships on the first Monday of each quarter." for m in self.markers]
        self.sessions = {
            f"sa{tag}": texts[:3],
            f"sb{tag}": texts[4:6],
        }
        self.grown = texts[:4]  # session A later grows by one event: its trailing chunk is replaced
        self.queries = [f"when does {self.markers[0]} ship", f"what about {self.markers[5]}"]
        self.bodies: set[str] = set()

    @property
    def ids(self) -> list[str]:
        return [self.user, *self.sessions]

    def ingest(self) -> None:
        self.events.add_session(make_session(self.app, "keeper", "keep-s1", KEPT))
        self.chunks.add_session(make_session(self.app, "keeper", "keep-s1", KEPT))
        for sid, texts in self.sessions.items():
            for mem in (self.events, self.chunks):
                mem.add_session(make_session(self.app, self.user, sid, texts))
        self.bodies |= self.stored_bodies(self.user)
        sid_a = next(iter(self.sessions))
        for mem in (self.events, self.chunks):
            assert mem.add_session(make_session(self.app, self.user, sid_a, self.grown)).added >= 1
        self.bodies |= self.stored_bodies(self.user)
        for q in self.queries:
            assert self.events.search(self.app, self.user, q)

    def stored_bodies(self, user: str) -> set[str]:
        with self.store.connection() as conn:
            rows = conn.execute("SELECT body FROM memory_unit WHERE app_name = %s AND user_id = %s", [self.app, user])
            return {r[0] for r in rows.fetchall()}

    def cache_keys(self) -> set[str]:
        return probes.cache_keys(self.cache_path)

    def table_traces(self, needles: list[str]) -> dict[str, list[str]]:
        """needle -> tables of the current schema with a row whose text form holds it, and indexes whose
        definition does (the erasure family's scan of `memlab check reliability`)."""
        return probes.table_traces(self.store, needles)


@pytest.fixture
def world(scratch_store, embedder, tmp_path, app_name):
    w = World(scratch_store, embedder, tmp_path / "cache" / "embeddings.sqlite", app_name)
    w.ingest()
    return w


def test_forget_user_leaves_no_trace_in_any_table_or_the_cache(world):
    w = world
    keep_bodies = w.stored_bodies("keeper")
    assert {sha(b) for b in w.bodies} <= w.cache_keys(), "the cache holds every embedded body"
    assert not {sha(q) for q in w.queries} & w.cache_keys(), "a search's query is never written to the cache"
    w.events.delete_memory(w.app, w.user, next(iter(w.sessions)) + "-e1")  # leaves a tombstone
    w.store.create_tenant_index(w.events.model.model_id, w.events.layer, w.app, w.user)  # names the user
    assert w.table_traces(w.ids + w.markers), "the user is in the database before"

    from memlab.safety import clean_texts

    assert not any(clean_texts.holds_secret(b) for b in w.bodies)  # as an ingest of them does: scanned, found clean
    assert all(clean_texts.text_key(b) in clean_texts._CLEAN for b in w.bodies), "texts found clean are remembered"
    deleted = w.events.forget_user(w.app, w.user)

    assert deleted > 0 and not w.stored_bodies(w.user)
    assert not any(clean_texts.text_key(b) in clean_texts._CLEAN for b in w.bodies), "erasure drops the scan memo"
    assert w.table_traces(w.ids + w.markers) == {}
    assert not {sha(t) for t in w.bodies | set(w.queries)} & w.cache_keys()
    assert {sha(b) for b in keep_bodies} <= w.cache_keys(), "other users' cached texts stay"
    assert w.events.count(w.app, "keeper") == 3 and w.chunks.count(w.app, "keeper") == 2


def _vacuum_count(store, table: str) -> int:
    with store.connection() as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = %s AND schemaname = current_schema()",
            [table],
        ).fetchone()
    return int(row[0])


def _wait_for_vacuum(store, table: str, before: int) -> bool:
    for _ in range(50):
        if _vacuum_count(store, table) > before:
            return True
        time.sleep(0.1)
    return False


def test_forget_user_with_vacuum_also_clears_statistics_and_the_cache_file(world):
    w = world
    w.store.analyze()  # the planner's statistics now sample the user's ids and texts
    with w.store.connection() as conn:
        stats = " ".join(
            str(r)
            for r in conn.execute(
                "SELECT most_common_vals::text, histogram_bounds::text FROM pg_stats "
                "WHERE schemaname = current_schema() AND tablename = 'memory_unit'"
            ).fetchall()
        )
    assert w.user in stats
    before = {t: _vacuum_count(w.store, t) for t in ("memory_unit", "memory_tombstone")}

    assert w.events.forget_user(w.app, w.user, vacuum=True) > 0

    assert all(_wait_for_vacuum(w.store, t, n) for t, n in before.items())
    with w.store.connection() as conn:
        stats = " ".join(
            str(r)
            for r in conn.execute(
                "SELECT most_common_vals::text, histogram_bounds::text FROM pg_stats "
                "WHERE schemaname = current_schema() AND tablename IN ('memory_unit', 'memory_tombstone')"
            ).fetchall()
        )
    assert not [n for n in w.ids + w.markers if n in stats]
    assert w.table_traces(w.ids + w.markers) == {}
    hashes = [sha(t).encode() for t in w.bodies]
    files = list(w.cache_path.parent.glob(w.cache_path.name + "*"))
    assert files and not [f.name for f in files if any(h in f.read_bytes() for h in hashes)]


def test_delete_memory_drops_the_cached_vectors_of_what_it_deleted(world):
    w = world
    sid = next(iter(w.sessions))
    target = f"{sid}-e1"
    with w.store.connection() as conn:
        gone = {r[0] for r in conn.execute(
            "SELECT body FROM memory_unit WHERE app_name = %s AND user_id = %s AND %s = ANY(event_ids)",
            [w.app, w.user, target],
        ).fetchall()}  # fmt: skip
    assert len(gone) == 3, "the event and the two chunks holding it"
    before = _vacuum_count(w.store, "memory_unit")
    assert w.events.delete_memory(w.app, w.user, target, session_id=sid, vacuum=True) == 3
    assert _wait_for_vacuum(w.store, "memory_unit", before)
    assert not {sha(b) for b in gone} & w.cache_keys()
    assert {sha(b) for b in w.stored_bodies(w.user)} <= w.cache_keys(), "the rest stays cached"
    assert w.table_traces([w.markers[1]]) == {}, "the deleted event's text is nowhere"


def test_forget_session_removes_one_session_in_every_layer(world):
    w = world
    sid_a, sid_b = list(w.sessions)
    with w.store.connection() as conn:
        rows = conn.execute(
            "SELECT body FROM memory_unit WHERE app_name = %s AND user_id = %s AND session_id = %s",
            [w.app, w.user, sid_a],
        ).fetchall()
    bodies_a = {r[0] for r in rows}
    w.events.delete_memory(w.app, w.user, f"{sid_a}-e2", session_id=sid_a)
    left = w.stored_bodies(w.user)
    report = w.events.forget_session(w.app, w.user, sid_a)
    assert isinstance(report, memlab.types.DeletionReport)
    assert report.units == len(rows) - 3 and report.tombstones == 1 and report.cache_entries >= report.units
    assert w.table_traces([sid_a, *w.markers[:4]]) == {}
    assert not {sha(b) for b in bodies_a} & w.cache_keys()
    assert w.stored_bodies(w.user) == left - bodies_a and w.stored_bodies(w.user), "session B stays"
    assert {h.session_id for h in w.events.search(w.app, w.user, "project ships")} == {sid_b}
    assert w.chunks.count(w.app, w.user) == 1 and w.events.count(w.app, w.user) == 2
    again = w.events.add_session(make_session(w.app, w.user, sid_a, w.grown, start=T0 + timedelta(days=1)))
    assert again.added == 4 and not again.skipped, "a forgotten session can be added again"
    with pytest.raises(memlab.ConfigError, match="session_id None"):
        w.events.forget_session(w.app, w.user, None)
