"""Requests in flight against an erasure: a model call that sends a user's words takes seconds; an erasure of that
user that runs meanwhile finds no cache entry to delete, and the reply, stored when it arrives, would quote the
erased user after the erasure returned.

So a call that will cache a reply derived from stored memory first registers its refs (memlab.models.refs) in the
cache folder, `flights/<random>.json`, and stores its reply only if the registration is still there. An erasure
takes the folder's lock exclusively and deletes every registration naming an erased ref; a store takes it shared,
checks its registration and writes, all under the lock. Either the store ran first (its entry is indexed and the
erasure deletes it next) or the erasure did (the registration is gone and nothing is stored). The lock is an
flock on `folder/.lock`, so it holds across processes sharing the folder. A registration lives as long as its
call (it holds hashes, never texts); one left by a crashed process is deleted after STALE_SECONDS."""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: the lock holds within this process only
    fcntl = None  # type: ignore[assignment]

STALE_SECONDS = 24 * 3600  # far longer than any call's deadline
_LOCAL = threading.RLock()


@contextmanager
def folder_lock(folder: Path, *, exclusive: bool) -> Iterator[None]:
    """The cache folder's lock: exclusive for an erasure, shared for a store."""
    folder.mkdir(parents=True, exist_ok=True)
    if fcntl is None:  # pragma: no cover
        with _LOCAL:
            yield
        return
    with open(folder / ".lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class Flight:
    """One registered call: `path` is its registration (None: nothing to register, the call quotes no memory)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def cancelled(self) -> bool:
        """Whether an erasure of one of its refs ran since it registered (call under the folder's lock)."""
        return self.path is not None and not self.path.exists()


@contextmanager
def flight(folder: Path | None, refs: Iterable[str]) -> Iterator[Flight]:
    """Register a call whose reply derives from `refs` for as long as the block runs."""
    refs = sorted(set(refs))
    if folder is None or not refs:
        yield Flight(None)
        return
    where = folder / "flights"
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{secrets.token_hex(16)}.json"
    fd, tmp = tempfile.mkstemp(dir=where, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(refs, f)
        os.replace(tmp, path)  # whole or absent: an erasure never reads half a registration
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:
        yield Flight(path)
    finally:
        path.unlink(missing_ok=True)


def cancel(folder: Path, refs: set[str]) -> int:
    """Delete the registrations naming any of `refs` (and stale ones); call under the folder's exclusive lock.
    Returns the calls cancelled."""
    try:
        names = [e.name for e in os.scandir(folder / "flights") if e.name.endswith(".json")]
    except OSError:
        return 0
    cancelled = 0
    now = time.time()
    for name in names:
        path = folder / "flights" / name
        try:
            named = set(json.loads(path.read_text(encoding="utf-8")))
            stale = now - path.stat().st_mtime > STALE_SECONDS
        except FileNotFoundError:
            continue
        except (OSError, ValueError, TypeError):
            named, stale = set(), True  # unreadable: cannot say what it quotes, so it cannot be stored either
        if named & refs or stale:
            path.unlink(missing_ok=True)
            cancelled += not stale
    return cancelled
