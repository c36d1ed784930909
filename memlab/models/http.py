"""POST JSON to an OpenAI-compatible endpoint with the standard library: a timeout per attempt, retries with
exponential backoff where another attempt can help (no connection, a timeout, HTTP 429 and 5xx) and none where it
cannot (any other 4xx: the request itself is wrong). Every failure is one ModelError line,
"<model name> (<base_url>): <what happened>. <fix>", redacted with the key sent as a known secret."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from memlab.models.errors import ModelError
from memlab.models.spec import ModelSpec
from memlab.redact import redact

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_DELAY = 8.0  # seconds: one backoff never waits longer
DETAIL_CHARS = 200


def api_key(spec: ModelSpec) -> str:
    """The key, read from the named environment variable at every call (never kept on an object)."""
    return os.environ.get(spec.api_key_env, "") if spec.api_key_env else ""


def post_json(spec: ModelSpec, path: str, body: dict[str, Any], *, on_send: Callable[[], None] | None = None,
              key: str | None = None) -> Any:  # fmt: skip
    """POST `body` to `{base_url}{path}` and return the parsed JSON reply; ModelError after the retries.
    `on_send` is called before every HTTP attempt (the client's request counter); `key` overrides the spec's
    api_key_env (the LLM extractor's api_key= argument)."""
    key = api_key(spec) if key is None else key
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    payload = json.dumps(body).encode("utf-8")
    url = f"{spec.base_url}{path}"
    for attempt in range(spec.retries + 1):
        last = attempt == spec.retries
        if on_send is not None:
            on_send()
        try:
            request = urllib.request.Request(url, data=payload, headers=headers, method="POST")
            with urllib.request.urlopen(request, timeout=spec.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = _detail(exc.read(), key)
            if exc.code in RETRY_STATUSES and not last:
                time.sleep(_delay(spec, attempt))
                continue
            raise _http_error(spec, exc.code, detail, key, attempt + 1) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            if not last:
                time.sleep(_delay(spec, attempt))
                continue
            raise _failure(spec, reason, key, attempt + 1) from None
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


def _failure(spec: ModelSpec, reason: object, key: str, attempts: int) -> ModelError:
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if isinstance(reason, TimeoutError):
        return error(spec, f"no answer within {spec.timeout:g} s{tries}",
                     "The server may be overloaded or still loading the model: raise the model's timeout or lower "
                     "its concurrency", "timeout", key)  # fmt: skip
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
