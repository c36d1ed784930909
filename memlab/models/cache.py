"""A disk cache of model replies keyed by the request's content, so a rerun of the same experiment costs no model
call. Only successful replies are stored (an error is retried on the next run); the API key is never part of the
key or the entry. One JSON file per entry, written to a temporary file and renamed, so a crash or a parallel
writer never leaves half an entry.

A reply derived from stored memory quotes a user's words, so each entry records its sources' refs
(memlab.models.refs: hashes, never the texts) and the folder keeps an index: one empty file `refs/<ab>/<ref>.<entry
key>` per pair (creating one is atomic, so parallel writers need no lock and no read-modify-write; an empty file
takes an inode, no data block). `forget_model_replies(refs)` (called by every erasure) lists the buckets of the
erased refs and deletes the entries they name: at most 256 directory listings, not a read of every entry. A call
in flight meanwhile stores nothing afterwards (memlab.models.flights)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memlab.config import memlab_home
from memlab.models.flights import Flight, cancel, flight, folder_lock


def model_cache_dir(home: str | Path | None = None) -> Path:
    """MEMLAB_HOME/cache/models: where model replies are cached (delete the folder to clear it)."""
    return memlab_home(home) / "cache" / "models"


def cache_key(parts: Any) -> str:
    """sha256 of the canonical JSON of `parts` (sorted keys, no spaces): equal requests, equal keys."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


HEX_KEY = re.compile(r"[0-9a-f]{64}")
_OPENED: set[Path] = set()
_OPENED_LOCK = threading.Lock()


def opened_folders() -> list[Path]:
    """Every model-cache folder this process opened (erasure clears the entries derived from erased texts in each)."""
    with _OPENED_LOCK:
        return sorted(_OPENED)


class ReplyCache:
    """Entries under `folder/<2 hex>/<key>.json`, the refs index under `folder/refs/`; `None` folder: a cache that
    stores nothing."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        if folder is not None:
            with _OPENED_LOCK:
                _OPENED.add(Path(folder).resolve())

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return _entry_path(self.folder, key)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None (absent, or unreadable: an entry that cannot be read is a miss, rewritten)."""
        return None if self.folder is None else _read(_entry_path(self.folder, key))

    @contextmanager
    def flight(self, refs: Iterable[str]) -> Iterator[Flight]:
        """Register a call whose reply will derive from `refs` (pass the Flight to `put`): an erasure of any of
        them that runs before the reply is stored cancels the store."""
        with flight(self.folder, {r for r in refs if HEX_KEY.fullmatch(r)}) as registered:
            yield registered

    def put(self, key: str, value: dict[str, Any], refs: Iterable[str] = (), registered: Flight | None = None
            ) -> bool:  # fmt: skip
        """Store an entry; `refs` (memlab.models.refs) are what it was derived from, `registered` the call's
        flight (nothing is stored when an erasure cancelled it). The index is written before the entry, both under
        the folder's shared lock, so an erasure finds the ref (and no entry yet) or runs after both. Returns
        whether the entry was stored."""
        if self.folder is None:
            return False
        refs = sorted({r for r in refs if HEX_KEY.fullmatch(r)})
        with folder_lock(self.folder, exclusive=False):
            if registered is not None and registered.cancelled():
                return False
            for ref in refs:
                marker = _marker(self.folder, ref, key)
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
            value = {**value, "refs": refs} if refs else value
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
        return True


def _entry_path(folder: Path, key: str) -> Path:
    return folder / key[:2] / f"{key}.json"


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _marker(folder: Path, ref: str, key: str) -> Path:
    """The index file saying entry `key` was derived from `ref`: empty, named `<ref>.<key>` in a bucket of 256."""
    return folder / "refs" / ref[:2] / f"{ref}.{key}"


def _forget_in(folder: Path, refs: list[str]) -> int:
    """Delete the entries of `folder` derived from any of `refs`, with their index files, and cancel the calls
    in flight deriving from them, all under the folder's exclusive lock; returns entries deleted. Each bucket
    holding an erased ref is listed once."""
    with folder_lock(folder, exclusive=True):
        cancel(folder, set(refs))
        return _delete_entries(folder, refs)


def _delete_entries(folder: Path, refs: list[str]) -> int:
    by_bucket: dict[str, set[str]] = {}
    for ref in refs:
        by_bucket.setdefault(ref[:2], set()).add(ref)
    removed = 0
    for bucket, wanted in sorted(by_bucket.items()):
        try:
            names = [e.name for e in os.scandir(folder / "refs" / bucket)]
        except OSError:
            continue
        for name in names:
            ref, _, key = name.partition(".")
            if ref not in wanted or not HEX_KEY.fullmatch(key):
                continue
            path = _entry_path(folder, key)
            entry = _read(path) or {}
            try:
                path.unlink()
                removed += 1
            except FileNotFoundError:
                pass
            for other in {ref, *(entry.get("refs") or ())}:  # the entry's other refs point at nothing now
                if isinstance(other, str) and HEX_KEY.fullmatch(other):
                    _marker(folder, other, key).unlink(missing_ok=True)
    return removed


def forget_model_replies(refs: Iterable[str], home: str | Path | None = None) -> int:
    """Delete every cached model reply derived from any of `refs` (text_keys of erased texts, scope refs of
    erased users, sessions and events) in every model-cache folder this process opened and in
    model_cache_dir(home); returns entries deleted. Erasure calls it after its delete committed."""
    wanted = sorted({r for r in refs if isinstance(r, str) and HEX_KEY.fullmatch(r)})
    if not wanted:
        return 0
    folders = {*opened_folders(), model_cache_dir(home).resolve()}
    return sum(_forget_in(folder, wanted) for folder in sorted(folders) if folder.is_dir())
