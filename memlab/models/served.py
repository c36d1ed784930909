"""Which model answered: a server can swap the weights behind the same name and URL, and a cache keyed by the
request alone then serves the old model's replies to every rerun. Each reply records what the server says answered
(its `model`, and `system_fingerprint` where given) and the cache key holds it, so a client serves a cached reply
only once a live reply in this process told it which model answers now: its first lookup goes to the server (one
request per client; threads of the same client wait for it instead of asking too), later lookups use what the
latest live reply said. The embedding cache keys vectors the same way (memlab.embedding.cache). A model run in this
process (a cross-encoder or sentence-transformers folder) is known by its files' content (`folder_fingerprint`)
and asks no server."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from memlab.models.cache import cache_key

LOCAL = "local"  # a model run in this process (a cross-encoder folder): its content is in the request key


def served_identity(reply: Any) -> str:
    """The canonical text of what a reply says answered: {"model", "system_fingerprint"}, None where absent."""
    reply = reply if isinstance(reply, dict) else {}
    said = {k: reply.get(k) if isinstance(reply.get(k), str) else None for k in ("model", "system_fingerprint")}
    return json.dumps(said, sort_keys=True, separators=(",", ":"))


class ServedModel:
    """What the server behind one client says answers, learned from live replies (`fixed`: known up front)."""

    def __init__(self, fixed: str | None = None) -> None:
        self._identity = fixed
        self._asking = False
        self._cond = threading.Condition()

    @property
    def identity(self) -> str | None:
        with self._cond:
            return self._identity

    def begin(self) -> tuple[str | None, bool]:
        """(the identity to look the cache up under, whether this caller must ask the server first). A caller
        that gets (None, True) asks live and calls `end()` afterwards, whatever happened; meanwhile the others wait."""
        with self._cond:
            while self._identity is None and self._asking:
                self._cond.wait()
            if self._identity is not None:
                return self._identity, False
            self._asking = True
            return None, True

    def learn(self, identity: str) -> None:
        """A live reply said `identity` answered: lookups from now on use it."""
        with self._cond:
            self._identity = identity
            self._cond.notify_all()

    def end(self, asking: bool) -> None:
        """The asking caller is done (a failed call lets the next waiter ask)."""
        if asking:
            with self._cond:
                self._asking = False
                self._cond.notify_all()


def entry_key(request_key: str, identity: str) -> str:
    """The cache key of a reply: the request's key and what answered it."""
    return cache_key([request_key, json.loads(identity)])


_DIGESTS: dict[tuple, str] = {}
_DIGESTS_LOCK = threading.Lock()


def folder_fingerprint(folder: Path) -> str:
    """sha256 over the folder's files: each relative name and the sha256 of its content, so two folders share a
    fingerprint only when they hold the same bytes. A file's digest is remembered in this process by its path and
    stat (size, modification and change times, inode): changed bytes change the change time, which no tool sets."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(folder).as_posix()}\0{_file_digest(path)}\0".encode())
    return digest.hexdigest()


def _file_digest(path: Path) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev)
    with _DIGESTS_LOCK:
        known = _DIGESTS.get(key)
    if known is None:
        with open(path, "rb") as f:
            known = hashlib.file_digest(f, "sha256").hexdigest()
        with _DIGESTS_LOCK:
            _DIGESTS[key] = known
    return known
