"""`strategy="auto"`: kept unit counts (no count per search), the calibrated policy stored with the store, and
the strategy each user gets: exact when small, a per-tenant index when `maintain` built one, the shared HNSW
index otherwise. Real PostgreSQL + pgvector and the packaged model."""

from __future__ import annotations

import psycopg
import pytest

import memlab
from tests.conftest import make_session

TEXTS = [f"Note number {i}: the {w} project meets on day {i % 7} about budget item {i * 13 % 97}."
         for i, w in enumerate(["apollo", "borealis", "cygnus", "draco", "eridanus"] * 8)]  # fmt: skip


def _load(mem: memlab.EventMemory, app: str, user: str, n: int, sessions: int = 2) -> int:
    per = max(1, n // sessions)
    batch = [make_session(app, user, f"{user}-s{s}", TEXTS[s * per : (s + 1) * per]) for s in range(sessions)]
    return mem.add_sessions(batch).added


def test_counts_follow_writes_and_deletes_and_leave_no_trace(scratch_store, embedder, app_name):
    mem = memlab.EventMemory(scratch_store, embedder)
    assert mem.count(app_name, "u1") == 0
    added = _load(mem, app_name, "u1", 20)
    assert added == 20 and mem.count(app_name, "u1") == 20
    assert _load(mem, app_name, "u1", 20) == 0 and mem.count(app_name, "u1") == 20, "a re-ingest adds nothing"
    mem.forget_session(app_name, "u1", "u1-s0")
    assert mem.count(app_name, "u1") == 10
    mem.forget_user(app_name, "u1")
    assert mem.count(app_name, "u1") == 0
    with psycopg.connect(scratch_store.dsn) as conn:
        left = conn.execute("SELECT count(*) FROM memory_unit_count WHERE user_id = 'u1'").fetchone()[0]
    assert left == 0, "an erased user keeps no count row"


def test_counts_fold_many_writes_into_one_row(scratch_store, embedder, app_name):
    mem = memlab.EventMemory(scratch_store, embedder)
    for i in range(40):  # one statement (one delta row) per session
        mem.add_session(make_session(app_name, "u2", f"s{i}", [TEXTS[i]]))
    assert mem.count(app_name, "u2") == 40  # this read folds the 40 delta rows
    with psycopg.connect(scratch_store.dsn) as conn:
        rows = conn.execute("SELECT count(*), sum(delta) FROM memory_unit_count WHERE user_id = 'u2'").fetchone()
    assert rows == (1, 40)


def test_policy_is_stored_with_the_database(scratch_store):
    assert scratch_store.auto_policy() == memlab.AutoPolicy()
    tuned = memlab.AutoPolicy(exact_below=123, tenant_index_above=456, ef_search=80, calibrated_on="test")
    scratch_store.save_auto_policy(tuned)
    with memlab.open_store(dsn=scratch_store.dsn) as other:  # another process opening the same database
        assert other.auto_policy() == tuned
    with pytest.raises(memlab.ConfigError, match="ef_search"):
        memlab.AutoPolicy(ef_search=0)


def test_auto_picks_exact_shared_index_then_tenant_index(scratch_store, embedder, app_name):
    scratch_store.save_auto_policy(memlab.AutoPolicy(exact_below=5, tenant_index_above=30, calibrated_on="test"))
    mem = memlab.EventMemory(scratch_store, embedder)
    _load(mem, app_name, "small", 4)
    _load(mem, app_name, "big", 40)
    query = "When does the cygnus project meet?"
    exact = memlab.SearchSettings(strategy="exact", top_k=5)
    assert mem.search(app_name, "small", query).plan == "exact"
    # 40 rows in a small table: walking the shared index for them costs more than scanning them
    assert mem.search(app_name, "big", query).plan == "exact"
    forced = memlab.SearchSettings(exact_below=5)  # the caller's own threshold is taken as given
    assert mem.search(app_name, "big", query, forced).plan == "hnsw"
    assert mem.maintain(app_name) == [
        scratch_store.create_tenant_index(mem.model.model_id, mem.layer, app_name, "big")
    ], "only the user above tenant_index_above gets an index"
    assert mem.maintain(app_name) == [], "maintain builds each index once"
    auto = mem.search(app_name, "big", query, memlab.SearchSettings(top_k=5))
    assert auto.plan == "tenant-index"
    assert "memlab_tenant_" in mem.explain(app_name, "big", query).plan, "the plan walks the tenant's own graph"
    assert [h.unit_id for h in auto] == [h.unit_id for h in mem.search(app_name, "big", query, exact)]
    # an explicit exact_below overrides the stored policy
    wide = memlab.SearchSettings(exact_below=1000)
    assert mem.search(app_name, "big", query, wide).plan == "exact"


def test_auto_reads_its_policy_without_a_second_connection(scratch_store, embedder, app_name):
    """Reading the policy inside the search's transaction took a second pooled connection while holding the
    first: on a 1-connection pool that waits forever, and 8 threads on 2 connections deadlocked."""
    mem = memlab.EventMemory(scratch_store, embedder)
    _load(mem, app_name, "u", 10)
    with memlab.open_store(dsn=scratch_store.dsn, pool_size=1, timeout=3) as one:  # its policy is not read yet
        hits = memlab.EventMemory(one, embedder).search(app_name, "u", "When does the apollo project meet?")
    assert hits.plan == "exact" and len(hits) == 10


def test_auto_reads_a_users_count_once_per_burst_and_again_after_its_own_writes(scratch_store, embedder, app_name):
    """auto keeps the count it read for a few seconds (a burst of searches pays one round trip); a write or
    delete through the same EventMemory is seen at once."""
    mem = memlab.EventMemory(scratch_store, embedder)
    _load(mem, app_name, "grow", 4, sessions=1)
    forced = memlab.SearchSettings(exact_below=5)  # exact up to 5 units, the shared index above
    query = "When does the borealis project meet?"
    assert mem.search(app_name, "grow", query, forced).plan == "exact"
    mem.add_session(make_session(app_name, "grow", "grow-more", TEXTS[10:16]))
    assert mem.search(app_name, "grow", query, forced).plan == "hnsw", "its own write drops what auto kept"
    mem.forget_session(app_name, "grow", "grow-more")
    assert mem.search(app_name, "grow", query, forced).plan == "exact", "so does its own delete"
    other = memlab.EventMemory(scratch_store, embedder)  # another process's write is seen within seconds
    other.add_session(make_session(app_name, "grow", "grow-elsewhere", TEXTS[20:26]))
    assert memlab.EventMemory(scratch_store, embedder).search(app_name, "grow", query, forced).plan == "hnsw"
