"""POST JSON to an OpenAI-compatible endpoint (memlab.bounded_http): each attempt bounded by the model's timeout
(its whole reply, not a socket read), the call by its deadline (every attempt and wait), each reply by
max_reply_bytes, and no redirect followed to another origin (the key and the request stay with base_url's origin).
Retries with exponential backoff where another attempt can help (no connection, a timeout, HTTP 429 and 5xx) and
none where it cannot (any other 4xx, a redirect, a reply over the bound). Every failure is one ModelError line,
"<model name> (<base_url>): <what happened>. <fix>", redacted with the key sent as a known secret."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from memlab.bounded_http import (
    MAX_DELAY,
    Deadline,
    Redirected,
    StatusError,
    TimedOut,
    TooLarge,
    backoff_wait,
    post,
)
from memlab.models.errors import ModelError
from memlab.models.spec import ModelSpec
from memlab.safety.redact import redact

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
DETAIL_CHARS = 200
RESERVE = 0.05  # seconds: a retry the deadline leaves less than this for is not started


def api_key(spec: ModelSpec) -> str:
    """The key, read from the named environment variable at every call (never kept on an object)."""
    return os.environ.get(spec.api_key_env, "") if spec.api_key_env else ""


def post_json(spec: ModelSpec, path: str, body: dict[str, Any], *, on_send: Callable[[], None] | None = None,
              key: str | None = None) -> Any:  # fmt: skip
    """POST `body` to `{base_url}{path}` and return the parsed JSON reply; ModelError after the retries, or when
    spec.call_deadline() runs out. `on_send` is called before every HTTP attempt (the client's request counter);
    `key` overrides the spec's api_key_env (the LLM extractor's api_key= argument)."""
    key = api_key(spec) if key is None else key
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    payload = json.dumps(body).encode("utf-8")
    url = f"{spec.base_url}{path}"
    deadline = Deadline(spec.call_deadline())
    for attempt in range(spec.retries + 1):
        last = attempt == spec.retries
        if on_send is not None:
            on_send()
        try:
            raw = post(url, payload, headers, timeout=spec.timeout, deadline=deadline, max_bytes=spec.max_reply_bytes)
        except StatusError as exc:
            detail = _detail(exc.body, key)
            if exc.status in RETRY_STATUSES and not last and backoff_wait(_delay(spec, attempt), deadline, RESERVE):
                continue
            raise _http_error(spec, exc.status, detail, key, attempt + 1) from None
        except TooLarge as exc:
            raise error(spec, f"the reply to {path} is larger than max_reply_bytes ({exc.bound} bytes) and was "
                        "refused unread", "Raise max_reply_bytes in the model's entry of the models: section if "
                        "replies this large are expected", "malformed", key) from None  # fmt: skip
        except Redirected as exc:
            raise error(spec, f"the server redirected {path} (HTTP {exc.status}) to {exc.target}; memlab sends "
                        "requests and the key only to base_url's own scheme, host and port", "Set base_url to "
                        "the address it redirects to if you trust it", "http", key) from None  # fmt: skip
        except TimedOut as exc:
            if not last and not exc.by_deadline and backoff_wait(_delay(spec, attempt), deadline, RESERVE):
                continue
            raise _timeout(spec, exc, key, attempt + 1) from None
        except OSError as exc:
            if not last and backoff_wait(_delay(spec, attempt), deadline, RESERVE):
                continue
            raise _failure(spec, exc, key, attempt + 1) from None
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise error(spec, f"the reply to {path} is not JSON ({_detail(raw, key)!r})",
                        "Is base_url the API root (.../v1) of an OpenAI-compatible server?", "malformed",
                        key) from None  # fmt: skip
    raise AssertionError("unreachable")  # pragma: no cover


def error(spec: ModelSpec, what: str, fix: str, kind: str, key: str = "") -> ModelError:
    """The one-line message every model failure has."""
    where = spec.base_url or spec.path
    return ModelError(f"{spec.name} ({where}): {what}. {fix}", kind, [key or api_key(spec)])


def _timeout(spec: ModelSpec, exc: TimedOut, key: str, attempts: int) -> ModelError:
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if exc.by_deadline:
        return error(spec, f"no complete answer within the call's deadline of {spec.call_deadline():g} s{tries}",
                     "Raise the model's deadline (or its timeout and retries, which it is derived from), or lower "
                     "its concurrency", "timeout", key)  # fmt: skip
    return error(spec, f"no complete answer within {spec.timeout:g} s{tries}",
                 "The server may be overloaded or still loading the model: raise the model's timeout or lower "
                 "its concurrency", "timeout", key)  # fmt: skip


def _failure(spec: ModelSpec, reason: object, key: str, attempts: int) -> ModelError:
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    return error(spec, f"cannot reach the endpoint{tries} ({reason})",
                 "Start the server, or fix base_url in the models: section", "unreachable", key)  # fmt: skip


def _http_error(spec: ModelSpec, status: int, detail: str, key: str, attempts: int) -> ModelError:
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if status in (401, 403):
        fix = (f"The key in {spec.api_key_env} was refused" if key else
               "No key was sent: set api_key_env to the environment variable holding the key")  # fmt: skip
    elif status == 404:
        fix = "Check base_url (the API root, e.g. http://127.0.0.1:8080/v1) and that the server offers this route"
    elif status in RETRY_STATUSES:
        fix = "The server failed: check its log, or raise retries/backoff"
    else:
        fix = "The server refused the request: check model and the server's options"
    return error(spec, f"HTTP {status}{tries}: {detail!r}", fix, "http", key)


def _detail(raw: bytes, key: str) -> str:
    """A server's reply text, redacted (it may echo the Authorization header) and then cut to length."""
    return redact(" ".join(raw.decode("utf-8", "replace").split()), [key] if key else [])[:DETAIL_CHARS]


def _delay(spec: ModelSpec, attempt: int) -> float:
    return min(spec.backoff * 2**attempt, MAX_DELAY)
