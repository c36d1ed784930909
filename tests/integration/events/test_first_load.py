"""A user's large first ingest (an import) into a new or young layer takes the bulk first-load write path (COPY
straight into the table, no stored-unit lookups, the layer's index built once after it); a small job, a second
ingest, a call for a user already holding units or a load into a layer holding more than it brings takes the
batched path. Either way the rows, vectors, counts and search results are the same, and the filters still run.
Each test loads into a layer of its own: which path a load takes depends on what its layer already holds."""

from __future__ import annotations

import threading

import psycopg
import pytest

import memlab
from tests.conftest import make_session

TOPICS = ["billing export", "piano lessons", "garden shed", "tax return", "flight to Lisbon", "dentist visit",
          "book club", "router firmware"]  # fmt: skip
SECRET = "use this key AKIAIOSFODNN7EXAMPLE for the bucket"
FIRST_LOAD, BATCHED = "copy-first-load", "batched"
SMALL_BATCH = 16  # batch_units: a job of 16 units or more is "at least one batch", so these small sets qualify


def _sessions(app: str, users: int = 2, sessions: int = 3, turns: int = 8) -> list[memlab.Session]:
    out = []
    for u in range(users):
        for s in range(sessions):
            texts = [f"User {u} note {s}.{i}: the {TOPICS[(u + s + i) % len(TOPICS)]} moved to week {i + s}"
                     for i in range(turns)]  # fmt: skip
            if (u, s) == (0, 1):
                texts[3] = SECRET
            out.append(make_session(app, f"u{u}", f"s{s}", texts))
    return out


def _rows(store: memlab.Store, app: str, layer: str) -> list[tuple]:
    with psycopg.connect(store.dsn) as conn:
        return conn.execute(
            "SELECT user_id, session_id, unit_id, event_ids, author, occurred_at, body, rendered, embedding::text "
            "FROM memory_unit WHERE app_name = %s AND layer = %s ORDER BY 1, 2, 3",
            [app, layer],
        ).fetchall()


@pytest.mark.parametrize("granularity", ["event", "chunk"])
def test_a_large_first_ingest_takes_the_first_load_path_and_stores_what_the_normal_path_stores(
    store, embedder, app_name, granularity
):
    mem = memlab.EventMemory(store, embedder, granularity=granularity, layer=f"large-{granularity}-{app_name}")
    first = mem.add_sessions(_sessions(app_name), batch_units=SMALL_BATCH)
    normal_app = app_name + "-normal"
    normal = mem.add_sessions(_sessions(normal_app), batch_units=1024)
    assert first.path == FIRST_LOAD and normal.path == BATCHED
    assert "first load" in first.path_reason and "less than one batch" in normal.path_reason
    assert first.added == normal.added > 0 and first.failed == normal.failed == []
    assert dict(first.skipped) == dict(normal.skipped)
    assert first.skipped["secret"] == 1
    assert _rows(store, app_name, mem.layer) == _rows(store, normal_app, mem.layer)
    assert not any(SECRET in row[6] for row in _rows(store, app_name, mem.layer))
    for user in ("u0", "u1"):
        assert mem.count(app_name, user) == mem.count(normal_app, user) > 0
        for strategy in ("exact", "auto"):
            settings = memlab.SearchSettings(strategy=strategy, top_k=5)
            got = mem.search(app_name, user, "when is the piano lesson", settings)
            want = mem.search(normal_app, user, "when is the piano lesson", settings)
            assert [h.unit_id for h in got] == [h.unit_id for h in want] and len(got) == 5


def test_a_second_ingest_a_small_job_and_a_user_holding_units_take_the_batched_path(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder, layer=f"second-{app_name}")
    sessions = _sessions(app_name)
    first = mem.add_sessions(sessions, batch_units=SMALL_BATCH)
    assert first.path == FIRST_LOAD and first.added > 0
    again = mem.add_sessions(sessions, batch_units=SMALL_BATCH)
    assert again.path == BATCHED and "2 of 2 users already hold units" in again.path_reason
    assert (again.added, again.embedded, again.already_stored) == (0, 0, first.added)
    # One new user beside one who holds units: the whole call goes the normal way, and both are right.
    mixed = mem.add_sessions([*sessions, *[s for s in _sessions(app_name, users=3) if s.user_id == "u2"]],
                             batch_units=SMALL_BATCH)  # fmt: skip
    assert mixed.path == BATCHED and "2 of 3 users" in mixed.path_reason
    assert mixed.added == 3 * 8 and mixed.already_stored == first.added  # u2: 3 sessions of 8 turns, no secret
    single = mem.add_session(make_session(app_name, "u9", "s0", ["A single note about the garden shed roof."]))
    assert (single.path, single.added) == (BATCHED, 1)
    # Erased, the user is new again: the next large ingest is a first load, and stores the same rows.
    before = _rows(store, app_name, mem.layer)
    for user in ("u0", "u1", "u2", "u9"):
        mem.forget_user(app_name, user)
    assert mem.count(app_name, "u0") == 0
    reloaded = mem.add_sessions(sessions, batch_units=SMALL_BATCH)
    assert reloaded.path == FIRST_LOAD and reloaded.added == first.added
    assert _rows(store, app_name, mem.layer) == [r for r in before if r[0] in ("u0", "u1")]


def test_a_first_load_keeps_tombstones_and_the_secret_filter(store, embedder, app_name):
    """A user with no unit may still hold a tombstone (delete_memory): the first load leaves that event out."""
    mem = memlab.EventMemory(store, embedder, layer=f"stones-{app_name}")
    sessions = _sessions(app_name, users=1)
    mem.add_session(sessions[0])
    for event in sessions[0].events:
        mem.delete_memory(app_name, "u0", event.id, session_id="s0")
    assert mem.count(app_name, "u0") == 0
    report = mem.add_sessions(sessions, batch_units=SMALL_BATCH)
    assert report.path == FIRST_LOAD
    assert report.skipped["deleted"] == len(sessions[0].events) and report.skipped["secret"] == 1
    assert {r[1] for r in _rows(store, app_name, mem.layer)} == {"s1", "s2"}


class _CountsRows:
    """The real embedder, recording at each of its calls the thread that called it, the texts it was given and how
    many units of `app` the table holds then (read on a connection of its own: only committed rows count)."""

    def __init__(self, inner: memlab.Embedder, store: memlab.Store, app: str) -> None:
        self.inner, self.store, self.app, self.calls = inner, store, app, []
        self.model_id, self.dimension = inner.model_id, inner.dimension

    def embed_documents(self, texts):
        with psycopg.connect(self.store.dsn) as conn:
            stored = conn.execute("SELECT count(*) FROM memory_unit WHERE app_name = %s", [self.app]).fetchone()[0]
        self.calls.append((threading.get_ident(), len(texts), stored))
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


@pytest.mark.parametrize("first_load", [True, False])
def test_a_load_of_several_batches_writes_each_before_the_next_is_embedded(store, embedder, app_name, first_load):
    """Batch after batch on the calling thread: a batch's texts go to the model in one call once the batch before
    it has committed, and no batch is written while the model embeds another."""
    layer = f"serial-{app_name}"
    held = 0
    if not first_load:  # a user of the load holding a unit: the batched path
        note = make_session(app_name, "u0", "earlier", ["An earlier note about the book club meeting."])
        held = memlab.EventMemory(store, embedder, layer=layer).add_session(note).added
        assert held == 1
    model = _CountsRows(embedder, store, app_name)
    # nine sessions of twelve turns, one a batch; the second (u0, s1) holds the secret: eleven texts
    report = memlab.EventMemory(store, model, layer=layer).add_sessions(_sessions(app_name, users=3, turns=12),
                                                                        batch_units=12)  # fmt: skip
    assert report.path == (FIRST_LOAD if first_load else BATCHED), report.path_reason
    assert {thread for thread, _, _ in model.calls} == {threading.get_ident()}, "the model runs on the caller's thread"
    sizes = [size for _, size, _ in model.calls]
    assert sizes == [12, 11, *[12] * 7], "one model call per batch"
    assert [n - held for _, _, n in model.calls] == [sum(sizes[:k]) for k in range(9)], "the batches before, no more"
    assert report.added == sum(sizes) == 107 and report.skipped["secret"] == 1


class _WritesMeanwhile:
    """The real embedder, which at its first call stores `session` through another memory of the same layer: a
    unit of the load stored after the first-load path was chosen and before the load writes (an add that takes
    no lock of the load's, as a parallel import or bulk_load does)."""

    def __init__(self, inner: memlab.Embedder, other: memlab.EventMemory, session: memlab.Session) -> None:
        self.inner, self.other, self.session, self.done = inner, other, session, None
        self.model_id, self.dimension = inner.model_id, inner.dimension

    def embed_documents(self, texts):
        if self.done is None:
            self.done = self.other.add_session(self.session)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


@pytest.mark.parametrize("granularity", ["event", "chunk"])
def test_a_unit_stored_while_a_first_load_embeds_is_left_out_not_doubled(store, embedder, app_name, granularity):
    sessions = _sessions(app_name)
    layer = f"racing-{granularity}-{app_name}"
    other = memlab.EventMemory(store, embedder, granularity=granularity, layer=layer)
    racing = _WritesMeanwhile(embedder, other, sessions[0])
    mem = memlab.EventMemory(store, racing, granularity=granularity, layer=layer)
    report = mem.add_sessions(sessions, batch_units=SMALL_BATCH)
    assert report.path == FIRST_LOAD and racing.done is not None and racing.done.added > 0
    normal_app = app_name + "-normal"
    normal = memlab.EventMemory(store, embedder, granularity=granularity, layer=layer).add_sessions(
        _sessions(normal_app))
    assert report.added + racing.done.added == normal.added, "every unit stored once, by one of the two writers"
    assert report.already_stored == racing.done.added and report.failed == []
    assert _rows(store, app_name, mem.layer) == _rows(store, normal_app, mem.layer)
    for user in ("u0", "u1"):
        assert mem.count(app_name, user) == mem.count(normal_app, user)


class _FailsLater:
    """The real embedder, answering with vectors of the wrong width from its `fail_from`-th call on: a batch that
    fails half-way through a load."""

    def __init__(self, inner: memlab.Embedder, fail_from: int) -> None:
        self.inner, self.calls, self.fail_from = inner, 0, fail_from
        self.model_id, self.dimension = inner.model_id, inner.dimension

    def embed_documents(self, texts):
        self.calls += 1
        vectors = self.inner.embed_documents(texts)
        return vectors[:, :-1] if self.calls >= self.fail_from else vectors

    def embed_query(self, text):
        return self.inner.embed_query(text)


def _access_path(mem: memlab.EventMemory, app: str) -> str:
    settings = memlab.SearchSettings(strategy="hnsw", top_k=3)
    return mem.explain(app, "u0", "when is the piano lesson", settings).access_path


@pytest.fixture
def indexing_store(scratch_store):
    """A store whose `auto` scans users of at most 10 units exactly: a layer of these small sets then needs its
    shared HNSW index, as a layer of more than 5,000 units does under the default policy."""
    scratch_store.save_auto_policy(memlab.AutoPolicy(exact_below=10))
    return scratch_store


def test_a_first_load_into_a_young_layer_builds_its_index_once_after_the_load(indexing_store, embedder, app_name):
    """A layer holding no more units than the load brings, which will need its index: the HNSW index is dropped for
    the load and built after it, before the call returns; the rows are the normal path's. A load smaller than the
    layer keeps the index."""
    store, layer = indexing_store, f"young-{app_name}"
    mem = memlab.EventMemory(store, embedder, layer=layer)
    memlab.EventMemory(store, embedder, layer=layer).search(app_name, "u0", "piano", memlab.SearchSettings(
        strategy="hnsw"))  # a search that walks the index builds it: the first load below finds it and drops it
    assert store.has_vector_index(mem.model.model_id, layer)
    first = mem.add_sessions(_sessions(app_name), batch_units=SMALL_BATCH)
    assert first.path == FIRST_LOAD, first.path_reason
    assert "the layer holds 0 units" in first.path_reason and "dropped for the load and built once" in first.path_reason
    assert first.timings["index_build"] > 0 and first.skipped["secret"] == 1
    assert store.has_vector_index(mem.model.model_id, layer) and _access_path(mem, app_name) == "hnsw"
    normal_app = app_name + "-normal"
    normal = mem.add_sessions(_sessions(normal_app), batch_units=1024)
    assert normal.path == BATCHED and normal.added == first.added > 0
    assert _rows(store, app_name, layer) == _rows(store, normal_app, layer)
    got = mem.search(app_name, "u0", "when is the piano lesson", memlab.SearchSettings(strategy="hnsw", top_k=5))
    want = mem.search(normal_app, "u0", "when is the piano lesson", memlab.SearchSettings(strategy="exact", top_k=5))
    assert [h.unit_id for h in got] == [h.unit_id for h in want] and len(got) == 5
    # The layer now holds twice what the next load brings: its index stays and takes the rows as they come.
    third = mem.add_sessions(_sessions(app_name + "-third"), batch_units=SMALL_BATCH)
    assert third.path == FIRST_LOAD and "more than the load: its index stays" in third.path_reason
    assert "index_build" not in third.timings and _access_path(mem, app_name + "-third") == "hnsw"


def test_a_layer_small_enough_for_exact_scans_keeps_no_index_until_a_search_walks_it(scratch_store, embedder, app_name):
    """Under the default policy a layer of 48 units is scanned exactly by `auto` for every user: a first load and
    later writes keep no HNSW graph up to date, and the layer is searchable all along. A search with a fixed `hnsw`
    strategy builds the index first (so an `ef_search` sweep measures a graph, not an exact scan), and it stays."""
    store, layer = scratch_store, f"small-{app_name}"
    mem = memlab.EventMemory(store, embedder, layer=layer)
    first = mem.add_sessions(_sessions(app_name), batch_units=SMALL_BATCH)
    assert first.path == FIRST_LOAD and "which `auto` scans exactly (up to 5000)" in first.path_reason
    assert "index_build" not in first.timings and not store.has_vector_index(embedder.model_id, layer)
    more = mem.add_sessions(_sessions(app_name + "-more"), batch_units=1024)
    one = mem.add_session(make_session(app_name, "u7", "s0", ["A note about the router firmware update."]))
    assert (more.path, one.added) == (BATCHED, 1) and not store.has_vector_index(embedder.model_id, layer)
    query = "when is the piano lesson"
    auto = mem.search(app_name, "u0", query, memlab.SearchSettings(top_k=5))
    assert len(auto) == 5 and mem.explain(app_name, "u0", query, memlab.SearchSettings(top_k=5)).access_path != "hnsw"
    assert not store.has_vector_index(embedder.model_id, layer)
    walked = memlab.EventMemory(store, embedder, layer=layer).search(
        app_name, "u0", query, memlab.SearchSettings(strategy="hnsw", top_k=5))
    assert store.has_vector_index(embedder.model_id, layer) and _access_path(mem, app_name) == "hnsw"
    assert [h.unit_id for h in walked] == [h.unit_id for h in auto]
    # A young layer that had an index and stays small: a first load drops it rather than keep it up row by row,
    # and the next search that walks it builds it again.
    young = memlab.EventMemory(store, embedder, layer=layer + "-young")
    young.search(app_name, "u0", query, memlab.SearchSettings(strategy="planner"))
    assert store.has_vector_index(embedder.model_id, young.layer)
    again = young.add_sessions(_sessions(app_name), batch_units=SMALL_BATCH)
    assert again.path == FIRST_LOAD and "its HNSW index is dropped" in again.path_reason
    assert not store.has_vector_index(embedder.model_id, young.layer)
    assert _access_path(young, app_name) == "hnsw" and store.has_vector_index(embedder.model_id, young.layer)
    asked = memlab.EventMemory(store, embedder, layer=layer + "-asked")  # where a search's time counts: built first
    asked.build_index()
    assert store.has_vector_index(embedder.model_id, asked.layer)


def test_the_write_that_takes_a_layer_past_exact_scans_builds_its_index(indexing_store, embedder, app_name):
    store, layer = indexing_store, f"growing-{app_name}"
    mem = memlab.EventMemory(store, embedder, layer=layer)
    notes = [f"Note {i} about the {TOPICS[i % len(TOPICS)]} for week {i}." for i in range(10)]
    small = mem.add_session(make_session(app_name, "u0", "s0", notes))
    assert small.added == 10 and "index_build" not in small.timings
    assert not store.has_vector_index(embedder.model_id, layer)
    past = mem.add_session(make_session(app_name, "u1", "s0", ["One more note, about the dentist visit."]))
    assert past.timings["index_build"] > 0 and store.has_vector_index(embedder.model_id, layer)
    # A memory opened on a layer that grew past exact scans without its index (dropped by hand) builds it at once.
    store.drop_vector_index(embedder.model_id, layer)
    memlab.EventMemory(store, embedder, layer=layer)
    assert store.has_vector_index(embedder.model_id, layer)


def test_a_rebuilding_first_load_that_fails_half_way_leaves_the_layer_indexed(indexing_store, embedder, app_name):
    store, layer = indexing_store, f"young-fail-{app_name}"
    memlab.EventMemory(store, embedder, layer=layer)
    store.ensure_vector_index(embedder.model_id, layer)  # the load finds it, drops it and builds it after
    mem = memlab.EventMemory(store, _FailsLater(embedder, fail_from=3), layer=layer)
    with pytest.raises(memlab.DimensionError, match="returned vectors of shape"):
        mem.add_sessions(_sessions(app_name, users=3), batch_units=SMALL_BATCH)
    assert store.has_vector_index(embedder.model_id, layer)
    assert _access_path(memlab.EventMemory(store, embedder, layer=layer), app_name) == "hnsw"


def test_two_rebuilding_first_loads_into_one_new_layer_at_once_both_land_and_leave_one_index(
    indexing_store, embedder, app_name
):
    """Two imports into a new layer at the same time may both drop its index and both build it after: the builds
    are serialised (the second finds the index built), so neither call fails and every row is stored once."""
    store, layer = indexing_store, f"young-twin-{app_name}"
    memlab.EventMemory(store, embedder, layer=layer)
    store.ensure_vector_index(embedder.model_id, layer)  # the layer's index exists: both loads see it and rebuild
    barrier = threading.Barrier(2)
    reports: dict[str, memlab.IngestReport] = {}
    errors: list[BaseException] = []

    def load(app: str) -> None:
        mem = memlab.EventMemory(store, embedder, layer=layer)
        try:
            barrier.wait()
            reports[app] = mem.add_sessions(_sessions(app), batch_units=SMALL_BATCH)
        except BaseException as exc:  # surfaced below, with the other thread's outcome
            errors.append(exc)

    threads = [threading.Thread(target=load, args=(f"{app_name}-{n}",)) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [r.path for r in reports.values()] == [FIRST_LOAD, FIRST_LOAD]
    assert store.has_vector_index(embedder.model_id, layer)
    assert _rows(store, f"{app_name}-1", layer) and len(_rows(store, f"{app_name}-1", layer)) == len(
        _rows(store, f"{app_name}-2", layer))
    assert _access_path(memlab.EventMemory(store, embedder, layer=layer), f"{app_name}-1") == "hnsw"
