"""The kept unit counts (and summed document lengths) per (app, user, layer, model): what `strategy="auto"`
and BM25 read instead of passing over a user's units."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from psycopg import sql

from memlab.storage.schema import UNITS_TABLE
from memlab.storage.unit_table import Scope, tenant_index_name

# -- kept counts: what `strategy="auto"` reads instead of counting a user's units per search ----------------
# Append-only deltas (one row per scope per written statement), so concurrent writers never wait on one hot
# counter row; a read sums the user's few rows and folds them into one once they pile up. When a scope's last
# unit is deleted its count rows go too: no row keeps a user id after erasure. Beside the count, the summed
# document length (lexemes per unit, as full-text search counts them) gives BM25 its N and mean length in O(1).
COUNTS_TABLE = "memory_unit_count"
FOLD_AFTER = 32  # delta rows of one scope before a read folds them into one
_KEY = "app_name, user_id, layer, embed_model"
COUNTS_DDL = f"""
CREATE OR REPLACE FUNCTION memlab_count_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {COUNTS_TABLE} ({_KEY}, delta, doc_length)
    SELECT {_KEY}, count(*), coalesce(sum(length(lexemes)), 0) FROM added GROUP BY {_KEY};
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION memlab_count_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {COUNTS_TABLE} ({_KEY}, delta, doc_length)
    SELECT {_KEY}, -count(*), -coalesce(sum(length(lexemes)), 0) FROM removed GROUP BY {_KEY};
    -- a scope left with no unit keeps no count row (a user id is personal data)
    DELETE FROM {COUNTS_TABLE} c USING (SELECT DISTINCT {_KEY} FROM removed) r
     WHERE (c.app_name, c.user_id, c.layer, c.embed_model) = (r.app_name, r.user_id, r.layer, r.embed_model)
       AND NOT EXISTS (SELECT 1 FROM {UNITS_TABLE} u
                        WHERE (u.app_name, u.user_id, u.layer, u.embed_model)
                            = (r.app_name, r.user_id, r.layer, r.embed_model));
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION memlab_count_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {COUNTS_TABLE};
    RETURN NULL;
END $$;
DO $$
BEGIN
    IF to_regclass('{COUNTS_TABLE}') IS NULL THEN
        CREATE TABLE {COUNTS_TABLE} (
            app_name text NOT NULL, user_id text NOT NULL, layer text NOT NULL, embed_model text NOT NULL,
            delta bigint NOT NULL, doc_length bigint NOT NULL DEFAULT 0
        );
        CREATE INDEX {COUNTS_TABLE}_scope ON {COUNTS_TABLE} ({_KEY});
        CREATE TRIGGER memlab_count_insert AFTER INSERT ON {UNITS_TABLE} REFERENCING NEW TABLE AS added
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_count_added();
        CREATE TRIGGER memlab_count_delete AFTER DELETE ON {UNITS_TABLE} REFERENCING OLD TABLE AS removed
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_count_removed();
        CREATE TRIGGER memlab_count_update_old AFTER UPDATE ON {UNITS_TABLE} REFERENCING OLD TABLE AS removed
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_count_removed();
        CREATE TRIGGER memlab_count_update_new AFTER UPDATE ON {UNITS_TABLE} REFERENCING NEW TABLE AS added
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_count_added();
        CREATE TRIGGER memlab_count_truncate AFTER TRUNCATE ON {UNITS_TABLE}
            FOR EACH STATEMENT EXECUTE FUNCTION memlab_count_truncated();
        -- a table from before the counts: count it once
        INSERT INTO {COUNTS_TABLE} ({_KEY}, delta, doc_length)
        SELECT {_KEY}, count(*), coalesce(sum(length(lexemes)), 0) FROM {UNITS_TABLE} GROUP BY {_KEY};
    ELSIF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '{COUNTS_TABLE}'::regclass
                       AND attname = 'doc_length' AND NOT attisdropped) THEN
        -- counts from before the document lengths: recount once, writers held off meanwhile
        LOCK TABLE {UNITS_TABLE} IN SHARE MODE;
        ALTER TABLE {COUNTS_TABLE} ADD COLUMN IF NOT EXISTS doc_length bigint NOT NULL DEFAULT 0;
        DELETE FROM {COUNTS_TABLE};
        INSERT INTO {COUNTS_TABLE} ({_KEY}, delta, doc_length)
        SELECT {_KEY}, count(*), coalesce(sum(length(lexemes)), 0) FROM {UNITS_TABLE} GROUP BY {_KEY};
    END IF;
END $$;
"""


def create_counts(conn: psycopg.Connection) -> None:
    """The count table and the unit table's triggers that keep it (idempotent; after the unit table)."""
    conn.execute(COUNTS_DDL)


_COUNT_SCOPE = "app_name = %s AND user_id = %s AND layer = %s AND embed_model = %s"


@dataclass(frozen=True)
class ScopeFacts:
    """What `auto` decides from, read in one round trip."""

    units: int  # the user's units of this layer and model (kept counts)
    tenant_index: bool  # the user's own partial HNSW index exists
    table_rows: int  # the planner's estimate of the whole table's rows


def scope_facts(conn: psycopg.Connection, scope: Scope, knobs: Sequence[tuple[str, str]] = ()) -> ScopeFacts:
    """The user's kept unit count, whether their per-tenant index exists, and the table's estimated rows, in
    one statement (a search pays one round trip for its strategy, not three); folds the counts when needed.
    `knobs` ((setting, value) pairs) are SET LOCAL by the same statement: a search that re-reads stale facts
    sets the strategy they last gave in the round trip that reads them (see `Search`)."""
    name = tenant_index_name(scope.model.model_id, scope.layer, scope.app_name, scope.user_id)
    params = [v for kv in knobs for v in kv] + [name, UNITS_TABLE, scope.app_name, scope.user_id, scope.layer,
                                               scope.model.model_id]  # fmt: skip
    row = conn.execute(
        sql.SQL(
            "SELECT " + "".join("set_config(%s, %s, true), " for _ in knobs) + "coalesce(sum(delta), 0), count(*), "
            "to_regclass(%s) IS NOT NULL, "
            "(SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = to_regclass(%s)) "
            "FROM {} WHERE " + _COUNT_SCOPE
        ).format(sql.Identifier(COUNTS_TABLE)),
        params,
    ).fetchone()
    total, rows, indexed, table_rows = row[len(knobs) :]
    if rows > FOLD_AFTER:
        fold_counts(conn, scope.app_name, scope.user_id, scope.layer, scope.model.model_id)
    return ScopeFacts(int(total), bool(indexed), int(table_rows or 0))


def fold_counts(conn: psycopg.Connection, app_name: str, user_id: str, layer: str, model_id: str) -> None:
    """Replace a scope's delta rows (counts and document lengths) by their sums (one statement: a concurrent fold
    sees the rows gone)."""
    conn.execute(
        sql.SQL(
            "WITH gone AS (DELETE FROM {t} WHERE " + _COUNT_SCOPE + " RETURNING delta, doc_length) "
            "INSERT INTO {t} (" + _KEY + ", delta, doc_length) SELECT %s, %s, %s, %s, sum(delta), sum(doc_length) "
            "FROM gone "
            "HAVING sum(delta) IS NOT NULL AND sum(delta) <> 0"
        ).format(t=sql.Identifier(COUNTS_TABLE)),
        [app_name, user_id, layer, model_id] * 2,
    )


def large_scopes(
    conn: psycopg.Connection, layer: str, model_id: str, at_least: int, app_name: str | None = None
) -> list[tuple[str, str]]:
    """(app, user) of every user of a layer and model with at least `at_least` units, from the kept counts."""
    rows = conn.execute(
        sql.SQL(
            "SELECT app_name, user_id FROM {} WHERE layer = %s AND embed_model = %s "
            "AND (%s::text IS NULL OR app_name = %s) GROUP BY app_name, user_id HAVING sum(delta) >= %s "
            "ORDER BY app_name, user_id"
        ).format(sql.Identifier(COUNTS_TABLE)),
        [layer, model_id, app_name, app_name, at_least],
    ).fetchall()
    return [(a, u) for a, u in rows]


def users_holding(conn: psycopg.Connection, layer: str, model_id: str, users: Sequence[tuple[str, str]]) -> int:
    """How many of these (app, user) pairs hold a unit of this layer and model, from the kept counts, in one
    round trip (each pair matched on its own app and user)."""
    if not users:
        return 0
    row = conn.execute(
        sql.SQL(
            "SELECT count(*) FROM (SELECT 1 FROM {} c JOIN unnest(%s::text[], %s::text[]) AS u(app_name, user_id) "
            "ON c.app_name = u.app_name AND c.user_id = u.user_id WHERE c.layer = %s AND c.embed_model = %s "
            "GROUP BY c.app_name, c.user_id HAVING sum(c.delta) > 0) AS held"
        ).format(sql.Identifier(COUNTS_TABLE)),
        [[a for a, _ in users], [u for _, u in users], layer, model_id],
    ).fetchone()
    return int(row[0])


def layer_index_state(conn: psycopg.Connection, layer: str, model_id: str, index_name: str) -> tuple[bool, int]:
    """Whether the layer's shared HNSW index (`index_name`) exists, and the layer's units over every app and user
    (from the kept counts, no scan of the unit table), in one round trip: what decides whether the index is due
    (memlab.events.core.index_due)."""
    row = conn.execute(
        sql.SQL(
            "SELECT to_regclass(%s) IS NOT NULL, coalesce(sum(delta), 0) FROM {} WHERE layer = %s AND embed_model = %s"
        ).format(sql.Identifier(COUNTS_TABLE)),
        [index_name, layer, model_id],
    ).fetchone()
    return bool(row[0]), int(row[1])
