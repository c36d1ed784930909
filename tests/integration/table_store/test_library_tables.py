"""The tables LangChain, LlamaIndex and mem0 make through their own APIs hold each memlab field where
tests/support/library_tables.py says, and their vectors are the packaged model's embeddings of the texts."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from tests.support import library_tables as lt

T0 = datetime(2025, 11, 3, 8, 30, tzinfo=UTC)
TOPICS = {
    "alice": ["I moved to Lisbon last spring.", "My sister Ana visits in June.", "Book the dentist for Friday."],
    "bob": ["Our team ships the billing service on Tuesdays.", "I prefer tea over coffee.", "The cat is called Miso."],
    "chen": ["I run ten kilometres every Sunday.", "My laptop is a ThinkPad X1.", "Remind me to renew the passport."],
}


def _records() -> list[lt.Record]:
    """Three users, two sessions each, two or three turns a session (the model's turns among them)."""
    records = []
    for u, (user, texts) in enumerate(TOPICS.items()):
        for s, session in enumerate((f"{user}-s1", f"{user}-s2")):
            turns = texts if s == 0 else [f"{t} (again)" for t in texts[:2]]
            for i, text in enumerate(turns):
                role = "user" if i % 2 == 0 else "assistant"
                time = T0 + timedelta(days=u, hours=s, minutes=i)
                records.append(lt.Record(user=user, session=session, text=text, time=time, role=role))
    return records


RECORDS = _records()
LIBRARIES = ["langchain_pgvector", "langchain_pgvectorstore", "langchain_pgvectorstore_columns", "llamaindex", "mem0"]


@pytest.fixture(scope="module")
def library_dsn(store):
    """A database of its own on the embedded server, for the libraries' tables."""
    name = f"libtables_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield psycopg.conninfo.make_conninfo(store.dsn, dbname=name)
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def tables(library_dsn, embedder, tmp_path_factory) -> dict[str, lt.LibraryTable]:
    """Every library's table, each built once through the library's API."""
    return {
        "langchain_pgvector": lt.langchain_pgvector(library_dsn, RECORDS, embedder),
        "langchain_pgvectorstore": lt.langchain_pgvectorstore(library_dsn, RECORDS, embedder),
        "langchain_pgvectorstore_columns": lt.langchain_pgvectorstore(
            library_dsn, RECORDS, embedder, table="memlab_langchain_columns", metadata_columns=True),
        "llamaindex": lt.llamaindex_pgvectorstore(library_dsn, RECORDS, embedder),
        "mem0": lt.mem0_memories(library_dsn, RECORDS, tmp_path_factory.mktemp("mem0")),
    }  # fmt: skip


def _select(dsn: str, table: lt.LibraryTable, *fields: str) -> list[tuple]:
    columns = ", ".join(f"({table.fields[f]})" for f in fields)
    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        return conn.execute(f'SELECT {columns} FROM "{table.table}"').fetchall()


@pytest.mark.parametrize("library", LIBRARIES)
def test_every_field_of_memlab_is_placed(tables, library):
    table = tables[library]
    assert set(table.fields) == set(lt.FIELDS), table.fields
    assert all(table.fields[f] for f in ("user", "session", "event_id", "time", "text", "embedding", "author"))


@pytest.mark.parametrize("library", LIBRARIES)
def test_each_record_is_one_row_with_its_user_session_text_time_and_role(tables, library_dsn, library):
    table = tables[library]
    time = table.fields["time"]
    fields = {**table.fields, "time": f"({time})::timestamptz"}
    rows = _select(library_dsn, table._replace(fields=fields), "user", "session", "text", "time", "author")
    expected = [(r.user, r.session, r.text, r.time, r.role) for r in RECORDS]
    assert sorted(rows) == sorted(expected)


@pytest.mark.parametrize("library", LIBRARIES)
def test_stored_vectors_are_the_packaged_models_embeddings_of_the_texts(tables, library_dsn, embedder, library):
    rows = _select(library_dsn, tables[library], "text", "embedding")
    assert len(rows) == len(RECORDS)
    stored = np.vstack([np.asarray(vector.to_numpy(), dtype=np.float32) for _, vector in rows])
    ours = embedder.embed_documents([text for text, _ in rows])
    assert stored.shape == ours.shape == (len(RECORDS), 384)
    cosine = np.sum(stored * ours, axis=1) / (np.linalg.norm(stored, axis=1) * np.linalg.norm(ours, axis=1))
    assert cosine.min() > 0.999, dict(zip([t for t, _ in rows], cosine.round(4), strict=True))


@pytest.mark.parametrize("library", LIBRARIES)
def test_event_ids_are_unique_and_the_vector_index_is_the_librarys(tables, library_dsn, library):
    table = tables[library]
    ids = [str(i) for (i,) in _select(library_dsn, table, "event_id")]
    assert len(set(ids)) == len(RECORDS) and all(ids)
    with psycopg.connect(library_dsn) as conn:
        vector_indexes = [d for (d,) in conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s AND indexdef ~ 'USING (hnsw|ivfflat|diskann)'",
            (table.table,))]  # fmt: skip
    if table.index is None:
        assert vector_indexes == []
    else:
        assert len(vector_indexes) == 1 and f"USING {table.index}" in vector_indexes[0], vector_indexes


def test_langchain_pgvector_keeps_the_collection_as_collection_id(tables, library_dsn):
    apps = {a for (a,) in _select(library_dsn, tables["langchain_pgvector"], "app")}
    with psycopg.connect(library_dsn) as conn:
        named = conn.execute("SELECT uuid FROM langchain_pg_collection WHERE name = %s",
                             (lt.LANGCHAIN_COLLECTION,)).fetchall()  # fmt: skip
    assert apps == {named[0][0]}


def test_mem0_keeps_the_app_as_agent_id_and_no_model(tables, library_dsn):
    assert {a for (a,) in _select(library_dsn, tables["mem0"], "app")} == {lt.MEM0_APP}
    assert tables["mem0"].fields["model"] is None


def test_the_default_table_names(tables):
    assert {name: t.table for name, t in tables.items()} == {
        "langchain_pgvector": "langchain_pg_embedding", "langchain_pgvectorstore": "memlab_langchain",
        "langchain_pgvectorstore_columns": "memlab_langchain_columns", "llamaindex": "data_llamaindex", "mem0": "mem0"}
