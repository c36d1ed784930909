"""The connection to PostgreSQL + pgvector: open it, check pgvector, create the schema, register models.

`open_store()` with no arguments uses the embedded server; `open_store(dsn=...)` or `MEMLAB_DSN` use any
other PostgreSQL that has pgvector >= 0.8.0. Connections come from a psycopg pool in autocommit mode; every
unit of work opens its own explicit transaction, so `SET LOCAL` settings never outlive it.

When the database goes away, calls fail with `DatabaseUnavailableError` (the psycopg error chained as its cause)
within the configured timeout (`open_store(timeout=...)` / MEMLAB_DB_TIMEOUT, default 10 s), never with a raw
psycopg error or a hang: every call checks its pooled connection first, a call whose connection dies under it says
so, and the next call brings the embedded server back (or, for another PostgreSQL, fails fast until it is back).

`open_store(dsn, read_only=True)` opens an existing store without writing to it (a probe of a production database,
as a role with SELECT only): no DDL, every pooled connection has `default_transaction_read_only` on, a model is
looked up instead of registered, an HNSW index is checked instead of built, and any write is refused with a
`ConfigError` saying the store is read-only.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

import memlab.storage.policy as policy
import memlab.storage.query_log as query_log
import memlab.storage.scratch as scratch
import memlab.storage.unit_housekeeping as housekeeping
import memlab.storage.unit_table as unit_table
import memlab.storage.units as sqlu
from memlab.config import configured_dsn, db_timeout, memlab_home
from memlab.errors import ConfigError, DatabaseUnavailableError, DimensionError, ExtensionError
from memlab.safety.redact import dsn_secrets, redact
from memlab.storage.embedded import start_embedded
from memlab.storage.schema import ERASURE_DDL, MODELS_DDL, SCHEMA_LOCK_KEY, TOMBSTONE_DDL, ModelInfo
from memlab.types import AutoPolicy

MIN_VECTOR_VERSION = (0, 8, 0)
READ_ONLY_OPTION = "-c default_transaction_read_only=on"
# The tables a search reads: a read-only store without them is not a memlab store (or not one of this version).
# (the unit table itself is checked by sqlu.missing_tables, with these)
SEARCH_TABLES = ("memlab_embedding_model", "memlab_vector_index", sqlu.COUNTS_TABLE, policy.SETTINGS_TABLE)


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


def _connect_timeout(timeout: float) -> int:
    """libpq's connect_timeout: whole seconds, and values below 2 act as 2."""
    return max(2, math.ceil(timeout))


def _with_server(dsn: str, uri: str) -> str:
    """`dsn` pointed at the host/port (or socket directory) of `uri`, keeping its database, user and options."""
    where = {k: v for k, v in psycopg.conninfo.conninfo_to_dict(uri).items() if k in ("host", "hostaddr", "port")}
    return psycopg.conninfo.make_conninfo(dsn, **where)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Store:
    """One PostgreSQL database holding memlab's tables. Thread-safe; close it (or use `with`) when done.

    `timeout` (seconds; default MEMLAB_DB_TIMEOUT, else 10) bounds how long one call waits for the server: to
    connect, for a free pooled connection, for a stopping embedded server to finish. Restarting the embedded
    server adds about a second (several after a crash, for recovery; pg_ctl gives up after 10). `home` is the
    MEMLAB_HOME of the embedded server this store restarts when it finds it stopped (None for another PostgreSQL,
    which memlab never starts). The embedded server's lifetime rule (which process stops it) is in
    `memlab.storage.embedded`.
    """

    def __init__(
        self,
        dsn: str,
        *,
        embedded: bool = False,
        pool_size: int = 4,
        timeout: float | None = None,
        home: str | Path | None = None,
        read_only: bool = False,
    ) -> None:
        self.dsn = dsn
        self.read_only = read_only
        self.embedded = embedded
        self.home = Path(home) if home is not None else None
        self.timeout = db_timeout(timeout)
        self._policy: AutoPolicy | None = None
        self.pool_size = pool_size
        self._models: dict[str, ModelInfo] = {}
        self._models_lock = threading.Lock()
        # Outage handling: a call that finds its connection dead marks the pool's generation as suspect; the next
        # call (or the same one) recovers under the lock: restart the embedded server, probe, open a fresh pool.
        self._recover_lock = threading.Lock()
        self._generation = 0
        self._suspect = False
        self._closed = False
        self.vector_version = self._check_database() if read_only else self._prepare_database()
        self.pool = self._open_pool()

    def _open_pool(self) -> ConnectionPool:
        return ConnectionPool(
            self.dsn,
            min_size=1,
            max_size=self.pool_size,
            # No server-side prepared statements: a cached generic plan would be reused across strategies and
            # SET LOCAL settings (a `planner` search ran the plan an earlier `hnsw` search had cached).
            kwargs={
                "autocommit": True,
                "prepare_threshold": None,
                "connect_timeout": _connect_timeout(self.timeout),
                **self._read_only_kwargs(),
            },
            configure=register_vector,
            timeout=self.timeout,
            open=True,
        )

    # -- set-up ---------------------------------------------------------------------------------------
    def _read_only_kwargs(self) -> dict[str, str]:
        """Connection options of a read-only store: the server refuses every write in its transactions (the DSN's
        own `options` are kept)."""
        if not self.read_only:
            return {}
        given = psycopg.conninfo.conninfo_to_dict(self.dsn).get("options")
        return {"options": f"{given} {READ_ONLY_OPTION}" if given else READ_ONLY_OPTION}

    def _check_database(self) -> str:
        """A read-only store's set-up: pgvector and memlab's tables must be there already; nothing is created."""
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=_connect_timeout(self.timeout),
                                   **self._read_only_kwargs())  # fmt: skip
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailableError(self._cannot_connect(exc)) from exc
        with conn:
            missing = sqlu.missing_tables(conn, SEARCH_TABLES)
            row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if missing:
            raise ConfigError(self._safe(
                f"{_redact(self.dsn)} is not a memlab store: table(s) {', '.join(missing)} are missing (opened "
                "read-only, memlab creates nothing). Fix: give the DSN of the database your agent's memory writes "
                "to (database name and schema search_path), or open it once with memlab as its owner to create them."
            ))  # fmt: skip
        check_vector_version(row[0] if row else None)
        assert row is not None
        return str(row[0])

    def require_tables(self, tables: tuple[str, ...], what: str) -> None:
        """Raise a ConfigError naming the tables of `tables` this database lacks (a read-only memory checks
        for what it would otherwise create)."""
        with self.connection() as conn:
            missing = [t for t in tables if conn.execute("SELECT to_regclass(%s)", [t]).fetchone()[0] is None]
        if missing:
            raise ConfigError(f"this store holds no {what}: table(s) {', '.join(missing)} are missing, and a "
                              "read-only store creates nothing. Fix: give the DSN of the database that memory "
                              "writes to.")  # fmt: skip

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise ConfigError(f"cannot {what}: this store was opened read-only (open_store(read_only=True)); "
                              "open it without read_only to write.")  # fmt: skip

    def _prepare_database(self) -> str:
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=_connect_timeout(self.timeout))
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailableError(self._cannot_connect(exc)) from exc
        with conn:
            try:
                version = self._ensure_vector(conn)
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK_KEY])
                    # Dependency order: the unit table references the model registry.
                    conn.execute(MODELS_DDL)
                    sqlu.create_table(conn)
                    sqlu.create_counts(conn)
                    sqlu.create_terms(conn)  # full-text search's side table, kept by triggers on the units
                    conn.execute(TOMBSTONE_DDL)
                    conn.execute(ERASURE_DDL)
                    policy.create_settings(conn)
                    query_log.create_table(conn)  # served queries, when a memory records them
            except psycopg.Error as exc:
                if not (conn.broken or conn.closed):
                    raise
                raise DatabaseUnavailableError(self._lost_message(exc)) from exc
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
        """A pooled autocommit connection; open `conn.transaction()` for atomic work.

        Raises DatabaseUnavailableError (psycopg's error as the cause) when the server is down or the connection
        dies during the call; the next call restarts the embedded server."""
        with self._pooled() as conn:
            yield conn

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection]:
        """A pooled connection inside one transaction (committed on success, rolled back on error)."""
        with self._pooled() as conn, conn.transaction():
            yield conn

    @contextmanager
    def _pooled(self) -> Iterator[psycopg.Connection]:
        pool, conn, generation = self._acquire()
        try:
            yield conn
        except psycopg.errors.ReadOnlySqlTransaction as exc:
            if not self.read_only:
                raise
            raise ConfigError(f"this store was opened read-only (open_store(read_only=True)), and the call tried "
                              f"to write: {_first_line(exc)}. Fix: open it without read_only to write.") from exc
        except psycopg.Error as exc:
            if not (conn.broken or conn.closed):
                raise  # an ordinary SQL error: the connection is fine
            self._mark_suspect(generation)
            raise DatabaseUnavailableError(self._lost_message(exc)) from exc
        finally:
            pool.putconn(conn)  # a broken connection is discarded by the pool

    def _acquire(self) -> tuple[ConnectionPool, psycopg.Connection, int]:
        """A live pooled connection, within `timeout`; recovers first if an earlier call lost its connection."""
        if self._suspect:
            self._recover(self._generation)
        last: Exception | None = None
        for _ in range(3):
            with self._recover_lock:
                pool, generation = self.pool, self._generation
            try:
                conn = pool.getconn(timeout=self.timeout)
            except PoolClosed as exc:
                if self._closed:
                    raise
                last = exc
                continue  # another thread replaced the pool while this one waited: use the new one
            except PoolTimeout as exc:
                # Either every connection is busy or the server is down (the pool keeps failing to connect).
                try:
                    self._probe()
                except psycopg.Error:
                    self._mark_suspect(generation)
                    self._recover(generation)  # restarts the embedded server or raises
                    last = exc
                    continue
                raise DatabaseUnavailableError(
                    f"No database connection became free within {self.timeout:g} s: all {self.pool_size} pooled "
                    f"connections stayed busy (the server at {_redact(self.dsn)} is up). Fix: raise pool_size= "
                    "of open_store for more concurrent calls, or the timeout (open_store(timeout=...) / "
                    "MEMLAB_DB_TIMEOUT), or make fewer calls at once."
                ) from exc
            try:
                ConnectionPool.check_connection(conn)  # the same check psycopg_pool's `check=` option runs
            except psycopg.Error as exc:
                pool.putconn(conn)  # broken: discarded
                self._mark_suspect(generation)
                self._recover(generation)
                last = exc
                continue
            return pool, conn, generation
        raise DatabaseUnavailableError(self._cannot_connect(last)) from last

    def _mark_suspect(self, generation: int) -> None:
        with self._recover_lock:
            if generation == self._generation:
                self._suspect = True

    def _probe(self) -> None:
        """Connect once outside the pool, within `timeout`; raises psycopg's error if the server is unreachable."""
        psycopg.connect(self.dsn, autocommit=True, connect_timeout=_connect_timeout(self.timeout)).close()

    def _recover(self, generation: int) -> None:
        """After a lost connection: restart the embedded server if it stopped, check the server answers, and
        replace the pool (its idle connections died with the server). Raises DatabaseUnavailableError if the
        server stays unreachable; the next call then tries again."""
        with self._recover_lock:
            if generation != self._generation or not self._suspect:
                return  # another thread recovered meanwhile
            if self.home is not None:
                uri = start_embedded(self.home, timeout=self.timeout)
                self.dsn = _with_server(self.dsn, uri)
            try:
                self._probe()
            except psycopg.Error as exc:
                raise DatabaseUnavailableError(self._cannot_connect(exc)) from exc
            old, self.pool = self.pool, self._open_pool()
            self._generation += 1
            self._suspect = False
        old.close(timeout=1.0)  # connections still checked out elsewhere are closed when returned

    def _safe(self, message: str) -> str:
        """An error message through memlab's redactor, which also knows this DSN's password: a server's or
        libpq's complaint may quote any part of the DSN."""
        return redact(message, known=dsn_secrets(self.dsn))

    def _cannot_connect(self, exc: BaseException | None) -> str:
        return self._safe(self._cannot_connect_text(exc))

    def _cannot_connect_text(self, exc: BaseException | None) -> str:
        detail = _first_line(exc) if exc is not None else "no connection"
        if self.home is not None:
            pgdata = self.home / "pgdata"
            return (
                f"Cannot connect to the embedded PostgreSQL in {pgdata} (waited at most {self.timeout:g} s): "
                f"{detail}\nFix: see its log {pgdata / 'log'}; check free disk space and permissions of "
                "MEMLAB_HOME; memlab tries to restart it on the next call. Or set MEMLAB_DSN to another PostgreSQL."
            )
        return (
            f"Cannot connect to PostgreSQL at {_redact(self.dsn)} (waited at most {self.timeout:g} s): {detail}\n"
            "Fix: start that server or correct MEMLAB_DSN / dsn=...; or unset MEMLAB_DSN to use the "
            "embedded PostgreSQL. memlab reconnects on the next call once the server is back."
        )

    def _lost_message(self, exc: BaseException) -> str:
        return self._safe(self._lost_text(exc))

    def _lost_text(self, exc: BaseException) -> str:
        if self.home is not None:
            return (
                f"The connection to the embedded PostgreSQL in {self.home / 'pgdata'} was lost during this call: "
                f"{_first_line(exc)}. The server stopped (a shutdown, a signal to its postmaster, or a crash); "
                "memlab restarts it on the next call: retry the call."
            )
        return (
            f"The connection to PostgreSQL at {_redact(self.dsn)} was lost during this call: {_first_line(exc)}. "
            "Fix: check that the server is up and reachable (MEMLAB_DSN / dsn=...), then retry the call; memlab "
            f"reconnects on the next call, waiting at most {self.timeout:g} s (MEMLAB_DB_TIMEOUT)."
        )

    def close(self) -> None:
        self._closed = True
        self.pool.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- embedding models -----------------------------------------------------------------------------
    def register_model(self, model_id: str, dimension: int) -> ModelInfo:
        """Record an embedding model (id -> dimension); refuse a changed dimension. A read-only store only looks
        it up (and names the models it has when it never saw this one)."""
        with self._models_lock:
            known = self._models.get(model_id)
        if known is None and self.read_only:
            known = self._stored_model(model_id)
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

    def _stored_model(self, model_id: str) -> ModelInfo:
        """A read-only store's registered model, or a ConfigError listing the model ids the store has."""
        with self.connection() as conn:
            rows = conn.execute("SELECT model_id, dimension FROM memlab_embedding_model ORDER BY created_at").fetchall()
        found = {r[0]: ModelInfo(*r) for r in rows}
        if model_id not in found:
            have = ", ".join(f"{m!r} ({d}-d)" for m, d in rows) or "none"
            raise ConfigError(f"this store never stored anything with embedding model {model_id!r} (models it has: "
                              f"{have}); opened read-only, memlab registers nothing. Fix: search with the embedder "
                              "your agent writes with (the same model id).")  # fmt: skip
        with self._models_lock:
            self._models[model_id] = found[model_id]
        return found[model_id]

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

    def ensure_vector_index(
        self,
        model_id: str,
        layer: str,
        *,
        m: int = 16,
        ef_construction: int = 64,
        maintenance_work_mem: str | None = None,
        workers: int | None = None,
    ) -> str:
        """Create the HNSW index of a model and layer if it is missing (after a bulk load, build it once here).

        The build's maintenance_work_mem and max_parallel_maintenance_workers are SET LOCAL for its
        transaction only, sized from the rows indexed unless given (`sqlu.build_settings`; environment
        MEMLAB_BUILD_MEMORY, MEMLAB_BUILD_MEMORY_MAX, MEMLAB_BUILD_WORKERS). An index already there is kept as
        it is, whatever m and ef_construction it was built with: drop it first to rebuild. A read-only store
        builds nothing: it returns the name (searches without the index scan exactly; index health reports it)."""
        name = sqlu.index_name_for(model_id, layer)
        if self.read_only:
            self.model(model_id)
            return name
        with self.transaction() as conn:
            _register_layer(conn, model_id, layer, name)
            sqlu.create_vector_index(
                conn,
                self.model(model_id),
                layer,
                m=m,
                ef_construction=ef_construction,
                maintenance_work_mem=maintenance_work_mem,
                workers=workers,
            )
        return name

    def register_layer(self, model_id: str, layer: str) -> str:
        """Record a model's layer in memlab's registry of shared HNSW indexes (where erasure and index health look
        for them) without building its index: an `EventMemory` builds it once the layer needs one
        (`memlab.events.core.MemoryCore.index_if_due`). Returns the index's name; a read-only store records nothing."""
        name = sqlu.index_name_for(model_id, layer)
        self.model(model_id)
        if not self.read_only:
            with self.transaction() as conn:
                _register_layer(conn, model_id, layer, name)
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
        self._writable("drop an index")
        with self.connection() as conn:
            sqlu.drop_index(conn, sqlu.index_name_for(model_id, layer))

    def has_vector_index(self, model_id: str, layer: str) -> bool:
        with self.connection() as conn:
            return sqlu.index_exists(conn, sqlu.index_name_for(model_id, layer))

    def auto_policy(self) -> AutoPolicy:
        """The thresholds `strategy="auto"` uses: the calibrated policy saved in this database, else the
        defaults. Read once per Store (a process that calibrates saves through this Store)."""
        if self._policy is None:
            with self.connection() as conn:
                self._policy = policy.load_policy(conn) or AutoPolicy()
        return self._policy

    def save_auto_policy(self, value: AutoPolicy) -> None:
        """Store a calibrated policy with the database (every process opening it afterwards uses it)."""
        self._writable("save an auto policy")
        if not isinstance(value, AutoPolicy):
            raise ConfigError(f"save_auto_policy takes a memlab.AutoPolicy, got {type(value).__name__}.")
        with self.transaction() as conn:
            policy.save_policy(conn, value)
        self._policy = value

    def create_tenant_index(
        self, model_id: str, layer: str, app_name: str, user_id: str, *, m: int = 16, ef_construction: int = 64
    ) -> str:
        """A partial HNSW index over one tenant's rows of a model and layer, if missing (statistics refreshed).
        Searches use it only with app and user inlined as literals. Not registered: `drop_model` leaves it."""
        self._writable("create an index")
        with self.transaction() as conn:
            return sqlu.create_tenant_index(
                conn, self.model(model_id), layer, app_name, user_id, m=m, ef_construction=ef_construction
            )

    def drop_tenant_index(self, model_id: str, layer: str, app_name: str, user_id: str) -> None:
        """Drop one tenant's partial HNSW index (`create_tenant_index`) if it exists: benchmarks measure a user
        with and without it, and a dropped index costs nothing to its searches but the graph they lose."""
        self._writable("drop an index")
        with self.connection() as conn:
            sqlu.drop_index(conn, sqlu.tenant_index_name(model_id, layer, app_name, user_id))

    def vacuum(self) -> None:
        """VACUUM (ANALYZE) the unit and tombstone tables, so no dead row is left for a scan to skip (after a
        benchmark deletes a large layer; erasure's own levels are `EventMemory.forget_user(vacuum=...)`)."""
        self._writable("vacuum")
        with self.connection() as conn:
            housekeeping.vacuum(conn)

    def delete_layer(self, app_name: str, layer: str) -> int:
        """Delete every unit of one app in one layer (all users, all models); returns rows deleted."""
        self._writable("delete a layer")
        with self.transaction() as conn:
            return housekeeping.delete_layer(conn, app_name, layer)

    def drop_model(self, model_id: str) -> int:
        """Delete every row stored with a model, its index and its registration (the end of a migration)."""
        self._writable("drop a model")
        self.model(model_id)
        indexes = self.vector_indexes(model_id)
        with self.transaction() as conn:
            deleted = housekeeping.delete_model(conn, model_id)
            for name in indexes.values():
                sqlu.drop_index(conn, name)
            conn.execute("DELETE FROM memlab_embedding_model WHERE model_id = %s", [model_id])
        with self._models_lock:
            self._models.pop(model_id, None)
        return deleted

    def analyze(self) -> None:
        """Refresh planner statistics (the `planner` strategy depends on them) after a bulk load, vacuuming the
        unit table on the way (so autovacuum does not start on the fresh rows under the first searches; see
        `unit_table.vacuum_analyze`), and vacuum the lexical postings so lexical search's index-only scans skip the
        heap from the first query after a bulk load."""
        self._writable("analyze")
        with self.connection() as conn:
            unit_table.vacuum_analyze(conn)
            sqlu.vacuum_postings(conn)


def open_store(
    dsn: str | None = None, *, home: str | Path | None = None, pool_size: int = 4, timeout: float | None = None,
    read_only: bool = False,
) -> Store:  # fmt: skip
    """Open memlab's database: `dsn` (or MEMLAB_DSN) if given, else the embedded PostgreSQL under MEMLAB_HOME
    (started, or restarted if it stopped). `timeout` bounds each call's wait for the server (default
    MEMLAB_DB_TIMEOUT, else 10 s). `read_only=True` opens an existing store without writing anything to it
    (SELECT privilege is enough to search; see the module docstring). A writable open drops the scratch databases
    of runs that died without dropping them (memlab.storage.scratch)."""
    seconds = db_timeout(timeout)
    resolved = configured_dsn(dsn)
    if resolved is not None:
        store = Store(resolved, pool_size=pool_size, timeout=seconds, read_only=read_only)
    else:
        path = memlab_home(home)
        store = Store(start_embedded(path, timeout=seconds), embedded=True, pool_size=pool_size, timeout=seconds,
                      home=path, read_only=read_only)  # fmt: skip
    if not read_only:  # a run killed before dropping its scratch database leaves it no longer than this
        scratch.drop_dead_scratch(store.dsn, connect_timeout=_connect_timeout(seconds))
    return store


def _register_layer(conn: psycopg.Connection, model_id: str, layer: str, name: str) -> None:
    conn.execute("INSERT INTO memlab_vector_index (model_id, layer, index_name) VALUES (%s, %s, %s) "
                 "ON CONFLICT DO NOTHING", [model_id, layer, name])  # fmt: skip
