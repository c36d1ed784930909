"""Embeddings from any OpenAI-compatible `POST {base_url}/embeddings` endpoint (vLLM, llama.cpp server, TEI,
Ollama, a hosted API), with the standard library only so memlab gains no HTTP dependency.

Each request goes through memlab.bounded_http: an attempt ends within `timeout` (its whole reply, not a socket
read), a call within `deadline` (every attempt and wait), a reply larger than `max_reply_bytes` is refused unread,
and a redirect to another origin is never followed (the key and the texts stay with base_url's origin).

The key is read from an environment variable at every call and never kept on the object, so it cannot leak
into reprs, pickles, logs or error messages.

Each reply's `model` (and `system_fingerprint`, where given) says which model answered (memlab.models.served):
`served` holds what the latest reply said, `embed_served` returns it with the vectors, and the embedding cache
keys each vector by it, so a model swapped behind the same name and URL never meets the old one's vectors.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
import urllib.parse
from collections.abc import Sequence
from typing import Any

import numpy as np

from memlab.bounded_http import (
    MAX_DELAY,
    Deadline,
    Redirected,
    StatusError,
    TimedOut,
    TooLarge,
    backoff_wait,
    default_deadline,
    post,
)
from memlab.errors import ConfigError, DimensionError, EmbeddingEndpointError
from memlab.models.served import ServedModel, served_identity
from memlab.safety.redact import redact

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_DELAY = MAX_DELAY  # seconds; bounds a server's Retry-After so a call never hangs for minutes
PROBE_TEXT = "memlab dimension probe"
DETAIL_CHARS = 200
VECTOR_REPLY_BYTES = 64 << 10  # one vector of 3,072 floats as JSON text, with room to spare
MIN_REPLY_BYTES = 8 << 20
RESERVE = 0.05  # seconds: a retry the deadline leaves less than this for is not started


def default_max_reply_bytes(batch_size: int) -> int:
    """The reply bound when none is given: a batch of large vectors as JSON, at least MIN_REPLY_BYTES."""
    return max(MIN_REPLY_BYTES, batch_size * VECTOR_REPLY_BYTES)


def endpoint_host(base_url: str) -> str:
    """host[:port] of a URL (model ids are stored in the database, so never any user:password@ part)."""
    parts = urllib.parse.urlsplit(base_url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


class OpenAICompatibleEmbedder:
    """An `Embedder` backed by an OpenAI-compatible embeddings endpoint.

    `model_id` is `openai:{model}@{host[:port]}` so the vectors of different servers never share a cache entry
    or a stored row (pass `model_id=` to override when two endpoints serve the same weights). `dimension` is
    an expectation checked against every reply; left as None it is learned from the first reply (reading
    `.dimension` first sends one probe request). It is not sent to the server: not every server accepts
    OpenAI's `dimensions` field.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        batch_size: int = 64,
        dimension: int | None = None,
        timeout: float = 60,
        normalize: bool = True,
        retries: int = 2,
        backoff: float = 0.5,
        model_id: str | None = None,
        deadline: float | None = None,
        max_reply_bytes: int | None = None,
    ) -> None:
        """`timeout`: seconds one attempt may take, its whole reply read; `deadline`: seconds a whole request may
        take, retries and waits included (default: every attempt's timeout plus the waits); `max_reply_bytes`: a
        larger reply is refused (default: default_max_reply_bytes(batch_size))."""
        base_url = (base_url or "").strip().rstrip("/")
        if "@" in urllib.parse.urlsplit(base_url).netloc:
            raise ConfigError(
                "base_url must not hold a user:password@ part (it would end up in model ids and messages): put the "
                "key in an environment variable and name it with api_key_env."
            )
        if urllib.parse.urlsplit(base_url).scheme not in ("http", "https") or not endpoint_host(base_url):
            raise ConfigError(
                f"base_url {base_url!r} is not an http(s) URL: give the API root, e.g. http://127.0.0.1:8000/v1 "
                "(memlab appends /embeddings)."
            )
        if not model or not isinstance(model, str):
            raise ConfigError("OpenAICompatibleEmbedder needs the model name the server expects, e.g. model='bge-m3'.")
        if api_key_env is not None and (not isinstance(api_key_env, str) or not api_key_env):
            raise ConfigError(f"api_key_env must name an environment variable or be None, not {api_key_env!r}.")
        _check_int("batch_size", batch_size, minimum=1)
        if dimension is not None:
            _check_int("dimension", dimension, minimum=1)
        _check_int("retries", retries, minimum=0)
        if not isinstance(backoff, int | float) or backoff < 0:
            raise ConfigError(f"backoff must be a non-negative number of seconds, not {backoff!r}.")
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigError(f"timeout must be a positive number of seconds, not {timeout!r}.")
        if deadline is not None and (not isinstance(deadline, int | float) or isinstance(deadline, bool)
                                     or not deadline > 0):  # fmt: skip
            raise ConfigError(f"deadline must be a positive number of seconds (or None), not {deadline!r}.")
        if max_reply_bytes is not None:
            _check_int("max_reply_bytes", max_reply_bytes, minimum=1024)
        self.base_url = base_url
        self.url = f"{base_url}/embeddings"
        self.model = model
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.timeout = float(timeout)
        self.normalize = normalize
        self.retries = retries
        self.backoff = backoff
        self.deadline = float(deadline) if deadline is not None else default_deadline(self.timeout, retries, backoff)
        self.max_reply_bytes = max_reply_bytes or default_max_reply_bytes(batch_size)
        self.requests = 0  # HTTP requests sent, retries included (for reports and tests)
        # Raw vectors are not interchangeable with unit vectors: give them their own id.
        self._model_id = model_id or f"openai:{model}@{endpoint_host(base_url)}" + ("" if normalize else "+raw")
        self._dimension = dimension
        self._lock = threading.Lock()
        self.served = ServedModel()  # what the server says answers, learned from this embedder's live replies

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder({self.base_url!r}, {self.model!r}, api_key_env={self.api_key_env!r})"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed_documents([PROBE_TEXT])  # sets the dimension from the reply
        assert self._dimension is not None
        return self._dimension

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.embed_served(texts)[0]

    def embed_served(self, texts: list[str]) -> tuple[np.ndarray, str]:
        """The vectors of `texts` and what the replies said answered (memlab.models.served.served_identity). A
        model that changes between the batches of one call is an error: its vectors cannot be mixed."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), self.served.identity or served_identity({})
        parts, said = [], []
        for i in range(0, len(texts), self.batch_size):
            vectors, identity = self._embed_batch(texts[i : i + self.batch_size])
            parts.append(vectors)
            said.append(identity)
        if len(set(said)) > 1:
            raise EmbeddingEndpointError(
                f"{self.url} answered one call's batches with different models ({', '.join(sorted(set(said)))}): "
                "their vectors cannot be mixed. Is the model being swapped? Retry once the server serves one model."
            )
        return np.ascontiguousarray(np.vstack(parts), dtype=np.float32), said[0]

    def learn_served(self) -> str:
        """Ask the server which model answers now with one request embedding a fixed text (no user's words)."""
        return self.embed_served([PROBE_TEXT])[1]

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """The endpoint embeds queries like documents, so in batched requests."""
        return self.embed_documents(texts)

    # -- one request ----------------------------------------------------------------------------------
    def _embed_batch(self, texts: list[str]) -> tuple[np.ndarray, str]:
        reply = self._post({"model": self.model, "input": texts})
        vectors = self._parse(reply, len(texts))
        said = served_identity(reply)
        with self._lock:
            if self._dimension is None:
                self._dimension = vectors.shape[1]
            expected = self._dimension
        if vectors.shape[1] != expected:
            raise DimensionError(
                f"{self.url} returned {vectors.shape[1]}-d vectors for model {self.model!r}, but {self.model_id!r} "
                f"is {expected}-d. Is another model loaded behind this URL? Give it its own model id."
            )
        if self.normalize:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            if np.any(norms == 0):
                raise EmbeddingEndpointError(f"{self.url} returned an all-zero vector, which cannot be normalised.")
            vectors = vectors / norms
        self.served.learn(said)
        return vectors.astype(np.float32, copy=False), said

    def _parse(self, reply: Any, expected: int) -> np.ndarray:
        """The reply's vectors in input order (servers may answer out of order: `index` says which is which)."""
        data = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(data, list) or not all(isinstance(item, dict) and "embedding" in item for item in data):
            raise EmbeddingEndpointError(
                f"{self.url} answered without a 'data' list of {{'index', 'embedding'}} objects: {_clip(reply)}"
            )
        if len(data) != expected:
            raise EmbeddingEndpointError(f"{self.url} returned {len(data)} vectors for {expected} inputs.")
        indexes = [item.get("index", position) for position, item in enumerate(data)]
        if sorted(indexes) != list(range(expected)):
            raise EmbeddingEndpointError(
                f"{self.url} returned indexes {_clip(indexes)}; expected each of 0..{expected - 1} once."
            )
        rows: list[Sequence[float] | np.ndarray] = [[]] * expected
        for index, item in zip(indexes, data, strict=True):
            embedding = item["embedding"]
            if isinstance(embedding, str):  # encoding_format=base64: little-endian float32
                try:
                    embedding = np.frombuffer(base64.b64decode(embedding), dtype="<f4")
                except ValueError as exc:
                    raise EmbeddingEndpointError(f"{self.url}: embedding {index} is not valid base64.") from exc
            if not isinstance(embedding, list | np.ndarray):
                raise EmbeddingEndpointError(f"{self.url}: embedding {index} is not a list of numbers: {_clip(item)}")
            rows[index] = embedding
        lengths = sorted({len(row) for row in rows})
        if len(lengths) > 1:
            raise DimensionError(f"{self.url} returned vectors of different lengths {lengths} in one reply.")
        try:
            vectors = np.array(rows, dtype=np.float32)
        except (ValueError, TypeError) as exc:
            raise EmbeddingEndpointError(f"{self.url} returned embeddings that are not numbers ({exc}).") from None
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise EmbeddingEndpointError(f"{self.url} returned embeddings of shape {vectors.shape}: {_clip(reply)}")
        if not np.all(np.isfinite(vectors)):
            raise EmbeddingEndpointError(f"{self.url} returned NaN or infinite values.")
        return vectors

    def _post(self, body: dict) -> Any:
        """POST once, retrying 429/5xx and a reset connection up to `retries` times with a short exponential
        backoff, all within `deadline`."""
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        payload = json.dumps(body).encode("utf-8")
        deadline = Deadline(self.deadline)
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            self.requests += 1
            try:
                raw = post(self.url, payload, headers, timeout=self.timeout, deadline=deadline,
                           max_bytes=self.max_reply_bytes)  # fmt: skip
            except StatusError as exc:
                detail = _redact(exc.body.decode("utf-8", "replace"), key)[:DETAIL_CHARS]
                delay = self._delay(attempt, exc.headers.get("Retry-After") if exc.headers is not None else None)
                if exc.status in RETRY_STATUSES and not last and backoff_wait(delay, deadline, RESERVE):
                    continue
                raise self._http_error(exc.status, detail, key, attempts=attempt + 1) from None
            except TimedOut as exc:
                raise self._timeout_error(exc) from None
            except TooLarge as exc:
                raise EmbeddingEndpointError(
                    f"{self.url}: the reply is larger than max_reply_bytes ({exc.bound} bytes) and was refused "
                    "unread; lower batch_size, or raise max_reply_bytes in the embedder spec if replies this large "
                    "are expected."
                ) from None
            except Redirected as exc:
                raise EmbeddingEndpointError(
                    f"{self.url}: the server redirected (HTTP {exc.status}) to {exc.target}; memlab sends the texts "
                    "and the key only to base_url's own scheme, host and port: set base_url to the address it "
                    "redirects to if you trust it."
                ) from None
            except ConnectionResetError:
                if not last and backoff_wait(self._delay(attempt, None), deadline, RESERVE):
                    continue
                raise EmbeddingEndpointError(f"{self.url}: the connection was reset by the server.") from None
            except OSError as exc:
                raise EmbeddingEndpointError(
                    f"cannot reach the embeddings endpoint {self.url} ({exc}): check that the server is "
                    "running and listening there, and that base_url is right."
                ) from None
            try:
                return json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                text = _redact(raw.decode("utf-8", "replace"), key)[:DETAIL_CHARS]
                raise EmbeddingEndpointError(
                    f"{self.url} did not answer with JSON ({exc}); is base_url the API root (…/v1)? Reply: {text!r}"
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        delay = self.backoff * 2**attempt
        with contextlib.suppress(ValueError):  # an HTTP date instead of seconds: keep our own backoff
            delay = max(delay, float(retry_after)) if retry_after else delay
        return min(delay, MAX_RETRY_DELAY)

    def _http_error(self, status: int, detail: str, key: str, *, attempts: int) -> EmbeddingEndpointError:
        if status in (401, 403):
            if not self.api_key_env:
                hint = "no key was sent (api_key_env is None): name the environment variable that holds the key."
            elif not key:
                hint = f"no key was sent: the environment variable {self.api_key_env} is not set."
            else:
                hint = f"the key in the environment variable {self.api_key_env} was refused."
            return EmbeddingEndpointError(f"{self.url}: HTTP {status}, {hint} Server said: {detail}")
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        return EmbeddingEndpointError(f"{self.url}: HTTP {status}{tries}: {detail}")

    def _timeout_error(self, exc: TimedOut) -> EmbeddingEndpointError:
        if exc.by_deadline:
            return EmbeddingEndpointError(
                f"{self.url} did not answer within the request's deadline of {self.deadline:g}s: the server may be "
                "overloaded or trickling its reply; raise deadline (or timeout) or lower batch_size."
            )
        return EmbeddingEndpointError(
            f"{self.url} did not answer within {self.timeout:g}s: the server may be overloaded or still loading "
            "the model; raise timeout or lower batch_size."
        )


def _check_int(name: str, value: object, *, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, not {value!r}.")


def _redact(text: str, key: str) -> str:
    """Servers sometimes echo the key they refused (or the whole Authorization header, or anything else): the
    text passes memlab's redactor, which also knows the key sent, before it is cut to length."""
    return redact(text, [key] if key else [])


def _clip(value: object) -> str:
    return redact(repr(value))[:DETAIL_CHARS]
