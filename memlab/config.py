"""Settings resolve as: explicit argument, then environment variable, then default."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

HOME_ENV = "MEMLAB_HOME"
DSN_ENV = "MEMLAB_DSN"


def memlab_home(home: str | Path | None = None) -> Path:
    """Where memlab keeps its embedded database and caches (created on first use)."""
    raw = home if home is not None else os.environ.get(HOME_ENV)
    path = Path(raw).expanduser() if raw else Path(platformdirs.user_data_dir("memlab"))
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def configured_dsn(dsn: str | None = None) -> str | None:
    """A PostgreSQL DSN to use instead of the embedded server, or None for the embedded default."""
    value = dsn if dsn is not None else os.environ.get(DSN_ENV)
    return value or None
