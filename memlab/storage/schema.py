"""The schema around the memory-unit table: the embedding-model registry, the vector-index registry and the
tombstones, plus the names every module shares.

The memory-unit table itself (its DDL, its indexes and every statement on it) lives in
`memlab.storage.units`. `Store` creates them in dependency order: `MODELS_DDL`, the unit table,
`TOMBSTONE_DDL`, `ERASURE_DDL` (the markers of `memlab.storage.erasures`).
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

UNITS_TABLE = "memory_unit"
SCOPE_INDEX = "memory_unit_scope"
PRIMARY_KEY = "memory_unit_once"
SCHEMA_LOCK_KEY = 0x6D656D6C6162  # "memlab": serialises concurrent schema creation

# Created before the unit table: its embed_model column references memlab_embedding_model.
MODELS_DDL = """
CREATE TABLE IF NOT EXISTS memlab_embedding_model (
    model_id    text PRIMARY KEY,
    dimension   integer NOT NULL CHECK (dimension > 0),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS memlab_vector_index (
    model_id    text NOT NULL REFERENCES memlab_embedding_model (model_id) ON DELETE CASCADE,
    layer       text NOT NULL,
    index_name  text NOT NULL UNIQUE,
    PRIMARY KEY (model_id, layer)
);
"""

# A tombstone is one deleted event of one session; session_id '' (what tombstones written before sessions were
# part of an event's identity hold) stands for every session of the user. The DO block brings a table of the
# old shape (no session column in the key) up to date, once, under the caller's schema lock.
ANY_SESSION = ""
TOMBSTONE_DDL = """
CREATE TABLE IF NOT EXISTS memory_tombstone (
    app_name    text        NOT NULL,
    user_id     text        NOT NULL,
    event_id    text        NOT NULL,
    deleted_at  timestamptz NOT NULL DEFAULT now(),
    session_id  text        NOT NULL DEFAULT '',
    PRIMARY KEY (app_name, user_id, event_id, session_id)
);
ALTER TABLE memory_tombstone ADD COLUMN IF NOT EXISTS session_id text NOT NULL DEFAULT '';
DO $$
DECLARE
    pk name;
BEGIN
    SELECT c.conname INTO pk FROM pg_constraint c
     WHERE c.conrelid = 'memory_tombstone'::regclass AND c.contype = 'p'
       AND NOT (SELECT a.attnum FROM pg_attribute a
                 WHERE a.attrelid = c.conrelid AND a.attname = 'session_id') = ANY (c.conkey);
    IF pk IS NOT NULL THEN
        EXECUTE format('ALTER TABLE memory_tombstone DROP CONSTRAINT %I, '
                       'ADD PRIMARY KEY (app_name, user_id, event_id, session_id)', pk);
    END IF;
END $$;
"""

# Erasure markers (see memlab.storage.erasures): a digest of what was erased and the generation it was erased at.
ERASURE_DDL = """
CREATE SEQUENCE IF NOT EXISTS memlab_erasure_generation;
CREATE TABLE IF NOT EXISTS memlab_erasure (
    scope_key   text        NOT NULL,
    generation  bigint      NOT NULL,
    erased_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope_key, generation)
);
CREATE INDEX IF NOT EXISTS memlab_erasure_at ON memlab_erasure (erased_at);
"""


@dataclass(frozen=True)
class ModelInfo:
    """A registered embedding model: its id and vector dimension."""

    model_id: str
    dimension: int

    def vector_type(self) -> sql.Composable:
        # The dimension is an int (checked here), composed as SQL text rather than a sql.Literal: queries with
        # placeholders hold no literals at all (a test checks), and an int cannot smuggle one in.
        return sql.SQL("vector({})").format(sql.SQL(str(int(self.dimension))))
