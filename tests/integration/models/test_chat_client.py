"""The chat client against the fake OpenAI-compatible server (tests/model_server.py): replies and token counts,
the disk cache, each failure as one ModelError line of its kind, retries, order and concurrency of complete_many,
and no API key in any message."""

from __future__ import annotations

import pytest

from memlab.models import ChatClient, ChatReply, ChatRequest, ModelError, ModelSpec, open_chat

KEY = "sk-live-Zq8xv2Lm9Tp4Rw7Yk3Nb6Hc1"


def spec(server_url: str, **kw) -> ModelSpec:
    return ModelSpec(**{"name": "reader", "kind": "openai-chat", "base_url": server_url, "model": "tiny",
                        "backoff": 0.01, "retries": 2, **kw})  # fmt: skip


def ask(text: str, **kw) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": text}], **kw)


def test_a_reply_carries_text_tokens_and_seconds_and_the_second_call_is_served_from_the_cache(model_server, tmp_path):
    model_server.chat_reply = lambda body: '{"name": "Tom"}'
    client = ChatClient(spec(model_server.base_url, max_tokens=64), cache_dir=tmp_path)
    reply = client.complete(ask("What is my cat called?", json_schema={"type": "object"}, schema_name="answer"))
    assert reply.text == '{"name": "Tom"}' and not reply.cached
    assert reply.prompt_tokens == 5 and reply.completion_tokens == 2 and reply.seconds > 0
    path, body = model_server.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "tiny" and body["max_tokens"] == 64
    assert body["response_format"]["json_schema"]["name"] == "answer"
    assert client.complete(ask("What is my cat called?", json_schema={"type": "object"}, schema_name="answer")
                           ) == ChatReply(reply.text, 5, 2, 0.0, True)  # fmt: skip
    assert client.requests_sent == 1
    again = ChatClient(spec(model_server.base_url, max_tokens=64), cache_dir=tmp_path)  # a new run, same folder
    first = again.complete(ask("What is my cat called?", json_schema={"type": "object"}, schema_name="answer"))
    assert not first.cached and again.requests_sent == 1, "a new client's first call learns which model answers"
    second = again.complete(ask("What is my cat called?", json_schema={"type": "object"}, schema_name="answer"))
    assert second == ChatReply(reply.text, 5, 2, 0.0, True)
    assert again.requests_sent == 1 and len(model_server.requests) == 2
    assert not again.complete(ask("Another question")).cached, "a different request is not a hit"
    assert not any(KEY in p.read_text() for p in tmp_path.rglob("*.json"))


def test_no_cache_when_the_spec_turns_it_off(model_server, tmp_path):
    client = ChatClient(spec(model_server.base_url, cache=False), cache_dir=tmp_path)
    client.complete(ask("hi"))
    client.complete(ask("hi"))
    assert client.requests_sent == 2 and not list(tmp_path.iterdir())


def one_line_error(client: ChatClient, kind: str) -> str:
    with pytest.raises(ModelError) as err:
        client.complete(ask("hello"))
    message = str(err.value)
    assert err.value.kind == kind, message
    assert "\n" not in message and message.startswith("reader (http://127.0.0.1:")
    assert KEY not in message
    return message


def test_unreachable_malformed_http_and_timeout_each_end_in_one_line_without_the_key(model_server, tmp_path,
                                                                                    monkeypatch):  # fmt: skip
    monkeypatch.setenv("CHAT_TEST_KEY", KEY)
    with_key = {"api_key_env": "CHAT_TEST_KEY", "cache": False}
    message = one_line_error(ChatClient(spec("http://127.0.0.1:1/v1", **with_key)), "unreachable")
    assert "cannot reach" in message and "after 3 attempts" in message
    model_server.mode = "malformed"
    message = one_line_error(ChatClient(spec(model_server.base_url, **with_key)), "malformed")
    assert "not JSON" in message
    model_server.mode = "http500"
    client = ChatClient(spec(model_server.base_url, **with_key))
    assert "HTTP 500 after 3 attempts" in one_line_error(client, "http") and client.requests_sent == 3
    model_server.mode = "slow"
    message = one_line_error(ChatClient(spec(model_server.base_url, timeout=0.2, retries=0, **with_key)), "timeout")
    assert "within 0.2 s" in message
    assert f"Bearer {KEY}" in model_server.authorizations, "the key was sent, and the bad replies echoed it"


def test_a_reply_without_a_message_is_malformed_and_not_cached(model_server, tmp_path):
    model_server.chat_reply = lambda body: None  # content null
    client = ChatClient(spec(model_server.base_url), cache_dir=tmp_path)
    with pytest.raises(ModelError) as err:
        client.complete(ask("hi"))
    assert err.value.kind == "malformed" and "choices[0].message.content" in str(err.value)
    model_server.chat_reply = lambda body: "fine"
    assert client.complete(ask("hi")).text == "fine", "the error was not cached"


def test_a_4xx_other_than_429_is_not_retried(model_server):
    client = ChatClient(spec(model_server.base_url.removesuffix("/v1") + "/nowhere", cache=False))
    with pytest.raises(ModelError) as err:
        client.complete(ask("hi"))
    assert err.value.kind == "http" and "HTTP 404" in str(err.value) and client.requests_sent == 1


def test_a_flaky_server_succeeds_after_retries(model_server):
    model_server.mode = "flaky"
    client = ChatClient(spec(model_server.base_url, cache=False))
    assert client.complete(ask("hi")).text == "echo: hi"
    assert client.requests_sent == 3 == len(model_server.requests)


def test_complete_many_keeps_order_returns_an_error_per_failed_item_and_honours_the_concurrency(model_server):
    model_server.chat_reply = lambda body: (None if "bad" in body["messages"][-1]["content"]
                                            else body["messages"][-1]["content"].upper())  # fmt: skip
    model_server.gather, model_server.hold_seconds = 2, 0.05
    client = open_chat(spec(model_server.base_url, concurrency=2, cache=False, retries=0))
    texts = ["one", "two", "bad three", "four", "five", "six"]
    replies = client.complete_many([ask(t) for t in texts])
    assert [r.text if isinstance(r, ChatReply) else r.kind for r in replies] == [
        "ONE", "TWO", "malformed", "FOUR", "FIVE", "SIX"]  # fmt: skip
    assert model_server.max_in_flight == 2, "two in flight at a time, never more"
