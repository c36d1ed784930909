"""PostgreSQL + pgvector: the embedded server, the schema, and the SQL every memory runs.
Modules here are internal; use the names below."""

from memlab.storage.servers import Server, open_server, scratch_store
from memlab.storage.store import Store, open_store

__all__ = ["Server", "Store", "open_server", "open_store", "scratch_store"]
