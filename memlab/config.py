"""Settings resolve as: explicit argument, then environment variable, then default."""

from __future__ import annotations

import math
import os
from pathlib import Path

import platformdirs
import psycopg

from memlab.errors import ConfigError
from memlab.safety.redact import dsn_secrets, redact

HOME_ENV = "MEMLAB_HOME"
DSN_ENV = "MEMLAB_DSN"
TIMEOUT_ENV = "MEMLAB_DB_TIMEOUT"
DEFAULT_DB_TIMEOUT = 10.0


def memlab_home(home: str | Path | None = None) -> Path:
    """Where memlab keeps its embedded database and caches (created on first use)."""
    raw = home if home is not None else os.environ.get(HOME_ENV)
    path = Path(raw).expanduser() if raw else Path(platformdirs.user_data_dir("memlab"))
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def configured_dsn(dsn: str | None = None) -> str | None:
    """A PostgreSQL DSN to use instead of the embedded server, or None for the embedded default."""
    value = dsn if dsn is not None else os.environ.get(DSN_ENV)
    if not value:
        return None
    try:
        psycopg.conninfo.conninfo_to_dict(value)
    except psycopg.ProgrammingError as exc:
        source = "the dsn given" if dsn is not None else DSN_ENV
        # The value is not repeated, and the parser's complaint may quote any part of it (the password token).
        problem = redact(str(exc).replace(value, "<dsn>").splitlines()[0], known=dsn_secrets(value))
        raise ConfigError(
            f"{source} is not a PostgreSQL connection string ({problem}); use a URL such as "
            "postgresql://user:password@host:5432/dbname or key=value pairs such as 'host=localhost dbname=memlab', "
            "or leave it unset for the embedded server."
        ) from None
    return value


def db_timeout(timeout: float | None = None) -> float:
    """The longest (in seconds) one database call waits for the server: to connect, for a free pooled
    connection, or for a stopping embedded server to finish. Default 10 s; MEMLAB_DB_TIMEOUT overrides it."""
    if timeout is None:
        raw = os.environ.get(TIMEOUT_ENV, "").strip()
        if not raw:
            return DEFAULT_DB_TIMEOUT
        source = f"{TIMEOUT_ENV}={raw!r}"
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
    else:
        source = f"timeout={timeout!r}"
        try:
            value = float(timeout)
        except (TypeError, ValueError):
            value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(
            f"{source} is not a usable database timeout: give a positive number of seconds "
            f"(e.g. {TIMEOUT_ENV}=10 or open_store(timeout=10)), or leave it unset for the default "
            f"{DEFAULT_DB_TIMEOUT:g} s."
        )
    return value
