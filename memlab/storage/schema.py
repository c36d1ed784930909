"""The schema around the memory-unit table: the embedding-model registry, the vector-index registry and the
tombstones, plus the names every module shares.

The memory-unit table itself (its DDL, its indexes and every statement on it) lives in
`memlab.storage.units`. `Store` creates the three in dependency order: `MODELS_DDL`, the unit table,
`TOMBSTONE_DDL`.
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

TOMBSTONE_DDL = """
CREATE TABLE IF NOT EXISTS memory_tombstone (
    app_name    text        NOT NULL,
    user_id     text        NOT NULL,
    event_id    text        NOT NULL,
    deleted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_name, user_id, event_id)
);
"""


@dataclass(frozen=True)
class ModelInfo:
    """A registered embedding model: its id and vector dimension."""

    model_id: str
    dimension: int

    def vector_type(self) -> sql.Composable:
        return sql.SQL("vector({})").format(sql.Literal(self.dimension))
