"""Re-rankers: a model that reads a query and each candidate together and scores how well the candidate answers
it. Two kinds: `openai-rerank` (POST {base_url}/rerank, the shape llama.cpp, vLLM and hosted rerankers share) and
`cross-encoder` (a local sentence-transformers CrossEncoder folder, run on the CPU). Both return one score per
document in input order and cache by the request's content and what answered it: an endpoint's reported model
(memlab.models.served), a cross-encoder's fingerprint of its folder's content, so retrained or swapped weights
never meet old scores."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memlab.errors import ConfigError
from memlab.models.cache import ReplyCache, cache_key, model_cache_dir
from memlab.models.errors import ModelError
from memlab.models.http import error, post_json
from memlab.models.refs import with_ambient
from memlab.models.served import LOCAL, ServedModel, entry_key, folder_fingerprint, served_identity
from memlab.models.spec import ModelSpec


@dataclass(frozen=True)
class RerankReply:
    """One score per document, in input order, higher = more relevant; seconds 0 and cached true when no model
    ran (served from the cache, or nothing to score)."""

    scores: list[float]
    seconds: float
    cached: bool
    tokens: int | None


class Reranker(Protocol):
    spec: ModelSpec

    def rerank(self, query: str, documents: Sequence[str], refs: Sequence[str] = ()) -> RerankReply:
        """`refs` (memlab.models.refs): what stored memory the documents are, kept with the cached scores."""
        ...


class _Cached:
    """The cache lookup both kinds share: `_score` runs the model on a miss and says what answered."""

    spec: ModelSpec
    cache: ReplyCache
    served: ServedModel

    def _identity(self) -> list[Any]:
        raise NotImplementedError

    def _score(self, query: str, documents: list[str]) -> tuple[list[float], int | None, str]:
        raise NotImplementedError

    def rerank(self, query: str, documents: Sequence[str], refs: Sequence[str] = ()) -> RerankReply:
        docs = [str(d) for d in documents]
        if not docs:
            return RerankReply([], 0.0, True, None)
        refs = with_ambient(refs)
        request_key = cache_key([*self._identity(), {"query": query, "documents": docs}])
        identity, asking = self.served.begin() if self.cache.folder is not None else (None, False)
        try:
            hit = self.cache.get(entry_key(request_key, identity)) if identity is not None else None
            if hit is not None and _scores_ok(hit.get("scores"), len(docs)):
                return RerankReply([float(s) for s in hit["scores"]], 0.0, True, hit.get("tokens"))
            with self.cache.flight(refs) as registered:
                start = time.perf_counter()
                scores, tokens, served = self._score(query, docs)
                seconds = time.perf_counter() - start
                self.served.learn(served)
                self.cache.put(entry_key(request_key, served), {"scores": scores, "tokens": tokens,
                                                                "served": json.loads(served)}, refs, registered)
        finally:
            self.served.end(asking)
        return RerankReply(scores, seconds, False, tokens)


class OpenAIReranker(_Cached):
    """An `openai-rerank` endpoint. The reply's results may come in any order; a document without a result (a
    server that applied its own top_n) is an error, not a silent zero."""

    def __init__(self, spec: ModelSpec, cache_dir: Path | None = None) -> None:
        if spec.kind != "openai-rerank":
            raise ConfigError(f"model {spec.name!r} is a {spec.kind} model, not openai-rerank.")
        self.spec = spec
        self.cache = ReplyCache((cache_dir or model_cache_dir()) if spec.cache else None)
        self.requests_sent = 0
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(spec.concurrency)
        self.served = ServedModel()

    def _identity(self) -> list[Any]:
        return [self.spec.kind, self.spec.base_url, self.spec.model]

    def _count(self) -> None:
        with self._lock:
            self.requests_sent += 1

    def _score(self, query: str, documents: list[str]) -> tuple[list[float], int | None, str]:
        with self._slots:
            reply = post_json(self.spec, "/rerank", {"model": self.spec.model, "query": query,
                                                     "documents": documents}, on_send=self._count)  # fmt: skip
        results = reply.get("results") if isinstance(reply, dict) else None
        if not isinstance(results, list):
            raise self._malformed(f"the reply has no results list ({str(reply)[:200]!r})")
        scores: list[float | None] = [None] * len(documents)
        for item in results:
            index = item.get("index") if isinstance(item, dict) else None
            score = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(documents) or \
                    scores[index] is not None or not _finite(score):  # fmt: skip
                raise self._malformed(f"a result is not {{index < {len(documents)}, used once, relevance_score: "
                                      f"a number}} ({str(item)[:200]!r})")  # fmt: skip
            scores[index] = float(score)
        missing = sum(s is None for s in scores)
        if missing:
            raise self._malformed(f"scores came back for {len(documents) - missing} of {len(documents)} documents")
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        tokens = usage.get("total_tokens", usage.get("prompt_tokens"))
        return ([float(s) for s in scores if s is not None], tokens if isinstance(tokens, int) else None,
                served_identity(reply))

    def _malformed(self, what: str) -> ModelError:
        return error(self.spec, what, "Is this a /v1/rerank endpoint that scores every document (no top_n)?",
                     "malformed")  # fmt: skip


class CrossEncoderReranker(_Cached):
    """A local sentence-transformers CrossEncoder folder on the CPU, loaded on the first miss (a rerun served
    from the cache never loads it) and once per process per folder."""

    def __init__(self, spec: ModelSpec, cache_dir: Path | None = None) -> None:
        if spec.kind != "cross-encoder":
            raise ConfigError(f"model {spec.name!r} is a {spec.kind} model, not cross-encoder.")
        self.spec = spec
        self.cache = ReplyCache((cache_dir or model_cache_dir()) if spec.cache else None)
        self.fingerprint = folder_fingerprint(Path(spec.path))
        self.served = ServedModel(served_identity({"model": LOCAL}))  # the weights are in the request key

    def _identity(self) -> list[Any]:
        return [self.spec.kind, "", self.fingerprint]

    def _score(self, query: str, documents: list[str]) -> tuple[list[float], int | None, str]:
        model, lock = _loaded(self.spec, self.fingerprint)
        with lock:
            raw = model.predict([(query, d) for d in documents], show_progress_bar=False, convert_to_numpy=True)
        scores = [float(s) for s in raw.reshape(len(documents), -1)[:, -1]]  # one logit, or the positive class
        if not all(map(math.isfinite, scores)):
            raise error(self.spec, "the model returned NaN or infinite scores", "Check the folder's weights",
                        "malformed")  # fmt: skip
        return scores, None, served_identity({"model": LOCAL})


_MODELS: dict[tuple[str, str], tuple[Any, threading.Lock]] = {}
_LOADING = threading.Lock()


def _loaded(spec: ModelSpec, fingerprint: str) -> tuple[Any, threading.Lock]:
    """The folder's CrossEncoder, loaded once per process per folder content (with a lock of its own: one
    predict at a time)."""
    with _LOADING:
        if (spec.path, fingerprint) not in _MODELS:
            # torch and sentence-transformers take seconds to import; a run without a cross-encoder never pays it
            from sentence_transformers import CrossEncoder

            try:
                model = CrossEncoder(spec.path, device="cpu")
            except (OSError, ValueError, KeyError) as exc:
                raise ConfigError(f"{spec.name} ({spec.path}): not a sentence-transformers CrossEncoder folder "
                                  f"({' '.join(str(exc).split())[:200]}); give the folder CrossEncoder.save wrote."
                                  ) from None  # fmt: skip
            _MODELS[(spec.path, fingerprint)] = (model, threading.Lock())
        return _MODELS[(spec.path, fingerprint)]


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _scores_ok(scores: Any, n: int) -> bool:
    return isinstance(scores, list) and len(scores) == n and all(map(_finite, scores))


def open_reranker(spec: ModelSpec, cache_dir: Path | None = None) -> Reranker:
    """The re-ranker of an openai-rerank or cross-encoder spec (ConfigError for another kind)."""
    if spec.kind == "openai-rerank":
        return OpenAIReranker(spec, cache_dir)
    if spec.kind == "cross-encoder":
        return CrossEncoderReranker(spec, cache_dir)
    raise ConfigError(f"model {spec.name!r} is a {spec.kind} model; a re-ranker needs kind openai-rerank or "
                      "cross-encoder.")  # fmt: skip
