"""The store behind the embedding cache: a map (model id, text) -> float32 vector, in memory and in a SQLite file
under `$MEMLAB_HOME/cache/`, each vector with what computed it.

Which model computed a vector: a server can swap the weights behind the same name and URL, and a packaged model
folder can change under the same model id. Each entry records the identity of the model that computed it (what an
endpoint's reply said answered, a local folder's content digest: memlab.models.served), and a lookup names the
identity answering now: a vector of another model is a miss, recomputed and replaced.

Which computation is in flight: embedding a user's texts takes seconds, and an erasure of that user that runs
meanwhile finds nothing to delete; the vectors, stored when they arrive, would be a copy of the erased texts after
the erasure returned. So a computation registers its refs (memlab.models.refs: its texts' `text_key`s, and the
scope refs of the enclosing `deriving_from`) for as long as it runs, and stores its vectors only if the
registration is still there; `forget_erased` cancels the registrations naming an erased ref and deletes the erased
texts' vectors, under the same lock a store checks its registration under (memlab.models.flights: an flock on a
folder beside the file, so it holds across processes; a cache in memory only keeps its registrations in this
process)."""

from __future__ import annotations

import itertools
import sqlite3
import threading
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from memlab.config import memlab_home
from memlab.models.flights import cancel, flight, folder_lock
from memlab.models.refs import text_key

UNREPORTED = ""  # the identity of a model that does not say what it is (any Embedder): the model id alone keys it


class _Registration:
    """A computation registered in a cache held in memory only (cancelled once an erasure removed it)."""

    def __init__(self, live: dict[int, frozenset[str]], token: int) -> None:
        self._live, self._token = live, token

    def cancelled(self) -> bool:
        return self._token not in self._live


class EmbeddingCache:
    """A persistent map (model id, text) -> float32 vector, each with the identity of the model that computed it.
    `path=None` keeps it in memory only."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._memory: dict[tuple[str, str], tuple[str, np.ndarray]] = {}
        self._models: set[str] = set()  # the model ids held in memory (erasure drops a text under each)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        # Registrations of computations in flight: files in a folder beside the cache file, else in this process.
        self.flights_folder = self.path.with_name(f"{self.path.stem}.inflight") if self.path is not None else None
        self._live: dict[int, frozenset[str]] = {}
        self._tokens = itertools.count()
        self._live_lock = threading.Lock()
        _OPENED.add(self)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA secure_delete=ON")  # deleted rows are overwritten, not left in free pages
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS embedding (model_id TEXT NOT NULL, text_sha256 TEXT NOT NULL, "
                "vector BLOB NOT NULL, served TEXT NOT NULL DEFAULT '', PRIMARY KEY (model_id, text_sha256))"
            )
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(embedding)")}
            if "served" not in columns:  # a file written before entries recorded their model: each is a miss now
                try:
                    self._db.execute("ALTER TABLE embedding ADD COLUMN served TEXT NOT NULL DEFAULT ''")
                except sqlite3.OperationalError as exc:  # another process added it meanwhile
                    if "duplicate column" not in str(exc):
                        raise
            self._db.commit()

    def get_many(self, model_id: str, texts: list[str], served: str | None = None) -> dict[int, np.ndarray]:
        """Cached vectors by position in `texts`; positions missing from the result need embedding. `served`: the
        identity of the model answering now (memlab.models.served), a vector another model computed is missing;
        None finds a text's vector whatever computed it (to tell which texts were ever embedded)."""
        found: dict[int, np.ndarray] = {}
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                key = text_key(text)
                entry = self._memory.get((model_id, key))
                if entry is not None and served in (None, entry[0]):
                    found[i] = entry[1]
                else:  # the file may hold it, or another process replaced it with the answering model's
                    missing.setdefault(key, []).append(i)
            if self._db is not None and missing:
                keys = list(missing)
                for start in range(0, len(keys), 500):
                    batch = keys[start : start + 500]
                    marks = ",".join("?" * len(batch))
                    rows = self._db.execute(
                        f"SELECT text_sha256, vector, served FROM embedding WHERE model_id = ? "
                        f"AND text_sha256 IN ({marks})",
                        [model_id, *batch],
                    ).fetchall()
                    for key, blob, said in rows:
                        vec = np.frombuffer(blob, dtype=np.float32)
                        self._memory[(model_id, key)] = (said, vec)
                        self._models.add(model_id)
                        if served in (None, said):
                            for i in missing[key]:
                                found[i] = vec
        return found

    @contextmanager
    def flight(self, refs: Iterable[str]) -> Iterator[object]:
        """Register a computation whose vectors derive from `refs` for as long as the block runs (pass what it
        yields to `put_many`): an erasure of any of them before the store cancels the store."""
        refs = sorted(set(refs))
        if self.flights_folder is not None:
            with flight(self.flights_folder, refs) as registered:
                yield registered
            return
        token = next(self._tokens)
        with self._live_lock:
            self._live[token] = frozenset(refs)
        try:
            yield _Registration(self._live, token)
        finally:
            with self._live_lock:
                self._live.pop(token, None)

    @contextmanager
    def _flights_locked(self, *, exclusive: bool) -> Iterator[None]:
        """The registrations' lock: exclusive for an erasure, shared for a store (none for a file whose folder was
        deleted: nothing can be in flight there, and the folder is not made again)."""
        if self.flights_folder is not None and self.flights_folder.parent.is_dir():
            with folder_lock(self.flights_folder, exclusive=exclusive):
                yield
        else:
            with self._live_lock:
                yield

    def put_many(self, model_id: str, texts: list[str], vectors: np.ndarray, served: str = UNREPORTED,
                 registered: object | None = None) -> bool:  # fmt: skip
        """Store vectors computed by the model `served` names (replacing another model's); `registered` is the
        computation's `flight` (nothing is stored when an erasure cancelled it). Returns whether they were."""
        with self._flights_locked(exclusive=False):
            cancelled = getattr(registered, "cancelled", None)
            if cancelled is not None and cancelled():
                return False
            rows = []
            with self._lock:
                for text, vec in zip(texts, vectors, strict=True):
                    key = text_key(text)
                    vec32 = np.ascontiguousarray(vec, dtype=np.float32)
                    self._memory[(model_id, key)] = (served, vec32)
                    rows.append((model_id, key, vec32.tobytes(), served))
                self._models.add(model_id)
                if self._db is not None and rows:
                    self._db.executemany("INSERT OR REPLACE INTO embedding (model_id, text_sha256, vector, served) "
                                         "VALUES (?, ?, ?, ?)", rows)  # fmt: skip
                    self._db.commit()
        return True

    def forget_keys(self, keys: Iterable[tuple[str, str]]) -> int:
        """Remove the entries of these (model id, text hash) keys (`text_key(text)`); returns entries removed
        from the file (or from memory, for a memory-only cache)."""
        keys = list(dict.fromkeys(keys))
        removed = 0
        with self._lock:
            for key in keys:
                if self._memory.pop(key, None) is not None and self._db is None:
                    removed += 1
            if self._db is not None and keys:
                for start in range(0, len(keys), 500):
                    batch = keys[start : start + 500]
                    marks = ",".join("(?, ?)" for _ in batch)
                    removed += self._db.execute(
                        f"DELETE FROM embedding WHERE (model_id, text_sha256) IN (VALUES {marks})",
                        [part for key in batch for part in key],
                    ).rowcount
                self._db.commit()
        return removed

    def forget_erased(self, keys: Iterable[tuple[str, str]], refs: Iterable[str] = ()) -> int:
        """An erasure's part: cancel the computations in flight deriving from the erased texts (`keys`, (model id,
        text hash)) or from `refs` (scope refs of the erased user, session or events), then delete the erased texts'
        vectors under every model (a migration or another model may have embedded them too), all under the
        registrations' exclusive lock. Returns entries removed."""
        hashes = {h for _, h in keys}
        with self._flights_locked(exclusive=True):
            wanted = hashes | set(refs)
            if self.flights_folder is not None:
                if self.flights_folder.is_dir():
                    cancel(self.flights_folder, wanted)
            else:
                for token, named in list(self._live.items()):
                    if named & wanted:
                        del self._live[token]
            if not hashes:
                return 0
            return self.forget_keys((model, h) for model in self._model_ids() for h in sorted(hashes))

    def _model_ids(self) -> list[str]:
        """Every model id with an entry: in memory, and in the file (one index seek per model id, no scan)."""
        with self._lock:
            models = set(self._models)
            if self._db is not None:
                models.update(m for (m,) in self._db.execute(
                    "WITH RECURSIVE m(id) AS (SELECT min(model_id) FROM embedding UNION ALL "
                    "SELECT (SELECT min(model_id) FROM embedding WHERE model_id > m.id) FROM m WHERE m.id IS NOT NULL) "
                    "SELECT id FROM m WHERE id IS NOT NULL"))  # fmt: skip
        return sorted(models)

    def vacuum(self) -> None:
        """Fold the write-ahead log into the file and rebuild it, so no deleted entry lingers in either."""
        if self._db is None:
            return
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("VACUUM")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def __len__(self) -> int:
        with self._lock:
            if self._db is not None:
                return int(self._db.execute("SELECT count(*) FROM embedding").fetchone()[0])
            return len(self._memory)


_OPENED: weakref.WeakSet[EmbeddingCache] = weakref.WeakSet()


def opened_caches() -> list[EmbeddingCache]:
    """Every cache alive in this process (an erasure reaches each: an add in flight may embed through any)."""
    return list(_OPENED)


_SHARED: dict[Path, EmbeddingCache] = {}
_SHARED_LOCK = threading.Lock()


def shared_caches() -> list[EmbeddingCache]:
    """Every shared cache this process has opened (erasure clears the deleted texts from each)."""
    with _SHARED_LOCK:
        return list(_SHARED.values())


def shared_cache(home: str | Path | None = None) -> EmbeddingCache:
    """The one `$MEMLAB_HOME/cache/embeddings.sqlite` cache per home, shared by every embedder of this process
    (one in-memory map and one SQLite connection, whatever the model)."""
    path = memlab_home(home) / "cache" / "embeddings.sqlite"
    with _SHARED_LOCK:
        if path not in _SHARED:
            _SHARED[path] = EmbeddingCache(path)
        return _SHARED[path]
