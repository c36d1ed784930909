"""Measure a pgvector table you already have, where it is, strictly read-only.
Modules here are internal; use the names below.

memlab's own memory lives in its `memory_unit` table (memlab.storage). This package reads someone else's table
instead (an agent's `agent_memory`, a LangChain or LlamaIndex store) through a mapping of memlab's fields to its
columns, and never writes: no table, index, extension or temp table is created, nothing is analysed or vacuumed.

The mapping::

    from memlab.table_store import Columns, Layout, PRESETS, open_table

    layout = Layout.preset("agent-memory")                       # the design article's agent_memory table
    layout = Layout.preset("agent-memory", table="mem.agent_memory", session=None)   # one column overridden
    layout = Layout("docs", Columns(user="cmetadata->>'user'", app="'support-bot'", event_id="id",
                                    text="document", embedding="embedding", session="cmetadata->'s'->>'id'"))

Each field (app, user, session, event_id, author, time, text, embedding, model) is a column, a JSON path
(`col->>'key'`, `col->'a'->>'b'`), a constant in single quotes, or None; `user`, `event_id`, `text` and
`embedding` are required. Anything else is refused (no SQL expression is ever pasted into a statement);
`open_table` checks every column against the catalog. `PRESETS` maps a preset name to its Layout (columns and
default table): a new preset is one entry.

Opening and reading::

    with open_table(dsn, "agent-memory", limits=ReadOnlyLimits(max_qps=5)) as table:
        table.catalog.dimension, table.catalog.indexes          # TableCatalog, VectorIndex
        table.catalog.index_used_for("l2")                      # False: the index serves cosine, l2 scans
        table.count_rows()                                      # rows, NULL embeddings, other dimensions
        table.users("my-app")                                   # {user: rows}
        hits = table.search("my-app", "u1", vector, k=10, strategy="hnsw", ef_search=100)   # TableHits
        table.explain("my-app", "u1", vector, strategy="hnsw").index_used                  # TableExplain
        ids, matrix = table.vectors("my-app", "u1")             # for an exact search in FAISS
        table.texts("my-app", "u1")                             # TableHit rows, for writing questions
        table.check_model(embedder, "my-app")                   # ModelCheck list, or ModelMismatchError

Every read is one READ ONLY transaction with statement_timeout and lock_timeout, on one connection by default,
at most `max_qps` statements a second (`ReadOnlyLimits`), scoped in SQL by app and user (and `model=` when the
store is opened for one model value). A role with SELECT on the table (and USAGE on its schema) is enough.
"""

from memlab.table_store.catalog import TableCatalog, VectorIndex
from memlab.table_store.connection import ReadOnlyLimits
from memlab.table_store.layout import PRESETS, Columns, Layout
from memlab.table_store.model_check import ModelCheck, ModelMismatchError
from memlab.table_store.store import TableExplain, TableHit, TableHits, TableStore, open_table

__all__ = [
    "PRESETS",
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
