"""Queries to label, from real traffic: a sample of the query log, or a plain JSON Lines file of your own.

Both become a *query file* (the format pooling reads: memlab.lab.judging), one JSON object a line:

    {"query_id": "3f2a9c0d1e4b5a67", "app": "my-agent", "user": "u1", "text": "Where do I live?",
     "asked_at": "2026-06-01T12:00:00+00:00", "origin": "logged", "stratum": "51-500/hits", "empty": false,
     "memory_size": 120}

`sample_logged_queries` draws from the log `EventMemory`/`FactMemory` write with `QueryLog(enabled=True)`,
stratified by the user's memory-size bucket when the query was asked (scoring.size_bucket) and by whether the
search returned anything: every stratum gets an equal share of the sample (the share a stratum cannot fill goes to
the others), so the rare strata (empty results, large memories) are not drowned out by the common one; within a
stratum, users take turns. `read_plain_queries` reads `{"app", "user", "text", "asked_at"}` lines (origin
"file"); a bad line raises FixtureError naming the file, the line, what is wrong and how to fix it. Both count a
query asked again by the same user of the same app once, at its first asking (`repeat_key`): real logs repeat."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import memlab
from memlab.errors import ConfigError, FixtureError
from memlab.lab.base.json_bounds import loads
from memlab.lab.base.sizes import size_bucket
from memlab.lab.base.suggest import unknown_keys
from memlab.lab.datasets.model import DEFAULT_APP
from memlab.safety.redact import plain_digest

PLAIN_KEYS = ("app", "user", "text", "asked_at")
QUERY_KEYS = ("query_id", "app", "user", "text", "asked_at", "origin", "generator", "stratum", "empty", "memory_size")
MAX_SAMPLE = 1_000_000


def query_id(app: str, user: str, text: str, asked_at: datetime) -> str:
    """A query's stable id: the first 16 hex digits of the SHA-1 of app, user, text and the time it was asked,
    hashed again in the rare case the digest reads as a credential (`memlab.safety.redact.plain_digest`), so a pool
    written through the redactor still names the query as its query file does."""
    return plain_digest("\x1f".join((app, user, text, asked_at.isoformat())))


def repeat_key(app: str, user: str, text: str) -> tuple[str, str, str]:
    """What makes two queries one: the same user of the same app asking the same text (outer spaces aside), at
    whatever time. Sampling and import keep the first asking of each, so a repeated question is not judged twice."""
    return (app, user, text.strip())


def query_record(app: str, user: str, text: str, asked_at: datetime, origin: str, **optional: Any) -> dict[str, Any]:
    """One line of a query file; optional fields (`stratum`, `empty`, `memory_size`, `generator`) left out when
    None."""
    record = {"query_id": query_id(app, user, text, asked_at), "app": app, "user": user, "text": text,
              "asked_at": asked_at.isoformat(), "origin": origin}  # fmt: skip
    return record | {k: v for k, v in optional.items() if v is not None}


def write_query_file(path: str | Path, queries: list[dict[str, Any]]) -> Path:
    """Write query records as JSON Lines (UTF-8, one object a line, keys in the shared order)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for query in queries:
            out.write(json.dumps({k: query[k] for k in QUERY_KEYS if k in query}, ensure_ascii=False) + "\n")
    return path


def is_query_file(path: Path) -> bool:
    """A query file memlab wrote (every line an object with a query id and an origin): safe to overwrite."""
    try:
        lines = [loads(t, str(path)) for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, FixtureError):
        return False
    return all(isinstance(r, dict) and "query_id" in r and "origin" in r for r in lines)


# -- a plain JSON Lines file of the user's own queries --------------------------------------------------------


def _plain_query(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise FixtureError(f"{where}: expected a JSON object like {{\"app\": \"my-agent\", \"user\": \"u1\", "
                           f"\"text\": \"Where do I live?\", \"asked_at\": \"2026-06-01T12:00:00+00:00\"}}, got "
                           f"{type(raw).__name__}")  # fmt: skip
    extra = set(raw) - set(PLAIN_KEYS)
    if extra:
        raise FixtureError(f"{where}: {unknown_keys(extra, PLAIN_KEYS)}; a plain query line has only "
                           f"{', '.join(PLAIN_KEYS)} (app optional, default {DEFAULT_APP!r})")  # fmt: skip
    values = {"app": raw.get("app", DEFAULT_APP)}
    for key in ("app", "user", "text"):
        value = raw.get(key, values.get(key))
        if not isinstance(value, str) or not value.strip():
            missing = "missing" if key not in raw else f"got {value!r}"
            raise FixtureError(f"{where}: `{key}` must be a non-empty string ({missing}); add it, e.g. "
                               f"\"{key}\": \"...\"")  # fmt: skip
        if "\x00" in value:
            raise FixtureError(f"{where}: `{key}` holds a NUL character, which PostgreSQL cannot store; remove it")
        values[key] = value
    stamp = raw.get("asked_at")
    try:
        asked = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except ValueError:
        asked = None
    if asked is None or asked.tzinfo is None:
        problem = "missing" if stamp is None else ("has no time zone" if asked is not None else f"got {stamp!r}")
        raise FixtureError(f"{where}: `asked_at` must be an ISO 8601 time with a zone ({problem}); write e.g. "
                           "\"asked_at\": \"2026-06-01T12:00:00+00:00\" (or ...Z for UTC)")  # fmt: skip
    return query_record(values["app"], values["user"], values["text"], asked, "file")


@dataclass(frozen=True)
class PlainQueries:
    """A plain query file read: its query records, and how many lines repeated an earlier query (dropped)."""

    queries: list[dict[str, Any]]
    repeats: int


def read_plain_queries(path: str | Path) -> PlainQueries:
    """A plain JSON Lines file of queries (`app`, `user`, `text`, `asked_at` a line) as query records, origin
    "file", in file order, each query once: a line repeating an earlier one (`repeat_key`) is dropped and counted.
    Blank lines are skipped; any bad line raises FixtureError (`path:line: what is wrong; how to fix it`) and
    nothing is returned."""
    path = Path(path)
    if not path.is_file():
        raise FixtureError(f"{path}: no such file; give the path of a JSON Lines file of queries")
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    repeats = 0
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                raw = loads(line, where)
            except json.JSONDecodeError as exc:
                raise FixtureError(f"{where}: not JSON ({exc.msg} at column {exc.colno}); write one JSON object a "
                                   "line, with double-quoted keys and strings") from None  # fmt: skip
            record = _plain_query(raw, where)
            key = repeat_key(record["app"], record["user"], record["text"])
            if key in seen:
                repeats += 1
                continue
            seen.add(key)
            out.append(record)
    if not out:
        raise FixtureError(f"{path}: no queries; write one JSON object a line with {', '.join(PLAIN_KEYS)}")
    return PlainQueries(out, repeats)


# -- a stratified sample of the query log ------------------------------------------------------------------


@dataclass(frozen=True)
class QuerySample:
    """A sample of the query log: the query records, and per stratum the distinct queries logged and sampled."""

    queries: list[dict[str, Any]]
    population: dict[str, int]
    sampled: dict[str, int]


def stratum(memory_size: int | None, empty: bool) -> str:
    """`<size bucket>/<empty|hits>`, e.g. `51-500/empty`; an unknown size is bucket `nan`."""
    return f"{size_bucket(float('nan') if memory_size is None else memory_size)}/{'empty' if empty else 'hits'}"


def _allocate(population: dict[str, int], n: int, rng: random.Random) -> dict[str, int]:
    """Equal shares of `n` over the strata; what a small stratum cannot fill goes to the others (in random order
    when the remainder does not divide evenly)."""
    taken = dict.fromkeys(population, 0)
    open_ = sorted(s for s, size in population.items() if size)
    left = min(n, sum(population.values()))
    while left:
        rng.shuffle(open_)
        share = max(1, left // len(open_))
        for name in open_:
            take = min(share, population[name] - taken[name], left)
            taken[name] += take
            left -= take
        open_ = sorted(s for s in open_ if taken[s] < population[s])
    return taken


def _take_turns(rows: list, count: int, rng: random.Random) -> list:
    """`count` rows, users taking turns (in random order, each user's rows shuffled)."""
    by_user: dict[tuple[str, str], list] = defaultdict(list)
    for row in rows:
        by_user[(row.app_name, row.user_id)].append(row)
    queues = [by_user[u] for u in sorted(by_user)]
    for queue in queues:
        rng.shuffle(queue)
    rng.shuffle(queues)
    picked: list = []
    while len(picked) < count:
        for queue in queues:
            if queue and len(picked) < count:
                picked.append(queue.pop())
    return picked


def sample_logged_queries(
    store: memlab.Store, *, n: int = 200, app: str | None = None, seed: int = 0, kind: str | None = None
) -> QuerySample:
    """Draw up to `n` distinct logged queries (of one app, or all; of one memory kind, or both), stratified by
    memory-size bucket and empty vs non-empty result (see the module docstring). A query asked again by the same
    user counts once (its first asking: `repeat_key`). Reproducible for a given log and `seed`."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SAMPLE:
        raise ConfigError(f"n must be a whole number from 1 to {MAX_SAMPLE:,}, got {n!r}")
    if kind not in (None, "events", "facts"):
        raise ConfigError(f"kind must be events or facts (or left out for both), got {kind!r}")
    rows = []
    for app_name, user_id in memlab.events.query_log_users(store, app):
        first: dict[str, Any] = {}
        for row in memlab.events.logged_queries(store, app_name, user_id, kind=kind):  # oldest first, user-scoped
            first.setdefault(repeat_key(app_name, user_id, row.text), row)
        rows.extend(first.values())
    strata: dict[str, list] = defaultdict(list)
    for row in rows:
        strata[stratum(row.memory_size, row.empty)].append(row)
    rng = random.Random(seed)
    population = {name: len(strata[name]) for name in sorted(strata)}
    sampled = _allocate(population, n, rng)
    queries = []
    for name in sorted(strata):
        for row in _take_turns(strata[name], sampled[name], rng):
            queries.append(query_record(row.app_name, row.user_id, row.text, row.asked_at, "logged", stratum=name,
                                        empty=row.empty, memory_size=row.memory_size))  # fmt: skip
    return QuerySample(queries, population, sampled)
