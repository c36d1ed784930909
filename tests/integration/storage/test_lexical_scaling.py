"""Lexical search (and hybrid, which runs it) must cost rows linear in the user's units, not quadratic: a plan that
joins every hit to every score runs as a nested loop once the planner underestimates a user's hits.
Counted from EXPLAIN ANALYZE, never timed: a user of 4x the units may make the plan handle at most 6x the rows."""

from __future__ import annotations

import pytest

from memlab import EventMemory, SearchSettings
from memlab.lab.reliability.probes import lexical as probe
from memlab.storage import unit_lexical as lexical
from memlab.storage import units as sqlu

N = 400


@pytest.fixture(params=["stale", "fresh"])
def grown(request, scratch_store, embedder) -> tuple[EventMemory, str]:
    """Users of N and 4N units. `stale`: the statistics were taken while the app held one small user and the two
    came after (as ingest adds them: no ANALYZE; autovacuum is off for the table of this scratch database, so
    they stay stale while the test reads them). `fresh`: analyzed after both were loaded."""
    state = request.param
    with scratch_store.connection() as conn:
        conn.execute("ALTER TABLE memory_unit SET (autovacuum_enabled = false)")
    memory = EventMemory(scratch_store, embedder, layer="lexical-scaling")
    probe.add_user(memory, "app", "seed", probe.cheap_texts(20, seed=9), analyze=True)
    probe.add_user(memory, "app", "small", probe.cheap_texts(N, seed=1), analyze=False, seed=1)
    probe.add_user(memory, "app", "big", probe.cheap_texts(4 * N, seed=2), analyze=state == "fresh", seed=2)
    return memory, state


def test_lexical_plan_rows_grow_linearly_with_the_users_units(grown):
    memory, state = grown
    quadratic = []
    for query in probe.QUERIES:
        small, big, ratio = probe.growth(memory, "app", "small", "big", query)
        assert small.rows > N, "the plan should at least read the small user's units"
        if ratio >= probe.GROWTH_LIMIT:
            quadratic.append(
                f"{query!r}: {small.rows:,.0f} plan rows at {N} units, {big.rows:,.0f} at {4 * N} "
                f"({ratio:.1f}x; removed by join filters {big.removed_by_join_filter:,.0f})"
            )
    assert not quadratic, f"{state} statistics: {quadratic}"


def test_no_join_filter_grows_with_hits_times_hits(grown):
    """The signature of the old plan: rows removed by join filters about (hits)^2 and loops as many as hits;
    linear work removes at most a few rows per query word and unit."""
    memory, state = grown
    for query in probe.QUERIES:
        rows = probe.lexical_plan_rows(memory, "app", "big", query)
        assert rows.removed_by_join_filter <= 2 * 4 * N, (state, query, rows)


def test_lexical_and_hybrid_search_of_the_grown_user_find_the_words(grown):
    """The rewritten statement still ranks by the words asked."""
    memory, _ = grown
    hits = memory.search("app", "big", "w2500 w7", SearchSettings(mode="lexical", top_k=5))
    assert hits and all({"w2500", "w7"} & set(h.text.split()) for h in hits)
    hybrid = memory.search("app", "big", "w2500 w7", SearchSettings(mode="hybrid", top_k=5))
    assert {h.unit_id for h in hits} & {h.unit_id for h in hybrid}


def test_plan_rows_counts_loops_and_filters():
    plan = [{"Plan": {"Actual Rows": 2, "Actual Loops": 1, "Plans": [
        {"Actual Rows": 3.0, "Actual Loops": 10, "Rows Removed by Join Filter": 7},
        {"Actual Rows": 1, "Actual Loops": 1, "Rows Removed by Filter": 5},
    ]}}]  # fmt: skip
    rows = probe.plan_rows(plan)
    assert rows.rows == 2 + (3 + 7) * 10 + (1 + 5)
    assert rows.removed_by_join_filter == 70 and rows.max_loops == 10


def test_lexical_family_finds_no_quadratic_plan(scratch_store, embedder, tmp_path):
    family = probe.lexical_family(scratch_store, embedder, tmp_path)
    assert family.figures["quadratic_plans"] == 0, family.found
    assert family.figures["plans_checked"] == 2 * 2 * len(probe.QUERIES)
    assert family.figures["users"] == 4 and 0 < family.figures["max_growth"] < probe.GROWTH_LIMIT
    assert family.figures["user_passes"] == 0 and family.figures["selective_plans_checked"] == 2 * len(probe.SELECTIVE)
    assert family.figures[f"rows_per_unit.stale.{probe.SIZES[1]}"] > 1
    assert not family.failures()


def test_statement_reads_the_table_only_scoped_by_app_and_user():
    """Every read of the unit table (the rows returned), of its side table (the units holding every word, the keys
    of the rows returned) and of the kept counts (N and the mean document length) filters by app and user in SQL;
    the postings (each word's rows, counted and then scored) are read by the key of the user's scope, computed from
    app and user."""
    for statement in (sqlu._LEXICAL, lexical._LEXICAL_EXACT):  # the heap's and the exact form of the first k
        reads = {t: statement.count(f"FROM {{{t}}}") for t in ("table", "terms", "counts", "postings")}
        assert reads == {"table": 1, "terms": 2, "counts": 1, "postings": 2} and "JOIN {" not in statement
        assert statement.count("app_name = %(app)s") == sum(reads.values()) - reads["postings"]
        assert statement.count("user_id = %(user)s") == sum(reads.values()) - reads["postings"]
        assert "memlab_scope_key(%(app)s, %(user)s, %(layer)s, %(model)s) AS key" in statement
        assert statement.count("p.scope = qq.key") == reads["postings"]


RARE = "w2990 w2991 w2992 w2993 w2994 w2995 w2996 w2997 w2998 w2999"  # each word in a handful of units at most


def test_selective_query_reads_fewer_rows_than_the_user_has(grown):
    """BM25's unit count and mean length come from the kept counts, the hits from the side table's full-text index
    (which no b-tree scan can replace), and the k rows returned are one index probe each: with fresh or stale
    statistics, a query of rare words reads its few hits, far fewer rows than the user's 4N units (with stale
    statistics the planner would rather find them through the user's scope index: a pass over the user's units)."""
    memory, state = grown
    rows = probe.lexical_plan_rows(memory, "app", "big", RARE)
    assert rows.rows < N, (state, rows)


def _kept_and_true(conn, app: str) -> tuple[list, list]:
    kept = conn.execute(
        "SELECT user_id, sum(delta), sum(doc_length) FROM memory_unit_count WHERE app_name = %s "
        "GROUP BY user_id HAVING sum(delta) <> 0 ORDER BY user_id",
        [app],
    ).fetchall()
    true = conn.execute(
        "SELECT user_id, count(*), sum(length(lexemes)) FROM memory_unit WHERE app_name = %s "
        "GROUP BY user_id ORDER BY user_id",
        [app],
    ).fetchall()
    return kept, true


def test_kept_document_lengths_follow_writes_deletes_folds_and_an_old_table(scratch_store, embedder):
    """The summed document length beside each kept count equals the true sum after inserts, deletes, an update
    of the rendered text, a fold; a count table from before the column gains it, backfilled once."""
    memory = EventMemory(scratch_store, embedder, layer="lexical-lengths")
    probe.add_user(memory, "app", "a", probe.cheap_texts(60, seed=3), analyze=False, seed=3)
    probe.add_user(memory, "app", "b", probe.cheap_texts(30, seed=4), analyze=False, seed=4)
    with scratch_store.transaction() as conn:
        conn.execute("DELETE FROM memory_unit WHERE app_name = 'app' AND user_id = 'a' AND unit_id LIKE 'u1%%'")
        conn.execute(
            "UPDATE memory_unit SET rendered = body || ' extra words here' WHERE user_id = 'b' "
            "AND unit_id IN ('u1', 'u2')"
        )
        kept, true = _kept_and_true(conn, "app")
        assert kept == true and len(true) == 2
        sqlu.fold_counts(conn, "app", "a", "lexical-lengths", memory.model.model_id)
        assert _kept_and_true(conn, "app") == (true, true)
        conn.execute("ALTER TABLE memory_unit_count DROP COLUMN doc_length")
        sqlu.create_counts(conn)
        assert _kept_and_true(conn, "app") == (true, true)
