"""Measure a pgvector table you already have, where it is, strictly read-only.
Modules here are internal; use the names below.

memlab's own memory lives in its `memory_unit` table (memlab.storage). This package reads someone else's table
instead (an agent's `agent_memory`, a LangChain or LlamaIndex store) through a mapping of memlab's fields to its
columns, and never writes: no table, index, extension or temp table is created, nothing is analysed or vacuumed.

The mapping::

    from memlab.table_store import AppNames, Columns, Layout, PRESETS, open_table

    layout = Layout.preset("agent-memory")                       # the design article's agent_memory table
    layout = Layout.preset("agent-memory", table="mem.agent_memory", session=None)   # one column overridden
    layout = Layout("docs", Columns(user="cmetadata->>'user'", app="'support-bot'", event_id="id",
                                    text="document", embedding="embedding", session="cmetadata->'s'->>'id'"))

Each field (app, user, session, event_id, author, time, text, embedding, model) is a column, a JSON path
(`col->>'key'`, `col->'a'->>'b'`), a constant in single quotes, or None; `user`, `event_id`, `text` and
`embedding` are required. Anything else is refused (no SQL expression is ever pasted into a statement);
`open_table` checks every column against the catalog. A time kept as text (a JSON path, a text column: ISO-8601)
is read as timestamptz; a value that is not a time reads as None. `Layout(..., app_names=AppNames(table, name,
key))` is for an app column holding keys into a table of names (the app is then asked for by name or by key).
`PRESETS` maps a preset name to its Layout (columns and default table): a new preset is one entry.

The presets (docs/stores-research.md says where each library keeps what), as table: app; user, session, author,
time; event id, text; embedding:

- agent-memory: agent_memory: app_name; user_id, session_id, author, occurred_at; event_id, body; embedding.
- langchain-postgres (LangChain's PGVector): langchain_pg_embedding: the collection, asked for by its name (or its
  uuid) and matched through langchain_pg_collection to collection_id; cmetadata->>'user_id', 'session_id',
  'role', 'created_at'; id, document; embedding.
- langchain-pgvectorstore (LangChain's PGVectorStore): the table you named (`table=`; default vectorstore, the
  name in LangChain's documentation): no app (one store a table); langchain_metadata->>'user_id', 'session_id',
  'role', 'created_at'; langchain_id, content; embedding.
- llamaindex (LlamaIndex's PGVectorStore): data_llamaindex: no app; metadata_->>'user_id', 'session_id', 'role',
  'created_at'; node_id, text; embedding.
- mem0: mem0: no app (every agent's memories of a user); payload->>'user_id', 'run_id', 'role', 'created_at'; id,
  payload->>'data'; vector.

None of these libraries stores the model: their `model` is None. LangChain and LlamaIndex have no user, session,
author or time of their own: the presets read the metadata keys `user_id`, `session_id`, `role` and `created_at`,
a convention only. Where your application uses other keys, override each field on its own (the others stay the
preset's), and give a table of your naming with `table=`::

    open_table(dsn, "llamaindex", table="data_notes", user="metadata_->>'customer'", time="metadata_->>'ts'")
    open_table(dsn, "langchain-pgvectorstore", table="my_store", user="user_id", time="created_at")  # metadata_columns
    open_table(dsn, "langchain-postgres", app="collection_id")    # the app is the collection's uuid, no name lookup
    open_table(dsn, "mem0", app="payload->>'agent_id'")           # one mem0 agent_id per app

langchain-postgres needs SELECT on langchain_pg_collection too (for the names), unless `app` is overridden.

Opening and reading::

    with open_table(dsn, "agent-memory", limits=ReadOnlyLimits(max_qps=5)) as table:
        table.catalog.dimension, table.catalog.indexes          # TableCatalog, VectorIndex
        table.catalog.index_used_for("l2")                      # False: the index serves cosine, l2 scans
        table.count_rows()                                      # rows, NULL embeddings, other dimensions
        table.users("my-app")                                   # {user: rows}
        hits = table.search("my-app", "u1", vector, k=10, strategy="hnsw", ef_search=100)   # TableHits
        table.explain("my-app", "u1", vector, strategy="hnsw").index_used                  # TableExplain
        table.bare_seconds("my-app", "u1", vector, strategy="hnsw")     # the search's statement alone, timed
        ids, matrix = table.vectors("my-app", "u1")             # for an exact search in FAISS
        table.texts("my-app", "u1")                             # TableHit rows, for writing questions
        table.check_model(embedder, "my-app")                   # ModelCheck list, or ModelMismatchError

Every read is one READ ONLY transaction with statement_timeout and lock_timeout (sent in one pipeline: a search is
one round trip), on one connection by default, at most `max_qps` statements a second (`ReadOnlyLimits`), scoped
in SQL by app and user (and `model=` when the store is opened for one model value). A role with SELECT on the
table (and USAGE on its schema) is enough.
"""

from memlab.table_store.catalog import TableCatalog, VectorIndex
from memlab.table_store.connection import ReadOnlyLimits
from memlab.table_store.layout import PRESETS, AppNames, Columns, Layout
from memlab.table_store.model_check import ModelCheck, ModelMismatchError
from memlab.table_store.store import TableExplain, TableHit, TableHits, TableStore, open_table

__all__ = [
    "PRESETS",
    "AppNames",
    "Columns",
    "Layout",
    "ModelCheck",
    "ModelMismatchError",
    "ReadOnlyLimits",
    "TableCatalog",
    "TableExplain",
    "TableHit",
    "TableHits",
    "TableStore",
    "VectorIndex",
    "open_table",
]
