"""Lexical search reads a narrow side table (memlab.storage.unit_lexical.TERMS_TABLE) kept by triggers on the unit
table: its ranking must be exactly BM25 over every hit, as a statement reading the unit table computes it; the side
table must follow every write and every forget path; a database from before it must get it filled on open; another
user's units must cost a search nothing."""

from __future__ import annotations

import random

import numpy as np
import pytest
from psycopg import sql

from memlab import Event, EventMemory, SearchSettings, Session
from memlab.lab.reliability.probes import lexical as probe
from memlab.storage import unit_lexical as lex
from memlab.storage import units as sqlu
from tests.conftest import T0

# Lexical search straight off the unit table, without the side table: every hit read from the unit table, every
# hit scored. The reference the side table's search must match, hit for hit and in the same order.
_SCOPE = "app_name = %(app)s AND user_id = %(user)s AND embed_model = %(model)s AND layer = %(layer)s"
_M_SCOPE = "m.app_name = %(app)s AND m.user_id = %(user)s AND m.embed_model = %(model)s AND m.layer = %(layer)s"
REFERENCE = (
    "WITH q AS (SELECT websearch_to_tsquery({cfg}, %(text)s) AS web,"
    " ARRAY(SELECT DISTINCT l FROM unnest(tsvector_to_array(to_tsvector({cfg}, %(text)s))) AS l"
    "  WHERE l !~ '[''\\\\]') AS terms),"
    " qq AS MATERIALIZED (SELECT web, terms, to_tsquery('simple', coalesce(array_to_string("
    "  ARRAY(SELECT quote_literal(t) FROM unnest(terms) AS t), ' | '), '')) AS anyq FROM q),"
    " stats AS MATERIALIZED (SELECT coalesce(sum(delta), 0)::float8 AS n,"
    "  coalesce(sum(doc_length) / nullif(sum(delta), 0), 1)::float8 AS avgdl FROM {counts} WHERE " + _SCOPE + "),"
    " hit AS MATERIALIZED (SELECT m.ctid AS row, m.session_id, m.unit_id, length(x.marked)::float8 AS dl,"
    "  (x.marked @@ qq.web AND numnode(qq.web) > 0) AS every_word, ts_filter(x.marked, '{{a}}') AS found"
    "  FROM {table} m CROSS JOIN qq"
    "  CROSS JOIN LATERAL (SELECT setweight(m.lexemes, 'A', qq.terms) AS marked OFFSET 0) AS x"
    "  WHERE " + _M_SCOPE + " AND m.lexemes @@ (SELECT anyq FROM qq)),"
    " tf AS MATERIALIZED (SELECT h.row, h.session_id, h.unit_id, h.every_word, h.dl, u.lexeme,"
    "  greatest(cardinality(u.positions), 1)::float8 AS tf FROM hit h, unnest(h.found) AS u),"
    " df AS (SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme),"
    " idf AS MATERIALIZED (SELECT t AS lexeme,"
    "  ln(1 + (s.n - coalesce(df.df, 1) + 0.5) / (coalesce(df.df, 1) + 0.5)) AS idf"
    "  FROM qq, unnest(qq.terms) AS t LEFT JOIN df ON df.lexeme = t, stats s),"
    " total AS MATERIALIZED (SELECT nullif(sum(idf), 0) AS idf FROM idf),"
    " bm25 AS (SELECT tf.row, tf.session_id, tf.unit_id, tf.every_word, sum(idf.idf"
    "  * tf.tf * 2.2 / (tf.tf + 1.2 * (0.25 + 0.75 * tf.dl / s.avgdl))) AS score,"
    "  sum(idf.idf) / max(total.idf) AS coverage"
    "  FROM tf JOIN idf USING (lexeme), stats s, total GROUP BY tf.row, tf.session_id, tf.unit_id, tf.every_word)"
    " SELECT unit_id, session_id, score, coverage, every_word FROM bm25"
    " ORDER BY every_word DESC, score DESC, unit_id, session_id LIMIT %(k)s"
)
LAYER = "lexical-side"


def _reference(conn, scope, text: str, k: int) -> list[tuple]:
    query = sql.SQL(REFERENCE).format(
        cfg=sql.Literal(sqlu.TEXT_SEARCH_CONFIG), table=sql.Identifier("memory_unit"),
        counts=sql.Identifier(sqlu.COUNTS_TABLE),
    )  # fmt: skip
    params = {"app": scope.app_name, "user": scope.user_id, "model": scope.model.model_id, "layer": scope.layer,
              "text": text, "k": k}  # fmt: skip
    conn.execute("SELECT set_config('client_min_messages', 'warning', true)")
    return conn.execute(query, params).fetchall()


def _side_rows(conn, app: str, user: str | None = None) -> int:
    return conn.execute(
        "SELECT count(*) FROM memory_unit_terms WHERE app_name = %s AND (%s::text IS NULL OR user_id = %s)",
        [app, user, user],
    ).fetchone()[0]


def _postings(conn) -> tuple[int, int]:
    """(postings rows, (unit, lexeme) pairs of every unit): equal when the postings follow the unit table exactly."""
    kept = conn.execute(f"SELECT count(*) FROM {lex.POSTINGS_TABLE}").fetchone()[0]
    true = conn.execute("SELECT count(*) FROM memory_unit m, unnest(m.lexemes)").fetchone()[0]
    return kept, true


def _user_postings(conn, memory: EventMemory, app: str, user: str) -> int:
    scope = memory.scope(app, user)
    return conn.execute(
        f"SELECT count(*) FROM {lex.POSTINGS_TABLE} WHERE scope = memlab_scope_key(%s, %s, %s, %s)",
        [app, user, scope.layer, scope.model.model_id],
    ).fetchone()[0]


def _queries(rng: random.Random, n: int) -> list[str]:
    """Random questions over the probe's Zipf vocabulary: common and rare words mixed, repeated words, a phrase,
    a negation, an `or`, a word no unit holds and a query of stop words only."""
    out = ["what is it", "w99999 w1", '"w1 w2" w40', "w3 -w1", "w5 or w700", "w1 w1 w2 w2"]
    for _ in range(n):
        words = [f"w{int(rng.paretovariate(0.7)) % probe.VOCABULARY}" for _ in range(rng.randint(1, 7))]
        out.append(" ".join(words) + rng.choice(["", "?", " and what about it"]))
    return out


@pytest.fixture
def two_users(scratch_store, embedder) -> EventMemory:
    memory = EventMemory(scratch_store, embedder, layer=LAYER)
    probe.add_user(memory, "app", "a", probe.cheap_texts(700, seed=11), analyze=True, seed=11)
    probe.add_user(memory, "app", "b", probe.cheap_texts(300, seed=12), analyze=False, seed=12)
    with scratch_store.transaction() as conn:  # repeated words and a rendering: tf > 1 and rendered text
        conn.execute("UPDATE memory_unit SET rendered = body || ' ' || body || ' w7' WHERE user_id = 'a' "
                     "AND unit_id IN ('u1', 'u2', 'u3')")  # fmt: skip
    return memory


def test_side_table_search_ranks_exactly_as_scoring_every_hit_of_the_unit_table(two_users):
    memory = two_users
    rng = random.Random(5)
    vector = probe.random_vectors(1, memory.model.dimension, seed=1)[0]
    with memory.store.transaction() as conn:
        assert _side_rows(conn, "app", "a") == 700 and _side_rows(conn, "app", "b") == 300
    compared = 0
    for user in ("a", "b"):
        scope = memory.scope("app", user)
        for text in _queries(rng, 25):
            for k in (1, 10, 60):
                with memory.store.transaction() as conn:
                    want = _reference(conn, scope, text, k)
                    got = sqlu.lexical_search(conn, scope, text, vector, k)
                assert [(h.unit_id, h.session_id) for h in got] == [(r[0], r[1]) for r in want], (user, text, k)
                assert np.allclose([h.lexical for h in got], [r[2] for r in want], rtol=1e-12)
                assert np.allclose([h.coverage for h in got], [r[3] for r in want], rtol=1e-12)
                compared += len(want)
    assert compared > 1000


def test_side_table_follows_writes_updates_and_every_forget_path(scratch_store, embedder):
    memory = EventMemory(scratch_store, embedder, layer=LAYER)
    texts = ["Our cat Mittens hates the vacuum cleaner.", "Jolene flies to Reykjavik on Thursday.",
             "The Reykjavik flight was delayed.", "Mittens sleeps on the radiator."]  # fmt: skip
    for user in ("u1", "u2"):
        for s in ("s1", "s2"):
            events = [Event(f"e{i}", "user", T0, t) for i, t in enumerate(texts)]
            memory.add_session(Session("app", user, s, events))
    with scratch_store.transaction() as conn:
        assert _side_rows(conn, "app") == 16
        # an update of the rendered text reaches the side table's lexemes
        conn.execute("UPDATE memory_unit SET rendered = 'Quetzalcoatl' WHERE user_id = 'u2' AND unit_id = 'e0' "
                     "AND session_id = 's1'")  # fmt: skip
        row = conn.execute("SELECT dl, lexemes @@ 'quetzalcoatl'::tsquery FROM memory_unit_terms "
                           "WHERE user_id = 'u2' AND unit_id = 'e0' AND session_id = 's1'").fetchall()  # fmt: skip
        assert row == [(1, True)] and _side_rows(conn, "app") == 16
        kept, true = _postings(conn)
        assert kept == true > 16
    assert [h.unit_id for h in memory.search("app", "u2", "Quetzalcoatl", SearchSettings(mode="lexical", top_k=3))] == [
        "e0"
    ]
    assert memory.delete_memory("app", "u1", "e1", session_id="s1") == 1
    with scratch_store.transaction() as conn:
        assert _side_rows(conn, "app", "u1") == 7
        assert _postings(conn)[0] == _postings(conn)[1]
    memory.forget_session("app", "u1", "s2")
    with scratch_store.transaction() as conn:
        assert _side_rows(conn, "app", "u1") == 3
    assert memory.forget_user("app", "u1") == 3
    with scratch_store.transaction() as conn:
        assert _side_rows(conn, "app", "u1") == 0 and _side_rows(conn, "app", "u2") == 8
        assert _user_postings(conn, memory, "app", "u1") == 0 < _user_postings(conn, memory, "app", "u2")
        assert _postings(conn)[0] == _postings(conn)[1]
        hits = sqlu.lexical_search(conn, memory.scope("app", "u1"), "Mittens Reykjavik", np.ones(384) / 20, 5)
        assert hits == []
        conn.execute("TRUNCATE memory_unit CASCADE")
        assert _side_rows(conn, "app") == 0 and _postings(conn) == (0, 0)


def test_a_database_from_before_the_side_table_gets_it_filled_on_open(scratch_store, embedder):
    memory = EventMemory(scratch_store, embedder, layer=LAYER)
    probe.add_user(memory, "app", "a", probe.cheap_texts(50, seed=3), analyze=False, seed=3)
    vector = probe.random_vectors(1, memory.model.dimension, seed=1)[0]
    scope = memory.scope("app", "a")
    with scratch_store.transaction() as conn:
        before = [(h.unit_id, h.lexical) for h in sqlu.lexical_search(conn, scope, "w1 w30 w7", vector, 10)]
        # the unit table as it was: no side table, no triggers, the full-text index on the unit table itself
        for trigger in ("insert", "delete", "update", "truncate"):
            conn.execute(f"DROP TRIGGER memlab_terms_{trigger} ON memory_unit")
        conn.execute(f"DROP TABLE {lex.TERMS_TABLE}")
        conn.execute(f"CREATE INDEX {lex.OLD_LEXICAL_INDEX} ON memory_unit USING gin (lexemes)")
    with scratch_store.transaction() as conn:
        sqlu.create_terms(conn)
        sqlu.create_terms(conn)  # idempotent
        assert _side_rows(conn, "app", "a") == 50
        assert not sqlu.index_exists(conn, lex.OLD_LEXICAL_INDEX) and sqlu.index_exists(conn, lex.TERMS_INDEX)
        assert [(h.unit_id, h.lexical) for h in sqlu.lexical_search(conn, scope, "w1 w30 w7", vector, 10)] == before
    probe.add_user(memory, "app", "b", probe.cheap_texts(5, seed=4), analyze=False, seed=4)
    with scratch_store.transaction() as conn:
        assert _side_rows(conn, "app", "b") == 5, "the triggers are back"
        # a side table from before the postings (no unit number): they are added and filled on open
        conn.execute(f"DROP TABLE {lex.POSTINGS_TABLE}")
        conn.execute(f"ALTER TABLE {lex.TERMS_TABLE} DROP COLUMN id")
    with scratch_store.transaction() as conn:
        sqlu.create_terms(conn)
        kept, true = _postings(conn)
        assert kept == true > 50
        assert [(h.unit_id, h.lexical) for h in sqlu.lexical_search(conn, scope, "w1 w30 w7", vector, 10)] == before
    with scratch_store.transaction() as conn:  # a side table of another layout (a build between releases) is rebuilt
        conn.execute(f"ALTER TABLE {lex.TERMS_TABLE} DROP COLUMN occurred_at")
    with scratch_store.transaction() as conn:
        sqlu.create_terms(conn)
        assert _side_rows(conn, "app", "a") == 50 and _postings(conn)[0] == _postings(conn)[1] > 50
        assert [(h.unit_id, h.lexical) for h in sqlu.lexical_search(conn, scope, "w1 w30 w7", vector, 10)] == before
    probe.add_user(memory, "app", "c", probe.cheap_texts(5, seed=5), analyze=False, seed=5)
    with scratch_store.transaction() as conn:
        assert _side_rows(conn, "app", "c") == 5, "the rebuilt side table's triggers write to it"
        # postings from before the bytewise lexemes (the database's collation): rewritten once on open
        assert _lexeme_collation(conn) == '"C"'
        conn.execute(f'ALTER TABLE {lex.POSTINGS_TABLE} ALTER COLUMN lexeme TYPE text COLLATE "default"')
    with scratch_store.transaction() as conn:
        assert _lexeme_collation(conn) == '"default"'
        sqlu.create_terms(conn)
        assert _lexeme_collation(conn) == '"C"'
        assert _postings(conn)[0] == _postings(conn)[1] > 50
        assert [(h.unit_id, h.lexical) for h in sqlu.lexical_search(conn, scope, "w1 w30 w7", vector, 10)] == before
        # a side table from before the postings held each lexeme's count kept `repeats`: dropped once on open
        conn.execute(f"ALTER TABLE {lex.TERMS_TABLE} ADD COLUMN repeats jsonb")
    probe.add_user(memory, "app", "d", probe.cheap_texts(5, seed=6), analyze=False, seed=6)
    with scratch_store.transaction() as conn:
        assert _side_rows(conn, "app", "d") == 5, "an old side table takes rows while it still has the column"
        sqlu.create_terms(conn)
        assert not _has_column(conn, "repeats") and _side_rows(conn, "app", "a") == 50
        assert [(h.unit_id, h.lexical) for h in sqlu.lexical_search(conn, scope, "w1 w30 w7", vector, 10)] == before


def _has_column(conn, name: str) -> bool:
    return conn.execute(f"SELECT count(*) FROM pg_attribute WHERE attrelid = '{lex.TERMS_TABLE}'::regclass "
                        "AND attname = %s AND NOT attisdropped", [name]).fetchone()[0] == 1  # fmt: skip


def _lexeme_collation(conn) -> str:
    return conn.execute(f"SELECT attcollation::regcollation::text FROM pg_attribute WHERE attrelid = "
                        f"'{lex.POSTINGS_TABLE}'::regclass AND attname = 'lexeme'").fetchone()[0]  # fmt: skip


def _removed(plan: dict) -> float:
    """Rows a plan's scans of tables read and threw away (filters and index rechecks), over every node and loop;
    a filter on the statement's own intermediate rows (the hits below the k-th best) reads no table."""
    node = plan[0]["Plan"] if isinstance(plan, list) else plan
    loops = node.get("Actual Loops", 1)
    removed = ("Rows Removed by Filter", "Rows Removed by Index Recheck")
    here = sum(node.get(k, 0) for k in removed) * loops if "Relation Name" in node else 0
    return here + sum(_removed(child) for child in node.get("Plans", []))


def test_other_users_units_holding_the_words_are_never_read(two_users):
    """The GIN index holds each row's scope lexeme: a search fetches only the user's rows, however many other
    users' units hold the same common words (the unit table's index handed back every user's rows to filter)."""
    memory = two_users
    scope = memory.scope("app", "b")
    vector = probe.random_vectors(1, memory.model.dimension, seed=1)[0]
    texts = ("w1 w2 w3", "what did w4 say about w1?")

    def plans() -> list:
        with memory.store.transaction() as conn:
            return [conn.execute(*sqlu.lexical_statement(conn, scope, t, vector, 10, explain=True)).fetchone()[0]
                    for t in texts]  # fmt: skip

    before = plans()
    assert [_removed(p) for p in before] == [0, 0]
    probe.add_user(memory, "app", "c", probe.cheap_texts(1500, seed=13), analyze=True, seed=13)
    after = plans()
    assert [_removed(p) for p in after] == [0, 0]
    assert [probe.plan_rows(p).rows for p in after] == [probe.plan_rows(p).rows for p in before]


def _heap_fetches(plan: dict) -> float:
    node = plan[0]["Plan"] if isinstance(plan, list) else plan
    return node.get("Heap Fetches", 0) * node.get("Actual Loops", 1) + sum(
        _heap_fetches(child) for child in node.get("Plans", [])
    )


def test_bulk_load_leaves_the_postings_readable_without_the_heap(scratch_store, embedder):
    """Lexical search reads the postings by index-only scans, which skip the heap only on pages the visibility map
    marks all-visible: `bulk_load` vacuums them, so the first search after a load makes no heap fetch (without it,
    every posting read also fetched its heap tuple until autovacuum came by)."""
    memory = EventMemory(scratch_store, embedder, layer=LAYER)
    probe.add_user(memory, "app", "big", probe.cheap_texts(400, seed=21), analyze=True, seed=21)
    with scratch_store.connection() as conn:
        pages, visible = conn.execute(
            "SELECT pg_relation_size(oid) / current_setting('block_size')::int, relallvisible FROM pg_class"
            " WHERE oid = %s::regclass", [lex.POSTINGS_TABLE]
        ).fetchone()
    assert pages > 0 and visible == pages
    scope = memory.scope("app", "big")
    vector = probe.random_vectors(1, memory.model.dimension, seed=1)[0]
    with scratch_store.transaction() as conn:
        plan = conn.execute(*sqlu.lexical_statement(conn, scope, "w1 w2 w3 w7", vector, 10, explain=True)).fetchone()[0]
    assert _heap_fetches(plan) == 0


def test_ties_deeper_than_the_heap_are_ranked_exactly(scratch_store, embedder):
    """Lexical search takes the first k from a bounded heap TIE_ROOM rows past k deep; when the heap's last row ties
    the k-th, ties may reach past it, and the exact form (every hit at or above the k-th) runs instead. A user whose
    units repeat one text more often than the heap holds must still get the k tied units of smallest ids, as the
    reference statement (every hit scored and sorted) ranks them."""
    memory = EventMemory(scratch_store, embedder, layer=LAYER)
    repeated = ["w1 w2 w3"] * (lex.TIE_ROOM + 40)
    probe.add_user(memory, "app", "ties", repeated + probe.cheap_texts(60, seed=31), analyze=True, seed=31)
    scope = memory.scope("app", "ties")
    vector = probe.random_vectors(1, memory.model.dimension, seed=1)[0]
    for k in (1, 5, 10):
        with scratch_store.transaction() as conn:
            heap = conn.execute(*sqlu.lexical_statement(conn, scope, "w1 w2 w3", vector, k)).fetchall()
            assert heap and heap[0][lex.SPILL_COLUMN] is True  # the heap alone spilled: its rows are not the first k
            want = _reference(conn, scope, "w1 w2 w3", k)
            got = sqlu.lexical_search(conn, scope, "w1 w2 w3", vector, k)
        assert [(h.unit_id, h.session_id) for h in got] == [(r[0], r[1]) for r in want]
        assert [(r[0], r[4]) for r in heap] != [(r[0], r[1]) for r in want] or k == 1
