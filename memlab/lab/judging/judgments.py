"""The judgments file (issue 25's shared format) read strictly against its queries and pool: one JSON object a line,

    {"query": "3f2a9c0d1e4b5a67", "event_id": "s1-e0", "relevance": 1, "assessor": "ana",
     "time": "2026-12-01T10:00:00+00:00"}

A skipped hit writes no line. An optional `session` names the event's session where the same event id is pooled
from two sessions of the query's user. Every judgment must be of a query in the query file and an event its pool
holds: a judgment of anything else is a mistake (another pool, a typo), and each error names the line and fix."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memlab.errors import FixtureError
from memlab.lab.identity import EventKey
from memlab.lab.judging.query_file import json_lines, parse_time
from memlab.lab.suggest import unknown_keys

_REQUIRED = {"query", "event_id", "relevance", "assessor", "time"}
_KEYS = {*_REQUIRED, "session"}


@dataclass(frozen=True)
class Judgment:
    """One assessor's verdict on one pooled event of one query."""

    query: str
    event: EventKey  # (session, event id) in the query's user's memory
    relevance: int
    assessor: str
    time: datetime
    line: int
    file: str = ""  # the judgments file it came from (a judged set may read several)


def _session(path: Path, number: int, raw: dict, hits: dict[str, list[str | None]]) -> EventKey:
    """The judged event's (session, id): the pool's session of that id, or the line's `session` among them."""
    event_id = raw["event_id"]
    sessions = hits.get(event_id)
    if not sessions:
        raise FixtureError(f"{path}:{number}: event {event_id!r} was not pooled for query {raw['query']!r}; judge "
                           "only the hits of this pool (a judgment from another pool belongs with that pool's "
                           "file), or pool again with the systems that found it")  # fmt: skip
    given = raw.get("session")
    if given is not None:
        if given not in sessions:
            raise FixtureError(f"{path}:{number}: event {event_id!r} of session {given!r} was not pooled for query "
                               f"{raw['query']!r} (pooled from session(s) {sessions}); fix `session`")  # fmt: skip
        return given, event_id
    if len(sessions) > 1:
        raise FixtureError(f"{path}:{number}: event id {event_id!r} is pooled from sessions {sessions} for query "
                           f"{raw['query']!r}; add \"session\" to say which one was judged")  # fmt: skip
    return sessions[0], event_id


def _judgment(path: Path, number: int, raw: Any, pooled: dict[str, dict[str, list[str | None]]]) -> Judgment:
    where = f"{path}:{number}"
    if not isinstance(raw, dict):
        raise FixtureError(f"{where}: expected a JSON object per line, got {type(raw).__name__}")
    extra, missing = set(raw) - _KEYS, sorted(_REQUIRED - set(raw))
    if extra:
        raise FixtureError(f"{where}: {unknown_keys(extra, _KEYS)}; allowed: {sorted(_KEYS)}")
    if missing:
        raise FixtureError(f"{where}: missing {missing}; a judgment is {{query, event_id, relevance, assessor, "
                           "time}")  # fmt: skip
    for key in ("query", "event_id", "assessor"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise FixtureError(f"{where}: `{key}` must be a non-empty string, got {raw[key]!r}")
    relevance = raw["relevance"]
    if isinstance(relevance, bool) or relevance not in (0, 1):
        raise FixtureError(f"{where}: `relevance` must be 0 (not relevant) or 1 (relevant), got {relevance!r}; a "
                           "skipped hit writes no line")  # fmt: skip
    if raw["query"] not in pooled:
        raise FixtureError(f"{where}: query {raw['query']!r} is not in the query file (or not in the pool); fix "
                           "`query`, or add the query to the query file and pool it")  # fmt: skip
    key = _session(path, number, raw, pooled[raw["query"]])
    return Judgment(raw["query"], key, int(relevance), raw["assessor"], parse_time(raw["time"], where, "time"),
                    number, str(path))  # fmt: skip


def read_judgments(path: str | Path | Sequence[str | Path], pooled: dict[str, dict[str, list[str | None]]], *,
                   assessor: str | None = None) -> dict[str, dict[EventKey, Judgment]]:  # fmt: skip
    """query id -> event -> the judgment that counts. `path` is one judgments file or several (a person's and the
    model's), read in order as one. `pooled` is query id -> event id -> the sessions the pool holds it from
    (queries missing from the query file are left out of it by the caller). With `assessor`, only that
    assessor's lines count. One assessor judging an event again replaces the earlier verdict (the page exports
    the latest); two assessors disagreeing on an event is refused unless `assessor` chooses one."""
    paths = [Path(p) for p in ([path] if isinstance(path, str | Path) else path)]
    out: dict[str, dict[EventKey, Judgment]] = {}
    for path, number, raw in ((p, n, r) for p in paths for n, r in json_lines(p)):
        judgment = _judgment(path, number, raw, pooled)
        if assessor is not None and judgment.assessor != assessor:
            continue
        before = out.setdefault(judgment.query, {}).get(judgment.event)
        if before is not None and before.assessor != judgment.assessor and before.relevance != judgment.relevance:
            raise FixtureError(f"{path}:{number}: {judgment.assessor!r} judged event {judgment.event[1]!r} of query "
                               f"{judgment.query!r} {judgment.relevance}, {before.assessor!r} judged it "
                               f"{before.relevance} on {_where(before, path)}; set `assessor:` in the data set "
                               "entry to choose whose judgments count")  # fmt: skip
        out[judgment.query][judgment.event] = judgment
    if not out:
        who = f" by assessor {assessor!r}" if assessor is not None else ""
        files = ", ".join(map(str, paths))
        raise FixtureError(f"{files}: no judgments{who}; judge the pool in judge.html and export the file")
    return out


def _where(judgment: Judgment, reading: Path) -> str:
    """Where an earlier judgment stands, as seen from the file being read: its line, or file and line."""
    return f"line {judgment.line}" if judgment.file == str(reading) else f"{judgment.file}:{judgment.line}"


def write_judgments(lines: list[dict[str, Any]], path: str | Path) -> Path:
    """Judgments-file lines as JSON Lines (UTF-8, one judgment a line)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path
