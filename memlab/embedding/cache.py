"""One embedding cache keyed by (model id, text) and the model that computed each vector, so sweeps and re-ingests
never embed the same text twice, and a swapped model never meets the vectors of the one before.

Vectors live in memory and in a SQLite file under `$MEMLAB_HOME/cache/` so they survive across runs
(memlab.embedding.vector_cache). `CachedEmbedder` wraps any `Embedder` and is itself an `Embedder`.

Which model answers: a local model folder is identified by its content's digest (computed once per process, on the
first lookup); an endpoint by what its replies say answered (the reply's `model`, memlab.models.served), learned
from a live reply in this process before anything is served from the cache: the first call of a client whose
texts were all embedded before sends one small probe request, a call with a new text learns it from that text's
reply. A live reply that names another model than the cached vectors' makes those vectors misses, embedded again.

The cache holds a hash of every text embedded, so it is a copy of user data too: erasure
(`EventMemory.forget_user`, `delete_memory`, `forget_session`, `purge_before`, `FactMemory.forget_user`) removes
the entries of the texts it deletes and cancels the computations in flight deriving from them or from the erased
user or session (`EmbeddingCache.forget_erased`: a vector that arrives afterwards is not stored), the SQLite file
overwrites deleted rows (`secure_delete`), and `CachedEmbedder.embed_query(text, remember=False)` (what searches
use) embeds a query without writing it: such vectors (queries, served fact lines) live in a small in-process map
that every erasure empties, and one computed while an erasure ran is not kept.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np

from memlab.embedding.base import Embedder
from memlab.embedding.vector_cache import UNREPORTED, EmbeddingCache, opened_caches, shared_cache, shared_caches
from memlab.errors import EmbeddingEndpointError
from memlab.models.refs import text_key, with_ambient
from memlab.models.served import ServedModel

__all__ = ["CachedEmbedder", "EmbeddingCache", "caches_of", "embed_query_transient", "embed_transient",
           "erasure_caches", "forget_transient", "shared_cache", "shared_caches", "text_key",
           "warm_transient"]  # fmt: skip


class CachedEmbedder:
    """An `Embedder` that asks its cache first and embeds only the texts it has never seen (under the model
    answering now). A wrapped model says which model computes its vectors with `served` (a
    memlab.models.served.ServedModel) and `embed_served(texts) -> (vectors, identity)`, an endpoint also with
    `learn_served()` (one probe request); a model without them is keyed by its model id alone."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.computed = 0  # texts actually sent to the model (for reports and tests)
        # Vectors of texts embedded with remember=False (queries, fact lines): this process only, a few
        # thousand at most, never written to disk, and dropped by every erasure (`forget_transient`).
        self._transient: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
        self._transient_lock = threading.Lock()
        self._served: ServedModel | None = None
        self._served_known = False
        _TRANSIENT_HOLDERS.add(self)

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def served_model(self) -> ServedModel | None:
        """What says which model answers: the `served` of the wrapped model (or of what it wraps); None for a
        model that does not say (its vectors are keyed by its model id alone). Read on first use: a local
        model's digest is computed then, not when the embedder is built."""
        if not self._served_known:
            inner: object = self.inner
            while inner is not None and not isinstance(getattr(inner, "served", None), ServedModel):
                inner = getattr(inner, "inner", None)
            self._served = getattr(inner, "served", None) if inner is not None else None
            self._served_known = True
        return self._served

    def embed_documents(self, texts: list[str], *, remember: bool = True) -> np.ndarray:
        """Vectors of `texts`, cached ones from the cache when the model answering now computed them. With
        `remember=False` the texts not cached are embedded without being written (derived personal data no
        erasure could find again)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        served = self.served_model()
        identity, asking = served.begin() if served is not None else (UNREPORTED, False)
        try:
            known: dict[str, np.ndarray] = {}
            if asking:  # nothing is served before a live reply in this process said which model answers
                identity, known = self._learn(texts, remember)
            return self._serve(texts, identity, remember, known)
        finally:
            if served is not None:
                served.end(asking)

    def _learn(self, texts: list[str], remember: bool) -> tuple[str, dict[str, np.ndarray]]:
        """Which model answers, from a live reply: the texts never embedded by any model are sent (they had to be
        anyway); when there are none, the model's own probe (a fixed text, no user's) or the first text."""
        present = self.cache.get_many(self.model_id, texts)
        new = list(dict.fromkeys(t for i, t in enumerate(texts) if i not in present))
        probe = getattr(self._owner(), "learn_served", None)
        if not new and callable(probe):
            return probe(), {}
        new = new or texts[:1]
        fresh, said = self._compute(new, remember)
        return said, dict(zip(new, fresh, strict=True))

    def _owner(self) -> object:
        """The wrapped object whose `served` this embedder reads."""
        inner: object = self.inner
        while inner is not None and getattr(inner, "served", None) is not self._served:
            inner = getattr(inner, "inner", None)
        return inner

    def _serve(self, texts: list[str], identity: str, remember: bool, known: dict[str, np.ndarray]) -> np.ndarray:
        """The vectors under `identity`, the missing ones embedded. A live reply naming another model makes every
        vector found under `identity` a vector of another model: the lookup runs again under the new one."""
        for attempt in range(2):
            found = self._lookup(texts, identity, remember, known)
            todo = [i for i in range(len(texts)) if i not in found]
            if todo:
                unique = list(dict.fromkeys(texts[i] for i in todo))  # each distinct text once, even if repeated
                fresh, said = self._compute(unique, remember)
                if said != identity and attempt == 0 and found:
                    identity, known = said, dict(zip(unique, fresh, strict=True))
                    continue
                if said != identity and attempt == 1:
                    raise EmbeddingEndpointError(
                        f"{self.model_id}: the endpoint answered with another model twice within one call ({said}); "
                        "vectors of different models cannot be mixed. Retry once the server settles on one model."
                    )
                by_text = dict(zip(unique, fresh, strict=True))
                for i in todo:
                    found[i] = by_text[texts[i]]
            return np.vstack([found[i] for i in range(len(texts))]).astype(np.float32, copy=False)
        raise AssertionError("unreachable")  # pragma: no cover

    def _lookup(self, texts: list[str], identity: str, remember: bool, known: dict[str, np.ndarray]
                ) -> dict[int, np.ndarray]:  # fmt: skip
        found = self.cache.get_many(self.model_id, texts, served=identity)
        for i, text in enumerate(texts):
            if i not in found and text in known:
                found[i] = known[text]
        if not remember:
            with self._transient_lock:
                for i, text in enumerate(texts):
                    vec = self._transient.get((self.model_id, identity, text)) if i not in found else None
                    if vec is not None:
                        found[i] = vec
        return found

    def _compute(self, texts: list[str], remember: bool) -> tuple[np.ndarray, str]:
        """Embed `texts` live and keep them (in the cache, or with `remember=False` in the transient store) under
        the identity the reply said, unless an erasure ran meanwhile: the computation is registered against the
        texts' refs and the enclosing `deriving_from` refs (memlab.models.refs) while it runs."""
        epoch = _transient_epoch()
        if not remember:
            fresh, said = self._embed_live(texts)
            self._remember_transient(texts, fresh, said, epoch)
            return fresh, said
        with self.cache.flight([*(text_key(t) for t in texts), *with_ambient()]) as registered:
            fresh, said = self._embed_live(texts)
            self.cache.put_many(self.model_id, texts, fresh, said, registered)
        return fresh, said

    def _embed_live(self, texts: list[str]) -> tuple[np.ndarray, str]:
        """The model's vectors and the identity of the model that computed them."""
        embed_served = getattr(self.inner, "embed_served", None)
        if callable(embed_served):
            vectors, said = embed_served(texts)
        else:
            vectors = self.inner.embed_documents(texts)
            served = self.served_model()
            said = (served.identity if served is not None else None) or UNREPORTED
        self.computed += len(texts)
        return np.asarray(vectors, dtype=np.float32), said

    def _remember_transient(self, texts: list[str], vectors: np.ndarray, said: str, epoch: int) -> None:
        """Keep vectors computed since `epoch` in the transient store, unless an erasure emptied it meanwhile
        (`forget_transient`): a query in flight during an erasure is not kept after it."""
        with self._transient_lock:
            if epoch != _transient_epoch():
                return
            for text, vec in zip(texts, vectors, strict=True):
                self._transient[(self.model_id, said, text)] = vec
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


_EPOCH = [0]  # how many times the transient stores were emptied: a vector computed across one is not kept
_EPOCH_LOCK = threading.Lock()


def _transient_epoch() -> int:
    with _EPOCH_LOCK:
        return _EPOCH[0]


def forget_transient() -> None:
    """Drop every in-process vector of a query or fact line (erasure calls this: it cannot tell whose they are),
    and every one being computed now once it arrives."""
    with _EPOCH_LOCK:
        _EPOCH[0] += 1
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


def erasure_caches(embedder: object) -> list[EmbeddingCache]:
    """The caches an erasure reaches: the embedder's (`caches_of`) and every other cache alive in this process,
    since an add or a caller in flight may embed the erased user's texts through any of them."""
    return list({id(c): c for c in [*caches_of(embedder), *opened_caches()]}.values())


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
