"""EventMemory on the real embedded PostgreSQL with the real packaged model."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import numpy as np
import pytest

import memlab
from memlab import lab
from memlab.lab.datasets.synth.vectors import background_rows
from tests.conftest import T0, make_session

DEPLOY = [
    "Our payments service runs in eu-west-1 and we deploy it with Argo CD.",
    "Got it: payments lives in eu-west-1 and ships through Argo CD.",
    "The nightly billing export job writes CSV files to an S3 bucket at 2am.",
    "Noted, the billing export runs nightly at 2am into S3.",
    "My daughter starts piano lessons on Thursday afternoons.",
]


def test_ingest_reports_added_and_skipped(event_memory, app_name):
    session = make_session(app_name, "u1", "s1", DEPLOY)
    extra = [
        memlab.Event("s1-p", "model", T0 + timedelta(hours=1), "Payments is in", partial=True),
        memlab.Event("s1-f", "model", T0 + timedelta(hours=1), function_calls=(memlab.FunctionCall("lookup"),)),
        memlab.Event("s1-s", "user", T0 + timedelta(hours=1), "ok thanks"),
        memlab.Event("s1-k", "user", T0 + timedelta(hours=1), "use this key AKIAIOSFODNN7EXAMPLE for the bucket"),
    ]
    session = memlab.Session(app_name, "u1", "s1", [*session.events, *extra])
    report = event_memory.add_session(session)
    assert report.added == 5
    assert dict(report.skipped) == {"partial": 1, "function_call": 1, "too_short": 1, "secret": 1}
    with event_memory.store.connection() as conn:
        bodies = [
            r[0]
            for r in conn.execute(
                "SELECT body FROM memory_unit WHERE app_name = %s AND user_id = 'u1'", [app_name]
            ).fetchall()
        ]
    assert len(bodies) == 5
    assert not any("AKIA" in b or b == "ok thanks" or b == "Payments is in" for b in bodies)


def test_reingest_is_a_noop_and_embeds_nothing(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    session = make_session(app_name, "u1", "s1", DEPLOY)
    first = mem.add_session(session)
    before = embedder.computed
    again = [mem.add_session(session) for _ in range(3)]
    assert first.added == 5
    assert all(r.added == 0 and r.already_stored == 5 and r.embedded == 0 for r in again)
    assert embedder.computed == before
    assert mem.count(app_name, "u1") == 5


def test_concurrent_ingest_of_the_same_session_stores_each_unit_once(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    session = make_session(app_name, "u1", "s1", [f"{t} (variant {i})" for i, t in enumerate(DEPLOY * 4)])
    reports: list[memlab.IngestReport] = []
    barrier = threading.Barrier(2)

    def ingest() -> None:
        barrier.wait()
        reports.append(mem.add_session(session))

    threads = [threading.Thread(target=ingest) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.added for r in reports) == [0, 20]
    assert sum(r.embedded for r in reports) == 20, "the second writer must see the rows, not embed again"
    assert mem.count(app_name, "u1") == 20


def test_one_users_search_never_returns_another_users_rows(event_memory, app_name):
    twin = "We are flying to Lisbon for the first week of June with the two kids."
    event_memory.add_session(
        make_session(app_name, "alice", "a1", [twin, "Alice prefers aisle seats on long flights."])
    )
    event_memory.add_session(make_session(app_name, "bob", "b1", [twin.replace("June", "July"), "Bob likes trains."]))
    event_memory.add_session(make_session(app_name + "-other", "alice", "x1", [twin]))  # same user id, other app
    for strategy in ("auto", "hnsw", "exact", "planner"):
        for scan in ("off", "relaxed_order", "strict_order"):
            settings = memlab.SearchSettings(top_k=50, strategy=strategy, iterative_scan=scan)
            hits = event_memory.search(app_name, "alice", "Lisbon trip with kids in June", settings)
            assert hits, (strategy, scan)
            assert {h.unit_id for h in hits} <= {"a1-e0", "a1-e1"}, (strategy, scan)
    assert event_memory.search(app_name, "carol", "Lisbon trip") == []


def test_cutoff_drops_far_hits(event_memory, app_name):
    event_memory.add_session(make_session(app_name, "u1", "s1", DEPLOY))
    query = "Which region does the payments service run in?"
    everything = event_memory.search(app_name, "u1", query, memlab.SearchSettings(strategy="exact"))
    assert [h.distance for h in everything] == sorted(h.distance for h in everything)
    assert everything[0].unit_id in {"s1-e0", "s1-e1"}
    cut = (everything[1].distance + everything[2].distance) / 2
    near = event_memory.search(app_name, "u1", query, memlab.SearchSettings(strategy="exact", max_distance=cut))
    assert [h.unit_id for h in near] == [h.unit_id for h in everything[:2]]
    assert near.dropped_by_cutoff == len(everything) - 2
    assert all(h.distance <= cut for h in near)


def test_hits_carry_provenance(event_memory, app_name):
    event_memory.add_session(make_session(app_name, "u1", "s1", DEPLOY))
    hit = event_memory.search(app_name, "u1", "Argo CD deployment of payments")[0]
    assert hit.session_id == "s1" and hit.event_ids == (hit.unit_id,)
    assert hit.author in {"user", "model"} and hit.timestamp is not None and hit.timestamp.tzinfo is not None
    assert "Argo CD" in hit.text and 0.0 <= hit.distance < 1.0


@pytest.mark.parametrize("analyzed", [False, True])
def test_strategies_take_the_plan_they_promise(scratch_store, embedder, app_name, analyzed):
    """Checked with EXPLAIN on a table loaded moments ago in a new database (no ANALYZE yet) and after ANALYZE."""
    store = scratch_store
    mem = memlab.EventMemory(store, embedder, granularity="chunk", chunk_size=2, chunk_overlap=0)
    mem.add_session(make_session(app_name, "u1", "s1", DEPLOY * 6))
    if analyzed:
        store.analyze()
    hnsw = mem.explain(app_name, "u1", "payments region", memlab.SearchSettings(strategy="hnsw"))
    exact = mem.explain(app_name, "u1", "payments region", memlab.SearchSettings(strategy="exact"))
    assert hnsw.uses_hnsw and mem.index_name in hnsw.plan and "actual time" in hnsw.plan
    assert not exact.uses_hnsw and mem.index_name not in exact.plan
    assert exact.access_path != "seq_scan", "exact reads the user's rows through an index, never the whole table"
    planner = mem.search(app_name, "u1", "payments region", memlab.SearchSettings(strategy="planner"))
    assert planner.plan in {"hnsw", "scope_index", "primary_key", "seq_scan"}
    exact_hits = mem.search(app_name, "u1", "payments region", memlab.SearchSettings(strategy="exact"))
    assert len(exact_hits) == min(10, mem.count(app_name, "u1")), "exact scores every row of the user"


def test_wrong_embedding_dimension_is_refused_before_anything_is_written(store, embedder, app_name):
    class Truncating:
        """Claims the real model id but returns one dimension too few (a broken embedder)."""

        model_id = embedder.model_id
        dimension = embedder.dimension

        def embed_documents(self, texts):
            return embedder.embed_documents(texts)[:, :-1]

        def embed_query(self, text):
            return embedder.embed_query(text)[:-1]

    mem = memlab.EventMemory(store, Truncating())
    with pytest.raises(memlab.DimensionError, match=r"\(5, 383\).*384.*Nothing was written"):
        mem.add_session(make_session(app_name, "u1", "s1", DEPLOY))
    assert memlab.EventMemory(store, embedder).count(app_name, "u1") == 0
    with pytest.raises(memlab.DimensionError):
        mem.search(app_name, "u1", "payments")


def test_chunks_hold_their_event_ids_and_grow_with_the_session(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder, granularity="chunk", chunk_size=3, chunk_overlap=1)
    first = make_session(app_name, "u1", "s1", DEPLOY[:4])
    assert mem.add_session(first).added == 2  # windows [0..2], [2..3]
    grown = make_session(app_name, "u1", "s1", DEPLOY)
    report = mem.add_session(grown)
    assert report.replaced == 1 and report.already_stored == 1  # the trailing window grew to [2..4]
    hits = mem.search(app_name, "u1", "piano lessons", memlab.SearchSettings(strategy="exact"))
    assert hits[0].event_ids == ("s1-e2", "s1-e3", "s1-e4")
    assert "user: " in hits[0].text and "model: " in hits[0].text
    assert mem.count(app_name, "u1") == 2
    events_only = memlab.EventMemory(store, embedder)
    assert events_only.count(app_name, "u1") == 0, "layers never mix"


def test_forget_user_and_purge_before(event_memory, app_name):
    event_memory.add_session(make_session(app_name, "u1", "s1", DEPLOY))
    event_memory.add_session(make_session(app_name, "u2", "s2", DEPLOY, start=T0 + timedelta(days=30)))
    assert event_memory.purge_before(T0 + timedelta(days=1), app_name=app_name) == 5
    assert event_memory.count(app_name, "u1") == 0 and event_memory.count(app_name, "u2") == 5
    assert event_memory.forget_user(app_name, "u2") == 5
    assert event_memory.search(app_name, "u2", "payments") == []


def test_migrate_embeddings_writes_new_rows_beside_old_ones(store, embedder, app_name):
    old = memlab.EventMemory(store, embedder)
    old.add_session(make_session(app_name, "u1", "s1", DEPLOY))
    new_embedder = memlab.embedding.SentenceTransformerEmbedder(
        memlab.embedding.packaged_minilm_path(), model_id="minilm-test", truncate_dim=128
    )
    scoped = memlab.events.migrate_embeddings(store, embedder.model_id, new_embedder, app_name=app_name + "-none")
    assert scoped.rows_read == 0, "a migration scoped to another app touches nothing here"
    report = old.migrate_embeddings(embedder.model_id, new_embedder)
    assert report.rows_added >= 5 and report.new_model == "minilm-test@128"
    new = memlab.EventMemory(store, new_embedder)
    assert new.count(app_name, "u1") == 5 and old.count(app_name, "u1") == 5
    assert new.search(app_name, "u1", "Argo CD payments region")[0].unit_id in {"s1-e0", "s1-e1"}
    assert old.migrate_embeddings(embedder.model_id, new_embedder).rows_added == 0, "resumable, idempotent"
    assert store.drop_model("minilm-test@128") >= 5
    assert old.count(app_name, "u1") == 5


def test_small_user_among_large_ones_needs_iterative_scans(scratch_store, embedder, app_name, fixture_set):
    """The filtered-search trap: 30 rows of one user among 12,000 on the same topics (own database, so the
    12,000 tightly clustered rows do not shape the HNSW graph other tests search)."""
    store = scratch_store
    mem = memlab.EventMemory(store, embedder)
    texts = [e.text.strip() for s in fixture_set.sessions() for e in mem.kept_events(s)[0]]
    base = embedder.embed_documents(texts)
    sizes = {f"big{i:02d}": 600 for i in range(20)}
    mem.bulk_load(background_rows(app_name, sizes, base, noise=0.02, seed=7))
    dan = fixture_set.user("deploy-assistant", "dan")
    lena = next(u for u in fixture_set.users if u.app_name == "finance-helper")
    small_texts = [e.text.strip() for u in (dan, lena) for s in u.sessions for e in mem.kept_events(s)[0]][:30]
    small = [make_session(app_name, "small", f"small-{i}", small_texts[i : i + 5]) for i in range(0, 30, 5)]
    mem.add_sessions(small)
    n_small = mem.count(app_name, "small")
    assert n_small == 30
    query = "how do we roll out the payments service"
    truth = lab.FaissExact.from_memory(mem, app_name=app_name, user_id="small").search(app_name, "small", query)

    def hnsw(scan: str) -> memlab.Hits:
        return mem.search(app_name, "small", query, memlab.SearchSettings(strategy="hnsw", iterative_scan=scan))

    plain, relaxed, strict = hnsw("off"), hnsw("relaxed_order"), hnsw("strict_order")
    assert len(truth) == 10
    assert len(plain) < 10, "plain HNSW at ef_search=40 should lose rows of a 0.25% user"
    assert len(relaxed) == 10 and len(strict) == 10
    recall = len(set(relaxed.unit_ids) & set(truth.unit_ids)) / 10
    assert recall >= 0.8
    assert [h.distance for h in relaxed] == sorted(h.distance for h in relaxed), "relaxed results are re-sorted"
    assert all(h.unit_id.startswith("small-") for h in relaxed + strict + plain)
    auto = mem.search(app_name, "small", query)  # default: `auto` scores all 30 rows exactly
    assert auto.plan == "exact" and auto.unit_ids == truth.unit_ids
    assert mem.search(app_name, "small", query, memlab.SearchSettings(exact_below=29)).plan == "hnsw"
    np.testing.assert_allclose(
        [h.distance for h in mem.search(app_name, "small", query, memlab.SearchSettings(strategy="exact"))],
        [h.distance for h in truth],
        atol=1e-5,
    )


# -- identity: an event is (session, event id); ADK ids are unique per session, not per user ------------------


def _one(app, user, sid, eid, text, at=T0):
    return memlab.Session(app, user, sid, [memlab.Event(eid, "user", at, text)])


def test_same_event_id_in_two_sessions_is_two_memories(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    a = _one(app_name, "u1", "s1", "e1", DEPLOY[0])
    b = _one(app_name, "u1", "s2", "e1", DEPLOY[4], T0 + timedelta(days=1))
    first, second = mem.add_session(a), mem.add_session(b)
    assert (first.added, second.added, second.already_stored, second.skipped_total) == (1, 1, 0, 0)
    assert mem.count(app_name, "u1") == 2
    hits = mem.search(app_name, "u1", "piano lessons on Thursday", memlab.SearchSettings(strategy="exact"))
    assert {(h.session_id, h.unit_id) for h in hits} == {("s1", "e1"), ("s2", "e1")}
    assert hits[0].session_id == "s2" and "piano" in hits[0].text and hits[0].event_ids == ("e1",)
    again = [mem.add_session(a), mem.add_session(b)]
    assert all(r.added == 0 and r.already_stored == 1 and r.embedded == 0 for r in again), "re-ingest stays a no-op"
    chunks = memlab.EventMemory(store, embedder, granularity="chunk", chunk_size=2, chunk_overlap=0)
    assert chunks.add_sessions([a, b]).added == 2
    assert chunks.count(app_name, "u1") == 2


def test_one_users_stored_events_never_spare_another_users_event_the_filters(store, embedder, app_name):
    """A re-ingest skips the filters of events already stored; the lookup that says so is per user, even when
    two users' sessions share ids and arrive in one batch (the second user's secret must still be caught)."""
    mem = memlab.EventMemory(store, embedder)
    mine = _one(app_name, "u1", "s1", "e1", DEPLOY[0])
    assert mem.add_session(mine).added == 1
    theirs = _one(app_name, "u2", "s1", "e1", "use this key AKIAIOSFODNN7EXAMPLE for the bucket")
    report = mem.add_sessions([mine, theirs])
    assert (report.added, report.already_stored, dict(report.skipped)) == (0, 1, {"secret": 1})
    assert mem.count(app_name, "u2") == 0
    mem.delete_memory(app_name, "u1", "e1", session_id="s1")
    again = mem.add_sessions([mine, _one(app_name, "u2", "s1", "e1", DEPLOY[4])])
    assert (again.added, dict(again.skipped)) == (1, {"deleted": 1}), "one user's tombstone is not another's"
    assert [h.text for h in mem.search(app_name, "u2", "piano")] == [DEPLOY[4]]


def test_a_repeated_event_id_within_one_session_is_a_counted_skip(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    events = [memlab.Event("e1", "user", T0, DEPLOY[0]), memlab.Event("e1", "model", T0, DEPLOY[2])]
    session = memlab.Session(app_name, "u1", "s1", events)
    report = mem.add_session(session)
    assert (report.added, report.embedded) == (1, 1), "nothing is embedded that is not stored"
    assert dict(report.skipped) == {"duplicate_id": 1}
    assert [h.text for h in mem.search(app_name, "u1", "payments")] == [DEPLOY[0]], "the first one is kept"
    again = mem.add_session(session)
    assert (again.added, again.already_stored, dict(again.skipped)) == (0, 1, {"duplicate_id": 1})
    chunks = memlab.EventMemory(store, embedder, granularity="chunk", chunk_size=3, chunk_overlap=1)
    report = chunks.add_session(
        memlab.Session(app_name, "u2", "s1", [*events, memlab.Event("e2", "user", T0, DEPLOY[4])])
    )
    assert dict(report.skipped) == {"duplicate_id": 1} and report.added == 1


def test_deleting_an_event_of_one_session_leaves_the_same_id_in_another(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    a = _one(app_name, "u1", "s1", "e1", DEPLOY[0])
    b = _one(app_name, "u1", "s2", "e1", DEPLOY[4])
    mem.add_sessions([a, b])
    assert mem.delete_memory(app_name, "u1", "e1", session_id="s1") == 1
    assert [h.session_id for h in mem.search(app_name, "u1", "payments piano")] == ["s2"]
    assert dict(mem.add_session(a).skipped) == {"deleted": 1}, "the deleted event does not come back"
    assert mem.add_session(b).already_stored == 1, "the other session's e1 is untouched"
    assert mem.delete_memory(app_name, "u1", "e1") == 1, "without a session, the id goes in every session"
    assert mem.count(app_name, "u1") == 0
    assert dict(mem.add_session(b).skipped) == {"deleted": 1}
    # Deleted before it was ever stored: refused in that session only.
    assert mem.delete_memory(app_name, "u1", "e9", session_id="s3") == 0
    assert dict(mem.add_session(_one(app_name, "u1", "s3", "e9", DEPLOY[2])).skipped) == {"deleted": 1}
    assert mem.add_session(_one(app_name, "u1", "s4", "e9", DEPLOY[2])).added == 1


def test_ingest_with_progress_shows_one_display_and_stores_everything(store, embedder, app_name, capsys):
    mem = memlab.EventMemory(store, embedder)
    sessions = [make_session(app_name, "u1", f"s{i}", DEPLOY) for i in range(3)]
    report = mem.add_sessions(sessions, batch_units=5, progress=True)
    assert report.added == 15 and mem.count(app_name, "u1") == 15
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert "embed (" in text and "write (" in text, "embed and write are two tasks of one display"
    assert "Batches" not in text and "Loading weights" not in text, "no third-party progress bar"


def test_sessions_are_batched_in_order_each_session_whole(app_name):
    """Batches fill up to batch_units (a session is never split: a batch closes once it holds batch_units), in the
    sessions' order; the last holds what is left, and a job of one batch stays whole."""
    from memlab.events.batches import batch_sessions

    sessions = [make_session(app_name, "u", f"s{i}", DEPLOY[: 1 + i % 3]) for i in range(80)]
    batches = batch_sessions(sessions, 32)
    assert [s for b in batches for s in b] == sessions
    sizes = [sum(len(s.events) for s in b) for b in batches]
    assert all(32 <= n < 32 + 3 for n in sizes[:-1]) and 0 < sizes[-1] < 32 + 3, sizes
    assert sum(sizes) == sum(len(s.events) for s in sessions)
    assert batch_sessions(sessions[:1], 1024) == [sessions[:1]]
    assert batch_sessions(sessions, 1024) == [sessions], "a job of one batch stays whole"
    assert batch_sessions([], 1024) == [[]]


def test_literal_scope_lets_a_fixed_strategy_search_the_users_own_index(scratch_store, embedder, app_name):
    """`SearchSettings(literal_scope=True)` inlines app and user as literals, so a fixed strategy can be served by
    the user's own partial HNSW index whatever the plan cache does; the workbench measures that index through
    EventMemory (search and EXPLAIN of the same statement) instead of composing unit SQL itself."""
    mem = memlab.EventMemory(scratch_store, embedder)
    mem.add_sessions([make_session(app_name, "big", f"s{i}", DEPLOY) for i in range(6)]
                     + [make_session(app_name, "other", "o", DEPLOY)])  # fmt: skip
    index = scratch_store.create_tenant_index(mem.model.model_id, mem.layer, app_name, "big")
    vector = embedder.embed_query("payments region")
    literal = memlab.SearchSettings(strategy="hnsw", iterative_scan="off", literal_scope=True)
    own = mem.explain_vector(app_name, "big", vector, literal)
    assert own.access_path == f"index:{index}" and index in own.plan
    assert own.rows_removed_by_filter == 0, "the user's own graph holds no other user's rows"
    hits = mem.search_vector(app_name, "big", vector, literal)
    exact = mem.search_vector(app_name, "big", vector, memlab.SearchSettings(strategy="exact"))
    assert hits.plan == "hnsw" and len(hits) == len(exact) == 10  # the sessions repeat texts: compare distances
    np.testing.assert_allclose([h.distance for h in hits], [h.distance for h in exact], atol=1e-5)
    assert {h.session_id for h in hits} <= {f"s{i}" for i in range(6)}
    other = mem.explain_vector(app_name, "other", vector, literal)
    assert other.access_path == "hnsw" and other.rows_removed_by_filter > 0, "another user: the shared graph"
    with pytest.raises(memlab.ConfigError, match="literal_scope"):
        memlab.SearchSettings(literal_scope="yes")


def test_batches_are_sized_by_the_units_they_embed(app_name):
    """A chunk layer embeds one unit per window, not per event: its batches hold about `batch_units` chunks
    (8-event sessions in 4-event windows: 2 units each, so 16 sessions a batch, not 4), as an event layer's
    batches hold about `batch_units` events."""
    from functools import partial

    from memlab.events.batches import batch_sessions, planned_units

    sessions = [make_session(app_name, "u", f"s{i}", (DEPLOY * 8)[:8]) for i in range(80)]
    chunks = partial(planned_units, granularity="chunk", size=4, overlap=0)
    assert [chunks(s) for s in sessions[:2]] == [2, 2]
    assert [planned_units(s) for s in sessions[:2]] == [8, 8], "an event layer embeds one unit per event"
    by_chunks = batch_sessions(sessions, 32, chunks)
    assert [s for b in by_chunks for s in b] == sessions
    assert max(len(b) for b in by_chunks) == 16, [len(b) for b in by_chunks]
    assert max(len(b) for b in batch_sessions(sessions, 32)) == 4


def test_one_users_write_keeps_the_counts_auto_read_for_other_users(store, embedder, app_name):
    """`auto` keeps each user's count for a few seconds; a write drops only its own users' counts, so a stream of
    writes for one user does not make every other user's next search read its count again. Seen through the
    plan: bob's count is raised behind this memory's back (another EventMemory), so a search that re-read it
    would walk the index; alice's write leaves bob's kept count, bob's own write drops it."""
    mem, other = memlab.EventMemory(store, embedder), memlab.EventMemory(store, embedder)
    texts = [f"note {i}: the {word} report is due on friday" for i, word in enumerate(
        ["budget", "travel", "hiring", "launch", "security", "design", "support", "pricing"])]  # fmt: skip
    embedder.embed_documents(texts)  # cached: the writes below are quick, well inside the kept counts' seconds
    settings = memlab.SearchSettings(exact_below=3)  # auto: exact up to 3 units, the shared index above
    mem.add_session(make_session(app_name, "bob", "b1", texts[:2]))
    assert mem.search(app_name, "bob", "report", settings).plan == "exact"  # bob's count (2) is kept
    other.add_session(make_session(app_name, "bob", "b2", texts[2:6]))  # bob holds 6 now; `mem` was not told
    mem.add_session(make_session(app_name, "alice", "a1", texts[6:]))
    assert mem.search(app_name, "bob", "report", settings).plan == "exact", "alice's write dropped bob's count"
    mem.add_session(make_session(app_name, "bob", "b3", texts[6:]))
    assert mem.search(app_name, "bob", "report", settings).plan == "hnsw", "bob's own write keeps a stale count"


def test_a_count_kept_past_its_seconds_is_read_again_by_the_search_that_needs_it(
    scratch_store, embedder, app_name, fixture_set
):
    """A count kept longer than its few seconds is read again by the statement that sets the strategy it last gave:
    set again when the new count gives another, left when it gives the same. Seen through the plan PostgreSQL
    takes: the walk of the shared index needs the `hnsw` settings (sorting off), under `exact`'s it sorts the
    user's rows read through the scope index."""
    store = scratch_store
    mem, other = memlab.EventMemory(store, embedder), memlab.EventMemory(store, embedder)
    texts = [e.text.strip() for s in fixture_set.sessions() for e in mem.kept_events(s)[0]]
    base = embedder.embed_documents(texts[:40])
    mem.bulk_load(background_rows(app_name, {f"big{i:02d}": 100 for i in range(20)}, base, noise=0.02, seed=3))
    settings = memlab.SearchSettings(exact_below=3)  # auto: exact up to 3 units, the shared index above
    query = "how do we roll out the payments service"
    mem.add_session(make_session(app_name, "small", "s0", texts[:2]))
    assert mem.explain(app_name, "small", query, settings).access_path == "scope_index"  # the count (2) is kept
    other.add_sessions([make_session(app_name, "small", f"s{i}", texts[i * 2 : i * 2 + 2]) for i in range(1, 6)])
    assert mem.search(app_name, "small", query, settings).plan == "exact", "kept: the count is seconds old"
    for why in ("the kept count gave exact: the re-read gives the shared index, set again",
                "the kept count gives the shared index again: the settings set with the re-read stand"):  # fmt: skip
        time.sleep(5.2)  # past the seconds a count is kept (memlab.events.core.STRATEGY_FACTS_SECONDS)
        assert mem.explain(app_name, "small", query, settings).uses_hnsw, why
    found = mem.search(app_name, "small", query, settings)
    assert found.plan == "hnsw"
    assert found.unit_ids == mem.search(app_name, "small", query, memlab.SearchSettings(strategy="exact")).unit_ids
