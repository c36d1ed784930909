"""A small OpenAI-compatible server on 127.0.0.1 for the model-client tests (no real model runs here; the HTTP
exchange, the retries and the parsing are real). /v1/chat/completions answers `chat_reply(body)`; /v1/rerank
scores each document by its share of the query's words (deterministic). `mode` turns it into a bad server:
"malformed" (200, not JSON), "http500", "slow" (sleeps `slow_seconds` before answering), "flaky" (the first
`flaky_failures` calls get 503). The failure bodies echo the Authorization header, as careless servers do.
Hostile modes: "trickle" (the reply one byte every `trickle_seconds`, for at most `trickle_for` seconds),
"trickle_headers" (the same, status line and headers included), "huge" (a well-formed reply of `huge_bytes`,
with or without Content-Length: `declare_length`), "huge_error" (a 500 of that size), "redirect" (`redirect_status`
to `redirect_to` + the path, for paths under /v1/; a GET, as a client that turned the POST into one sends, is
recorded and answered 404). `reported_model` / `fingerprint` are what a reply says answered
(default: the requested model, no fingerprint). /v1/embeddings answers `embedding_dim` numbers per input, a
function of the text and, once `reported_model` or `fingerprint` is set, of what the reply says answered (other
weights, other vectors)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def echo_reply(body: dict[str, Any]) -> str:
    """The default answer: the last message's words, so each request has its own deterministic reply."""
    return f"echo: {body['messages'][-1]['content'][:200]}"


def vector(text: str, dim: int) -> list[float]:
    """A deterministic, text-specific, non-zero vector."""
    digest = hashlib.sha256(text.encode()).digest()
    return [1.0 + digest[i % len(digest)] / 255 for i in range(dim)]


def overlap_scores(query: str, documents: list[str]) -> list[float]:
    q = words(query)
    return [len(q & words(d)) / max(len(q), 1) for d in documents]


class ModelServer:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict]] = []
        self.authorizations: list[str | None] = []  # the Authorization header of each request
        self.mode = "ok"
        self.chat_reply: Callable[[dict], str] = echo_reply
        self.rerank_reply: Callable[[dict], Any] | None = None  # replaces the whole /rerank reply when set
        self.rerank_top_n: int | None = None  # answer only the best n documents
        self.slow_seconds = 1.0
        self.flaky_failures = 2
        self.gather = 0  # hold requests until this many were in flight at once (or 2 s passed): shows overlap
        self.hold_seconds = 0.0  # each request stays in flight this long (more overlap when a client has no limit)
        self.in_flight = 0
        self.max_in_flight = 0
        self.trickle_seconds = 0.2
        self.trickle_for = 8.0
        self.huge_bytes = 6 << 20
        self.declare_length = True
        self.redirect_to = ""
        self.redirect_status = 307
        self.reported_model: str | None = None
        self.fingerprint: str | None = None
        self.embedding_dim = 8
        self._lock = threading.Condition()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"{}")
                with outer._lock:
                    outer.requests.append((self.path, body))
                    outer.authorizations.append(self.headers.get("Authorization"))
                    calls = len(outer.requests)
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                    outer._lock.notify_all()
                    if outer.gather:
                        outer._lock.wait_for(lambda: outer.max_in_flight >= outer.gather, timeout=2)
                time.sleep(outer.hold_seconds)
                answered = False

                def done() -> None:
                    # A request stops counting as in flight before its body goes out: once the client has the
                    # body it may send its next request, which must not find this handler still counted.
                    nonlocal answered
                    if not answered:
                        answered = True
                        with outer._lock:
                            outer.in_flight -= 1

                try:
                    status, payload = outer.answer(self.path, body, calls, self.headers.get("Authorization"))
                    if outer.mode == "slow":
                        time.sleep(outer.slow_seconds)
                    if outer.mode in ("huge", "huge_error"):
                        return self.huge(200 if outer.mode == "huge" else 500, done)
                    if outer.mode == "redirect" and self.path.startswith("/v1/"):
                        self.send_response(outer.redirect_status)
                        self.send_header("Location", outer.redirect_to + self.path)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return done()
                    data = payload.encode()
                    head = (f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
                            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode()
                    if outer.mode in ("trickle", "trickle_headers"):
                        return self.trickle(head if outer.mode == "trickle_headers" else b"", data, head, done)
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    done()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass
                finally:
                    done()

            def do_GET(self) -> None:
                with outer._lock:
                    outer.requests.append((self.path, {}))
                    outer.authorizations.append(self.headers.get("Authorization"))
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def trickle(self, slow_head: bytes, data: bytes, head: bytes, done: Callable[[], None]) -> None:
                """One byte at a time (the head too when `slow_head`): no socket read ever waits long."""
                done()
                if not slow_head:
                    self.wfile.write(head)
                    self.wfile.flush()
                stop = time.monotonic() + outer.trickle_for
                for byte in (slow_head + data):
                    if time.monotonic() > stop:
                        break
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(outer.trickle_seconds)
                self.close_connection = True

            def huge(self, status: int, done: Callable[[], None]) -> None:
                """A reply of outer.huge_bytes: a chat reply whose content is that long (or an error body)."""
                content = "x" * outer.huge_bytes
                data = (json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]})
                        if status == 200 else json.dumps({"error": content})).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if outer.declare_length:
                    self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                done()
                for i in range(0, len(data), 1 << 16):
                    self.wfile.write(data[i:i + (1 << 16)])
                self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def answer(self, path: str, body: dict, calls: int, auth: str | None) -> tuple[int, str]:
        if self.mode == "malformed":
            return 200, f"<html>upstream said: Authorization: {auth}</html>"
        if self.mode == "http500":
            return 500, json.dumps({"error": "internal error", "authorization": auth})
        if self.mode == "flaky" and calls <= self.flaky_failures:
            return 503, json.dumps({"error": "loading model", "seen": auth})
        said = {"model": self.reported_model or body.get("model")}
        if self.fingerprint is not None:
            said["system_fingerprint"] = self.fingerprint
        if path == "/v1/chat/completions":
            content = self.chat_reply(body)
            prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
            usage = {"prompt_tokens": prompt, "completion_tokens": len((content or "").split())}
            message = {"role": "assistant", "content": content}
            return 200, json.dumps({**said, "choices": [{"index": 0, "message": message}], "usage": usage})
        if path == "/v1/embeddings":
            weights = "" if self.reported_model is None and self.fingerprint is None else json.dumps(said) + "\n"
            data = [{"index": i, "embedding": vector(weights + text, self.embedding_dim)}
                    for i, text in enumerate(body["input"])]  # fmt: skip
            return 200, json.dumps({**said, "data": data})
        if path == "/v1/rerank":
            if self.rerank_reply is not None:
                return 200, json.dumps(self.rerank_reply(body))
            scores = overlap_scores(body["query"], body["documents"])
            ranked = sorted(range(len(scores)), key=lambda i: -scores[i])  # best first, as servers answer
            results = [{"index": i, "relevance_score": scores[i]} for i in ranked]
            if self.rerank_top_n is not None:
                results = results[: self.rerank_top_n]
            usage = {"total_tokens": sum(len(d.split()) for d in body["documents"])}
            return 200, json.dumps({**said, "results": results, "usage": usage})
        return 404, json.dumps({"error": f"no route {path}"})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
