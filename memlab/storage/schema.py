"""DDL for the memory-unit table and the per-model HNSW indexes.

Design notes:
- `embedding` is an untyped `vector`, so several embedding models (even of different dimensions) live side
  by side during a migration. Each (model, layer) pair gets its own *partial expression* HNSW index,
  `(embedding::vector(dim)) WHERE embed_model = '<model>' AND layer = '<layer>'`. One index per layer keeps
  each graph dense in rows a search can use: in a shared index, a user's chunks sit among everyone's
  events and an iterative scan runs out of its budget before reaching them.
- Every unique key starts with (app_name, user_id): the table can be distributed by user (Citus) or
  hash-partitioned on user_id without changing a key.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from psycopg import sql

UNITS_TABLE = "memory_unit"
SCOPE_INDEX = "memory_unit_scope"
PRIMARY_KEY = "memory_unit_once"
SCHEMA_LOCK_KEY = 0x6D656D6C6162  # "memlab": serialises concurrent schema creation

SCHEMA_DDL = f"""
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
CREATE TABLE IF NOT EXISTS {UNITS_TABLE} (
    app_name     text        NOT NULL,
    user_id      text        NOT NULL,
    session_id   text        NOT NULL,
    layer        text        NOT NULL,
    unit_id      text        NOT NULL,
    event_ids    text[]      NOT NULL,
    author       text,
    occurred_at  timestamptz NOT NULL,
    body         text        NOT NULL,
    embed_model  text        NOT NULL REFERENCES memlab_embedding_model (model_id),
    embedding    vector      NOT NULL,
    CONSTRAINT memory_unit_once PRIMARY KEY (app_name, user_id, layer, unit_id, embed_model)
);
ALTER TABLE {UNITS_TABLE} ALTER COLUMN embedding SET STORAGE PLAIN;
CREATE INDEX IF NOT EXISTS {SCOPE_INDEX} ON {UNITS_TABLE} (app_name, user_id, occurred_at DESC);
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


def index_name_for(model_id: str, layer: str) -> str:
    """A stable, SQL-safe index name for any model id and layer (ids may hold '/', '@', spaces)."""
    return f"memory_unit_hnsw_{hashlib.sha1(f'{model_id}|{layer}'.encode()).hexdigest()[:12]}"


def hnsw_index_ddl(model: ModelInfo, layer: str, *, m: int = 16, ef_construction: int = 64) -> sql.Composed:
    """The partial expression HNSW index (cosine) that serves searches of one model and layer."""
    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw ((embedding::{vtype}) vector_cosine_ops) "
        "WITH (m = {m}, ef_construction = {efc}) WHERE embed_model = {model} AND layer = {layer}"
    ).format(
        name=sql.Identifier(index_name_for(model.model_id, layer)),
        layer=sql.Literal(layer),
        table=sql.Identifier(UNITS_TABLE),
        vtype=model.vector_type(),
        m=sql.Literal(m),
        efc=sql.Literal(ef_construction),
        model=sql.Literal(model.model_id),
    )
