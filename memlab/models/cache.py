"""A disk cache of model replies keyed by the request's content, so a rerun of the same experiment costs no model
call. Only successful replies are stored (an error is retried on the next run); the API key is never part of the
key or the entry. One JSON file per entry, written to a temporary file and renamed, so a crash or a parallel
writer never leaves half an entry."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from memlab.config import memlab_home


def model_cache_dir(home: str | Path | None = None) -> Path:
    """MEMLAB_HOME/cache/models: where model replies are cached (delete the folder to clear it)."""
    return memlab_home(home) / "cache" / "models"


def cache_key(parts: Any) -> str:
    """sha256 of the canonical JSON of `parts` (sorted keys, no spaces): equal requests, equal keys."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ReplyCache:
    """Entries under `folder/<2 hex>/<key>.json`; `None` folder: a cache that stores nothing."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None (absent, or unreadable: an entry that cannot be read is a miss, rewritten)."""
        if self.folder is None:
            return None
        try:
            value = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        if self.folder is None:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(value, f, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
