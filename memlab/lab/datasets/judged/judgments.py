"""The judgments file (what every assessor writes and a judged data set reads) read strictly against its queries
and pool: one JSON object a line,

    {"query": "3f2a9c0d1e4b5a67", "event_id": "s1-e0", "relevance": 1, "assessor": "ana",
     "time": "2026-12-01T10:00:00+00:00"}

A skipped hit writes no line. An optional `session` names the event's session where the same event id is pooled
from two sessions of the query's user. Every judgment must be of a query in the query file and an event its pool
holds: a judgment of anything else is a mistake (another pool, a typo), and each error names the line and fix.
What counts is decided on the set of judgments, never on their order: an assessor's latest verdict by `time`,
and a disagreement between assessors is one whichever line comes first."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memlab.errors import FixtureError
from memlab.lab.base.identity import EventKey
from memlab.lab.base.suggest import unknown_keys
from memlab.lab.datasets.judged.queries import json_lines, parse_time

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
    model's), read as one. `pooled` is query id -> event id -> the sessions the pool holds it from (queries
    missing from the query file are left out of it by the caller). With `assessor`, only that assessor's lines
    count. What counts is decided on the set of lines, whatever their order or file: each assessor's verdict on
    an event is their latest by `time` (judging again replaces a verdict); two assessors whose verdicts differ
    are refused unless `assessor` chooses one. Queries and events come in a fixed order (query id, then event)."""
    paths = [Path(p) for p in ([path] if isinstance(path, str | Path) else path)]
    lines: dict[str, dict[EventKey, list[Judgment]]] = {}
    for path, number, raw in ((p, n, r) for p in paths for n, r in json_lines(p)):
        judgment = _judgment(path, number, raw, pooled)
        if assessor is None or judgment.assessor == assessor:
            lines.setdefault(judgment.query, {}).setdefault(judgment.event, []).append(judgment)
    if not lines:
        who = f" by assessor {assessor!r}" if assessor is not None else ""
        files = ", ".join(map(str, paths))
        raise FixtureError(f"{files}: no judgments{who}; judge the pool in judge.html and export the file")
    place = {str(p): i for i, p in enumerate(paths)}
    return {query: {event: _counted(lines[query][event], place) for event in sorted(lines[query], key=_event_order)}
            for query in sorted(lines)}  # fmt: skip


def _event_order(key: EventKey) -> tuple[str, str]:
    return key[0] or "", key[1]


def _counted(lines: list[Judgment], place: dict[str, int]) -> Judgment:
    """The judgment that counts for one event: every assessor's latest verdict, which must all agree."""
    mine: dict[str, list[Judgment]] = {}
    for judgment in lines:
        mine.setdefault(judgment.assessor, []).append(judgment)
    latest = {who: _latest(own, place) for who, own in sorted(mine.items())}
    said = {relevance: next(j for j in latest.values() if j.relevance == relevance)
            for relevance in sorted({j.relevance for j in latest.values()})}  # the first assessor giving each
    if len(said) > 1:
        first, later = sorted(said.values(), key=lambda j: _position(j, place))
        raise FixtureError(f"{later.file}:{later.line}: {later.assessor!r} judged event {later.event[1]!r} of query "
                           f"{later.query!r} {later.relevance}, {first.assessor!r} judged it {first.relevance} on "
                           f"{_where(first, later)}; set `assessor:` in the data set entry to choose whose judgments "
                           "count")  # fmt: skip
    return max(latest.values(), key=lambda j: (j.time, j.assessor))


def _latest(own: list[Judgment], place: dict[str, int]) -> Judgment:
    """One assessor's verdict on one event: their line with the latest `time`; lines at that same time that
    disagree are refused (nothing says which was meant last)."""
    last = max(j.time for j in own)
    final = sorted((j for j in own if j.time == last), key=lambda j: _position(j, place))
    if len({j.relevance for j in final}) > 1:
        one, other = final[0], next(j for j in final if j.relevance != final[0].relevance)
        raise FixtureError(f"{other.file}:{other.line}: {other.assessor!r} judged event {other.event[1]!r} of query "
                           f"{other.query!r} {other.relevance}, and {one.relevance} on {_where(one, other)}, both at "
                           f"{last.isoformat()}; the later `time` counts, so remove the line that is wrong")
    return final[0]


def _position(judgment: Judgment, place: dict[str, int]) -> tuple[int, int]:
    return place.get(judgment.file, 0), judgment.line


def _where(judgment: Judgment, reading: Judgment) -> str:
    """Where a judgment stands, as seen from another's line: its line, or file and line."""
    return f"line {judgment.line}" if judgment.file == reading.file else f"{judgment.file}:{judgment.line}"


def write_judgments(lines: list[dict[str, Any]], path: str | Path) -> Path:
    """Judgments-file lines as JSON Lines (UTF-8, one judgment a line)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path
