"""memlab's own data set format: JSON Lines, one record a line, sessions and questions mixed in any order.

    {"type": "session", "app": "my-agent", "user": "u1", "id": "s1",
     "events": [{"id": "e1", "author": "user", "at": "2026-05-02T09:00:00Z", "text": "I moved to Lyon."}]}
    {"type": "question", "id": "q1", "app": "my-agent", "user": "u1", "text": "Where do I live?",
     "asked_at": "2026-06-01T12:00:00Z", "relevant": ["e1"], "answer": "Lyon", "qtype": "single-hop"}

`app` may be left out (it defaults to "default"). `relevant: []` makes a no-answer question: nothing in memory
answers it, and the right result is no hit. An event id is unique within its session only: where the user has the
same id in several sessions (`D1:3` in every conversation), a label names its session, `{"session": "s2",
"event": "D1:3"}`, or `relevant_sessions` holds only that session. `relevant_sessions`, `answer`, `qtype` and
`fact_key` are optional; an event may carry `partial: true` (a streaming fragment the ingest filter drops) and
`facts`, the gold fact candidates it states (`[{"subject": "user", "predicate": "home_city", "value": "Lyon",
"quote": "I moved to Lyon"}]`, optional `negated`, `basis`), which `LabelledExtractor.from_set` replays. Times
are ISO 8601 with a zone. The full description is in datasets/README.md. A user converts their logs once and
every sweep runs on them; `write_jsonl` writes any Dataset (memlab-synth, LongMemEval) in this format.

Parsing is strict and pure: a bad line raises FixtureError naming the file, the line, the field and the fix,
and nothing is returned from a file that did not load completely."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from memlab.errors import FixtureError
from memlab.facts.memory import SUBJECT
from memlab.facts.registry import default_registry
from memlab.facts.types import Candidate
from memlab.lab.base.identity import EventKey, resolve, session_index
from memlab.lab.base.json_bounds import loads
from memlab.lab.base.problems import listed
from memlab.lab.base.suggest import unknown_keys
from memlab.lab.datasets.model import DEFAULT_APP, Dataset, Question, UserHistory
from memlab.types import Event, Session

_SESSION_KEYS = {"type", "app", "user", "id", "events"}
_EVENT_KEYS = {"id", "author", "at", "text", "partial", "facts"}
_FACT_KEYS = {"subject", "predicate", "value", "quote", "negated", "basis"}
_QUESTION_KEYS = {"type", "id", "app", "user", "text", "asked_at", "relevant", "relevant_sessions", "answer",
                  "qtype", "fact_key"}  # fmt: skip


def _fail(path: Path, line: int, message: str) -> FixtureError:
    return FixtureError(f"{path}:{line}: {message}")


def _string(path: Path, line: int, raw: dict, key: str, *, required: bool = True, where: str = "") -> str | None:
    value = raw.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, line, f"{where}`{key}` must be a non-empty string, got {value!r}")
    return value


def _time(path: Path, line: int, value: Any, key: str) -> datetime:
    if not isinstance(value, str):
        raise _fail(path, line, f"`{key}` must be an ISO 8601 time string like '2026-05-02T09:00:00Z', got {value!r}")
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise _fail(path, line, f"`{key}` {value!r} is not an ISO 8601 time like '2026-05-02T09:00:00Z'") from None
    if at.tzinfo is None:
        raise _fail(path, line, f"`{key}` {value!r} has no time zone; add 'Z' or an offset such as '+02:00'")
    return at


def _unknown(path: Path, line: int, raw: dict, allowed: set[str], what: str) -> None:
    extra = sorted(set(raw) - allowed)
    if extra:
        raise _fail(path, line, f"{unknown_keys(extra, allowed)} in a {what}; allowed: {sorted(allowed)}")


def _facts(path: Path, line: int, raw: Any, event: Event, session_id: str, where: str) -> list[Candidate]:
    """The gold fact candidates written on one event, checked against the registry and the event's text."""
    if not isinstance(raw, list):
        raise _fail(path, line, f"{where}`facts` must be a list of facts, got {type(raw).__name__}")
    registry = default_registry()
    out = []
    for j, fact in enumerate(raw):
        at = f"{where}facts[{j}]: "
        if not isinstance(fact, dict):
            raise _fail(path, line, f"{at}expected an object, got {type(fact).__name__}")
        extra = sorted(set(fact) - _FACT_KEYS)
        if extra:
            raise _fail(path, line, f"{at}{unknown_keys(extra, _FACT_KEYS)}; allowed: {sorted(_FACT_KEYS)}")
        subject = _string(path, line, fact, "subject", where=at)
        if not SUBJECT.fullmatch(subject):
            raise _fail(path, line, f"{at}subject {subject!r} must be 'user', 'user.<relation>' (user.partner) or "
                                    "'<kind>:<id>' (service:payments)")  # fmt: skip
        predicate = _string(path, line, fact, "predicate", where=at)
        if not registry.knows(predicate):
            hint = registry.nearest(predicate)
            raise _fail(path, line, f"{at}predicate {predicate!r} is not in the registry (nearest registered: "
                                    f"{hint!r}); use a name from memlab/facts/registry.yaml")  # fmt: skip
        value = _string(path, line, fact, "value", where=at)
        quote = _string(path, line, fact, "quote", where=at)
        if quote not in (event.text or ""):
            raise _fail(path, line, f"{at}quote {quote!r} is not in the text of event {event.id!r}; quote an exact "
                                    "substring of the event's text")  # fmt: skip
        negated = fact.get("negated", False)
        if not isinstance(negated, bool):
            raise _fail(path, line, f"{at}`negated` must be true or false, got {negated!r}")
        basis = fact.get("basis", "stated")
        if basis not in ("stated", "inferred"):
            raise _fail(path, line, f'{at}`basis` must be "stated" or "inferred", got {basis!r}')
        out.append(Candidate(subject, predicate, value, quote, basis=basis, negated=negated, event_id=event.id,
                             event_time=event.timestamp, session_id=session_id))  # fmt: skip
    return out


def _session(path: Path, line: int, raw: dict) -> tuple[Session, list[Candidate]]:
    _unknown(path, line, raw, _SESSION_KEYS, "session")
    app = _string(path, line, raw, "app", required=False) or DEFAULT_APP
    user = _string(path, line, raw, "user")
    sid = _string(path, line, raw, "id")
    events_raw = raw.get("events")
    if not isinstance(events_raw, list) or not events_raw:
        raise _fail(path, line, f"session {sid!r}: `events` must be a non-empty list of events")
    events = []
    gold: list[Candidate] = []
    seen: set[str] = set()
    for i, ev in enumerate(events_raw):
        where = f"session {sid!r} events[{i}]: "
        if not isinstance(ev, dict):
            raise _fail(path, line, f"{where}expected an object, got {type(ev).__name__}")
        extra = sorted(set(ev) - _EVENT_KEYS)
        if extra:
            raise _fail(path, line, f"{where}{unknown_keys(extra, _EVENT_KEYS)}; allowed: {sorted(_EVENT_KEYS)}")
        eid = _string(path, line, ev, "id", where=where)
        if eid in seen:
            raise _fail(path, line, f"{where}event id {eid!r} repeats inside the session; event ids must be unique")
        seen.add(eid)
        author = _string(path, line, ev, "author", where=where)
        text = ev.get("text")
        if not isinstance(text, str):
            raise _fail(path, line, f"{where}`text` must be a string, got {type(text).__name__}")
        partial = ev.get("partial", False)
        if not isinstance(partial, bool):
            raise _fail(path, line, f"{where}`partial` must be true or false, got {partial!r}")
        events.append(Event(id=eid, author=author, timestamp=_time(path, line, ev.get("at"), f"events[{i}].at"),
                            text=text, partial=partial))  # fmt: skip
        if "facts" in ev:
            gold += _facts(path, line, ev["facts"], events[-1], sid, where)
    return Session(app_name=app, user_id=user, id=sid, events=events), gold


def _id_list(path: Path, line: int, raw: dict, key: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise _fail(path, line, f"`{key}` must be a list of id strings ([] for a no-answer question), got {value!r}")
    return tuple(value)


def _labels(path: Path, line: int, raw: dict) -> tuple[EventKey, ...]:
    """`relevant`: event ids, or {"session": ..., "event": ...} where the id alone names several events."""
    value = raw.get("relevant", [])
    hint = '([] for a no-answer question; {"session": "s1", "event": "e1"} names an event of one session)'
    if not isinstance(value, list):
        raise _fail(path, line, f"`relevant` must be a list of event ids {hint}, got {value!r}")
    out: list[EventKey] = []
    for item in value:
        if isinstance(item, str) and item:
            out.append((None, item))
        elif (isinstance(item, dict) and set(item) == {"session", "event"}
              and all(isinstance(v, str) and v for v in item.values())):  # fmt: skip
            out.append((item["session"], item["event"]))
        else:
            raise _fail(path, line, f"`relevant` must be a list of event ids {hint}, got {item!r} in it")
    return tuple(out)


def _question(path: Path, line: int, raw: dict) -> Question:
    _unknown(path, line, raw, _QUESTION_KEYS, "question")
    if "relevant" not in raw:
        raise _fail(path, line, "question: `relevant` is required (the event ids that answer it; [] for none)")
    answer = raw.get("answer")
    if answer is not None and not isinstance(answer, str | int | float):
        raise _fail(path, line, f"`answer` must be a string or a number, got {type(answer).__name__}")
    return Question(
        id=_string(path, line, raw, "id"),
        app_name=_string(path, line, raw, "app", required=False) or DEFAULT_APP,
        user_id=_string(path, line, raw, "user"),
        text=_string(path, line, raw, "text"),
        relevant=tuple(e for _, e in _labels(path, line, raw)),
        asked_at=_time(path, line, raw["asked_at"], "asked_at") if raw.get("asked_at") is not None else None,
        qtype=_string(path, line, raw, "qtype", required=False) or "default",
        fact_key=_string(path, line, raw, "fact_key", required=False),
        relevant_sessions=_id_list(path, line, raw, "relevant_sessions"),
        answer=None if answer is None else str(answer),
        evidence=_labels(path, line, raw),
    )


def _references(path: Path, bad: list[tuple[int, str]]) -> FixtureError:
    """All the bad references of a file in one error: the count, the first ones with their lines."""
    return listed(path, bad, "bad references", "A question's `relevant` must name events, and `relevant_sessions` "
                  "sessions, of the question's own app and user")  # fmt: skip


def _json_document(path: Path, lines: list[str]) -> FixtureError | None:
    """When the whole file is one JSON document (not one record per line), an error saying so and naming the
    format that reads it; None when it is not valid JSON either."""
    try:
        doc = json.loads("\n".join(lines))
    except (json.JSONDecodeError, RecursionError):
        return None
    records = doc if isinstance(doc, list) else [doc]
    head = [r for r in records[:50] if isinstance(r, dict)]
    what = f"a list of {len(doc)} items" if isinstance(doc, list) else f"a {type(doc).__name__}"
    start = f"{path}: this file is JSON, not JSON Lines: one JSON document ({what}), while format memlab (jsonl) " \
            "reads one JSON object per line."  # fmt: skip
    if head and all("question_id" in r and "haystack_sessions" in r for r in head):
        return FixtureError(f"{start} It is laid out as a LongMemEval file: read it with `format: longmemeval` "
                            f"(memlab check-dataset {path.name} --format longmemeval)")  # fmt: skip
    if isinstance(doc, dict) and "sessions" in doc and "user" in doc:
        return FixtureError(f"{start} It is laid out as a fixture file (one user: app, user, sessions, queries): "
                            f"read it with `format: fixtures` (memlab check-dataset {path.name} --format fixtures)")
    if head and all(r.get("type") in ("session", "question") for r in head):
        return FixtureError(f"{start} Its records are memlab records: write one record per line (e.g. "
                            f"`jq -c {'.[]' if isinstance(doc, list) else '.'} {path.name}`)")  # fmt: skip
    return FixtureError(f"{start} memlab reads JSON files with `format: longmemeval` (a list of LongMemEval "
                        "questions) or `format: fixtures` (one user per file, fixtures/events/README.md); memlab's "
                        "JSON Lines format is described in datasets/README.md")  # fmt: skip


def _records(path: Path, lines: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line; FixtureError naming the line for one that is not a JSON
    object (or naming the whole file when it is one JSON document, not JSON Lines)."""
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            raw = loads(text, f"{path}:{number}")
        except json.JSONDecodeError as exc:
            raise _json_document(path, lines) or _fail(path, number, f"not valid JSON ({exc.msg} at column "
                                                                     f"{exc.colno})") from None  # fmt: skip
        if not isinstance(raw, dict):
            raise _json_document(path, lines) or _fail(path, number, "expected a JSON object per line, got "
                                                                     f"{type(raw).__name__}")  # fmt: skip
        yield number, raw


def parse_jsonl(path: Path, lines: list[str], name: str | None = None) -> Dataset:
    """A Dataset from the lines of a memlab JSONL file; every reference is checked before anything is returned."""
    sessions: dict[tuple[str, str, str], tuple[int, Session]] = {}
    gold: dict[tuple[str, str, str], list[Candidate]] = {}
    questions: list[tuple[int, Question]] = []
    for number, raw in _records(path, lines):
        kind = raw.get("type")
        if kind == "session":
            session, facts = _session(path, number, raw)
            key = (session.app_name, session.user_id, session.id)
            if key in sessions:
                raise _fail(path, number, f"session {session.id!r} of user {session.user_id!r} repeats line "
                                          f"{sessions[key][0]}")  # fmt: skip
            sessions[key] = (number, session)
            if facts:
                gold[key] = facts
        elif kind == "question":
            questions.append((number, _question(path, number, raw)))
        else:
            raise _fail(path, number, f"`type` must be \"session\" or \"question\", got {kind!r}")
    if not sessions:
        raise FixtureError(f"{path}: no session records; see datasets/README.md for the format")
    users: dict[tuple[str, str], UserHistory] = {}
    for _, s in sorted(sessions.values(), key=lambda item: (min(e.timestamp for e in item[1].events), item[0])):
        user = users.setdefault((s.app_name, s.user_id), UserHistory(s.app_name, s.user_id, [], source=str(path)))
        user.sessions.append(s)
        user.replay.append(s.id)
        if (s.app_name, s.user_id, s.id) in gold:
            user.gold_candidates[s.id] = gold[(s.app_name, s.user_id, s.id)]
    seen_q: set[str] = set()
    bad: list[tuple[int, str]] = []  # every bad reference, so one check lists them all
    held = session_index((u.app_name, u.user_id, s.id, e.id) for u in users.values() for s in u.sessions
                         for e in s.events)  # fmt: skip
    for i, (number, q) in enumerate(questions):
        if q.id in seen_q:
            raise _fail(path, number, f"question id {q.id!r} repeats; question ids must be unique")
        seen_q.add(q.id)
        user = users.get((q.app_name, q.user_id))
        if user is None:
            bad.append((number, f"question {q.id!r} asks user {q.user_id!r} of app {q.app_name!r}, who has no "
                                "session in the file"))  # fmt: skip
            continue
        events = held.get((q.app_name, q.user_id), {})
        missing = [e for e in q.relevant if e not in events]
        if missing:
            bad.append((number, f"question {q.id!r}: relevant event id(s) {missing} are not events of user "
                                f"{q.user_id!r}"))  # fmt: skip
        stray = [s for s in q.relevant_sessions if s not in {x.id for x in user.sessions}]
        if stray:
            bad.append((number, f"question {q.id!r}: relevant_sessions {stray} are not sessions of user "
                                f"{q.user_id!r}"))  # fmt: skip
        if missing or stray:
            continue
        try:  # each label's session: the one holding the id, the one named, or the one relevant_sessions keeps
            questions[i] = (number, replace(q, evidence=resolve(q.id, q.user_id, q.relevant, q.evidence,
                                                                q.relevant_sessions, events)))  # fmt: skip
        except FixtureError as exc:
            bad.append((number, str(exc)))
    if bad:
        raise _references(path, bad)
    return Dataset(name or path.name.split(".")[0], list(users.values()), [q for _, q in questions])


def load_jsonl(path: str | Path, name: str | None = None) -> Dataset:
    """Read a memlab JSONL data set (plain or .gz)."""
    path = Path(path)
    return parse_jsonl(path, _read_lines(path), name)


def load_questions(path: str | Path) -> list[Question]:
    """Only the question records of a memlab JSONL file (plain or .gz), their labels as written: what a probe asks
    a live store, whose stored sessions are the truth (session records in the file are skipped, not checked)."""
    path = Path(path)
    lines = _read_lines(path)
    questions, seen = [], set()
    for number, raw in _records(path, lines):
        if raw.get("type") not in ("session", "question"):
            raise _fail(path, number, "expected a JSON object with `type` \"question\" (or \"session\", skipped)")
        if raw["type"] == "question":
            question = _question(path, number, raw)
            if question.id in seen:
                raise _fail(path, number, f"question id {question.id!r} repeats; question ids must be unique")
            seen.add(question.id)
            questions.append(question)
    if not questions:
        raise FixtureError(f"{path}: no question records; see datasets/README.md for the format")
    return questions


def _read_lines(path: Path) -> list[str]:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as f:
                lines = f.read().splitlines()
        else:
            lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise FixtureError(f"{path}: no such file; give the path of a memlab JSONL data set") from None
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise FixtureError(f"{path}: cannot read the file: {exc}") from None
    return lines


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def _fact_record(c: Candidate) -> dict[str, Any]:
    record: dict[str, Any] = {"subject": c.subject, "predicate": c.predicate, "value": c.value, "quote": c.quote}
    if c.negated:
        record["negated"] = True
    if c.basis != "stated":
        record["basis"] = c.basis
    return record


def to_records(dataset: Dataset) -> list[dict[str, Any]]:
    """The JSONL records of a Dataset: sessions first (with their gold fact candidates on the events that state
    them), then questions."""
    out: list[dict[str, Any]] = []
    for user in dataset.users:
        for s in user.sessions:
            by_event: dict[str, list[dict[str, Any]]] = {}
            for c in user.gold_candidates.get(s.id, ()):
                by_event.setdefault(c.event_id, []).append(_fact_record(c))
            stray = sorted(set(by_event) - {e.id for e in s.events})
            if stray:
                raise ValueError(f"session {s.id!r}: gold candidates cite events {stray} that are not in it")
            out.append({"type": "session", "app": s.app_name, "user": s.user_id, "id": s.id, "events": [
                {"id": e.id, "author": e.author, "at": _iso(e.timestamp), "text": e.text or "",
                 **({"partial": True} if e.partial else {}), **({"facts": by_event[e.id]} if e.id in by_event else {})}
                for e in s.events]})  # fmt: skip
    held = session_index((s.app_name, s.user_id, s.id, e.id) for s in dataset.sessions() for e in s.events)
    for q in dataset.questions:
        ids = held.get((q.app_name, q.user_id), {})
        relevant = [{"session": s, "event": e} if s is not None and len(ids.get(e, ())) > 1 else e
                    for s, e in (q.evidence or [(None, e) for e in q.relevant])]  # named where the id is ambiguous
        record: dict[str, Any] = {"type": "question", "id": q.id, "app": q.app_name, "user": q.user_id,
                                  "text": q.text, "relevant": relevant, "qtype": q.qtype}  # fmt: skip
        if q.asked_at is not None:
            record["asked_at"] = _iso(q.asked_at)
        if q.relevant_sessions:
            record["relevant_sessions"] = list(q.relevant_sessions)
        if q.answer is not None:
            record["answer"] = q.answer
        if q.fact_key:
            record["fact_key"] = q.fact_key
        out.append(record)
    return out


def write_jsonl(dataset: Dataset, path: str | Path) -> Path:
    """Write a Dataset as memlab JSONL (tool calls are not part of the format: their text is kept)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in to_records(dataset)), encoding="utf-8")
    return path
