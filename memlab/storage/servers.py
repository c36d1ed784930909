"""A server memlab only makes scratch databases on (`open_server`), and the scratch database a run keeps its memory
in (`scratch_store`): a run pointed at a database never gives that database memlab's schema or the vector extension;
its memory lives in a brand-new database of the same server, dropped afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

import memlab.storage.scratch as scratch
from memlab.config import configured_dsn, db_timeout, memlab_home
from memlab.errors import DatabaseUnavailableError
from memlab.safety.redact import dsn_secrets, redact
from memlab.storage.embedded import start_embedded
from memlab.storage.store import Store, _connect_timeout, _first_line, _redact


class Server:
    """A PostgreSQL server memlab makes scratch databases on, and nothing else: the database its DSN names is
    connected to (to create and drop scratch databases), never given memlab's schema or the vector extension.
    What a run that keeps no memory of its own opens (`open_server`), where `open_store` would prepare the
    database for memlab's memory."""

    def __init__(self, dsn: str, *, embedded: bool = False, home: Path | None = None, pool_size: int = 4,
                 timeout: float | None = None) -> None:  # fmt: skip
        self.dsn = dsn
        self.embedded = embedded
        self.home = home
        self.pool_size = pool_size
        self.timeout = db_timeout(timeout)

    def _safe(self, message: str) -> str:
        return redact(message, known=dsn_secrets(self.dsn))

    def close(self) -> None:
        """Nothing is held open between calls: each scratch database opens its own pool."""

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_server(dsn: str | None = None, *, home: str | Path | None = None, pool_size: int = 4,
                timeout: float | None = None) -> Server:  # fmt: skip
    """The server of `dsn` (or MEMLAB_DSN), else the embedded PostgreSQL under MEMLAB_HOME, for scratch databases
    only (`scratch_store`): checked to answer, its dead runs' scratch databases dropped, and the database the DSN
    names left as it is: no table, no extension. Pointing a run at a database never gives it memlab's schema
    unless memlab is to keep memory there (`open_store`)."""
    seconds = db_timeout(timeout)
    resolved = configured_dsn(dsn)
    if resolved is None:
        path = memlab_home(home)
        return Server(start_embedded(path, timeout=seconds), embedded=True, home=path, pool_size=pool_size,
                      timeout=seconds)  # fmt: skip
    server = Server(resolved, pool_size=pool_size, timeout=seconds)
    try:
        psycopg.connect(resolved, autocommit=True, connect_timeout=_connect_timeout(seconds)).close()
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailableError(server._safe(
            f"Cannot connect to PostgreSQL at {_redact(resolved)} (waited at most {seconds:g} s): {_first_line(exc)}\n"
            "Fix: start that server or correct MEMLAB_DSN / dsn=...; or unset MEMLAB_DSN to use the embedded "
            "PostgreSQL."
        )) from exc  # fmt: skip
    scratch.drop_dead_scratch(resolved, connect_timeout=_connect_timeout(seconds))
    return server


@contextmanager
def scratch_store(store: Store | Server, *, prefix: str = "memlab_run") -> Iterator[Store]:
    """A Store on a brand-new database of the server of `store` (a Store, or a Server from `open_server`),
    dropped afterwards: runs start from nothing, so what one run left behind (rows, HNSW graphs) cannot change the
    next run's numbers. Its name records this process (memlab.storage.scratch): scratch databases of runs that died
    without dropping theirs (SIGKILL) are dropped first, and SIGTERM or SIGHUP meanwhile drop this one on the way
    out."""
    timeout = _connect_timeout(store.timeout)
    scratch.drop_dead_scratch(store.dsn, connect_timeout=timeout)
    name = scratch.scratch_name(prefix)
    with scratch.dropped_on_signal():
        try:
            with psycopg.connect(store.dsn, autocommit=True, connect_timeout=timeout) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except psycopg.Error as exc:
            raise DatabaseUnavailableError(store._safe(
                f"Cannot create a scratch database for this run on {_redact(store.dsn)}: {str(exc).strip()}. "
                "A run keeps its memory in a database of its own and writes nothing to the one the DSN names. "
                "Fix: grant CREATEDB to this role, or use the embedded PostgreSQL (unset MEMLAB_DSN)."
            )) from exc
        fresh = None
        try:
            fresh = Store(
                psycopg.conninfo.make_conninfo(store.dsn, dbname=name),
                embedded=store.embedded,
                pool_size=store.pool_size,
                timeout=store.timeout,
                home=store.home,
            )
            yield fresh
        finally:
            with scratch.signals_held():
                if fresh is not None:
                    fresh.close()
                with psycopg.connect(store.dsn, autocommit=True, connect_timeout=timeout) as conn:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
