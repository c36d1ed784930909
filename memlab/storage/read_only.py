"""A read-only connection to the server memlab's memory lives on, for the readers that must change nothing there
(stored sessions read back for labelling, a live store's index health): `default_transaction_read_only` and a
read-only session, so pointing them at an agent's production database creates nothing, not even memlab's tables.
Errors go through the redactor, which also knows the DSN's password."""

from __future__ import annotations

from pathlib import Path

import psycopg

from memlab.config import configured_dsn, memlab_home
from memlab.errors import DatabaseUnavailableError
from memlab.safety.redact import dsn_secrets, redact
from memlab.storage.embedded import start_embedded
from memlab.storage.store import _first_line


def connect_read_only(
    dsn: str | None, home: str | Path | None, timeout: float, *, doing: str, autocommit: bool = False
) -> tuple[psycopg.Connection, str]:
    """A read-only connection to `dsn` (else MEMLAB_DSN, else the embedded server under `home`, started if need be)
    and how to name the server in a message (a DSN without its password). `doing` completes the error line:
    "cannot <doing> <server>: ..."."""
    resolved = configured_dsn(dsn)
    if resolved is None:
        home_path = memlab_home(home)
        resolved, shown = start_embedded(home_path, timeout=timeout), f"the embedded PostgreSQL in {home_path}"
    else:
        shown = f"PostgreSQL at {redact(resolved, known=dsn_secrets(resolved))}"
    try:
        conn = psycopg.connect(resolved, autocommit=autocommit, connect_timeout=max(2, round(timeout)),
                               options="-c default_transaction_read_only=on")  # fmt: skip
    except psycopg.Error as exc:
        raise DatabaseUnavailableError(redact(
            f"cannot {doing} {shown}: {_first_line(exc)}; fix the DSN (host, port, database, user, password) or "
            "start that server", known=dsn_secrets(resolved))) from None  # fmt: skip
    conn.read_only = True
    return conn, shown
