"""One embedding cache keyed by (model id, text), so sweeps and re-ingests never embed the same text twice.

Vectors live in memory and in a SQLite file under `$MEMLAB_HOME/cache/` so they survive across runs.
`CachedEmbedder` wraps any `Embedder` and is itself an `Embedder`.

The cache holds a hash of every text embedded, so it is a copy of user data too: erasure
(`EventMemory.forget_user`, `delete_memory`, `forget_session`, `purge_before`) removes the entries of the texts
it deletes (`EmbeddingCache.forget_keys`), the SQLite file overwrites deleted rows (`secure_delete`), and
`CachedEmbedder.embed_query(text, remember=False)` (what searches use) embeds a query without writing it: such
vectors (queries, served fact lines) live in a small in-process map that every erasure empties.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from memlab.config import memlab_home
from memlab.embedding.base import Embedder


def text_key(text: str) -> str:
    """The one key of a text, for the embedding cache and the memo of texts scanned clean (a lone surrogate is
    hashed as its code unit, so every str has a key; other texts hash exactly as plain UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """A persistent map (model id, text) -> float32 vector. `path=None` keeps it in memory only."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._memory: dict[tuple[str, str], np.ndarray] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA secure_delete=ON")  # deleted rows are overwritten, not left in free pages
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS embedding (model_id TEXT NOT NULL, text_sha256 TEXT NOT NULL, "
                "vector BLOB NOT NULL, PRIMARY KEY (model_id, text_sha256))"
            )
            self._db.commit()

    def get_many(self, model_id: str, texts: list[str]) -> dict[int, np.ndarray]:
        """Cached vectors by position in `texts`; positions missing from the result need embedding."""
        found: dict[int, np.ndarray] = {}
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                key = text_key(text)
                vec = self._memory.get((model_id, key))
                if vec is not None:
                    found[i] = vec
                else:
                    missing.setdefault(key, []).append(i)
            if self._db is not None and missing:
                keys = list(missing)
                for start in range(0, len(keys), 500):
                    batch = keys[start : start + 500]
                    marks = ",".join("?" * len(batch))
                    rows = self._db.execute(
                        f"SELECT text_sha256, vector FROM embedding WHERE model_id = ? AND text_sha256 IN ({marks})",
                        [model_id, *batch],
                    ).fetchall()
                    for key, blob in rows:
                        vec = np.frombuffer(blob, dtype=np.float32)
                        self._memory[(model_id, key)] = vec
                        for i in missing[key]:
                            found[i] = vec
        return found

    def put_many(self, model_id: str, texts: list[str], vectors: np.ndarray) -> None:
        rows = []
        with self._lock:
            for text, vec in zip(texts, vectors, strict=True):
                key = text_key(text)
                vec32 = np.ascontiguousarray(vec, dtype=np.float32)
                self._memory[(model_id, key)] = vec32
                rows.append((model_id, key, vec32.tobytes()))
            if self._db is not None and rows:
                self._db.executemany("INSERT OR IGNORE INTO embedding VALUES (?, ?, ?)", rows)
                self._db.commit()

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

    def forget(self, model_id: str, texts: Iterable[str]) -> int:
        """Remove the entries of these texts under one model; returns entries removed."""
        return self.forget_keys((model_id, text_key(t)) for t in texts)

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


class CachedEmbedder:
    """An `Embedder` that asks its cache first and embeds only the texts it has never seen."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.computed = 0  # texts actually sent to the model (for reports and tests)
        # Vectors of texts embedded with remember=False (queries, fact lines): this process only, a few
        # thousand at most, never written to disk, and dropped by every erasure (`forget_transient`).
        self._transient: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._transient_lock = threading.Lock()
        _TRANSIENT_HOLDERS.add(self)

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: list[str], *, remember: bool = True) -> np.ndarray:
        """Vectors of `texts`, cached ones from the cache. With `remember=False` the texts not cached are
        embedded without being written (derived personal data no erasure could find again)."""
        texts = list(texts)
        found = self.cache.get_many(self.model_id, texts)
        if not remember:
            with self._transient_lock:
                for i, text in enumerate(texts):
                    vec = self._transient.get((self.model_id, text)) if i not in found else None
                    if vec is not None:
                        found[i] = vec
        todo = [i for i in range(len(texts)) if i not in found]
        if todo:
            # Embed each distinct missing text once, even if it repeats within this call.
            unique = list(dict.fromkeys(texts[i] for i in todo))
            fresh = np.asarray(self.inner.embed_documents(unique), dtype=np.float32)
            self.computed += len(unique)
            if remember:
                self.cache.put_many(self.model_id, unique, fresh)
            else:
                self._remember_transient(unique, fresh)
            by_text = dict(zip(unique, fresh, strict=True))
            for i in todo:
                found[i] = by_text[texts[i]]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack([found[i] for i in range(len(texts))]).astype(np.float32, copy=False)

    def _remember_transient(self, texts: list[str], vectors: np.ndarray) -> None:
        with self._transient_lock:
            for text, vec in zip(texts, vectors, strict=True):
                self._transient[(self.model_id, text)] = vec
            while len(self._transient) > TRANSIENT_KEPT:
                self._transient.popitem(last=False)

    def forget_transient(self) -> None:
        with self._transient_lock:
            self._transient.clear()

    def embed_query(self, text: str, *, remember: bool = True) -> np.ndarray:
        """The query's vector, from the cache if it is there. With `remember=False` a query that is not
        cached is embedded without being written to the cache (a user's search is personal data)."""
        return self.embed_documents([text], remember=remember)[0]

    def embed_queries(self, texts: list[str], *, remember: bool = True) -> np.ndarray:
        """Many queries in one call. An inner model with `embed_queries` embeds queries as documents, so the
        cached document path serves them; otherwise each goes through `embed_query`."""
        if callable(getattr(self.inner, "embed_queries", None)):
            return self.embed_documents(texts, remember=remember)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack([self.embed_query(t, remember=remember) for t in texts])


TRANSIENT_KEPT = 4096
_TRANSIENT_HOLDERS: weakref.WeakSet[CachedEmbedder] = weakref.WeakSet()


def forget_transient() -> None:
    """Drop every in-process vector of a query or fact line (erasure calls this: it cannot tell whose they are)."""
    for holder in list(_TRANSIENT_HOLDERS):
        holder.forget_transient()


def caches_of(embedder: object) -> list[EmbeddingCache]:
    """The embedding caches erasure must clear for this embedder: its own (through any wrapping `inner`) and
    every shared cache this process opened."""
    found: list[EmbeddingCache] = []
    inner: object = embedder
    while inner is not None:
        if isinstance(inner, CachedEmbedder):
            found.append(inner.cache)
        inner = getattr(inner, "inner", None)
    found.extend(shared_caches())
    return list({id(c): c for c in found}.values())


def embed_transient(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Embed texts derived from a user's data (queries, rendered fact lines) without writing them to any
    cache: a vector already cached is reused, a new one is not stored."""
    if isinstance(embedder, CachedEmbedder):
        return embedder.embed_documents(texts, remember=False)
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    return np.asarray(embedder.embed_documents(texts), dtype=np.float32)


def warm_transient(embedder: Embedder, texts: list[str]) -> None:
    """Embed in one batch the texts a caller is about to search with one at a time (a fact sweep's questions), so
    each search finds its vector in this process's transient store: one model call instead of one per text
    (3.4 against 15 ms a query on 2 threads here). Like every transient vector, none is written to a cache. An
    embedder without a transient store is left alone: it would embed every text twice."""
    if isinstance(embedder, CachedEmbedder) and texts:  # none: not even the model's dimension is asked
        embed_transient(embedder, texts)  # embeds each distinct text once, remembered in the transient store only


def embed_query_transient(embedder: Embedder, query: str) -> np.ndarray:
    """A search query's vector, never written to a cache (a user's question is their data too)."""
    if isinstance(embedder, CachedEmbedder):
        return embedder.embed_query(query, remember=False)
    return np.asarray(embedder.embed_query(query), dtype=np.float32)
