"""The connection to PostgreSQL + pgvector: open it, check pgvector, create the schema, register models.

`open_store()` with no arguments uses the embedded server; `open_store(dsn=...)` or `MEMLAB_DSN` use any
other PostgreSQL that has pgvector >= 0.8.0. Connections come from a psycopg pool in autocommit mode; every
unit of work opens its own explicit transaction, so `SET LOCAL` settings never outlive it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg_pool import ConnectionPool

from memlab.config import configured_dsn, memlab_home
from memlab.errors import DatabaseUnavailableError, DimensionError, ExtensionError
from memlab.storage import units as sqlu
from memlab.storage.embedded import start_embedded
from memlab.storage.schema import MODELS_DDL, SCHEMA_LOCK_KEY, TOMBSTONE_DDL, ModelInfo

MIN_VECTOR_VERSION = (0, 8, 0)


def parse_version(text: str) -> tuple[int, ...]:
    """'0.8.5' -> (0, 8, 5); tolerant of suffixes such as '0.8.0-dev'."""
    parts: list[int] = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def check_vector_version(found: str | None, *, available: str | None = None) -> None:
    """Raise ExtensionError unless pgvector >= 0.8.0 (needed for iterative index scans) is installed."""
    need = ".".join(map(str, MIN_VECTOR_VERSION))
    if found is None:
        hint = (
            f"the server offers version {available}; a superuser can run CREATE EXTENSION vector;"
            if available
            else "the server does not have pgvector installed at all; install pgvector on the server,"
        )
        raise ExtensionError(
            f"The pgvector extension 'vector' is not installed in this database and memlab could not create it: "
            f"{hint} memlab needs vector >= {need}. Or unset MEMLAB_DSN to use the embedded PostgreSQL."
        )
    if parse_version(found) < MIN_VECTOR_VERSION:
        raise ExtensionError(
            f"pgvector {found} is too old: memlab needs vector >= {need} for iterative index scans "
            f"(hnsw.iterative_scan). Fix: install a newer pgvector on the server and run "
            f"ALTER EXTENSION vector UPDATE; or unset MEMLAB_DSN to use the embedded PostgreSQL."
        )


def _redact(dsn: str) -> str:
    """A DSN fit for an error message: the password is hidden."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparseable DSN>"
    if "password" in info:
        info["password"] = "***"
    return psycopg.conninfo.make_conninfo(**info)


class Store:
    """One PostgreSQL database holding memlab's tables. Thread-safe; close it (or use `with`) when done."""

    def __init__(self, dsn: str, *, embedded: bool = False, pool_size: int = 4) -> None:
        self.dsn = dsn
        self.embedded = embedded
        self._models: dict[str, ModelInfo] = {}
        self._models_lock = threading.Lock()
        self.vector_version = self._prepare_database()
        self.pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            # No server-side prepared statements: a cached generic plan would be reused across strategies and
            # SET LOCAL settings (a `planner` search ran the plan an earlier `hnsw` search had cached).
            kwargs={"autocommit": True, "prepare_threshold": None},
            configure=register_vector,
            open=True,
        )

    # -- set-up ---------------------------------------------------------------------------------------
    def _prepare_database(self) -> str:
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailableError(
                f"Cannot connect to PostgreSQL at {_redact(self.dsn)}: {str(exc).strip()}\n"
                "Fix: start that server or correct MEMLAB_DSN / dsn=...; or unset MEMLAB_DSN to use the "
                "embedded PostgreSQL."
            ) from exc
        with conn:
            version = self._ensure_vector(conn)
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK_KEY])
                # Dependency order: the unit table references the model registry.
                conn.execute(MODELS_DDL)
                sqlu.create_table(conn)
                conn.execute(TOMBSTONE_DDL)
        return version

    @staticmethod
    def _ensure_vector(conn: psycopg.Connection) -> str:
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if row is None:
            available = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
            if available is not None and parse_version(available[0]) < MIN_VECTOR_VERSION:
                check_vector_version(available[0])  # too old even to create: say so
            if available is not None:
                try:
                    with conn.transaction():
                        conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK_KEY])
                        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except psycopg.errors.InsufficientPrivilege:
                    pass
                row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            check_vector_version(row[0] if row else None, available=available[0] if available else None)
        assert row is not None
        check_vector_version(row[0])
        return str(row[0])

    # -- connections ----------------------------------------------------------------------------------
    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A pooled autocommit connection; open `conn.transaction()` for atomic work."""
        with self.pool.connection() as conn:
            yield conn

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection]:
        """A pooled connection inside one transaction (committed on success, rolled back on error)."""
        with self.pool.connection() as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- embedding models -----------------------------------------------------------------------------
    def register_model(self, model_id: str, dimension: int) -> ModelInfo:
        """Record an embedding model (id -> dimension); refuse a changed dimension."""
        with self._models_lock:
            known = self._models.get(model_id)
        if known is None:
            with self.transaction() as conn:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK_KEY])
                conn.execute(
                    "INSERT INTO memlab_embedding_model (model_id, dimension) VALUES (%s, %s) "
                    "ON CONFLICT (model_id) DO NOTHING",
                    [model_id, dimension],
                )
                row = conn.execute(
                    "SELECT model_id, dimension FROM memlab_embedding_model WHERE model_id = %s",
                    [model_id],
                ).fetchone()
            assert row is not None
            known = ModelInfo(*row)
            with self._models_lock:
                self._models[model_id] = known
        if known.dimension != dimension:
            raise DimensionError(
                f"Embedding model {model_id!r} is registered with dimension {known.dimension}, but the embedder "
                f"gives {dimension}-d vectors. Fix: give the new model its own model id (memlab then stores its "
                f"rows beside the old ones; see migrate_embeddings), or drop the old rows with drop_model()."
            )
        return known

    def model(self, model_id: str) -> ModelInfo:
        """The registered model; raise a clear error if nothing was ever stored with it."""
        with self._models_lock:
            if model_id in self._models:
                return self._models[model_id]
        with self.connection() as conn:
            row = conn.execute(
                "SELECT model_id, dimension FROM memlab_embedding_model WHERE model_id = %s",
                [model_id],
            ).fetchone()
        if row is None:
            raise DimensionError(
                f"No embedding model {model_id!r} is registered in this database; ingest with it first "
                "(EventMemory registers its embedder) or check the model id."
            )
        info = ModelInfo(*row)
        with self._models_lock:
            self._models[model_id] = info
        return info

    def models(self) -> list[ModelInfo]:
        with self.connection() as conn:
            rows = conn.execute("SELECT model_id, dimension FROM memlab_embedding_model ORDER BY created_at").fetchall()
        return [ModelInfo(*r) for r in rows]

    def ensure_vector_index(self, model_id: str, layer: str, *, m: int = 16, ef_construction: int = 64) -> str:
        """Create the HNSW index of a model and layer if it is missing (after a bulk load, build it once here)."""
        name = sqlu.index_name_for(model_id, layer)
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO memlab_vector_index (model_id, layer, index_name) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [model_id, layer, name],
            )
            sqlu.create_vector_index(conn, self.model(model_id), layer, m=m, ef_construction=ef_construction)
        return name

    def vector_indexes(self, model_id: str) -> dict[str, str]:
        """layer -> index name of every HNSW index registered for a model."""
        with self.connection() as conn:
            rows = conn.execute(
                "SELECT layer, index_name FROM memlab_vector_index WHERE model_id = %s", [model_id]
            ).fetchall()
        return dict(rows)

    def drop_vector_index(self, model_id: str, layer: str) -> None:
        """Drop one HNSW index: bulk loads run far faster without it; rebuild with ensure_vector_index."""
        with self.connection() as conn:
            sqlu.drop_index(conn, sqlu.index_name_for(model_id, layer))

    def has_vector_index(self, model_id: str, layer: str) -> bool:
        with self.connection() as conn:
            return sqlu.index_exists(conn, sqlu.index_name_for(model_id, layer))

    def create_tenant_index(
        self, model_id: str, layer: str, app_name: str, user_id: str, *, m: int = 16, ef_construction: int = 64
    ) -> str:
        """A partial HNSW index over one tenant's rows of a model and layer, if missing (statistics refreshed).
        Searches use it only with app and user inlined as literals. Not registered: `drop_model` leaves it."""
        with self.transaction() as conn:
            return sqlu.create_tenant_index(
                conn, self.model(model_id), layer, app_name, user_id, m=m, ef_construction=ef_construction
            )

    def delete_layer(self, app_name: str, layer: str) -> int:
        """Delete every unit of one app in one layer (all users, all models); returns rows deleted."""
        with self.transaction() as conn:
            return sqlu.delete_layer(conn, app_name, layer)

    def drop_model(self, model_id: str) -> int:
        """Delete every row stored with a model, its index and its registration (the end of a migration)."""
        self.model(model_id)
        indexes = self.vector_indexes(model_id)
        with self.transaction() as conn:
            deleted = sqlu.delete_model(conn, model_id)
            for name in indexes.values():
                sqlu.drop_index(conn, name)
            conn.execute("DELETE FROM memlab_embedding_model WHERE model_id = %s", [model_id])
        with self._models_lock:
            self._models.pop(model_id, None)
        return deleted

    def analyze(self) -> None:
        """Refresh planner statistics (the `planner` strategy depends on them)."""
        with self.connection() as conn:
            sqlu.analyze(conn)


@contextmanager
def scratch_store(store: Store, *, prefix: str = "memlab_run") -> Iterator[Store]:
    """A Store on a brand-new database of the same server, dropped afterwards: runs start from nothing, so
    what one run left behind (rows, HNSW graphs) cannot change the next run's numbers."""
    import uuid

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(store.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.Error as exc:
        raise DatabaseUnavailableError(
            f"Cannot create a scratch database for this run on {_redact(store.dsn)}: {str(exc).strip()}. "
            "Fix: grant CREATEDB to this role, or use the embedded PostgreSQL (unset MEMLAB_DSN)."
        ) from exc
    scratch = None
    try:
        scratch = Store(psycopg.conninfo.make_conninfo(store.dsn, dbname=name), embedded=store.embedded)
        yield scratch
    finally:
        if scratch is not None:
            scratch.close()
        with psycopg.connect(store.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def open_store(dsn: str | None = None, *, home: str | Path | None = None, pool_size: int = 4) -> Store:
    """Open memlab's database: `dsn` (or MEMLAB_DSN) if given, else the embedded PostgreSQL under MEMLAB_HOME."""
    resolved = configured_dsn(dsn)
    if resolved is not None:
        return Store(resolved, pool_size=pool_size)
    return Store(start_embedded(memlab_home(home)), embedded=True, pool_size=pool_size)
