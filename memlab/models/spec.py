"""The `models:` section: each entry names one model and how to reach it. Checked once when the config loads, so
a typo, a missing key or a key written into the config fails before any run starts, with the entry named."""

from __future__ import annotations

import math
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from memlab.bounded_http import DEFAULT_MAX_REPLY_BYTES, default_deadline
from memlab.errors import ConfigError

MODEL_KINDS = ("openai-chat", "openai-rerank", "cross-encoder")
# the settings that size the work a model does or waits for, bounded: a retry count or a timeout of a billion is a
# run that never ends, a concurrency of a million a thread per request
LIMITS = {"timeout": 3600.0, "backoff": 60.0, "retries": 10, "concurrency": 64, "max_tokens": 100_000}
OPENAI_KINDS = ("openai-chat", "openai-rerank")


@dataclass(frozen=True)
class ModelSpec:
    """One configured model. `api_key_env` is the NAME of the environment variable holding the key: a key never
    sits in a config file (configs are copied into run folders)."""

    name: str
    kind: str
    base_url: str = ""  # openai-*: e.g. http://127.0.0.1:8080/v1 (no user:pass@)
    model: str = ""  # the model name sent in requests (openai-*)
    path: str = ""  # cross-encoder: a local CrossEncoder folder
    api_key_env: str = ""
    timeout: float = 60.0  # seconds one attempt may take, its whole reply read (not per socket read)
    retries: int = 2
    backoff: float = 0.5
    concurrency: int = 4
    cache: bool = True
    max_tokens: int | None = None
    temperature: float = 0.0
    deadline: float | None = None  # seconds the whole call may take, retries and waits included (None: derived)
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES  # a larger reply is refused, never read whole

    def call_deadline(self) -> float:
        """The configured deadline, or every attempt's timeout plus the backoff waits between them."""
        return self.deadline if self.deadline is not None else default_deadline(self.timeout, self.retries,
                                                                                 self.backoff)  # fmt: skip


KEYS = tuple(f.name for f in fields(ModelSpec))


def parse_models(entries: Any, source: str, *, root: str | Path | None = None) -> dict[str, ModelSpec]:
    """The `models:` list (or a mapping name -> entry) as specs by name. `source` names where it came from (a
    config file) for the messages; a relative cross-encoder path is read against `root` when given."""
    if entries is None:
        return {}
    if isinstance(entries, Mapping):
        entries = [{"name": name, **entry} if isinstance(entry, Mapping) else entry
                   for name, entry in entries.items()]  # fmt: skip
    if not isinstance(entries, list):
        raise ConfigError(f"{source}: models must be a list of entries such as "
                          "[{name: reader, kind: openai-chat, base_url: http://127.0.0.1:8080/v1, model: m}], "
                          f"not {type(entries).__name__}.")  # fmt: skip
    specs: dict[str, ModelSpec] = {}
    for i, entry in enumerate(entries):
        spec = _parse_entry(entry, f"{source}: models[{i}]", root)
        if spec.name in specs:
            raise ConfigError(f"{source}: models[{i}]: the name {spec.name!r} is used twice; give each model its "
                              "own name.")  # fmt: skip
        specs[spec.name] = spec
    return specs


def _parse_entry(entry: Any, where: str, root: str | Path | None) -> ModelSpec:
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be a mapping with name and kind, not {type(entry).__name__}.")
    unknown = sorted(str(k) for k in entry if k not in KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; a model entry takes {', '.join(KEYS)}.")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: give the model a name (name: reader), used to refer to it elsewhere.")
    where = f"{where} ({name})"
    kind = entry.get("kind")
    if kind not in MODEL_KINDS:
        raise ConfigError(f"{where}: unknown kind {kind!r}; use one of {', '.join(MODEL_KINDS)}.")
    values: dict[str, Any] = {"name": name.strip(), "kind": kind}
    for key in ("base_url", "model", "path", "api_key_env"):
        value = entry.get(key, "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {key} must be a string, not {type(value).__name__}.")
        values[key] = value.strip()
    if kind in OPENAI_KINDS:
        _check_openai(values, where)
    else:
        values["path"] = _check_folder(values["path"], where, root)
    if values["api_key_env"] and not os.environ.get(values["api_key_env"]):
        raise ConfigError(f"{where}: api_key_env names the environment variable {values['api_key_env']}, which is "
                          f"not set; export {values['api_key_env']}=<key> before the run, or drop api_key_env for "
                          "a server without a key.")  # fmt: skip
    values["timeout"] = _number(entry, "timeout", 60.0, where, positive=True)
    values["backoff"] = _number(entry, "backoff", 0.5, where, positive=False)
    values["temperature"] = _number(entry, "temperature", 0.0, where, positive=False)
    values["retries"] = _integer(entry, "retries", 2, where, minimum=0)
    values["concurrency"] = _integer(entry, "concurrency", 4, where, minimum=1)
    deadline = entry.get("deadline")
    values["deadline"] = None if deadline is None else _number(entry, "deadline", 0.0, where, positive=True)
    values["max_reply_bytes"] = _integer(entry, "max_reply_bytes", DEFAULT_MAX_REPLY_BYTES, where, minimum=1024)
    max_tokens = entry.get("max_tokens")
    values["max_tokens"] = None if max_tokens is None else _integer(entry, "max_tokens", 0, where, minimum=1)
    for key, limit in LIMITS.items():
        if values[key] is not None and values[key] > limit:
            unit = " seconds" if isinstance(limit, float) else ""
            raise ConfigError(f"{where}: {key} must be at most {limit:,g}{unit}, not {values[key]!r}; it sizes the "
                              "work (or the wait) of every request.")  # fmt: skip
    cache = entry.get("cache", True)
    if not isinstance(cache, bool):
        raise ConfigError(f"{where}: cache must be true or false, not {cache!r}.")
    values["cache"] = cache
    return ModelSpec(**values)


def _check_openai(values: dict[str, Any], where: str) -> None:
    url = values["base_url"]
    if not url or not values["model"]:
        missing = " and ".join(k for k in ("base_url", "model") if not values[k])
        raise ConfigError(f"{where}: a {values['kind']} model needs {missing}, e.g. base_url: "
                          "http://127.0.0.1:8080/v1 and model: the name the server knows it by.")  # fmt: skip
    parts = urllib.parse.urlsplit(url)
    if "@" in parts.netloc:
        raise ConfigError(f"{where}: base_url must not hold a user:password@ part (it would end up in messages, "
                          "logs and run folders); put the key in an environment variable and name it with "
                          "api_key_env.")  # fmt: skip
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{where}: base_url {url!r} is not an http(s) URL; give the API root, e.g. "
                          "http://127.0.0.1:8080/v1.")  # fmt: skip
    values["base_url"] = url.rstrip("/")
    if values["path"]:
        raise ConfigError(f"{where}: path is for cross-encoder models; a {values['kind']} model is reached by "
                          "base_url.")  # fmt: skip


def _check_folder(path: str, where: str, root: str | Path | None) -> str:
    if not path:
        raise ConfigError(f"{where}: a cross-encoder model needs path: the local folder of a sentence-transformers "
                          "CrossEncoder (memlab never downloads models at run time).")  # fmt: skip
    folder = Path(path).expanduser()
    if not folder.is_absolute() and root is not None:
        folder = Path(root) / folder
    if not folder.is_dir():
        state = "is not a folder" if folder.exists() else "does not exist"
        raise ConfigError(f"{where}: path {str(folder)!r} {state}; give the folder a CrossEncoder was saved to "
                          "(CrossEncoder.save).")  # fmt: skip
    return str(folder.resolve())


def _number(entry: Mapping, key: str, default: float, where: str, *, positive: bool) -> float:
    value = entry.get(key, default)
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        bound = "a positive" if positive else "a non-negative"
        raise ConfigError(f"{where}: {key} must be {bound} number of seconds, not {value!r}."
                          if key != "temperature" else f"{where}: temperature must be {bound} number, not "
                          f"{value!r}.")  # fmt: skip
    return float(value)


def _integer(entry: Mapping, key: str, default: int, where: str, *, minimum: int) -> int:
    value = entry.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{where}: {key} must be a whole number >= {minimum}, not {value!r}.")
    return value
