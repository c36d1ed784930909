"""The query file (the format sampling, pooling and the judged data set share) read strictly: one JSON object a line,

    {"query_id": "3f2a9c0d1e4b5a67", "app": "my-agent", "user": "u1", "text": "Where do I live?",
     "asked_at": "2026-06-01T12:00:00+00:00", "origin": "logged"}

with optional `generator`, `stratum`, `empty` and `memory_size`. Pooling and the judged data set read it; a bad
line raises an FixtureError naming the file, the line and the fix, and nothing is returned from a bad file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memlab.errors import FixtureError
from memlab.lab.base.json_bounds import loads
from memlab.lab.base.suggest import unknown_keys
from memlab.lab.datasets.judged.sampling import QUERY_KEYS

ORIGINS = ("logged", "file", "generated")
_KEYS = set(QUERY_KEYS)


@dataclass(frozen=True)
class Query:
    """One query to judge: who asked it, what and when, and where it came from (a log, a file, a generator)."""

    query_id: str
    app: str
    user: str
    text: str
    asked_at: datetime
    origin: str
    generator: str | None = None
    stratum: str | None = None

    def record(self) -> dict[str, Any]:
        """The query as the pool file and judge.html carry it."""
        out = {"query_id": self.query_id, "app": self.app, "user": self.user, "text": self.text,
               "asked_at": self.asked_at.isoformat(), "origin": self.origin}  # fmt: skip
        return out | {k: v for k, v in (("generator", self.generator), ("stratum", self.stratum)) if v is not None}


def parse_time(value: Any, where: str, key: str) -> datetime:
    """An ISO 8601 time with a zone, or an FixtureError naming `where` and the fix."""
    try:
        at = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        at = None
    if at is None or at.tzinfo is None:
        raise FixtureError(f"{where}: `{key}` must be an ISO 8601 time with a zone like '2026-06-01T12:00:00+00:00', "
                         f"got {value!r}")  # fmt: skip
    return at


def _query(raw: Any, where: str) -> Query:
    if not isinstance(raw, dict):
        raise FixtureError(f"{where}: expected a JSON object per line, got {type(raw).__name__}")
    extra = set(raw) - _KEYS
    if extra:
        raise FixtureError(f"{where}: {unknown_keys(extra, _KEYS)}; allowed: {sorted(_KEYS)}")
    for key in ("query_id", "app", "user", "text", "origin"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise FixtureError(f"{where}: `{key}` must be a non-empty string, got {raw.get(key)!r}")
    if raw["origin"] not in ORIGINS:
        raise FixtureError(f"{where}: `origin` must be one of {ORIGINS}, got {raw['origin']!r}")
    return Query(raw["query_id"], raw["app"], raw["user"], raw["text"], parse_time(raw.get("asked_at"), where,
                 "asked_at"), raw["origin"], raw.get("generator"), raw.get("stratum"))  # fmt: skip


def json_lines(path: Path) -> list[tuple[int, Any]]:
    """(line number, parsed object) of every non-blank line; a line that is not JSON names itself."""
    out = []
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                out.append((number, loads(text, f"{path}:{number}")))
            except json.JSONDecodeError as exc:
                raise FixtureError(f"{path}:{number}: not JSON ({exc.msg}); write one JSON object per line") from None
    return out


def read_queries(path: str | Path) -> list[Query]:
    """Every query of a query file, in file order; a query id may appear once."""
    path = Path(path)
    queries: list[Query] = []
    seen: dict[str, int] = {}
    for number, raw in json_lines(path):
        query = _query(raw, f"{path}:{number}")
        if query.query_id in seen:
            raise FixtureError(f"{path}:{number}: query_id {query.query_id!r} repeats line {seen[query.query_id]}; "
                             "each query needs its own id")  # fmt: skip
        seen[query.query_id] = number
        queries.append(query)
    if not queries:
        raise FixtureError(f"{path}: no queries; write one JSON object per line (query_id, app, user, text, asked_at, "
                         "origin)")  # fmt: skip
    return queries
