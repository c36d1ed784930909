"""Every remote model call is bounded, whatever the server does: a total deadline however slowly the reply
trickles in (status line and headers included), a reply size bound (error bodies too), and the key and the request
go only to the configured origin (a redirect elsewhere is refused, never followed). Each caller (chat, re-rank,
embeddings) against a real HTTP server on 127.0.0.1 (tests/model_server.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

import memlab
from memlab.models import ChatRequest, ModelError, ModelSpec, open_chat, open_reranker, parse_models
from tests.model_server import ModelServer

KEY = "sk-bounds-Zq8xv2Lm9Tp4Rw7Yk3Nb6Hc1"
SLACK = 0.6  # seconds a call may run past its deadline (thread start, the shutdown reaching the socket)


def chat_call(url: str, **kw) -> Callable[[], object]:
    client = open_chat(ModelSpec(**{"name": "reader", "kind": "openai-chat", "base_url": url, "model": "tiny",
                                    "api_key_env": "BOUNDS_KEY", "cache": False, **kw}))  # fmt: skip
    return lambda: client.complete(ChatRequest([{"role": "user", "content": "hello"}]))


def rerank_call(url: str, **kw) -> Callable[[], object]:
    reranker = open_reranker(ModelSpec(**{"name": "rr", "kind": "openai-rerank", "base_url": url, "model": "tiny",
                                          "api_key_env": "BOUNDS_KEY", "cache": False, **kw}))  # fmt: skip
    return lambda: reranker.rerank("a cat", ["a cat", "a dog"])


def embed_call(url: str, **kw) -> Callable[[], object]:
    embedder = memlab.embedding.OpenAICompatibleEmbedder(url, "tiny", api_key_env="BOUNDS_KEY", **kw)
    return lambda: embedder.embed_documents(["hello"])


CALLERS = {"chat": chat_call, "rerank": rerank_call, "embed": embed_call}
ERRORS = (ModelError, memlab.EmbeddingEndpointError)


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOUNDS_KEY", KEY)


@pytest.fixture
def elsewhere() -> Iterator[ModelServer]:
    """A second server: another origin (another port) that records the Authorization header of each request."""
    server = ModelServer()
    yield server
    server.close()


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("mode", ["trickle", "trickle_headers"])
def test_a_trickling_server_cannot_hold_a_call_past_its_deadline(model_server, caller, mode):
    model_server.mode, model_server.trickle_seconds = mode, 0.1  # each socket read waits 0.1 s: never 1 s
    call = CALLERS[caller](model_server.base_url, timeout=1.0, retries=0)
    started = time.monotonic()
    with pytest.raises(ERRORS) as err:
        call()
    took = time.monotonic() - started
    assert took < 1.0 + SLACK, f"the call took {took:.1f} s against a 1 s deadline"
    assert "1s" in str(err.value).replace(" s", "s") and KEY not in str(err.value)
    if isinstance(err.value, ModelError):
        assert err.value.kind == "timeout"


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_the_deadline_covers_retries_and_waits(model_server, caller):
    model_server.mode, model_server.trickle_seconds = "trickle", 0.1
    call = CALLERS[caller](model_server.base_url, timeout=0.6, retries=5, backoff=0.2, deadline=1.0)
    started = time.monotonic()
    with pytest.raises(ERRORS, match=r"deadline of 1 ?s|within 0\.6 ?s"):  # the embedder retries no timeout
        call()
    assert time.monotonic() - started < 1.0 + SLACK
    model_server.mode, model_server.flaky_failures = "flaky", 1000  # 503 after 503: the waits count too
    call = CALLERS[caller](model_server.base_url, timeout=5.0, retries=5, backoff=0.3, deadline=1.0)
    started = time.monotonic()
    with pytest.raises(ERRORS):
        call()
    assert time.monotonic() - started < 1.0 + SLACK


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_a_deadline_shorter_than_the_timeout_ends_the_call_and_is_named(model_server, caller):
    model_server.mode, model_server.trickle_seconds = "trickle", 0.1
    started = time.monotonic()
    with pytest.raises(ERRORS, match=r"(?i)deadline of 1 ?s.*raise (the model's )?deadline"):
        CALLERS[caller](model_server.base_url, timeout=30.0, retries=0, deadline=1.0)()
    assert time.monotonic() - started < 1.0 + SLACK


def test_the_default_deadline_is_every_attempts_timeout_plus_the_waits():
    spec = parse_models([{"name": "m", "kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                          "timeout": 2, "retries": 2, "backoff": 0.5}], "t")["m"]  # fmt: skip
    assert spec.call_deadline() == pytest.approx(2 * 3 + 0.5 + 1.0)
    assert parse_models([{"name": "m", "kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                          "deadline": 3}], "t")["m"].call_deadline() == 3.0  # fmt: skip
    with pytest.raises(memlab.ConfigError, match="deadline must be a positive number"):
        parse_models([{"name": "m", "kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                       "deadline": 0}], "t")  # fmt: skip
    with pytest.raises(memlab.ConfigError, match="max_reply_bytes must be a whole number"):
        parse_models([{"name": "m", "kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                       "max_reply_bytes": "big"}], "t")  # fmt: skip


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize(("mode", "declared"), [("huge", True), ("huge", False), ("huge_error", True),
                                                ("huge_error", False)])  # fmt: skip
def test_a_reply_over_the_bound_is_refused_naming_the_bound(model_server, caller, mode, declared):
    model_server.mode, model_server.huge_bytes, model_server.declare_length = mode, 3 << 20, declared
    call = CALLERS[caller](model_server.base_url, retries=0, max_reply_bytes=1 << 20)
    if mode == "huge_error":  # the error's body is read only as far as it is shown, whatever its size
        with pytest.raises(ERRORS, match="HTTP 500"):
            call()
        return
    with pytest.raises(ERRORS, match=r"(?i)larger than max_reply_bytes \(1048576 bytes\).*raise max_reply_bytes"):
        call()


def test_the_default_bound_refuses_a_reply_of_hundreds_of_megabytes_unread(model_server):
    model_server.mode, model_server.huge_bytes, model_server.declare_length = "huge", 40 << 20, False
    with pytest.raises(ModelError, match=r"larger than max_reply_bytes \(4194304 bytes\)") as err:
        chat_call(model_server.base_url, retries=0)()
    assert err.value.kind == "malformed"


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_is_refused_and_sends_nothing_there(model_server, elsewhere, caller, status):
    model_server.mode, model_server.redirect_status = "redirect", status
    call = CALLERS[caller](model_server.base_url, retries=2, backoff=0.01)
    for target in (elsewhere.base_url.removesuffix("/v1"),  # the same host, another port
                   elsewhere.base_url.removesuffix("/v1").replace("127.0.0.1", "127.0.0.2")):  # another host
        model_server.redirect_to = target
        with pytest.raises(ERRORS) as err:
            call()
        assert elsewhere.authorizations == [], "no request (and no key) reached the other origin"
        assert "redirected" in str(err.value) and target.rpartition(":")[0] in str(err.value)
        assert KEY not in str(err.value)
    assert model_server.authorizations == [f"Bearer {KEY}"] * 2, "sent to the configured origin only, not retried"


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_a_307_within_the_same_origin_is_followed(model_server, caller):
    model_server.mode = "redirect"
    model_server.redirect_to = model_server.base_url.removesuffix("/v1") + "/moved"
    real = model_server.answer
    model_server.answer = lambda path, *a: real(path.removeprefix("/moved"), *a)
    CALLERS[caller](model_server.base_url)()
    assert model_server.authorizations == [f"Bearer {KEY}"] * 2 and model_server.requests[-1][0] == "/moved/v1/" \
        + model_server.requests[0][0].removeprefix("/v1/")  # fmt: skip
