"""Full-text search of the memory units: the narrow side table that serves it (`TERMS_TABLE`, kept by triggers
on the unit table) and the BM25 statement over it.

Every read filters by app_name and user_id in SQL (and by model and layer): no row of another user can
reach Python. Functions take a connection so the caller decides the transaction."""

from __future__ import annotations

import numpy as np
import psycopg
from psycopg import sql

from memlab.storage.schema import UNITS_TABLE
from memlab.storage.unit_counts import COUNTS_TABLE
from memlab.storage.unit_table import LEXICAL_INDEX, READABLE_TIME, TEXT_SEARCH_CONFIG, Scope
from memlab.types import Hit

# -- the side table ---------------------------------------------------------------------------------------
# One narrow row per unit: its key, its document length (lexemes, as BM25 counts them) and its lexemes plus one
# lexeme naming its scope (`memlab_scope_lexeme`: an MD5 of app, user, layer and model, with spaces, which no
# parser ever emits). Lexical search reads these rows, not the unit table's wide ones (embeddings, bodies): a
# common word's thousands of hits cost a narrow row each. Its GIN index holds the scope lexeme too, so a
# search ANDs it with the query's words and the index hands back this user's rows only, however many other
# users share a word. Statement triggers on the unit table keep it and POSTINGS_TABLE (insert, delete, update,
# truncate): every forget path deletes units, so erasure reaches both; a database from before them fills them once
# on open.
TERMS_TABLE = "memory_unit_terms"
POSTINGS_TABLE = "memory_unit_postings"
TERMS_INDEX = LEXICAL_INDEX
OLD_LEXICAL_INDEX = "memory_unit_lexemes"  # the unit table's GIN index, which the side table replaces
_KEY = "app_name, user_id, layer, session_id, unit_id, embed_model"
# dl: the unit's lexemes (BM25's document length; each lexeme's count, tf, is its posting's); occurred_at:
# with it, the k rows returned are one probe of either unit-table index that starts with (app, user), the primary
# key or the scope index (app, user, occurred_at), whichever the planner picks (with stale statistics it takes the
# smaller scope index, which without the time reads all of the user's rows for each row returned).
_ROW = (
    f"SELECT {_KEY}, occurred_at, length(lexemes),"
    " lexemes || array_to_tsvector(ARRAY[memlab_scope_lexeme(app_name, user_id, layer, embed_model)])"
)
_COLUMNS = (*_KEY.split(", "), "occurred_at", "dl", "lexemes")  # the side table's layout (id: postings)
_EXPECTED = ", ".join(f"'{c}'" for c in _COLUMNS)
_EXPECTED_COUNT = len(_COLUMNS)
_MATCH = "(t.app_name, t.user_id, t.layer, t.session_id, t.unit_id, t.embed_model) = " \
         "(r.app_name, r.user_id, r.layer, r.session_id, r.unit_id, r.embed_model)"  # fmt: skip
# Postings: one row per (unit, lexeme) of the side table, keyed (scope, lexeme, unit) with the lexeme's count and
# the unit's length in the index (lexemes compared bytewise, COLLATE "C": a b-tree of the database's collation
# calls strcoll per comparison, a sixth of the trigger's cost on short turns), so a word's rows for one user are
# one index-only range scan of narrow tuples (the side table's GIN index hands back row locations whose wide rows
# must each be fetched). `scope` is the MD5 of the scope lexeme (app, user, layer, model) as a uuid; `unit` the
# side row's id. The scope's key and lexeme (two MD5s) are computed once per unit as its side row is written, not
# once per posting: a short turn has about ten postings, and per posting they were a third of the trigger's cost.
_POSTED = ("id, dl, lexemes, memlab_scope_key(app_name, user_id, layer, embed_model) AS scope,"
           " memlab_scope_lexeme(app_name, user_id, layer, embed_model) AS scope_lexeme")  # fmt: skip
_POSTED_T = "t.id, t.app_name, t.user_id, t.layer, t.embed_model, t.lexemes"
_POSTINGS = (
    "SELECT side.scope, u.lexeme, side.id, greatest(cardinality(u.positions), 1), side.dl"
    " FROM side CROSS JOIN unnest(side.lexemes) AS u WHERE u.lexeme <> side.scope_lexeme"
)
TERMS_DDL = f"""
CREATE OR REPLACE FUNCTION memlab_scope_lexeme(app text, usr text, layer text, model text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 'memlab scope ' || md5(quote_literal(app) || ',' || quote_literal(usr) || ',' || quote_literal(layer)
                                  || ',' || quote_literal(model));
CREATE OR REPLACE FUNCTION memlab_scope_key(app text, usr text, layer text, model text) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN md5(memlab_scope_lexeme(app, usr, layer, model))::uuid;
CREATE OR REPLACE FUNCTION memlab_terms_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH side AS (INSERT INTO {TERMS_TABLE} ({_KEY}, occurred_at, dl, lexemes) {_ROW} FROM added
                  RETURNING {_POSTED})
    INSERT INTO {POSTINGS_TABLE} (scope, lexeme, unit, tf, dl) {_POSTINGS};
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION memlab_terms_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH side AS (DELETE FROM {TERMS_TABLE} t USING removed r WHERE {_MATCH} RETURNING {_POSTED_T})
    DELETE FROM {POSTINGS_TABLE} p USING side s, unnest(s.lexemes) AS u
     WHERE p.scope = memlab_scope_key(s.app_name, s.user_id, s.layer, s.embed_model) AND p.lexeme = u.lexeme
       AND p.unit = s.id;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION memlab_terms_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH side AS (DELETE FROM {TERMS_TABLE} t USING removed r WHERE {_MATCH} RETURNING {_POSTED_T})
    DELETE FROM {POSTINGS_TABLE} p USING side s, unnest(s.lexemes) AS u
     WHERE p.scope = memlab_scope_key(s.app_name, s.user_id, s.layer, s.embed_model) AND p.lexeme = u.lexeme
       AND p.unit = s.id;
    WITH side AS (INSERT INTO {TERMS_TABLE} ({_KEY}, occurred_at, dl, lexemes) {_ROW} FROM added
                  RETURNING {_POSTED})
    INSERT INTO {POSTINGS_TABLE} (scope, lexeme, unit, tf, dl) {_POSTINGS};
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION memlab_terms_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE {TERMS_TABLE}, {POSTINGS_TABLE};
    RETURN NULL;
END $$;
DO $$
BEGIN
    -- the side table and postings are derived from the unit table: one of another layout (a build between
    -- releases) is dropped and rebuilt rather than half-migrated
    IF to_regclass('{TERMS_TABLE}') IS NOT NULL THEN
        IF (SELECT count(*) FROM pg_attribute WHERE attrelid = '{TERMS_TABLE}'::regclass AND NOT attisdropped
            AND attname IN ({_EXPECTED})) < {_EXPECTED_COUNT} THEN
            DROP TABLE IF EXISTS {POSTINGS_TABLE};
            DROP TABLE {TERMS_TABLE};
            DROP TRIGGER IF EXISTS memlab_terms_insert ON {UNITS_TABLE};
            DROP TRIGGER IF EXISTS memlab_terms_delete ON {UNITS_TABLE};
            DROP TRIGGER IF EXISTS memlab_terms_update ON {UNITS_TABLE};
            DROP TRIGGER IF EXISTS memlab_terms_truncate ON {UNITS_TABLE};
        END IF;
    END IF;
    IF to_regclass('{TERMS_TABLE}') IS NULL THEN
        LOCK TABLE {UNITS_TABLE} IN SHARE MODE;  -- writers wait while the table is filled
        CREATE TABLE {TERMS_TABLE} (
            app_name text NOT NULL, user_id text NOT NULL, layer text NOT NULL, session_id text NOT NULL,
            unit_id text NOT NULL, embed_model text NOT NULL, occurred_at timestamptz NOT NULL, dl integer NOT NULL,
            lexemes tsvector NOT NULL,
            CONSTRAINT {TERMS_TABLE}_once PRIMARY KEY ({_KEY})
        );
        -- a unit table from before the side table: fill it once
        INSERT INTO {TERMS_TABLE} ({_KEY}, occurred_at, dl, lexemes) {_ROW} FROM {UNITS_TABLE};
        CREATE INDEX {TERMS_INDEX} ON {TERMS_TABLE} USING gin (lexemes);
        -- postings and the unit number follow below, as for a side table from before them
        DROP TABLE IF EXISTS {POSTINGS_TABLE};
        CREATE TRIGGER memlab_terms_insert AFTER INSERT ON {UNITS_TABLE} REFERENCING NEW TABLE AS added
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_terms_added();
        CREATE TRIGGER memlab_terms_delete AFTER DELETE ON {UNITS_TABLE} REFERENCING OLD TABLE AS removed
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_terms_removed();
        CREATE TRIGGER memlab_terms_update AFTER UPDATE ON {UNITS_TABLE}
            REFERENCING OLD TABLE AS removed NEW TABLE AS added
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_terms_updated();
        CREATE TRIGGER memlab_terms_truncate AFTER TRUNCATE ON {UNITS_TABLE}
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_terms_truncated();
    END IF;
    IF to_regclass('{POSTINGS_TABLE}') IS NULL THEN
        LOCK TABLE {UNITS_TABLE} IN SHARE MODE;
        ALTER TABLE {TERMS_TABLE} ADD COLUMN IF NOT EXISTS id bigint GENERATED ALWAYS AS IDENTITY;
        CREATE UNIQUE INDEX IF NOT EXISTS {TERMS_TABLE}_id ON {TERMS_TABLE} (id);
        CREATE TABLE {POSTINGS_TABLE} (
            scope uuid NOT NULL, lexeme text COLLATE "C" NOT NULL, unit bigint NOT NULL, tf integer NOT NULL,
            dl integer NOT NULL,
            CONSTRAINT {POSTINGS_TABLE}_once PRIMARY KEY (scope, lexeme, unit) INCLUDE (tf, dl)
        );
        WITH side AS (SELECT {_POSTED} FROM {TERMS_TABLE})
        INSERT INTO {POSTINGS_TABLE} (scope, lexeme, unit, tf, dl) {_POSTINGS};
    END IF;
    -- `repeats` (a unit's lexemes occurring more than once, with their counts) fed scoring before the postings
    -- held each lexeme's count; nothing reads it, and computing it was a fifth of the insert trigger's cost
    IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = '{TERMS_TABLE}'::regclass AND attname = 'repeats'
               AND NOT attisdropped) THEN
        ALTER TABLE {TERMS_TABLE} DROP COLUMN repeats;
    END IF;
    IF (SELECT attcollation FROM pg_attribute WHERE attrelid = '{POSTINGS_TABLE}'::regclass
           AND attname = 'lexeme') <> 'pg_catalog."C"'::regcollation THEN
        -- postings from before the bytewise lexemes: one rewrite of the table and its key
        LOCK TABLE {UNITS_TABLE} IN SHARE MODE;
        ALTER TABLE {POSTINGS_TABLE} ALTER COLUMN lexeme TYPE text COLLATE "C";
    END IF;
END $$;
DROP INDEX IF EXISTS {OLD_LEXICAL_INDEX};
"""


def create_terms(conn: psycopg.Connection) -> None:
    """The side table, its index and the unit table's triggers that keep it (idempotent; after the unit table)."""
    conn.execute(TERMS_DDL)


def vacuum_postings(conn: psycopg.Connection) -> None:
    """VACUUM (ANALYZE) the postings and the side table (autocommit connection). Lexical search reads the postings by
    index-only scans, which skip the heap only for pages the visibility map marks all-visible: right after a bulk
    load none is until autovacuum comes by, and every posting read costs a heap fetch as well."""
    conn.execute(sql.SQL("VACUUM (ANALYZE) {}, {}").format(sql.Identifier(POSTINGS_TABLE), sql.Identifier(TERMS_TABLE)))


# -- the search -------------------------------------------------------------------------------------------
# Full-text search, ranked by BM25 over the rendered text's lexemes (PostgreSQL's ts_rank_cd has no inverse
# document frequency, so a common word ranks like a rare name). `terms` are the query's lexemes; a unit is a
# candidate when it holds any of them (conversational questions rarely share every word with the turn that
# answers them); units holding every word (`websearch_to_tsquery`) rank first, then by BM25 (k1 = 1.2, b = 0.75)
# with document frequencies and lengths taken over the user's own units of this layer and model. `coverage` is the
# share of the query's IDF mass a unit holds: a question about a name memory never heard of covers little, however
# near its vector lands (a feature of the answerability gate). A query word no unit holds weighs as a word one unit
# holds: "called" or "many" must not outweigh the name that was found. Every hit carries its cosine distance too, so
# `max_distance` means the same in every mode.
#
# Cost: one index tuple per (hit, query word it holds), nothing unpacked, and no pass over the user's units:
# - N and the mean document length come from the kept counts (COUNTS_TABLE, O(1));
# - `idf`: each word's document frequency, an index-only count of its postings under (scope key, word): no row
#   leaves the index, and other users' postings are never read;
# - `bm25`: word by word, one index-only range scan of the same postings, tf and dl from the index, each row scored
#   with its word's weight and summed per unit in one hash aggregate. (Reading the side rows through the GIN index
#   costs many times more CPU a posting than the index-only scans, and gathering the postings once to group them
#   twice, for df and then for scores, costs about twice counting first and scoring once);
# - `kth` and `top`: the k-th best (every word first, then score) from a bounded top-k sort, and the hits at or
#   above it, which are the first k with their ties, without sorting every hit;
# - `every`: units holding every word, found by the side table's GIN index (the query AND the scope lexeme);
# - the k rows returned: their side rows by unit number, then the unit table by primary key (body, author, time,
#   distance).
# No join pairs two row sets that grow with the user, and nothing is computed per unit beyond its postings' rows.
# The side table's scope filters compare under COLLATE "C" (the same equality for text) so no b-tree can serve
# them: its rows are found through the GIN index only, even when stale statistics would have the planner walk
# every row of the user through its primary key, once per word. Joining the hits back to their scores instead
# lets the planner pick a nested loop, hits x hits, on a user with stale statistics; reading every hit's wide unit
# row to unpack its lexemes costs a pass over the user's hits.
_SCOPE = "app_name = %(app)s AND user_id = %(user)s AND embed_model = %(model)s AND layer = %(layer)s"
_C_SCOPE = (
    'c.app_name = %(app)s COLLATE "C" AND c.user_id = %(user)s COLLATE "C" AND c.embed_model = %(model)s COLLATE "C" '
    'AND c.layer = %(layer)s COLLATE "C"'
)
_M_SCOPE = "m.app_name = %(app)s AND m.user_id = %(user)s AND m.embed_model = %(model)s AND m.layer = %(layer)s"
_PROLOGUE = (
    "WITH q AS (SELECT websearch_to_tsquery({cfg}, %(text)s) AS web,"
    " ARRAY(SELECT DISTINCT l FROM unnest(tsvector_to_array(to_tsvector({cfg}, %(text)s))) AS l"
    "  WHERE l !~ '[''\\\\]') AS terms),"
    # any word: one lexeme each, cast rather than parsed; NULL (no row) when the query has no word
    " qq AS MATERIALIZED (SELECT web, terms,"
    "  (SELECT string_agg(quote_literal(t), ' | ') FROM unnest(terms) AS t)::tsquery AS anyq,"
    "  quote_literal(memlab_scope_lexeme(%(app)s, %(user)s, %(layer)s, %(model)s))::tsquery AS mine,"
    "  memlab_scope_key(%(app)s, %(user)s, %(layer)s, %(model)s) AS key FROM q),"
    " stats AS MATERIALIZED (SELECT coalesce(sum(delta), 0)::float8 AS n,"
    "  coalesce(sum(doc_length) / nullif(sum(delta), 0), 1)::float8 AS avgdl FROM {counts} WHERE " + _SCOPE + "),"
    # document frequencies: an index-only count per word (no row leaves the index), before any posting is scored
    " idf AS MATERIALIZED (SELECT lexeme, idf, idf * 2.2 AS weight, 1.2 * 0.75 / avgdl AS per_length"
    "  FROM (SELECT t AS lexeme, ln(1 + (s.n - greatest(d.df, 1) + 0.5) / (greatest(d.df, 1) + 0.5)) AS idf, s.avgdl"
    "  FROM qq CROSS JOIN unnest(qq.terms) AS t CROSS JOIN stats s CROSS JOIN LATERAL (SELECT count(*)::float8 AS df"
    "   FROM {postings} p WHERE p.scope = qq.key AND p.lexeme = t) AS d) AS w),"
    " total AS MATERIALIZED (SELECT nullif(sum(idf), 0) AS idf FROM idf),"
    " every AS MATERIALIZED (SELECT c.id AS row FROM {terms} c WHERE " + _C_SCOPE + " AND c.lexemes @@"
    "  (SELECT CASE WHEN numnode(web) > 0 THEN web && anyq && mine END FROM qq)),"
)
_BM25 = (
    " bm25 AS {materialized}(SELECT p.unit AS row, p.unit IN (SELECT e.row FROM every e) AS every_word,"
    "  sum(i.weight * p.tf / (p.tf + 0.3 + i.per_length * p.dl)) AS score,"
    "  sum(i.idf) / max(total.idf) AS coverage"
    "  FROM qq CROSS JOIN idf i CROSS JOIN total CROSS JOIN LATERAL (SELECT p.unit, p.tf::float8 AS tf,"
    "   p.dl::float8 AS dl FROM {postings} p WHERE p.scope = qq.key AND p.lexeme = i.lexeme OFFSET 0) AS p"
    "  GROUP BY p.unit),"
)
# The first k (every word first, then score) with their ties, which the unit ids then order. Usually from one
# bounded top-N heap over the hits, TIE_ROOM rows past k deep, with no sort nor copy of every hit; `spill` says the
# heap's last row ties the k-th, so ties may reach past it: then `_EXACT_TOP` runs instead (the k-th best from a
# bounded sort, and every hit at or above it).
TIE_ROOM = 64
SPILL_COLUMN = 10  # the statement's last column: `spill`, the same on every row
_HEAP_TOP = (
    " top AS MATERIALIZED (SELECT b.row, b.every_word, b.score, b.coverage FROM bm25 b"
    "  ORDER BY b.every_word DESC, b.score DESC LIMIT %(k)s + %(room)s),"
    " spill AS MATERIALIZED (SELECT (SELECT count(*) FROM top) = %(k)s + %(room)s"
    "  AND (SELECT (t.every_word, t.score) FROM top t ORDER BY t.every_word DESC, t.score DESC"
    "   OFFSET greatest(%(k)s, 1) - 1 LIMIT 1)"
    "  = (SELECT (t.every_word, t.score) FROM top t ORDER BY t.every_word, t.score LIMIT 1) AS spill),"
)
_EXACT_TOP = (
    " kth AS MATERIALIZED (SELECT b.every_word, b.score FROM bm25 b ORDER BY b.every_word DESC, b.score DESC"
    "  LIMIT 1 OFFSET greatest(%(k)s, 1) - 1),"
    " top AS MATERIALIZED (SELECT b.row, b.every_word, b.score, b.coverage FROM bm25 b"
    "  WHERE NOT EXISTS (SELECT FROM kth) OR (b.every_word, b.score) >= (SELECT k.every_word, k.score FROM kth k)),"
    " spill AS (SELECT false AS spill),"
)
_RANKED = (
    " ranked AS (SELECT c.session_id, c.unit_id, c.occurred_at, t.every_word, t.score, t.coverage FROM top t"
    "  CROSS JOIN LATERAL (SELECT c.session_id, c.unit_id, c.occurred_at FROM {terms} c WHERE "
    + _C_SCOPE
    + " AND c.id = t.row"
    "  OFFSET 0) AS c ORDER BY t.every_word DESC, t.score DESC, c.unit_id, c.session_id LIMIT %(k)s)"
    " SELECT m.unit_id, m.body, m.author, "
    + READABLE_TIME.replace("occurred_at", "m.occurred_at")
    + " AS occurred_at, m.session_id, m.event_ids, (m.embedding::{vt} <=> %(q)s::{vt}) AS distance, r.score,"
    " r.coverage, r.every_word, (SELECT spill FROM spill)"
    " FROM ranked r CROSS JOIN LATERAL (SELECT * FROM {table} m WHERE "
    + _M_SCOPE
    + " AND m.occurred_at = r.occurred_at AND m.session_id = r.session_id AND m.unit_id = r.unit_id OFFSET 0) AS m"
    " ORDER BY r.every_word DESC, r.score DESC, m.unit_id, m.session_id"
)
_LEXICAL = _PROLOGUE + _BM25.replace("{materialized}", "") + _HEAP_TOP + _RANKED
_LEXICAL_EXACT = _PROLOGUE + _BM25.replace("{materialized}", "MATERIALIZED ") + _EXACT_TOP + _RANKED


def _statement_settings(conn: psycopg.Connection) -> str:
    """SET LOCAL what the statement runs with; returns enable_seqscan's previous value. No NOTICE for stop-word
    queries; no sequential scan of the side table: on a small table the planner would rather read every row (of
    every user) than use the GIN index, whose cost it cannot estimate for a query computed at run time."""
    return conn.execute(
        "SELECT current_setting('enable_seqscan'), set_config('client_min_messages', 'warning', true), "
        "set_config('enable_seqscan', 'off', true)"
    ).fetchone()[0]


def lexical_statement(
    conn: psycopg.Connection, scope: Scope, text: str, vector: np.ndarray, top_k: int, *, explain: bool = False
) -> tuple[sql.Composed, dict]:
    """The lexical search statement and its parameters; with `explain`, its EXPLAIN (ANALYZE, FORMAT JSON), so the
    plan checks count the rows of what `lexical_search` runs first (under the same settings, SET LOCAL here; the
    exact form it runs after a heap that spilled on ties is not counted)."""
    _statement_settings(conn)
    return _compose(scope, text, vector, top_k, explain=explain)


def _compose(
    scope: Scope, text: str, vector: np.ndarray, top_k: int, *, explain: bool, statement: str = _LEXICAL
) -> tuple[sql.Composed, dict]:
    query = sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) " + statement if explain else statement).format(
        cfg=sql.Literal(TEXT_SEARCH_CONFIG),
        vt=scope.model.vector_type(),
        table=sql.Identifier(UNITS_TABLE),
        terms=sql.Identifier(TERMS_TABLE),
        postings=sql.Identifier(POSTINGS_TABLE),
        counts=sql.Identifier(COUNTS_TABLE),
    )
    params = {"q": vector, "app": scope.app_name, "user": scope.user_id, "model": scope.model.model_id,
              "layer": scope.layer, "k": top_k, "text": text, "room": TIE_ROOM}  # fmt: skip
    return query, params


def lexical_search(conn: psycopg.Connection, scope: Scope, text: str, vector: np.ndarray, top_k: int) -> list[Hit]:
    """The user's units ranked by full-text match of `text` (see `_LEXICAL`), at most `top_k`, each with its
    cosine distance to `vector`, its BM25 score in `Hit.lexical` and its share of the query's IDF mass in
    `Hit.coverage`."""
    previous = _statement_settings(conn)
    rows = conn.execute(*_compose(scope, text, vector, top_k, explain=False)).fetchall()
    if rows and rows[0][SPILL_COLUMN]:  # ties at the k-th reach past the heap: every hit at or above it, exactly
        rows = conn.execute(*_compose(scope, text, vector, top_k, explain=False, statement=_LEXICAL_EXACT)).fetchall()
    conn.execute("SELECT set_config('enable_seqscan', %s, true)", [previous])  # the caller's setting again
    return [
        Hit(unit_id=r[0], text=r[1], author=r[2], timestamp=r[3], session_id=r[4], event_ids=tuple(r[5]),
            distance=float(r[6]), lexical=float(r[7]), coverage=float(r[8]) if r[8] is not None else None)
        for r in rows
    ]  # fmt: skip
