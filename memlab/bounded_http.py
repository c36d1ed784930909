"""One bounded HTTP POST for every remote model memlab calls (chat, re-rank, embeddings), with the standard library
(urllib, so proxies from the environment and the default TLS checks still apply).

A socket timeout bounds each socket operation, not a reply: a server that trickles one byte a second keeps a
timeout of 1 s from ever firing. Here each attempt has a total time (a watchdog shuts the connection down when it
runs out, whatever the socket is doing), each reply a size bound (a body larger than it is refused before it is
read whole, error bodies included), and a redirect is never followed to another origin: the request holds the API
key and users' words, which go only to the configured base_url's scheme, host and port."""

from __future__ import annotations

import contextlib
import functools
import http.client
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

DEFAULT_MAX_REPLY_BYTES = 4 << 20  # a chat or re-rank reply is a few KB; 4 MiB leaves room and bounds memory
ERROR_BODY_BYTES = 64 << 10  # an error's body is shown cut to a line: reading more only costs memory
MAX_DELAY = 8.0  # seconds: one backoff wait never lasts longer
MAX_REDIRECTS = 3
CHUNK = 64 << 10
SLACK = 0.01  # seconds: a deadline this close to an attempt's timeout is that timeout (the clock moved meanwhile)


def default_deadline(timeout: float, retries: int, backoff: float) -> float:
    """A call's total time when none is configured: every attempt's timeout and every backoff wait between them."""
    return timeout * (retries + 1) + sum(min(backoff * 2**i, MAX_DELAY) for i in range(retries))


class Deadline:
    """The moment a whole call (every attempt, every wait) must be over."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return self.at - time.monotonic()


class TimedOut(Exception):
    """The attempt did not complete within `limit` seconds (`by_deadline`: the call's deadline set the limit)."""

    def __init__(self, limit: float, by_deadline: bool) -> None:
        super().__init__(f"no complete reply within {limit:g} s")
        self.limit, self.by_deadline = limit, by_deadline


class TooLarge(Exception):
    """The reply's body is larger than `bound` bytes (declared by Content-Length, or seen while reading)."""

    def __init__(self, bound: int) -> None:
        super().__init__(f"reply larger than {bound} bytes")
        self.bound = bound


class Redirected(Exception):
    """The server redirected to `target` (another origin, or a redirect that would turn the POST into a GET)."""

    def __init__(self, status: int, target: str) -> None:
        super().__init__(f"HTTP {status} redirect to {target}")
        self.status, self.target = status, target


class StatusError(Exception):
    """A non-2xx status with the start of its body (at most ERROR_BODY_BYTES) and the reply's headers."""

    def __init__(self, status: int, body: bytes, headers: Any) -> None:
        super().__init__(f"HTTP {status}")
        self.status, self.body, self.headers = status, body, headers


def origin(url: str) -> str:
    """scheme://host:port of a URL (the port spelled out), never any user:password@ part."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


class _Watch:
    """Shuts every socket of one attempt down when its time is up: a blocked read then returns at once."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def attach(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            if not self.expired:
                return
        _shutdown(sock)

    def _fire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)

    def stop(self) -> None:
        self._timer.cancel()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


def _watched(base: type[http.client.HTTPConnection]) -> Callable[..., http.client.HTTPConnection]:
    """A connection class of `base` whose sockets (the raw one, then the TLS one) the request's watch can shut."""

    class Watched(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, watch: _Watch, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._watch = watch
            create = self._create_connection

            def connect(*a: Any, **k: Any) -> socket.socket:
                sock = create(*a, **k)
                watch.attach(sock)
                return sock

            self._create_connection = connect

        def connect(self) -> None:
            super().connect()
            self._watch.attach(self.sock)

    return Watched


_HTTP = _watched(http.client.HTTPConnection)
_HTTPS = _watched(http.client.HTTPSConnection)


class _Request(urllib.request.Request):
    watch: _Watch


class _HttpHandler(urllib.request.HTTPHandler):
    def http_open(self, req: _Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_HTTP, watch=req.watch), req)


class _HttpsHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: _Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_HTTPS, watch=req.watch), req, context=self._context)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects come back as an HTTPError with their status; `post` decides (same origin only)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_HttpHandler, _HttpsHandler, _NoRedirect)


def post(url: str, payload: bytes, headers: dict[str, str], *, timeout: float, deadline: Deadline,
         max_bytes: int) -> bytes:  # fmt: skip
    """One attempt: POST `payload` and return the body of a 2xx reply. The attempt ends within min(timeout, what
    the deadline leaves) (TimedOut), a body over `max_bytes` raises TooLarge, a non-2xx StatusError with the start
    of its body. A 307/308 to the same origin is followed (POST kept, at most MAX_REDIRECTS); any other redirect
    raises Redirected and nothing is sent there. Connection failures raise OSError (URLError's reason)."""
    left = deadline.left()
    limit, by_deadline = min(timeout, max(left, 0.0)), left < timeout - SLACK
    if limit <= 0:
        raise TimedOut(deadline.seconds, True)
    watch = _Watch(limit)
    try:
        for _ in range(MAX_REDIRECTS + 1):
            request = _Request(url, data=payload, headers=headers, method="POST")
            request.watch = watch
            try:
                with _OPENER.open(request, timeout=limit) as response:
                    body = _read(response, max_bytes)
                if watch.expired:
                    raise TimedOut(limit, by_deadline)
                return body
            except urllib.error.HTTPError as exc:
                if watch.expired:
                    raise TimedOut(limit, by_deadline) from None
                with exc:
                    if 300 <= exc.code < 400:
                        target = urllib.parse.urljoin(url, exc.headers.get("Location") or "")
                        if exc.code in (307, 308) and origin(target) == origin(url):
                            url = target
                            continue
                        raise Redirected(exc.code, target if origin(target) == origin(url) else origin(target)
                                         ) from None  # fmt: skip
                    body = _read_error(exc)
                    raise StatusError(exc.code, body, exc.headers) from None
            except (TimeoutError, urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                if watch.expired or isinstance(exc, TimeoutError) or \
                        isinstance(getattr(exc, "reason", None), TimeoutError):  # fmt: skip
                    raise TimedOut(limit, by_deadline) from None
                if isinstance(exc, urllib.error.URLError):
                    raise (exc.reason if isinstance(exc.reason, OSError) else ConnectionError(str(exc.reason))
                           ) from None  # fmt: skip
                if isinstance(exc, OSError):  # RemoteDisconnected is a ConnectionResetError
                    raise
                raise ConnectionError(f"the reply broke off ({type(exc).__name__})") from None
        raise Redirected(307, f"{origin(url)} (more than {MAX_REDIRECTS} redirects)")
    finally:
        watch.stop()


def _read(response: Any, max_bytes: int) -> bytes:
    """The body, refused (TooLarge) as soon as it is known to exceed `max_bytes`: never more than that is kept."""
    declared = response.headers.get("Content-Length")
    if declared and declared.strip().isdigit() and int(declared) > max_bytes:
        raise TooLarge(max_bytes)
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = response.read(min(CHUNK, max_bytes + 1 - total))
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:
            raise TooLarge(max_bytes)
        chunks.append(chunk)


def _read_error(exc: urllib.error.HTTPError) -> bytes:
    """At most ERROR_BODY_BYTES of an error's body (only its start is ever shown)."""
    try:
        return exc.read(ERROR_BODY_BYTES) or b""
    except (OSError, http.client.HTTPException, ValueError):
        return b""


def backoff_wait(delay: float, deadline: Deadline, reserve: float) -> bool:
    """Sleep `delay` (at most MAX_DELAY) before another attempt when the deadline still leaves `reserve` seconds
    after it for that attempt; False (no sleep) when it does not, and the caller stops retrying."""
    delay = min(max(delay, 0.0), MAX_DELAY)
    if deadline.left() - delay < reserve:
        return False
    time.sleep(delay)
    return True
