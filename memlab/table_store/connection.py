"""A read-only, rate-limited way into someone else's database.

Every connection starts with `default_transaction_read_only`, `statement_timeout`, `lock_timeout` and
`idle_in_transaction_session_timeout` set in its startup options; every unit of work is one `BEGIN READ ONLY`
transaction (so no statement in it can write) that sets the timeouts again (SET LOCAL: a pooler that drops startup
options cannot lift them) and checks `transaction_read_only`, so none waits long for a lock or runs long. A unit's
statements go out in one pipeline: BEGIN, the settings and the first statement travel together, and a unit whose
rows are read after it ends (a search) costs a single round trip, COMMIT included. Statements are spaced to at most
`max_qps` per second over all connections (one by default). Errors come out as memlab errors naming the server (its
DSN without the password) and the fix."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import psycopg
from pgvector.psycopg import register_vector
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout

from memlab.config import configured_dsn, db_timeout
from memlab.errors import ConfigError, DatabaseUnavailableError
from memlab.safety.redact import dsn_secrets, redact
from memlab.types import check_number

APPLICATION_NAME = "memlab-table-store"  # what pg_stat_activity shows the table's owner


@dataclass(frozen=True)
class ReadOnlyLimits:
    """How hard memlab may lean on the database: `statement_timeout` and `lock_timeout` (seconds) bound every
    statement (a read waits for a lock only behind DDL, and should give up rather than queue the application's
    queries behind it), `idle_in_transaction_timeout` ends a transaction left open, `max_qps` spaces statements
    (None: no limit), `connections` is the most open at once, `connect_timeout` (seconds; None: MEMLAB_DB_TIMEOUT,
    else 10) bounds connecting."""

    statement_timeout: float = 30.0
    lock_timeout: float = 1.0
    idle_in_transaction_timeout: float = 60.0
    max_qps: float | None = 20.0
    connections: int = 1
    connect_timeout: float | None = None

    def __post_init__(self) -> None:
        for name in ("statement_timeout", "lock_timeout", "idle_in_transaction_timeout"):
            check_number(getattr(self, name), f"ReadOnlyLimits.{name}", low=0.001, high=86_400, integer=False,
                         why="seconds; memlab never runs a statement without a bound")  # fmt: skip
        if self.max_qps is not None:
            check_number(self.max_qps, "ReadOnlyLimits.max_qps", low=0.01, high=100_000, integer=False,
                         why="statements per second; None for no limit")  # fmt: skip
        check_number(self.connections, "ReadOnlyLimits.connections", low=1, high=64, integer=True)

    def settings(self) -> list[tuple[str, str]]:
        """The session settings, in milliseconds."""
        return [("statement_timeout", _ms(self.statement_timeout)), ("lock_timeout", _ms(self.lock_timeout)),
                ("idle_in_transaction_session_timeout", _ms(self.idle_in_transaction_timeout))]  # fmt: skip

    def options(self, given: str | None) -> str:
        own = " ".join(f"-c {k}={v}" for k, v in [("default_transaction_read_only", "on"), *self.settings()])
        return f"{given} {own}" if given else own


def _ms(seconds: float) -> str:
    return str(max(1, round(seconds * 1000)))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class RateLimit:
    """At most `qps` starts per second, shared by threads: each start is booked 1/qps after the previous one."""

    def __init__(self, qps: float | None) -> None:
        self.interval = 0.0 if qps is None else 1.0 / qps
        self._next = 0.0
        self._lock = threading.Lock()
        self.waited = 0.0

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
            self.waited += start - now
        if start > now:
            time.sleep(start - now)


class Work:
    """One read-only transaction: `execute` runs a statement after the rate limit."""

    def __init__(self, conn: psycopg.Connection, limit: RateLimit) -> None:
        self.conn = conn
        self._limit = limit
        self.statements = 0
        self._check: psycopg.Cursor | None = None  # the transaction's own settings and read-only check, queued

    def execute(self, query, params=None) -> psycopg.Cursor:
        self._limit.wait()
        self.statements += 1
        return self.conn.execute(query, params)

    def set_local(self, settings: list[tuple[str, str]]) -> None:
        """Queue the settings (SET LOCAL: they end with the transaction) and the read-only check; they are
        answered with the transaction's first round trip."""
        self._check = self.execute("SELECT current_setting('transaction_read_only'), "
                                   + ", ".join("set_config(%s, %s, true)" for _ in settings),
                                   [v for kv in settings for v in kv])  # fmt: skip

    def read_only(self, shown: str) -> None:
        """Raise unless the transaction is read-only (its check's row; read once, a round trip if not yet in)."""
        if self._check is None:
            return
        row, self._check = self._check.fetchone(), None
        if row is None or row[0] != "on":
            raise ConfigError(f"the transaction on {shown} is not read-only (transaction_read_only = "
                              f"{row[0] if row else None!r}); memlab stops rather than risk a write. Fix: connect "
                              "directly, not through a pooler that drops the session options.")  # fmt: skip

    def timed(self, query, params=None, *, shown: str = "") -> tuple[list[tuple], float]:
        """`execute` and fetch every row, with the seconds the statement took from sending it to its last row
        (the transaction's own statements answered first; the rate limit's wait not counted)."""
        self.read_only(shown)
        self._limit.wait()
        self.statements += 1
        started = time.perf_counter()
        rows = self.conn.execute(query, params).fetchall()
        return rows, time.perf_counter() - started


class ReadOnlyConnection:
    """Read-only connections to `dsn` under `limits` (see the module docstring). Thread-safe; close when done."""

    def __init__(self, dsn: str | None, limits: ReadOnlyLimits | None = None) -> None:
        resolved = configured_dsn(dsn)
        if resolved is None:
            raise ConfigError("no database given: pass the DSN of the database that holds your table "
                              "(postgresql://user:password@host:5432/dbname) or set MEMLAB_DSN.")  # fmt: skip
        self.limits = limits or ReadOnlyLimits()
        self.dsn = resolved
        self.shown = f"PostgreSQL at {self.safe(resolved)}"
        self.timeout = db_timeout(self.limits.connect_timeout)
        self._limit = RateLimit(self.limits.max_qps)
        given = psycopg.conninfo.conninfo_to_dict(resolved).get("options")
        self._kwargs = {"autocommit": True, "prepare_threshold": None, "connect_timeout": max(2, round(self.timeout)),
                        "options": self.limits.options(given), "application_name": APPLICATION_NAME}  # fmt: skip
        self._pool: ConnectionPool | None = None

    @property
    def waited(self) -> float:
        """Seconds statements have waited for the rate limit (`max_qps`) so far, over every connection."""
        return self._limit.waited

    def safe(self, text: str) -> str:
        """`text` through the redactor, which also knows this DSN's password in every form."""
        return redact(text, known=dsn_secrets(self.dsn))

    def connect_once(self) -> psycopg.Connection:
        """One connection outside the pool (for the first checks), or DatabaseUnavailableError with the fix."""
        try:
            conn = psycopg.connect(self.dsn, **self._kwargs)
        except psycopg.Error as exc:
            detail = _first_line(exc)
            fix = ("GRANT CONNECT ON DATABASE to the DSN's role (memlab needs CONNECT, USAGE on the table's schema and "
                   "SELECT on the table)" if "permission denied" in detail else
                   "check that the server is up and reachable from here, and the DSN's host, port, dbname, user and "
                   "password (MEMLAB_DSN or dsn=...)")  # fmt: skip
            raise DatabaseUnavailableError(self.safe(
                f"cannot connect to {self.shown} (waited at most {self.timeout:g} s): {detail}. Fix: {fix}."
            )) from None
        conn.read_only = True
        return conn

    def open(self) -> None:
        """Open the pool (after the first checks passed on `connect_once`: the vector type must exist)."""
        if self._pool is None:
            self._pool = ConnectionPool(self.dsn, min_size=1, max_size=self.limits.connections, kwargs=self._kwargs,
                                        configure=_configure, timeout=self.timeout, open=False)  # fmt: skip
            self._pool.open(wait=False)

    @contextmanager
    def work(self, knobs: list[tuple[str, str]] = ()) -> Iterator[Work]:  # type: ignore[assignment]
        """One READ ONLY transaction on a pooled connection, with the limits and `knobs` SET LOCAL."""
        self.open()
        assert self._pool is not None
        try:
            conn = self._pool.getconn(timeout=self.timeout)
        except PoolTimeout as exc:
            raise DatabaseUnavailableError(self.safe(
                f"no connection to {self.shown} within {self.timeout:g} s: the server is down or unreachable, or all "
                f"{self.limits.connections} connection(s) stayed busy. Fix: check the server, or raise "
                "ReadOnlyLimits(connections=...) for more calls at once.")) from exc  # fmt: skip
        try:
            with self._transaction(conn, knobs) as work:
                yield work
        finally:
            self._pool.putconn(conn)

    @contextmanager
    def once(self) -> Iterator[Work]:
        """One READ ONLY transaction on a connection of its own, closed after (the checks before the pool opens:
        the pool's connections need the vector type to exist)."""
        conn = self.connect_once()
        with conn, self._transaction(conn, []) as work:
            yield work

    @contextmanager
    def _transaction(self, conn: psycopg.Connection, knobs: list[tuple[str, str]]) -> Iterator[Work]:
        """The transaction (see the module docstring); psycopg errors come out as memlab errors with the fix."""
        try:
            with conn.pipeline():  # one Sync at the end: psycopg's transaction() would add one at each boundary
                conn.execute("BEGIN READ ONLY")
                work = Work(conn, self._limit)
                work.set_local([*self.limits.settings(), *knobs])
                yield work
                conn.execute("COMMIT")
            work.read_only(self.shown)  # its row came with the unit's first round trip
        except psycopg.Error as exc:
            _end(conn)
            raise self._translate(exc, conn) from exc
        except BaseException:
            _end(conn)
            raise

    def _translate(self, exc: psycopg.Error, conn: psycopg.Connection) -> Exception:
        detail = _first_line(exc)
        if isinstance(exc, psycopg.errors.QueryCanceled):
            return ConfigError(self.safe(
                f"a statement on {self.shown} ran past statement_timeout={self.limits.statement_timeout:g} s and was "
                f"cancelled ({detail}). Fix: raise ReadOnlyLimits(statement_timeout=...), or narrow the read "
                "(one user, a smaller sample); an index on the scope columns (app, user) speeds every read."))
        if isinstance(exc, psycopg.errors.LockNotAvailable):
            return ConfigError(self.safe(
                f"a read on {self.shown} waited past lock_timeout={self.limits.lock_timeout:g} s ({detail}): "
                "something holds an exclusive lock on the table (a migration, a VACUUM FULL, a REINDEX). Retry "
                "when it is done, or raise ReadOnlyLimits(lock_timeout=...)."))
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return ConfigError(self.safe(
                f"{self.shown} refused a read: {detail}. Fix: GRANT SELECT on the table (and USAGE on its schema) to "
                "the DSN's role; memlab needs no other privilege."))
        if isinstance(exc, psycopg.DataError):
            return ConfigError(self.safe(
                f"{self.shown} could not convert a value ({detail}); nothing was read. Either the app, user or model "
                "asked for is not of its column's type (a name where the column holds uuids or numbers: ask for a "
                "value the column holds), or a value in the table is not of its field's type (a date that does not "
                "exist: map that field, such as time, to None or to another column, or correct the row)."))  # fmt: skip
        if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
            return ConfigError(self.safe(f"a statement tried to write on {self.shown} and the read-only transaction "
                                         f"refused it ({detail}); nothing was changed."))  # fmt: skip
        if conn.broken or conn.closed or isinstance(exc, psycopg.OperationalError):
            return DatabaseUnavailableError(self.safe(
                f"the connection to {self.shown} failed during a read: {detail}. Fix: check that the server is up "
                "and reachable, then retry; memlab reconnects on the next call."))
        return ConfigError(self.safe(f"{self.shown} refused a read: {detail}."))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def _end(conn: psycopg.Connection) -> None:
    """Roll back a unit of work that failed inside its transaction (an error there leaves it open, aborted)."""
    if conn.closed or conn.info.transaction_status not in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
        return
    with suppress(psycopg.Error):  # a broken connection: the pool discards it
        conn.execute("ROLLBACK")


def _configure(conn: psycopg.Connection) -> None:
    register_vector(conn)
    conn.read_only = True
