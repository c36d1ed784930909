"""Model safety: what a remote model server can do to memlab's model calls (chat, re-rank, embeddings). The family
starts its own small servers on the loopback interface (each stops by itself after LIFETIME seconds) that
trickle a reply byte by byte, send a body far over the bound, redirect to another origin, swap the model behind the
same URL, give an unusable reply, or hold a reply while its user is erased, and counts what must never happen:

- `deadline_overruns`: a call that ran past its total deadline (+ SLACK);
- `unbounded_bodies`: a reply body over the bound accepted, or an error body read far past it;
- `credentials_to_other_origins`: a request carrying the key that reached another origin;
- `unusable_replies_cached`: a reply the caller cannot use found in the model cache;
- `replies_of_another_model_served`: a cached reply of another model than the one answering now;
- `replies_cached_after_erasure`: a reply in flight during an erasure of its user stored afterwards;
- `vectors_of_another_model_served`: a cached embedding of another model than the one answering now;
- `vectors_cached_after_erasure`: an embedding of a user's text (an add's, a caller's, a search's query) computed
  while an erasure of that user ran, found in a cache after it returned."""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

import memlab
from memlab.lab.reliability.probes.family import Family
from memlab.lab.sweeps.answer import usable_verdict
from memlab.lab.sweeps.answering import VERDICT_SCHEMA
from memlab.models import ChatClient, ChatRequest, ModelSpec, deriving_from, open_reranker, scope_refs, user_ref

DEADLINE = 1.0  # seconds: each bounded call's total deadline
SLACK = 0.5  # seconds a call may run past it (a thread's start, the shutdown reaching the socket)
BOUND = 64 << 10  # the reply bound the body checks configure
ERROR_BODY = 32 << 20  # an error body this large cannot sit in socket buffers: fully written means fully read
LIFETIME = 60.0  # seconds after which a probe server stops whatever happens
TRICKLE = 0.05  # seconds between two bytes of a trickled reply
FIGURES = ("deadline_overruns", "unbounded_bodies", "credentials_to_other_origins", "unusable_replies_cached",
           "replies_of_another_model_served", "replies_cached_after_erasure", "vectors_of_another_model_served",
           "vectors_cached_after_erasure")  # fmt: skip


class ProbeServer:
    """An OpenAI-compatible server on `host` (loopback) whose `mode` says how it misbehaves; it records each
    request's Authorization header and stops by itself after LIFETIME seconds."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.mode = "ok"
        self.model = "probe-model-a"
        self.content: Callable[[dict], str] = lambda body: f"{self.model} says hello"
        self.scores: Callable[[dict], list[float]] = lambda body: [1.0 / (i + 1) for i in range(len(body["documents"]))]
        self.hold = 0.0
        self.redirect_to = ""
        self.redirect_status = 307
        self.declare_length = True
        self.authorizations: list[str | None] = []
        self.written = 0  # bytes of the last huge error body written before the client stopped reading
        self.finished = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = min(int(self.headers.get("Content-Length") or 0), 1 << 20)
                body = json.loads(self.rfile.read(size) or b"{}")
                outer.authorizations.append(self.headers.get("Authorization"))
                with suppress(BrokenPipeError, ConnectionResetError):
                    outer._answer(self, body)

            def do_GET(self) -> None:  # a client that turned a redirected POST into a GET
                outer.authorizations.append(self.headers.get("Authorization"))
                with suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.origin = f"http://{host}:{self.server.server_address[1]}"
        self.base_url = f"{self.origin}/v1"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self._stop = threading.Timer(LIFETIME, self.close)
        self._stop.daemon = True
        self._stop.start()

    def _reply(self, path: str, body: dict) -> bytes:
        said = {"model": self.model}
        if path.endswith("/chat/completions"):
            return json.dumps({**said, "choices": [{"index": 0, "message": {"role": "assistant",
                                                                         "content": self.content(body)}}]}).encode()
        if path.endswith("/rerank"):
            return json.dumps({**said, "results": [{"index": i, "relevance_score": s}
                                                   for i, s in enumerate(self.scores(body))]}).encode()  # fmt: skip
        weights = float(ord(self.model[-1]) % 5 + 1)  # another model, other vectors
        return json.dumps({**said, "data": [{"index": i, "embedding": [1.0, float(len(t)), weights]}
                                            for i, t in enumerate(body.get("input", []))]}).encode()  # fmt: skip

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        out = handler.wfile
        if self.mode == "redirect":
            out.write(f"HTTP/1.1 {self.redirect_status} Moved\r\nLocation: {self.redirect_to}{handler.path}\r\n"
                      "Content-Length: 0\r\nConnection: close\r\n\r\n".encode())  # fmt: skip
            return
        if self.mode in ("huge", "huge_error"):
            return self._huge(handler, self.mode == "huge")
        time.sleep(self.hold)
        data = self._reply(handler.path, body)
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                "Connection: close\r\n\r\n").encode()  # fmt: skip
        if self.mode not in ("trickle", "trickle_headers"):
            out.write(head + data)
            return
        slow = head + data if self.mode == "trickle_headers" else data
        if self.mode == "trickle":
            out.write(head)
        stop = time.monotonic() + 4 * DEADLINE
        for byte in slow:
            if time.monotonic() > stop:
                break
            out.write(bytes([byte]))
            out.flush()
            time.sleep(TRICKLE)

    def _huge(self, handler: BaseHTTPRequestHandler, ok: bool) -> None:
        """A body of ERROR_BODY bytes (a chat reply whose text is that long, or a 500), counting what got out."""
        self.written = 0
        self.finished.clear()
        try:
            filler = b"x" * ERROR_BODY
            data = (b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "' + filler + b'"}}]}'
                    if ok else b'{"error": "' + filler + b'"}')  # fmt: skip
            length = f"Content-Length: {len(data)}\r\n" if self.declare_length else ""
            handler.wfile.write(f"HTTP/1.1 {200 if ok else 500} X\r\nContent-Type: application/json\r\n{length}"
                                "Connection: close\r\n\r\n".encode())  # fmt: skip
            for i in range(0, len(data), 1 << 16):
                handler.wfile.write(data[i:i + (1 << 16)])
                self.written += len(data[i:i + (1 << 16)])
        finally:
            self.finished.set()

    def close(self) -> None:
        self._stop.cancel()
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def probe_servers(*hosts: str) -> Iterator[list[ProbeServer]]:
    """Servers on the given loopback addresses, closed on the way out."""
    started: list[ProbeServer] = []
    try:
        for host in hosts:
            started.append(ProbeServer(host))
        yield started
    finally:
        for server in started:
            server.close()


@contextmanager
def _key_in_env() -> Iterator[tuple[str, str]]:
    """(variable name, key): a made-up key in a variable of its own, removed afterwards."""
    name, key = f"MEMLAB_PROBE_KEY_{secrets.token_hex(4).upper()}", f"sk-probe-{secrets.token_hex(12)}"
    os.environ[name] = key
    try:
        yield name, key
    finally:
        os.environ.pop(name, None)


def _callers(url: str, key_env: str, cache: Path | None = None, **settings: Any) -> dict[str, Callable[[], Any]]:
    """One call of each remote model kind against `url` with the given settings (no cache unless `cache`)."""
    chat = ChatClient(ModelSpec(**{"name": "probe-chat", "kind": "openai-chat", "base_url": url, "model": "m",
                                   "api_key_env": key_env, "cache": cache is not None, **settings}), cache)
    rerank = open_reranker(ModelSpec(**{"name": "probe-rr", "kind": "openai-rerank", "base_url": url, "model": "m",
                                        "api_key_env": key_env, "cache": cache is not None, **settings}), cache)
    embedder = memlab.embedding.OpenAICompatibleEmbedder(url, "m", api_key_env=key_env, **settings)
    return {"chat": lambda: chat.complete(ChatRequest([{"role": "user", "content": "hello"}])).text,
            "rerank": lambda: rerank.rerank("hello", ["hello", "world"]).scores,
            "embed": lambda: embedder.embed_documents(["hello"])}  # fmt: skip


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.monotonic()
    try:
        result = call()
    except Exception as exc:  # the error is what most checks expect: what it says is checked elsewhere
        result = exc
    return time.monotonic() - started, result


def check_deadlines(family: Family, key_env: str) -> None:
    """Trickled replies (body, then status line and headers too): every call ends within its deadline."""
    cases = [({"timeout": DEADLINE, "retries": 0}, DEADLINE),
             ({"timeout": 30.0, "retries": 2, "backoff": 0.05, "deadline": DEADLINE}, DEADLINE)]  # fmt: skip
    with probe_servers("127.0.0.1", "127.0.0.1") as (body, head):
        body.mode, head.mode = "trickle", "trickle_headers"
        calls = [(f"{server.mode} {name} {settings}", call, limit) for server in (body, head)
                 for settings, limit in cases for name, call in _callers(server.base_url, key_env, **settings).items()]
        with ThreadPoolExecutor(max_workers=len(calls)) as pool:
            results = list(pool.map(lambda c: _timed(c[1]), calls))
    for (what, _, limit), (took, result) in zip(calls, results, strict=True):
        family.add("deadline_calls")
        if took > limit + SLACK or not isinstance(result, Exception):
            family.problem("deadline_overruns", f"{what}: {took:.1f} s against a {limit:g} s deadline "
                           f"({type(result).__name__})")  # fmt: skip


def check_bodies(family: Family, key_env: str) -> None:
    """Replies of ERROR_BODY bytes (with and without Content-Length) against a BOUND: a 200 is refused, a 500's
    body is not read much past the bound."""
    with probe_servers("127.0.0.1") as (server,):
        for mode in ("huge", "huge_error"):
            for declared in (True, False):
                server.mode, server.declare_length = mode, declared
                for name, call in _callers(server.base_url, key_env, retries=0, max_reply_bytes=BOUND).items():
                    family.add("body_calls")
                    _, result = _timed(call)
                    server.finished.wait(5)
                    what = f"{mode} {name} (Content-Length {'sent' if declared else 'absent'})"
                    if not isinstance(result, Exception):
                        family.problem("unbounded_bodies", f"{what}: a {ERROR_BODY}-byte reply was accepted")
                    elif server.written >= ERROR_BODY:
                        family.problem("unbounded_bodies", f"{what}: all {ERROR_BODY} bytes were read")


def check_origins(family: Family, key_env: str, key: str) -> None:
    """Each redirect status to another port, and to another loopback address: the key never arrives there."""
    with probe_servers("127.0.0.1", "127.0.0.1") as (redirecting, other):
        targets = [other]
        with suppress(OSError):  # 127.0.0.2 answers on Linux; elsewhere the other port is the check
            targets.append(ProbeServer("127.0.0.2"))
        try:
            redirecting.mode = "redirect"
            for target, status in ((t, s) for t in targets for s in (301, 302, 303, 307, 308)):
                redirecting.redirect_to, redirecting.redirect_status = target.origin, status
                for name, call in _callers(redirecting.base_url, key_env, retries=1, backoff=0.01).items():
                    family.add("redirect_calls")
                    _timed(call)
                    if any(a == f"Bearer {key}" for a in target.authorizations):
                        family.problem("credentials_to_other_origins", f"{name}: HTTP {status}: the key reached "
                                       f"{target.origin}")  # fmt: skip
                    target.authorizations.clear()
        finally:
            for target in targets[1:]:
                target.close()


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("??/*.json"))


def check_unusable(family: Family, work: Path) -> None:
    """A JSON request answered with prose, and a judge's verdict that does not parse: neither is cached."""
    folder = work / f"unusable-{uuid.uuid4().hex[:8]}"
    with probe_servers("127.0.0.1") as (server,):
        client = ChatClient(ModelSpec("probe-judge", "openai-chat", server.base_url, "m", retries=0), folder)
        server.content = lambda body: "sure, looks right to me"
        client.complete(ChatRequest([{"role": "user", "content": "grade this"}], json_schema=VERDICT_SCHEMA))
        server.content = lambda body: json.dumps({"correct": "yes", "reason": "close enough"})
        client.complete_many([ChatRequest([{"role": "user", "content": f"grade {i}"}], json_schema=VERDICT_SCHEMA)
                              for i in range(3)], cache_if=usable_verdict)  # fmt: skip
    family.add("unusable_replies", 4)
    for path in _entries(folder):
        family.problem("unusable_replies_cached", f"{path.name}: {path.read_text()[:120]}")


def check_served(family: Family, work: Path) -> None:
    """The model behind the URL changes (its name, then its fingerprint): a rerun never gets the old replies."""
    folder = work / f"served-{uuid.uuid4().hex[:8]}"
    with probe_servers("127.0.0.1") as (server,):
        spec = ModelSpec("probe-reader", "openai-chat", server.base_url, "m", retries=0)
        rr = ModelSpec("probe-rr", "openai-rerank", server.base_url, "m", retries=0)
        ask = ChatRequest([{"role": "user", "content": "what is my cat called?"}])
        for model in ("probe-model-a", "probe-model-b"):
            server.model = model
            server.scores = lambda body, m=model: [float(m.endswith("b")), 0.5]
            client = ChatClient(spec, folder)
            reranker = open_reranker(rr, folder)
            for _ in range(2):
                family.add("served_checks", 2)
                text = client.complete(ask).text
                if not text.startswith(model):
                    family.problem("replies_of_another_model_served", f"chat: {model} answers, {text!r} served")
                scores = reranker.rerank("a cat", ["a cat", "a dog"]).scores
                if scores[0] != float(model.endswith("b")):
                    family.problem("replies_of_another_model_served", f"rerank: {model} answers, {scores} served")


def _facts_reply(body: dict) -> str:
    """The extractor's facts quote the user's word; a reader's reply echoes its prompt (the memories it read)."""
    found = re.search(r"\[(?P<id>[^\]]+)\] user: I'm (?P<word>\w+) now\.", body["messages"][-1]["content"])
    if found is None:
        return f"From what you told me: {body['messages'][-1]['content']}"
    return json.dumps({"facts": [{"subject": "user", "predicate": "diet", "value": found["word"],
                                  "quote": f"I'm {found['word']}", "event_id": found["id"], "negated": False}]})


def _in_flight(server: ProbeServer, call: Callable[[], Any]) -> threading.Thread:
    """`call` in a thread, returned once its request reached `server` (which holds it)."""
    seen = len(server.authorizations)
    thread = threading.Thread(target=lambda: _timed(call), daemon=True)
    thread.start()
    until = time.monotonic() + 10
    while len(server.authorizations) == seen and time.monotonic() < until:
        time.sleep(0.01)
    return thread


def check_erasure(family: Family, db: memlab.Store, embedder: memlab.Embedder, work: Path) -> None:
    """forget_user while the extractor's reply (FactMemory) or a reader's reply (derived from the user's events) is
    in flight: once the erasure returned, no reply of the user is stored."""
    folder = work / f"erasure-{uuid.uuid4().hex[:8]}"
    app = f"probe-model-safety-{uuid.uuid4().hex[:8]}"
    with probe_servers("127.0.0.1") as (server,):
        server.hold, server.content = 0.5, _facts_reply
        spec = ModelSpec("probe-extractor", "openai-chat", server.base_url, "m", retries=0)
        facts = memlab.FactMemory(db, embedder, memlab.LlmExtractor.from_spec(spec, cache_dir=folder))
        events = memlab.EventMemory(db, embedder)
        reader = ChatClient(ModelSpec("probe-reader", "openai-chat", server.base_url, "m", retries=0), folder)
        for memory, user in ((facts, "fact-user"), (events, "event-user")):
            word = f"zq{uuid.uuid4().hex[:10]}"
            session = memlab.Session(app, user, "s1", [memlab.Event("e0", "user", datetime.now(UTC),
                                                                    f"I'm {word} now.")])  # fmt: skip
            if memory is facts:
                thread = _in_flight(server, lambda s=session: facts.add_session(s))
            else:
                events.add_session(session)
                thread = _in_flight(server, lambda w=word, u=user: reader.complete(ChatRequest(
                    [{"role": "user", "content": f"Memories: I'm {w} now."}], refs=(user_ref(app, u),))))
            memory.forget_user(app, user)
            thread.join(timeout=10)
            family.add("erasure_races")
            erased = (word.encode(), user_ref(app, user).encode())
            held = [p.name for p in _entries(folder) if any(trace in p.read_bytes() for trace in erased)]
            if held or thread.is_alive():
                found = held or "the call never ended"
                family.problem("replies_cached_after_erasure", f"{type(memory).__name__}.forget_user: {found}")


def _remote_embedder(server: ProbeServer, cache: memlab.embedding.EmbeddingCache) -> memlab.embedding.CachedEmbedder:
    """A cached client of the server's embeddings (3-d vectors, so no probe for the dimension)."""
    return memlab.embedding.CachedEmbedder(memlab.embedding.OpenAICompatibleEmbedder(
        server.base_url, "m", api_key_env=None, retries=0, dimension=3, model_id="probe-remote-embedder"), cache)


def _answering(server: ProbeServer, texts: list[str]) -> np.ndarray:
    """The vectors of the model answering now, asked live (no cache)."""
    embedder = memlab.embedding.OpenAICompatibleEmbedder(server.base_url, "m", api_key_env=None, retries=0)
    return embedder.embed_documents(texts)


def check_served_vectors(family: Family, work: Path) -> None:
    """The embedding model behind the URL changes: a rerun (a new client on the same cache file) never gets the old
    model's vectors, nor does a client that learns of the swap from a live reply mid-run."""
    path = work / f"vectors-{uuid.uuid4().hex[:8]}" / "embeddings.sqlite"
    texts = ["my cat is called Miso", "the boiler is serviced every May"]
    with probe_servers("127.0.0.1") as (server,):
        for model in ("probe-model-a", "probe-model-b"):
            server.model = model
            rerun = _remote_embedder(server, memlab.embedding.EmbeddingCache(path))
            for _ in range(2):
                family.add("vector_checks")
                if not np.allclose(rerun.embed_documents(texts), _answering(server, texts), atol=1e-6):
                    family.problem("vectors_of_another_model_served", f"{model} answers; a rerun got other vectors")
        server.model = "probe-model-a"  # swapped back under the client that learned probe-model-b
        mixed = [*texts, f"a text no model embedded yet {uuid.uuid4().hex[:8]}"]
        family.add("vector_checks")
        if not np.allclose(rerun.embed_documents(mixed), _answering(server, mixed), atol=1e-6):
            family.problem("vectors_of_another_model_served", "a live reply named probe-model-a, yet probe-model-b's "
                           "cached vectors were served beside it")  # fmt: skip


class _WatchedCache(memlab.embedding.EmbeddingCache):
    """An embedding cache noting, for every store once `erased` is set, the texts it then holds."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.erased = False
        self.held_after: list[str] = []

    def put_many(self, model_id: str, texts: list[str], vectors: Any, *args: Any, **kwargs: Any) -> bool:
        stored = super().put_many(model_id, texts, vectors, *args, **kwargs)
        if self.erased:
            self.held_after += [texts[i] for i in sorted(self.get_many(model_id, list(texts)))]
        return stored


def check_vectors_erasure(family: Family, db: memlab.Store, work: Path) -> None:
    """forget_user while the user's texts are being embedded (by an add, by a caller naming whose texts they are)
    or a search's query is: once the erasure returned, none of those vectors is kept by any cache."""
    app = f"probe-vectors-{uuid.uuid4().hex[:8]}"
    with probe_servers("127.0.0.1") as (server,):
        cache = _WatchedCache(work / f"vectors-erasure-{uuid.uuid4().hex[:8]}" / "embeddings.sqlite")
        embedder = _remote_embedder(server, cache)
        events = memlab.EventMemory(db, embedder)
        events.add_session(memlab.Session(app, "kept", "s0", [memlab.Event("e0", "user", datetime.now(UTC),
                                                                           "I keep my bike in the shed.")]))
        server.hold = 0.5
        for case, user in (("add", "add-user"), ("caller", "caller-user"), ("query", "query-user")):
            text = f"My locker code at the {uuid.uuid4().hex[:8]} gym is in my notebook."
            if case == "add":
                session = memlab.Session(app, user, "s1", [memlab.Event("e0", "user", datetime.now(UTC), text)])
                thread = _in_flight(server, lambda s=session: events.add_session(s))
            elif case == "caller":
                thread = _in_flight(server, lambda u=user, t=text: _embed_for(embedder, app, u, t))
            else:
                thread = _in_flight(server, lambda u=user, t=text: events.search(app, u, t))
            events.forget_user(app, user)
            cache.erased = True
            thread.join(timeout=10)
            cache.erased = False
            family.add("vector_erasure_races")
            kept = bool(cache.held_after or cache.get_many(embedder.model_id, [text]))
            if case == "query":
                sent = len(server.authorizations)
                server.hold = 0.0
                embedder.embed_query(text, remember=False)
                kept, server.hold = len(server.authorizations) == sent, 0.5  # the query's vector was still there
            if kept or thread.is_alive():
                family.problem("vectors_cached_after_erasure", f"{case}: a vector of the erased user's text "
                               f"{'(the call never ended)' if thread.is_alive() else 'was kept'}")  # fmt: skip
            cache.held_after.clear()


def _embed_for(embedder: memlab.Embedder, app: str, user: str, text: str) -> Any:
    with deriving_from(scope_refs(app, user)):  # the caller says whose text it embeds
        return embedder.embed_documents([text])


def model_safety_family(db: memlab.Store, embedder: memlab.Embedder, work: Path) -> Family:
    """Every check above against servers of its own on 127.0.0.1 (and 127.0.0.2 where it answers)."""
    started = time.perf_counter()
    family = Family("model_safety", dict.fromkeys(FIGURES, 0), must_be_zero=list(FIGURES))
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    with _key_in_env() as (key_env, key):
        check_deadlines(family, key_env)
        check_bodies(family, key_env)
        check_origins(family, key_env, key)
    check_unusable(family, work)
    check_served(family, work)
    check_erasure(family, db, embedder, work)
    check_served_vectors(family, work)
    check_vectors_erasure(family, db, work)
    family.notes.append(f"deadline {DEADLINE:g} s (+{SLACK:g} s slack), reply bound {BOUND} bytes against "
                        f"{ERROR_BODY}-byte bodies; servers on the loopback interface only")  # fmt: skip
    family.seconds = time.perf_counter() - started
    return family
