"""PostgreSQL + pgvector: the embedded server, the schema, and the SQL every memory runs.
Modules here are internal; use the names below."""

from memlab.storage.embedded import embedded_status, psql_path, start_embedded, stop_embedded
from memlab.storage.servers import Server, open_server, scratch_store
from memlab.storage.store import Store, open_store

__all__ = ["Server", "Store", "embedded_status", "open_server", "open_store", "psql_path", "scratch_store",
           "start_embedded", "stop_embedded"]
