"""One client for every chat model (`openai-chat`: any /v1/chat/completions): the reader, the judge, the LLM
extractor, the model assessor and question writer all call it, so timeouts, retries, the concurrency limit, the
disk cache and token counts behave the same everywhere. A cached reply is keyed by the request and by what the
server said answered it (memlab.models.served), and is stored only when the caller can use it and no erasure of
what it quotes ran while it was in flight (memlab.models.flights)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError
from memlab.models.cache import ReplyCache, cache_key, model_cache_dir
from memlab.models.errors import ModelError
from memlab.models.http import error, post_json
from memlab.models.refs import with_ambient
from memlab.models.served import ServedModel, entry_key, served_identity
from memlab.models.spec import ModelSpec


@dataclass(frozen=True)
class ChatRequest:
    """Messages as the OpenAI API takes them; `json_schema` asks the server for JSON following it (a structured
    output, sent as response_format). `refs` (memlab.models.refs): what stored memory the messages hold, kept
    with the cached reply so erasure can drop it; never sent, not part of the cache key."""

    messages: list[dict[str, str]]
    json_schema: dict | None = None
    schema_name: str = "reply"
    max_tokens: int | None = None
    refs: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class ChatReply:
    """The reply's text with the token counts the server reported (None when it did not) and the seconds the
    exchange took (0 for a reply served from the cache)."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    seconds: float
    cached: bool


class ChatClient:
    """Calls one `openai-chat` model. `cache_dir` defaults to model_cache_dir(); spec.cache false stores nothing.
    At most spec.concurrency requests are in flight per client, whoever calls it from how many threads."""

    def __init__(self, spec: ModelSpec, cache_dir: Path | None = None, *, api_key: str | None = None) -> None:
        """`api_key` is for callers given a key rather than a variable's name (LlmExtractor's api_key=); it stays
        private to the client and out of its repr."""
        if spec.kind != "openai-chat":
            raise ConfigError(f"model {spec.name!r} is a {spec.kind} model; a chat client needs kind openai-chat.")
        self.spec = spec
        self.cache = ReplyCache((cache_dir or model_cache_dir()) if spec.cache else None)
        self.requests_sent = 0
        self._api_key = api_key
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(spec.concurrency)
        self.served = ServedModel()  # what the server says answers, learned from this client's live replies

    def __repr__(self) -> str:
        return f"ChatClient({self.spec.name!r}, {self.spec.base_url!r}, {self.spec.model!r})"

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON sent to /chat/completions (and, with kind and base_url, the cache key)."""
        body: dict[str, Any] = {"model": self.spec.model, "messages": [dict(m) for m in request.messages],
                                "temperature": self.spec.temperature}  # fmt: skip
        max_tokens = request.max_tokens if request.max_tokens is not None else self.spec.max_tokens
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if request.json_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": request.schema_name, "schema": request.json_schema, "strict": True}}  # fmt: skip
        return body

    def complete(self, request: ChatRequest, *, cache_if: Callable[[str], bool] | None = None,
                 refs: Sequence[str] = ()) -> ChatReply:  # fmt: skip
        """The model's reply to one request, from the cache when this exact request was answered before by the
        model the server says answers now (the client's first lookup asks the server to learn which that is).
        `cache_if(text)` false keeps a reply the caller cannot use out of the cache, so a rerun asks again (a
        request with a json_schema also needs a JSON reply). `refs` (with the request's and the enclosing
        memlab.models.refs.deriving_from's) go with the entry."""
        refs = with_ambient([*request.refs, *refs])
        body = self.body(request)
        request_key = cache_key([self.spec.kind, self.spec.base_url, self.spec.model, body])
        identity, asking = self.served.begin() if self.cache.folder is not None else (None, False)
        try:
            hit = self.cache.get(entry_key(request_key, identity)) if identity is not None else None
            if hit is not None and isinstance(hit.get("text"), str):
                return ChatReply(hit["text"], hit.get("prompt_tokens"), hit.get("completion_tokens"), 0.0, True)
            with self.cache.flight(refs) as registered:
                with self._slots:
                    start = time.perf_counter()
                    reply = post_json(self.spec, "/chat/completions", body, on_send=self._count, key=self._api_key)
                    seconds = time.perf_counter() - start
                text, prompt_tokens, completion_tokens = self._parse(reply)
                served = served_identity(reply)
                self.served.learn(served)
                if _usable(request, text) and (cache_if is None or cache_if(text)):
                    self.cache.put(entry_key(request_key, served), {
                        "text": text, "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                        "served": json.loads(served)}, refs, registered)  # fmt: skip
        finally:
            self.served.end(asking)
        return ChatReply(text, prompt_tokens, completion_tokens, seconds, False)

    def complete_many(self, requests: Sequence[ChatRequest], *, cache_if: Callable[[str], bool] | None = None
                      ) -> list[ChatReply | ModelError]:  # fmt: skip
        """Replies in input order, spec.concurrency at a time; a failed item is its ModelError, the rest go on.
        Each request's refs, and the caller's deriving_from refs (read here: the pool's threads lack them)."""
        if not requests:
            return []
        ambient = with_ambient()

        def one(request: ChatRequest) -> ChatReply | ModelError:
            try:
                return self.complete(request, cache_if=cache_if, refs=ambient)
            except ModelError as exc:
                return exc

        with ThreadPoolExecutor(max_workers=min(self.spec.concurrency, len(requests))) as pool:
            return list(pool.map(one, requests))

    def _count(self) -> None:
        with self._lock:
            self.requests_sent += 1

    def _parse(self, reply: Any) -> tuple[str, int | None, int | None]:
        try:
            text = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            text = None
        if not isinstance(text, str):
            raise error(self.spec, f"the reply has no choices[0].message.content text ({str(reply)[:200]!r})",
                        "Is this an OpenAI-compatible chat endpoint, and the model a chat model?",
                        "malformed", self._api_key or "")  # fmt: skip
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        return text, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))


def _usable(request: ChatRequest, text: str) -> bool:
    """A reply to a request for JSON (json_schema) that is not JSON is of no use to any caller."""
    if request.json_schema is None:
        return True
    try:
        reply_json(text)
    except json.JSONDecodeError:
        return False
    return True


def reply_json(content: object) -> tuple[Any, str]:
    """A chat model's JSON reply: (the parsed value, the text it was read from). Some servers wrap the JSON in a
    code fence despite the schema, so the fence is dropped first; json.JSONDecodeError when it is not JSON."""
    text = content.strip() if isinstance(content, str) else ""
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text), text
    except RecursionError:  # a reply nested past the decoder's stack is not the schema either
        raise json.JSONDecodeError("nested too deeply", text, 0) from None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def open_chat(spec: ModelSpec, cache_dir: Path | None = None) -> ChatClient:
    """The chat client of an openai-chat spec (ConfigError for another kind)."""
    return ChatClient(spec, cache_dir)
