"""The pgvector tables that LangChain, LlamaIndex and mem0 make, built through each library's own Python API.

memlab measures users' existing tables read-only; these builders make such tables the way an application would, so
the reader's presets are checked against what each library really writes. Every builder embeds with the packaged
all-MiniLM-L6-v2 offline (no hub download, no model or LLM call over the network) and returns the table's name and
where the library put each memlab field: a column, a JSON path expression, or None where the library keeps nothing
(the reader gives a constant there). JSON time values are ISO-8601 text: cast them with `::timestamptz`.

LangChain and LlamaIndex have no user, session or time of their own: applications keep them in the metadata. The
builders use the keys in METADATA_KEYS (LlamaIndex's own vector memory block keys sessions as `session_id` too);
mem0 has its own (`user_id`, `run_id`, `agent_id`, `role`, `created_at`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import psycopg
from langchain_core.embeddings import Embeddings
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.embeddings import BaseEmbedding
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

import memlab

FIELDS = ("app", "user", "session", "event_id", "author", "time", "text", "embedding", "model")
METADATA_KEYS = {"user": "user_id", "session": "session_id", "time": "created_at", "author": "role"}
LANGCHAIN_COLLECTION = "memlab"  # PGVector's default is "langchain"
LANGCHAIN_V2_TABLE = "memlab_langchain"  # PGVectorStore has no default table name
LLAMAINDEX_TABLE = "llamaindex"  # PGVectorStore's default; the table is "data_" + the lowercased name
MEM0_COLLECTION = "mem0"  # mem0's pgvector default
MEM0_APP = "memlab-test"  # written as mem0's agent_id


@dataclass(frozen=True)
class Record:
    """One memory an application writes: whose, in which session, what, when, and by whom (role)."""

    user: str
    session: str
    text: str
    time: datetime  # timezone-aware
    role: str = "user"


class LibraryTable(NamedTuple):
    """Where a library keeps memlab's fields in its table, and the vector index it made (None: none)."""

    table: str
    fields: dict[str, str | None]
    index: str | None  # "<method> (<column> <operator class>)", as in the index's definition
    distance: str  # the library's search distance, pgvector's operator


def _metadata(record: Record) -> dict[str, str]:
    return {METADATA_KEYS["user"]: record.user, METADATA_KEYS["session"]: record.session,
            METADATA_KEYS["time"]: record.time.isoformat(), METADATA_KEYS["author"]: record.role}  # fmt: skip


def _json_fields(column: str) -> dict[str, str]:
    """The metadata-kept fields as `column->>'key'` expressions (`->>` works on json and jsonb)."""
    return {field: f"{column}->>'{key}'" for field, key in METADATA_KEYS.items()}


def sqlalchemy_url(dsn: str, driver: str) -> URL:
    """A libpq DSN as a SQLAlchemy URL for `driver` (psycopg, psycopg2, asyncpg); a socket directory goes in the
    query, where every one of these drivers reads it."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    host, port = info.get("host"), info.get("port")
    socket = bool(host) and str(host).startswith("/")
    return URL.create(f"postgresql+{driver}", username=info.get("user"), password=info.get("password") or None,
                      host=None if socket else host, port=int(port) if port else None, database=info.get("dbname"),
                      query={"host": str(host)} if socket else {})  # fmt: skip


class LangChainEmbeddings(Embeddings):
    """A memlab embedder behind LangChain's `Embeddings` interface."""

    def __init__(self, embedder: memlab.Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed_documents(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_query(text).tolist()


class LlamaIndexEmbedding(BaseEmbedding):
    """A memlab embedder behind LlamaIndex's `BaseEmbedding` interface."""

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: memlab.Embedder) -> None:
        super().__init__(model_name=embedder.model_id)
        self._embedder = embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embedder.embed_query(query).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embedder.embed_documents(list(texts)).tolist()


def langchain_pgvector(dsn: str, records: Sequence[Record], embedder: memlab.Embedder, *,
                       collection: str = LANGCHAIN_COLLECTION) -> LibraryTable:  # fmt: skip
    """LangChain's `PGVector` (langchain_postgres.vectorstores): the shared tables langchain_pg_collection and
    langchain_pg_embedding, one collection's rows told apart by `collection_id`. It makes no vector index."""
    from langchain_postgres import PGVector
    from sqlalchemy import create_engine

    engine = create_engine(sqlalchemy_url(dsn, "psycopg"), poolclass=NullPool)
    try:
        store = PGVector(embeddings=LangChainEmbeddings(embedder), connection=engine, collection_name=collection,
                         embedding_length=embedder.dimension)  # fmt: skip
        store.add_texts([r.text for r in records], metadatas=[_metadata(r) for r in records])
    finally:
        engine.dispose()
    fields = {"app": "collection_id", **_json_fields("cmetadata"), "event_id": "id", "text": "document",
              "embedding": "embedding", "model": None}  # fmt: skip
    return LibraryTable("langchain_pg_embedding", fields, index=None, distance="<=>")


def langchain_pgvectorstore(
    dsn: str, records: Sequence[Record], embedder: memlab.Embedder, *, table: str = LANGCHAIN_V2_TABLE,
    metadata_columns: bool = False,
) -> LibraryTable:
    """LangChain's `PGVectorStore` (langchain_postgres.v2): a table of the application's naming from
    `PGEngine.init_vectorstore_table`, its metadata in the JSON column langchain_metadata or, with
    `metadata_columns`, in columns of their own; then the HNSW index `apply_vector_index` makes.

    PGVectorStore inserts row by row, each on a connection from the engine's pool: the builder keeps SQLAlchemy's
    default pool (a NullPool would start a server backend per row) and disposes of it before returning."""
    import asyncio

    from langchain_postgres import Column, PGEngine, PGVectorStore
    from langchain_postgres.v2.indexes import HNSWIndex

    engine = PGEngine.from_connection_string(sqlalchemy_url(dsn, "psycopg"))
    try:
        types = {"user": "TEXT", "session": "TEXT", "time": "TIMESTAMPTZ", "author": "TEXT"}
        columns = [Column(METADATA_KEYS[f], types[f]) for f in METADATA_KEYS] if metadata_columns else []
        engine.init_vectorstore_table(table, embedder.dimension, metadata_columns=columns)
        store = PGVectorStore.create_sync(engine, LangChainEmbeddings(embedder), table,
                                          metadata_columns=[c.name for c in columns])  # fmt: skip
        if metadata_columns:
            metadatas: list[dict[str, Any]] = [{**_metadata(r), METADATA_KEYS["time"]: r.time} for r in records]
        else:
            metadatas = [_metadata(r) for r in records]
        store.add_texts([r.text for r in records], metadatas=metadatas)
        store.apply_vector_index(HNSWIndex())
    finally:
        asyncio.run(engine.close())  # the pool's connections, closed on the engine's own loop
    kept = dict(METADATA_KEYS) if metadata_columns else _json_fields("langchain_metadata")
    fields = {"app": None, **kept, "event_id": "langchain_id", "text": "content", "embedding": "embedding",
              "model": None}  # fmt: skip
    return LibraryTable(table, fields, index="hnsw (embedding vector_cosine_ops)", distance="<=>")


def llamaindex_pgvectorstore(dsn: str, records: Sequence[Record], embedder: memlab.Embedder, *,
                             table: str = LLAMAINDEX_TABLE) -> LibraryTable:  # fmt: skip
    """LlamaIndex's `PGVectorStore` under a `VectorStoreIndex` of text nodes, with its HNSW index (hnsw_kwargs) and
    its own drivers (psycopg2, asyncpg). LlamaIndex embeds a node's metadata with its text unless the keys are
    excluded: they are here, so the stored vector is the text's alone."""
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.postgres import PGVectorStore

    store = PGVectorStore.from_params(
        connection_string=sqlalchemy_url(dsn, "psycopg2"), async_connection_string=sqlalchemy_url(dsn, "asyncpg"),
        table_name=table, embed_dim=embedder.dimension, create_engine_kwargs={"poolclass": NullPool},
        hnsw_kwargs={"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": 40},
    )
    nodes = []
    for record in records:
        metadata = _metadata(record)
        nodes.append(TextNode(text=record.text, metadata=metadata, excluded_embed_metadata_keys=list(metadata),
                              excluded_llm_metadata_keys=list(metadata)))  # fmt: skip
    VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=store),
                     embed_model=LlamaIndexEmbedding(embedder))  # fmt: skip
    fields = {"app": None, **_json_fields("metadata_"), "event_id": "node_id", "text": "text",
              "embedding": "embedding", "model": None}  # fmt: skip
    return LibraryTable(f"data_{table.lower()}", fields, index="hnsw (embedding vector_cosine_ops)", distance="<=>")


def mem0_memories(dsn: str, records: Sequence[Record], state_dir: Path, *, model_path: Path | None = None,
                  collection: str = MEM0_COLLECTION, app: str = MEM0_APP) -> LibraryTable:  # fmt: skip
    """mem0's `Memory.add(..., infer=False)` on its pgvector store: each message stored as it is, no LLM call.

    mem0 embeds with its own `huggingface` embedder, here the packaged MiniLM folder. Its LLM is configured (mem0
    builds one) at a closed loopback port, so a call would fail rather than reach a network. Telemetry is off, and
    mem0's folder (its config.json) is `state_dir` unless MEM0_DIR is set: mem0 reads both from the environment when
    first imported, so they are set before that. Its SQLite history goes in `state_dir`. `created_at` comes from
    the record through the metadata, which mem0 keeps when given."""
    from memlab.lab.systems.services import mem0_memory

    path = str(model_path or memlab.embedding.packaged_minilm_path())
    memory = mem0_memory(dsn, collection, path, 384, state_dir)  # all-MiniLM-L6-v2's 384 dimensions
    from mem0.memory import telemetry

    if telemetry.MEM0_TELEMETRY:
        raise RuntimeError(f"mem0 was imported before MEM0_TELEMETRY=False was set: import it only through "
                           f"{__name__}.mem0_memories, or set MEM0_TELEMETRY=False before mem0 is imported")
    try:
        for record in records:
            added = memory.add([{"role": record.role, "content": record.text}], user_id=record.user,
                               run_id=record.session, agent_id=app, metadata={"created_at": record.time.isoformat()},
                               infer=False)  # fmt: skip
            if [r["event"] for r in added["results"]] != ["ADD"]:
                raise AssertionError(f"mem0 did not add {record.text!r} as one memory: {added}")
    finally:
        memory.close()
        memory.vector_store.connection_pool.close()
    fields = {"app": "payload->>'agent_id'", "user": "payload->>'user_id'", "session": "payload->>'run_id'",
              "event_id": "id", "author": "payload->>'role'", "time": "payload->>'created_at'",
              "text": "payload->>'data'", "embedding": "vector", "model": None}  # fmt: skip
    return LibraryTable(collection, fields, index="hnsw (vector vector_cosine_ops)", distance="<=>")

