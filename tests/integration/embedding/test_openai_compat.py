"""OpenAICompatibleEmbedder against a real HTTP server on 127.0.0.1 that speaks the OpenAI embeddings API.

The server answers out of order and with vectors that are not unit length, as real servers may, and records
every request so the tests can count batches and read headers.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memlab
from memlab import EmbeddingEndpointError, make_embedder
from memlab.embedding import CachedEmbedder, EmbeddingCache, OpenAICompatibleEmbedder
from tests.conftest import make_session

DIM = 32
KEY_ENV = "MEMLAB_TEST_EMBED_KEY"

# A scripted reply: (status, JSON-able body or raw text[, headers]) or a function of the inputs returning one.
Reply = tuple[Any, ...] | Callable[[list[str]], tuple[Any, ...]]


def hash_vectors(texts: list[str], dim: int = DIM) -> np.ndarray:
    """Deterministic, text-specific vectors (not unit length), the same in the server and in the assertions."""
    rows = [np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:16], 16)).normal(size=dim) for t in texts]
    return np.array(rows, dtype=np.float32).reshape(len(texts), dim)


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def reply_for(vectors: np.ndarray, *, reverse: bool = True) -> dict:
    data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
    return {"object": "list", "model": "test", "data": data[::-1] if reverse else data}


@dataclass
class Endpoint:
    """What the test server does and what it saw."""

    base_url: str = ""
    requests: list[dict] = field(default_factory=list)
    script: list[Reply] = field(default_factory=list)  # served first, one per request, before the normal reply
    vectorize: Callable[[list[str]], np.ndarray] = hash_vectors
    scale: float = 3.0  # the normal reply is scale * vectorize(texts), in reverse index order

    @property
    def inputs(self) -> list[list[str]]:
        return [r["body"]["input"] for r in self.requests]


def make_handler(ep: Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.loads(raw)
            ep.requests.append(
                {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
            )
            if self.path != "/v1/embeddings":
                return self.send(404, {"error": f"no route {self.path}"})
            if ep.script:
                step = ep.script.pop(0)
                return self.send(*(step(body["input"]) if callable(step) else step))
            return self.send(200, reply_for(ep.scale * ep.vectorize(body["input"])))

        def send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first (the timeout tests make it): nothing to answer, nothing to print

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

    return Handler


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    ep = Endpoint()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(ep))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    ep.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield ep
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


def client(ep: Endpoint, **kwargs: Any) -> OpenAICompatibleEmbedder:
    kwargs.setdefault("api_key_env", KEY_ENV)
    kwargs.setdefault("backoff", 0.01)
    return OpenAICompatibleEmbedder(ep.base_url, "hash-32", **kwargs)


TEXTS = [f"memory number {i}: the payments service runs in region {i % 3}" for i in range(10)]


# -- the protocol -------------------------------------------------------------------------------------
def test_inputs_are_sent_in_batches_of_batch_size(endpoint):
    emb = client(endpoint, batch_size=4)
    vectors = emb.embed_documents(TEXTS)
    assert vectors.shape == (10, DIM) and vectors.dtype == np.float32
    assert endpoint.inputs == [TEXTS[0:4], TEXTS[4:8], TEXTS[8:10]]
    assert {r["path"] for r in endpoint.requests} == {"/v1/embeddings"}
    assert all(r["body"] == {"model": "hash-32", "input": r["body"]["input"]} for r in endpoint.requests)
    assert emb.dimension == DIM and len(endpoint.requests) == 3, "the dimension came from the replies, no probe"
    assert isinstance(emb, memlab.Embedder)


def test_vectors_are_unit_length_and_in_input_order(endpoint):
    emb = client(endpoint, batch_size=3)
    vectors = emb.embed_documents(TEXTS)  # the server answers each batch in reverse index order, scaled by 3
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(vectors, unit(hash_vectors(TEXTS)), atol=1e-6)
    np.testing.assert_allclose(emb.embed_query(TEXTS[4]), vectors[4], atol=1e-6)


def test_raw_vectors_when_normalize_is_off_get_their_own_model_id(endpoint):
    raw = client(endpoint, normalize=False)
    np.testing.assert_allclose(raw.embed_documents(TEXTS[:3]), 3.0 * hash_vectors(TEXTS[:3]), rtol=1e-6)
    assert raw.model_id != client(endpoint).model_id and raw.model_id.endswith("+raw")


def test_model_id_names_model_and_endpoint_but_not_credentials(endpoint):
    port = endpoint.base_url.split(":")[2].split("/")[0]
    assert client(endpoint).model_id == f"openai:hash-32@127.0.0.1:{port}"
    assert OpenAICompatibleEmbedder("https://api.example.com/v1", "m").model_id == "openai:m@api.example.com"
    with pytest.raises(memlab.ConfigError, match="must not hold a user:password@ part") as info:
        OpenAICompatibleEmbedder("https://user:pw-123@api.example.com/v1", "m")
    assert "pw-123" not in str(info.value)
    assert OpenAICompatibleEmbedder(endpoint.base_url, "m", model_id="bge-m3").model_id == "bge-m3"


def test_authorization_comes_from_the_environment_at_call_time(endpoint, monkeypatch):
    emb = client(endpoint)
    emb.embed_query("no key yet")
    assert "authorization" not in endpoint.requests[-1]["headers"]
    monkeypatch.setenv(KEY_ENV, "sk-test-123")  # set after construction: read at call time
    emb.embed_query("with a key")
    assert endpoint.requests[-1]["headers"]["authorization"] == "Bearer sk-test-123"
    assert "sk-test-123" not in repr(emb) and "sk-test-123" not in repr(vars(emb))
    monkeypatch.setenv(KEY_ENV, "sk-rotated")
    emb.embed_query("rotated key")
    assert endpoint.requests[-1]["headers"]["authorization"] == "Bearer sk-rotated"


def test_dimension_is_probed_once_or_taken_from_the_argument(endpoint):
    emb = client(endpoint)
    assert emb.dimension == DIM and emb.dimension == DIM
    assert len(endpoint.inputs) == 1 and len(endpoint.inputs[0]) == 1, "one request embedding one probe text"
    given = client(endpoint, dimension=DIM)
    assert given.dimension == DIM and len(endpoint.requests) == 1
    assert given.embed_documents([]).shape == (0, DIM) and len(endpoint.requests) == 1
    with pytest.raises(memlab.DimensionError, match=r"returned 32-d vectors .* is 16-d"):
        client(endpoint, dimension=16).embed_query("x")


# -- the cache ----------------------------------------------------------------------------------------
def test_cached_embedder_sends_each_text_once_and_persists(endpoint, tmp_path):
    spec = {"kind": "openai", "base_url": endpoint.base_url, "model": "hash-32", "batch_size": 4}
    emb = make_embedder(spec, home=tmp_path)
    assert isinstance(emb, CachedEmbedder) and isinstance(emb.inner, OpenAICompatibleEmbedder)
    first = emb.embed_documents([*TEXTS, TEXTS[0]])
    assert len(endpoint.requests) == 3 and emb.computed == 10, "a repeated text is sent once"
    again = emb.embed_documents(TEXTS)
    np.testing.assert_array_equal(again, first[:10])
    np.testing.assert_array_equal(emb.embed_query(TEXTS[3]), first[3])
    assert len(endpoint.requests) == 3, "cached texts make no request"
    assert make_embedder(spec, home=tmp_path).embed_documents(TEXTS[:5]).shape == (5, DIM)
    assert endpoint.inputs[3:] == [["memlab dimension probe"]], "another embedder of the same endpoint shares the " \
        "cache, once one probe (no user's text) told it which model answers"
    disk = CachedEmbedder(client(endpoint), EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite"))
    np.testing.assert_array_equal(disk.embed_documents(TEXTS), first[:10])  # as a new process would
    assert len(endpoint.requests) == 5 and disk.computed == 0, "its probe, then every text from the cache"


def test_an_uncached_embedder_asks_every_time(endpoint, tmp_path):
    emb = make_embedder(
        {"kind": "openai", "base_url": endpoint.base_url, "model": "hash-32"}, home=tmp_path, cache=False
    )
    emb.embed_documents(TEXTS[:2])
    emb.embed_documents(TEXTS[:2])
    assert len(endpoint.requests) == 2


# -- errors -------------------------------------------------------------------------------------------
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_endpoint_that_is_not_listening_is_named():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    emb = OpenAICompatibleEmbedder(url, "m", api_key_env=None)
    started = time.perf_counter()
    with pytest.raises(EmbeddingEndpointError, match="cannot reach the embeddings endpoint") as info:
        emb.embed_query("hello")
    message = str(info.value)
    assert f"{url}/embeddings" in message and "server is running" in message and "base_url" in message
    assert emb.requests == 1 and time.perf_counter() - started < 5, "a refused connection is not retried"
    assert isinstance(info.value, memlab.MemlabError)


def test_401_names_the_environment_variable_and_never_shows_the_key(endpoint, monkeypatch):
    refusal = {"error": {"message": "Incorrect API key provided: sk-secret-999", "type": "invalid_request_error"}}
    endpoint.script = [(401, refusal), (403, {"error": "forbidden"})]
    monkeypatch.setenv(KEY_ENV, "sk-secret-999")
    with pytest.raises(
        EmbeddingEndpointError, match=f"HTTP 401, the key in the environment variable {KEY_ENV}"
    ) as info:
        client(endpoint).embed_query("hello")
    assert "sk-secret-999" not in str(info.value) and "Incorrect API key" in str(info.value)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(EmbeddingEndpointError, match=f"HTTP 403, no key was sent: the environment variable {KEY_ENV}"):
        client(endpoint).embed_query("hello")
    assert len(endpoint.requests) == 2, "auth failures are not retried"


def test_other_http_errors_give_status_and_the_start_of_the_body(endpoint):
    endpoint.script = [(400, "input too long " + "x" * 1000)]
    with pytest.raises(EmbeddingEndpointError, match="HTTP 400: input too long x") as info:
        client(endpoint).embed_query("hello")
    assert "x" * 185 in str(info.value) and "x" * 200 not in str(info.value)
    assert len(endpoint.requests) == 1, "a 400 is not retried"


def test_wrong_route_is_an_http_error_naming_the_url(endpoint):
    emb = OpenAICompatibleEmbedder(endpoint.base_url.removesuffix("/v1"), "m")
    with pytest.raises(EmbeddingEndpointError, match=r"127\.0\.0\.1:\d+/embeddings: HTTP 404"):
        emb.embed_query("hello")


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        ((200, "<html>proxy error</html>"), "did not answer with JSON"),
        ((200, {"object": "list"}), "without a 'data' list"),
        ((200, {"data": [{"index": 0}]}), "without a 'data' list"),
        ((200, {"data": [{"index": 0, "embedding": "not base64!"}]}), "not valid base64"),
        ((200, {"data": [{"index": 0, "embedding": ["a", "b"]}]}), "not numbers"),
        ((200, {"data": [{"index": 0, "embedding": [1.0, float("nan")]}]}), "NaN or infinite"),
        ((200, {"data": [{"index": 0, "embedding": [0.0, 0.0]}]}), "all-zero vector"),
        ((200, {"data": [{"index": 0, "embedding": []}]}), "shape"),
    ],
)
def test_a_malformed_reply_is_refused(endpoint, reply, match):
    endpoint.script = [reply]
    with pytest.raises(EmbeddingEndpointError, match=match):
        client(endpoint).embed_query("hello")


def test_wrong_number_of_vectors_or_bad_indexes_are_refused(endpoint):
    endpoint.script = [
        lambda texts: (200, reply_for(hash_vectors(texts)[:-1])),
        lambda texts: (200, {"data": [{"index": 0, "embedding": v.tolist()} for v in hash_vectors(texts)]}),
    ]
    with pytest.raises(EmbeddingEndpointError, match="returned 2 vectors for 3 inputs"):
        client(endpoint).embed_documents(TEXTS[:3])
    with pytest.raises(EmbeddingEndpointError, match=r"indexes \[0, 0, 0\]; expected each of 0\.\.2 once"):
        client(endpoint).embed_documents(TEXTS[:3])


def test_base64_embeddings_are_decoded(endpoint):
    import base64

    vec = hash_vectors(["b64"])[0]
    endpoint.script = [
        (200, {"data": [{"index": 0, "embedding": base64.b64encode(vec.astype("<f4").tobytes()).decode()}]})
    ]
    np.testing.assert_allclose(client(endpoint).embed_query("b64"), vec / np.linalg.norm(vec), atol=1e-6)


def test_inconsistent_dimensions_are_refused(endpoint):
    endpoint.script = [
        lambda texts: (200, reply_for(hash_vectors(texts))),
        lambda texts: (200, reply_for(hash_vectors(texts, 16))),
    ]
    with pytest.raises(memlab.DimensionError, match=r"returned 16-d vectors .* is 32-d"):
        client(endpoint, batch_size=2).embed_documents(TEXTS[:4])
    ragged = {"data": [{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [1.0]}]}
    endpoint.script = [(200, ragged)]
    with pytest.raises(memlab.DimensionError, match=r"different lengths \[1, 2\]"):
        client(endpoint).embed_documents(TEXTS[:2])


def test_a_slow_server_times_out_with_a_clear_message(endpoint):
    def slow(texts: list[str]) -> tuple[Any, ...]:
        time.sleep(1.0)
        return 200, reply_for(hash_vectors(texts))

    endpoint.script = [slow]
    with pytest.raises(EmbeddingEndpointError, match=r"did not answer within 0\.2s"):
        client(endpoint, timeout=0.2).embed_query("hello")


# -- retries ------------------------------------------------------------------------------------------
def test_one_503_is_retried_then_succeeds(endpoint):
    endpoint.script = [(503, {"error": "loading model"})]
    emb = client(endpoint)
    np.testing.assert_allclose(emb.embed_query("hello"), unit(hash_vectors(["hello"]))[0], atol=1e-6)
    assert endpoint.inputs == [["hello"], ["hello"]] and emb.requests == 2


def test_429_is_retried_honouring_a_short_retry_after(endpoint):
    endpoint.script = [(429, {"error": "slow down"}, {"Retry-After": "0.2"})]
    started = time.perf_counter()
    client(endpoint).embed_query("hello")
    assert len(endpoint.requests) == 2 and time.perf_counter() - started >= 0.2


def test_retries_are_bounded(endpoint):
    endpoint.script = [(502, "bad gateway")] * 5
    with pytest.raises(EmbeddingEndpointError, match="HTTP 502 after 3 attempts: bad gateway"):
        client(endpoint, retries=2).embed_query("hello")
    assert len(endpoint.requests) == 3


# -- end to end ---------------------------------------------------------------------------------------
NOTES = [
    "Our payments service runs in eu-west-1 and we deploy it with Argo CD.",
    "The nightly billing export job writes CSV files to an S3 bucket at 2am.",
    "My daughter starts piano lessons on Thursday afternoons.",
    "I am allergic to peanuts, so please keep that in mind for restaurant tips.",
]


def test_event_memory_ingests_and_searches_through_the_endpoint(endpoint, store, embedder, app_name, tmp_path: Path):
    endpoint.vectorize = embedder.inner.embed_documents  # the server serves the real packaged model
    endpoint.scale = 2.5
    spec = {"kind": "openai", "base_url": endpoint.base_url, "model": "minilm", "batch_size": 3, "api_key_env": None}
    remote = make_embedder(spec, home=tmp_path)
    mem = memlab.EventMemory(store, remote)
    assert mem.model.model_id == remote.model_id and mem.model.dimension == 384
    report = mem.add_session(make_session(app_name, "u1", "s1", NOTES))
    assert report.added == 4 and report.embedded == 4
    sent = len(endpoint.requests)
    hits = mem.search(app_name, "u1", "How do we deploy the payments service?")
    assert hits[0].unit_id == "s1-e0" and "Argo CD" in hits[0].text
    assert mem.search(app_name, "u1", "food allergies")[0].unit_id == "s1-e3"
    np.testing.assert_allclose(remote.embed_documents(NOTES), embedder.embed_documents(NOTES), atol=1e-5)
    again = mem.add_session(make_session(app_name, "u1", "s1", NOTES))
    assert again.added == 0 and again.embedded == 0
    assert len(endpoint.requests) == sent + 2, "only the two new queries reached the endpoint"
