"""PostgreSQL + pgvector: the embedded server, the schema, and the SQL every memory runs.
Modules here are internal; use the names below."""

from memlab.storage.store import Store, open_server, open_store, scratch_store

__all__ = ["Store", "open_server", "open_store", "scratch_store"]
