"""PostgreSQL + pgvector: the embedded server, the schema, and the SQL every memory runs."""

from memlab.storage.store import Store, open_server, open_store

__all__ = ["Store", "open_server", "open_store"]
