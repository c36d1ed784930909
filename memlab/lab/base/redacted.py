"""Every file memlab writes into a run folder is written through here, so every string in it (questions, answers,
event texts, ids, names, config values, table cells, report lines) has passed the redactor that error messages
pass (`memlab.safety.redact`: the events' secret filter plus DSN, URL and header forms). A run folder is shared more
widely than the database it measured: a credential a user typed into a question must not ride along.

A redacted id stays distinct from every other id (a short keyed digest is appended, the key is random per
process), so labels and runs written by one run still join; the digest cannot be checked against a guessed
password from another process."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memlab.safety.redact import HIDDEN, REDACTED, needs_redaction, redact

_KEY = os.urandom(16)
_SECRET_KEY_NAMES = re.compile(r"(?:^|[_-])(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|"
                               r"private[_-]?key|authorization|credentials?)$", re.I)  # fmt: skip


_MEMO: dict[str, str] = {}  # text -> as written; ids repeat across a run's files
_MEMO_LIMIT = 1_000_000
_BATCH_CHARS = 50_000


def clean_str(text: str) -> str:
    """`text` as a run folder may hold it."""
    out = _MEMO.get(text)
    if out is None:
        out = redact(text)
        if out != text and not re.search(r"\s", text):  # an id or a name: keep distinct values distinct
            out = _tagged(out, hmac.new(_KEY, text.encode(), hashlib.sha256).hexdigest())
        _remember(text, out)
    return out


def _tagged(redacted: str, digest: str) -> str:
    """`redacted` with a short digest that keeps it distinct, in a form the secret filter does not take for a
    credential itself (dotted groups: no base64, no token shape); the first candidate the filter passes."""
    tag = f" (#{digest[:4]}.{digest[4:8]}.{digest[8:12]})"
    for candidate in (f"{redacted}{tag}", f"{REDACTED}{tag}"):
        if not needs_redaction(candidate):
            return candidate
    return REDACTED


def _remember(text: str, out: str) -> None:
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    _MEMO[text] = out


def _settle(texts: list[str]) -> None:
    """Clean many texts with few scans: a batch joined by newlines that the redactor leaves unchanged is clean
    line by line too (its detectors are local to a line or its neighbours; a finding that spans two texts only
    splits the batch). A changed batch is halved until each text is settled alone."""
    if not texts:
        return
    joined = "\n".join(texts)
    if len(texts) == 1 or needs_redaction(joined):
        if len(texts) == 1:
            clean_str(texts[0])
            return
        half = len(texts) // 2
        _settle(texts[:half])
        _settle(texts[half:])
        return
    for t in texts:
        _remember(t, t)


def clean_all(texts: set[str]) -> dict[str, str]:
    """Each text -> as a run folder may hold it (batched: a run's files hold many thousands of ids)."""
    todo = [t for t in texts if t not in _MEMO]
    batch: list[str] = []
    size = 0
    for t in todo:
        batch.append(t)
        size += len(t) + 1
        if size >= _BATCH_CHARS:
            _settle(batch)
            batch, size = [], 0
    _settle(batch)
    return {t: clean_str(t) for t in texts}


def clean(value: Any, key: str = "") -> Any:
    """Strings, and strings inside lists, tuples, arrays and dicts, cleaned; a dict value under a key that names
    a secret (password, api_key, token ...) is hidden whatever it looks like."""
    if isinstance(value, str):
        return HIDDEN if value and _SECRET_KEY_NAMES.search(key) else clean_str(value)
    if isinstance(value, dict):
        return {clean_str(k) if isinstance(k, str) else k: clean(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(clean(v, key) for v in value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.array([clean(v, key) for v in value], dtype=object)
    return value


def clean_deep(data: Any) -> Any:
    """`clean(data)` for a big nested value (a page's data): its texts are scanned in batches first."""
    clean_all(set(_strings([data])))
    return clean(data)


def _strings(values: Any) -> Iterator[str]:
    for v in values:
        if isinstance(v, str):
            yield v
        elif isinstance(v, list | tuple | np.ndarray):
            yield from _strings(v)
        elif isinstance(v, dict):
            yield from _strings(v.keys())
            yield from _strings(v.values())


def _uniques(column: pd.Series) -> set[str]:
    """The distinct texts of a column of texts or of lists of texts (fast paths for both), else of anything."""
    values = column.dropna()
    kinds = set(values.map(type))
    if kinds <= {str}:
        return set(values.unique())
    if kinds <= {list, np.ndarray}:
        flat = set(itertools.chain.from_iterable(values))
        if all(isinstance(v, str) for v in flat):
            return flat
    return set(_strings(values))


def clean_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with every text cell (and text inside list cells) cleaned; column names too. Numbers untouched.
    A column none of whose texts changes is left as it is (the common case costs one batched scan)."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col].dtype):
            uniques = _uniques(out[col])
            cleaned = clean_all(uniques)
            if _SECRET_KEY_NAMES.search(str(col)) or any(k != v for k, v in cleaned.items()):
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
    path.write_text(json.dumps(clean_deep(data), **dumps) + "\n", encoding="utf-8")
    return path
