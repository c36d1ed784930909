"""Every file memlab writes into a run folder is written through here, so every string in it (questions, answers,
event texts, ids, names, config values, table cells, report lines) has passed the redactor that error messages
pass (`memlab.redact`: the events' secret filter plus DSN, URL and header forms). A run folder is shared more
widely than the database it measured: a credential a user typed into a question must not ride along.

A redacted id stays distinct from every other id (a short keyed digest is appended, the key is random per
process), so labels and runs written by one run still join; the digest cannot be checked against a guessed
password from another process."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memlab.redact import HIDDEN, redact

_KEY = os.urandom(16)
_SECRET_KEY_NAMES = re.compile(r"(?:^|[_-])(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|"
                               r"private[_-]?key|authorization|credentials?)$", re.I)  # fmt: skip


@lru_cache(maxsize=1 << 17)
def clean_str(text: str) -> str:
    """`text` as a run folder may hold it."""
    out = redact(text)
    if out != text and not re.search(r"\s", text):  # an id or a name: keep distinct values distinct
        out = f"{out}#{hmac.new(_KEY, text.encode(), hashlib.sha256).hexdigest()[:10]}"
    return out


def clean(value: Any, key: str = "") -> Any:
    """Strings, and strings inside lists, tuples, arrays and dicts, cleaned; a dict value under a key that names
    a secret (password, api_key, token ...) is hidden whatever it looks like."""
    if isinstance(value, str):
        return HIDDEN if value and _SECRET_KEY_NAMES.search(key) else clean_str(value)
    if isinstance(value, dict):
        return {k: clean(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(clean(v, key) for v in value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.array([clean(v, key) for v in value], dtype=object)
    return value


def clean_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with every text cell (and text inside list cells) cleaned; column names too. Numbers untouched."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col].dtype):
            out[col] = out[col].map(lambda v, c=str(col): clean(v, c))
    out.columns = [clean_str(c) if isinstance(c, str) else c for c in out.columns]
    return out


def write_parquet(frame: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_frame(frame).to_parquet(path, index=False)
    return path


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_frame(frame).to_csv(path, index=False)
    return path


def clean_lines(text: str) -> str:
    """A document (report.md, HTML) cleaned line by line: a flagged line does not withhold the whole file."""
    return "\n".join(clean_str(line) if line else line for line in text.split("\n"))


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(clean_lines(text), encoding="utf-8")
    return path


def write_json(path: Path, data: Any, **dumps: Any) -> Path:
    """JSON of `data` with its values cleaned (before encoding, so the escaping of the output stays valid)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(clean(data), **dumps) + "\n", encoding="utf-8")
    return path
