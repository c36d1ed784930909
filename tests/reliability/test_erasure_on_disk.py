"""Erasure on disk: what each `vacuum=` level of both memories leaves in the files of the data folder, found by
a byte search of the embedded server's data folder (a private server: the search reads every file, and the WAL
purge checkpoints the server). Levels: False (rows deleted, bytes stay: documented), True (statistics no longer
sample the erased values), "full" (no table or index file holds them), "wal" / `purge_wal` (no WAL file either)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

import memlab
from memlab.lab.reliability.probes import erasure_disk_family
from memlab.lab.reliability.probes.erasure_disk import (
    Planted,
    checkpoint,
    disk_server,
    holders,
    outside_wal,
    recycle_ahead,
)
from memlab.storage.disk_erasure import USER_TABLES, purge_wal


@pytest.fixture(scope="module")
def private():
    with disk_server() as (store, pgdata):
        yield store, pgdata


def stats_text(store, tables) -> str:
    with store.connection() as conn:
        rows = conn.execute(
            "SELECT tablename, most_common_vals::text, histogram_bounds::text FROM pg_stats "
            "WHERE schemaname = current_schema() AND tablename = ANY(%s)",
            [list(tables)],
        ).fetchall()
    return " ".join(str(r) for r in rows)


def test_plain_forget_leaves_the_bytes_in_table_files_as_documented(private, embedder):
    store, pgdata = private
    p = Planted(store, embedder, "disk-plain")
    checkpoint(store)
    before = outside_wal(holders(pgdata, p.needles))
    assert len(before) >= 4, f"markers in the unit table, its TOAST and GIN index, and the fact tables: {before}"
    p.forget(False)
    checkpoint(store)
    assert not p.facts.rows(p.app, p.user) and p.events.count(p.app, p.user) == 0
    assert outside_wal(holders(pgdata, p.needles)), "a DELETE only hides rows: their bytes stay until a VACUUM"


def test_vacuum_true_leaves_no_erased_value_in_the_statistics(private, embedder):
    """ANALYZE keeps the old sample of a table left empty; the erased user was the only one in the fact tables."""
    store, _ = private
    p = Planted(store, embedder, "disk-stats")
    with store.connection() as conn:
        conn.execute("DELETE FROM semantic_fact WHERE user_id <> %s", [p.user])
        conn.execute("DELETE FROM semantic_fact_observation WHERE user_id <> %s", [p.user])
        conn.execute("ANALYZE")
    assert p.marker in stats_text(store, USER_TABLES)
    p.facts.forget_user(p.app, p.user, vacuum=True)
    p.events.forget_user(p.app, p.user, vacuum=True)
    assert p.marker not in stats_text(store, USER_TABLES) and p.user not in stats_text(store, USER_TABLES)


@pytest.mark.parametrize("memory", ["facts", "events"])
def test_vacuum_full_through_either_memory_leaves_no_table_or_index_file_holding_the_text(private, embedder, memory):
    store, pgdata = private
    p = Planted(store, embedder, f"disk-full-{memory}")
    with store.connection() as conn:
        conn.execute("ANALYZE")  # the statistics sample the marker too
    if memory == "facts":
        p.events.forget_user(p.app, p.user)
        p.chunks.forget_user(p.app, p.user)
        counts = p.facts.forget_user(p.app, p.user, vacuum="full")
        assert counts["semantic_fact"] == 1 and counts["vacuumed"] == len(USER_TABLES) + 1  # and pg_statistic
    else:
        p.facts.forget_user(p.app, p.user)
        p.events.forget_user(p.app, p.user, vacuum="full")
    checkpoint(store)
    assert outside_wal(holders(pgdata, p.needles)) == []
    assert p.facts.current(p.app, p.keeper), "the other user's facts stay"


def side_table_files(store) -> set[str]:
    """The files of lexical search's side table (memory_unit_terms): its heap, TOAST table and every index."""
    with store.connection() as conn:
        rows = conn.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.oid = 'memory_unit_terms'::regclass "
            "OR c.oid = (SELECT reltoastrelid FROM pg_class WHERE oid = 'memory_unit_terms'::regclass) "
            "OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN ('memory_unit_terms'::regclass, "
            "(SELECT reltoastrelid FROM pg_class WHERE oid = 'memory_unit_terms'::regclass)))"
        ).fetchall()
    return {r[0] for r in rows if r[0]}


def test_vacuum_full_leaves_nothing_in_the_lexical_side_table_or_its_indexes(private, embedder):
    """Lexical search's side table holds each unit's lexemes (the marker's among them) and the user id in its key
    and GIN index; every forget path reaches it through the unit table's triggers, and "full" rewrites it."""
    store, pgdata = private
    p = Planted(store, embedder, "disk-terms")
    checkpoint(store)
    before = side_table_files(store)
    assert len(before & set(holders(pgdata, p.needles))) >= 2, "the side table and its indexes hold the markers"
    p.forget("full")
    checkpoint(store)
    assert not (before | side_table_files(store)) & set(holders(pgdata, p.needles))
    assert outside_wal(holders(pgdata, p.needles)) == []


def test_fact_memory_forget_session_and_delete_fact_take_the_levels(private, embedder):
    store, pgdata = private
    p = Planted(store, embedder, "disk-session")
    report = p.facts.forget_session(p.app, p.user, p.session.id, vacuum="full")
    assert report.removed and "semantic_fact_observation" in report.vacuumed
    p.chunks.forget_session(p.app, p.user, p.session.id)
    memlab.forget_session(p.app, p.user, p.session.id, events=p.events, vacuum="full")
    checkpoint(store)
    assert outside_wal(holders(pgdata, [p.needles[0]])) == []
    q = Planted(store, embedder, "disk-delete-fact")
    fact, units = q.facts.current(q.app, q.user)[0], q.events.count(q.app, q.user)
    assert q.facts.delete_fact(q.app, q.user, fact.subject, fact.predicate, fact.value, vacuum=True) == 1
    both = memlab.forget_session(q.app, q.user, q.session.id, facts=q.facts, vacuum=True)
    assert "semantic_fact" in both.facts.vacuumed, "with fact memory alone, its forget vacuums"
    for bad in ("FULL", 2, None, "wal!"):
        with pytest.raises(memlab.ConfigError, match="vacuum must be"):
            q.facts.forget_user(q.app, q.user, vacuum=bad)
        with pytest.raises(memlab.ConfigError, match="vacuum must be"):
            q.facts.forget_session(q.app, q.user, q.session.id, vacuum=bad)
    assert q.events.count(q.app, q.user) == units > 0, "a refused level deletes nothing"


def test_forget_with_vacuum_wal_leaves_no_file_of_the_data_folder_holding_the_text(private, embedder):
    store, pgdata = private
    p = Planted(store, embedder, "disk-wal")
    checkpoint(store)
    assert any(f.startswith("pg_wal") for f in holders(pgdata, p.needles))
    p.facts.forget_user(p.app, p.user)
    p.chunks.forget_user(p.app, p.user)
    p.events.forget_user(p.app, p.user, vacuum="wal")
    assert holders(pgdata, p.needles) == []
    again = purge_wal(store)
    assert again.complete and again.rounds >= 1 and again.segments_before >= 1
    with store.connection() as conn:
        assert not conn.execute("SELECT setting FROM pg_file_settings WHERE name = 'wal_recycle'").fetchall(), (
            "the purge restores the configuration (no wal_recycle line left in postgresql.auto.conf)"
        )


def test_purge_wal_also_clears_a_segment_recycled_ahead_of_the_current_one(private, embedder):
    """A checkpoint renames old segments to future names with their bytes; switching into one overwrites only
    its first pages. A purge that stops once the old names are gone leaves those."""
    store, pgdata = private
    p = Planted(store, embedder, "disk-recycled")
    checkpoint(store)
    current = recycle_ahead(store)
    p.facts.forget_user(p.app, p.user)
    p.events.forget_user(p.app, p.user, vacuum="full")
    checkpoint(store)
    wal = holders(pgdata, p.needles)
    assert wal and all(f.startswith("pg_wal/") for f in wal)
    assert [f for f in wal if f.rsplit("/", 1)[1] > current], f"a recycled segment ahead of {current}: {wal}"
    purge = purge_wal(store)
    assert purge.complete and purge.rounds >= 2
    assert holders(pgdata, p.needles) == []


def test_delete_memory_and_purge_before_with_full_remove_exactly_their_texts(private, embedder):
    store, pgdata = private
    tag = uuid.uuid4().hex[:10]
    gone, kept = f"zqgone{tag}7", f"zqkept{tag}7"
    events = memlab.EventMemory(store, embedder)
    start = datetime.now(UTC) - timedelta(days=3)
    texts = [f"The {gone} migration finished on Tuesday night.", f"The {kept} rollout starts next Thursday."]
    session = memlab.Session("disk-delete", "u", f"s{tag}", [
        memlab.Event(f"e{i}", "user", start + timedelta(hours=i), t) for i, t in enumerate(texts)])  # fmt: skip
    assert events.add_session(session).added == 2
    assert events.delete_memory("disk-delete", "u", "e0", session_id=session.id, vacuum="full") == 1
    checkpoint(store)
    assert outside_wal(holders(pgdata, [gone.encode()])) == []
    assert outside_wal(holders(pgdata, [kept.encode()])), "the user's other memory stays (and the search finds it)"
    assert events.purge_before(datetime.now(UTC), app_name="disk-delete", vacuum="full") == 1
    checkpoint(store)
    assert outside_wal(holders(pgdata, [kept.encode()])) == []


def test_every_table_with_a_user_id_column_is_vacuumed(private, embedder):
    store, _ = private
    Planted(store, embedder, "disk-tables")
    with store.connection() as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND column_name = 'user_id'"
        ).fetchall()}  # fmt: skip
    assert tables and tables <= set(USER_TABLES), sorted(tables - set(USER_TABLES))


def test_erasure_disk_family_finds_no_marker_after_full_and_purge(embedder, tmp_path):
    family = erasure_disk_family(None, embedder, tmp_path)
    assert family.failures() == [], family.found
    assert family.figures["files_holding_marker_before"] >= 4 and family.figures["files_searched"] > 100
    assert family.figures["files_after_plain_forget"] > 0 and family.figures["wal_purge_rounds"] >= 2
    assert family.figures["wal_files_ahead_after_full"] >= 1, "the purge had a recycled segment to clear"
