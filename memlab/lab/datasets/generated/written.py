"""Generated questions written out as a judged set: the query file (origin `generated`, the generator's id), a
judgments file in which the generator, as assessor `generator:<id>`, judges each question's evidence events
relevant, and a pool file holding exactly that evidence. The three load as `format: judged` with the sessions they
were generated from, so a user with no query log has a labelled set at once.

Labels made this way are incomplete in a way pooling is not: only the event a question was generated from is
judged, so a system that finds another event answering it gets no credit for it (the report says so)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memlab.errors import MemlabError
from memlab.lab.base.identity import EventKey
from memlab.lab.datasets.judged.judgments import write_judgments
from memlab.lab.datasets.judged.pools import POOL_KIND, POOL_VERSION, read_pool, write_pool
from memlab.lab.datasets.judged.queries import json_lines
from memlab.lab.datasets.judged.sampling import query_record, write_query_file
from memlab.lab.datasets.model import Dataset, Question

ASK_AFTER = timedelta(minutes=1)  # a generated question is asked a minute after the user's last event


@dataclass
class Generation:
    """What a generator made of a data set's sessions: query records, each query's evidence events, and what it
    counted on the way (`made`: questions per predicate or source; `skipped`: items dropped, by reason)."""

    generator: str
    queries: list[dict[str, Any]] = field(default_factory=list)
    evidence: dict[str, list[EventKey]] = field(default_factory=dict)
    made: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)

    @property
    def assessor(self) -> str:
        return f"generator:{self.generator}"

    def questions(self) -> list[Question]:
        """The generated questions as labelled questions (evidence: the events they were generated from, with
        complete labels assumed), e.g. to compare them with a data set's own questions on the same sessions."""
        return [Question(q["query_id"], q["app"], q["user"], q["text"], (), asked_at=datetime.fromisoformat(
            q["asked_at"]), qtype="generated", evidence=tuple(self.evidence[q["query_id"]])) for q in self.queries]


def ask_times(source: Dataset) -> dict[tuple[str, str], datetime]:
    """When each user's generated questions are asked: after the last thing they said, so every session is in
    memory by then (a system that honours `asked_at` sees all of the user's history)."""
    out: dict[tuple[str, str], datetime] = {}
    for session in source.sessions():
        for event in session.events:
            key = (session.app_name, session.user_id)
            out[key] = max(out.get(key, event.timestamp), event.timestamp)
    return {key: at + ASK_AFTER for key, at in out.items()}


def add_question(generation: Generation, app: str, user: str, text: str, asked_at: datetime,
                 evidence: EventKey) -> None:  # fmt: skip
    """One generated question with one evidence event; the same question for the same user again adds its event
    to the evidence of the first (two facts of one predicate make one question with both events)."""
    record = query_record(app, user, text, asked_at, "generated", generator=generation.generator)
    known = generation.evidence.get(record["query_id"])
    if known is None:
        generation.queries.append(record)
        generation.evidence[record["query_id"]] = [evidence]
    elif evidence not in known:
        known.append(evidence)


def pool_and_judgments(generation: Generation, source: Dataset, queries_path: str | Path) -> tuple[dict, list]:
    """The pool file (the evidence events of each question, `generator` naming who chose them) and the judgments
    (each evidence event relevant, by assessor `generator:<id>`)."""
    events = {(s.app_name, s.user_id, s.id, e.id): e for s in source.sessions() for e in s.events}
    now = datetime.now(UTC).isoformat(timespec="seconds")
    pooled, lines = [], []
    for query in generation.queries:
        keys = generation.evidence[query["query_id"]]
        repeats = Counter(event_id for _, event_id in keys)
        hits = []
        for rank, (session, event_id) in enumerate(keys, start=1):
            event = events[(query["app"], query["user"], session, event_id)]
            hits.append({"event_id": event_id, "session": session, "text": event.text or "",
                         "at": event.timestamp.isoformat(), "author": event.author,
                         "found_by": [{"system": generation.assessor, "rank": rank}]})  # fmt: skip
            line = {"query": query["query_id"], "event_id": event_id, "relevance": 1, "assessor": generation.assessor,
                    "time": now}  # fmt: skip
            if repeats[event_id] > 1:  # the same event id in two of the user's sessions: say which one
                line["session"] = session
            lines.append(line)
        pooled.append({**query, "hits": hits})
    depth = max((len(q["hits"]) for q in pooled), default=0)
    pool = {"memlab": POOL_KIND, "version": POOL_VERSION, "config": None, "dataset": source.name, "depth": depth,
            "depth_unit": "events", "created_at": now, "queries_file": str(queries_path),
            "generator": generation.generator, "systems": [], "queries": pooled}  # fmt: skip
    return pool, lines


def is_generated_judgments(path: Path) -> bool:
    """A judgments file a generator wrote (every line judged by a `generator:` assessor): safe to overwrite."""
    try:
        rows = [raw for _, raw in json_lines(path)]
    except (OSError, ValueError, MemlabError):  # unreadable: not ours
        return False
    return all(isinstance(r, dict) and str(r.get("assessor", "")).startswith("generator:") for r in rows)


def is_generated_pool(path: Path) -> bool:
    """A pool file a generator wrote: safe to overwrite."""
    try:
        return bool(read_pool(path).data.get("generator"))
    except (OSError, ValueError, MemlabError):  # unreadable: not ours
        return False


def write_generated(generation: Generation, source: Dataset, queries: str | Path, judgments: str | Path,
                    pool: str | Path) -> dict[str, Path]:  # fmt: skip
    """Write the query file, the judgments file and the pool file of a generation (see the module docstring)."""
    made, lines = pool_and_judgments(generation, source, queries)
    paths = {"queries": write_query_file(queries, generation.queries), "pool": write_pool(made, pool)}
    return paths | {"judgments": write_judgments(lines, judgments)}
