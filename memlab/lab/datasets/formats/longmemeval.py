"""Load LongMemEval (Wu et al., 2024; datasets/longmemeval/README.md) into a Dataset.

The file is one JSON list of questions (plain or gzipped). Each question is its own user: its haystack sessions
are that user's memory and its question is asked of that user alone.

Ids:
- user id = `question_id`; Question.id = f"{question_type}/{question_id}", so the original type survives for
  abstention questions, whose qtype is "abstention" (`longmemeval_type` reads it back).
- session id = the haystack session id. The same id is reused by several questions of a file (the same text,
  placed at a different date in each haystack); such ids, counted over the whole file before any filtering so
  they do not change with `question_types` or `limit`, are written f"{question_id}/{session_id}". An id that
  repeats inside one haystack (two copies of a distractor at two dates) gets f"~{n}" on its n-th copy (n >= 2)
  so event ids stay unique within the user. Every other session keeps the benchmark's id.
- event id = f"{session_id}_{i+1}", `i` counting every turn of the session (user and assistant), as the
  benchmark numbers its turns. Author "user" or "model" (assistant).

Time: a session starts at its `haystack_dates` entry (a naive minute, read as UTC) and its turns follow
`TURN_STEP` apart, so order within a session is kept. Sessions are listed (and `UserHistory.replay` ordered)
chronologically, ties in file order: the files do not keep haystacks in date order. `asked_at` is
`question_date`; note that some haystacks hold sessions dated after their question (they are kept as they are).

Relevance follows the README: a turn is relevant when `has_answer` is true and its session is in
`answer_session_ids`. The benchmark scores user turns, so assistant turns with `has_answer` are dropped except
for single-session-assistant questions, whose evidence is what the assistant said (51 of their 56 questions
mark only assistant turns); there both roles count. `relevant_sessions` holds the answer sessions (the
session-level labels; some answer sessions have no `has_answer` turn at all). Abstention questions (id ending
in `_abs`) have no relevant turns and no relevant sessions, although the file names answer sessions for them.

Malformed input raises FixtureError naming the file and the question.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.errors import ConfigError, FixtureError
from memlab.lab.base.json_bounds import load
from memlab.lab.datasets.model import Dataset, Question, UserHistory
from memlab.types import Event, Session

QUESTION_TYPES: tuple[str, ...] = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
ABSTENTION = "abstention"
ABS_SUFFIX = "_abs"
TURN_STEP = timedelta(seconds=5)


_FIELDS = (
    "question_id",
    "question_type",
    "question",
    "answer",
    "question_date",
    "haystack_session_ids",
    "haystack_dates",
    "haystack_sessions",
    "answer_session_ids",
)
_DATE = re.compile(r"(\d{4})/(\d{2})/(\d{2}) \((\w{3})\) (\d{2}):(\d{2})")
_AUTHORS = {"user": "user", "assistant": "model"}


@dataclass
class _Loaded:
    """One question, checked and built, before filtering."""

    question: Question
    history: UserHistory
    question_type: str
    abstention: bool


def load_longmemeval(
    path: str | Path,
    *,
    question_types: Iterable[str] | None = None,
    limit: int | None = None,
    include_abstention: bool = True,
    app_name: str = "longmemeval",
) -> Dataset:
    """Questions of a LongMemEval file (.json or .json.gz) with one user per question, in file order.

    `question_types` keeps questions whose original type, or qtype ("abstention"), is listed; then
    `include_abstention=False` drops abstention questions; then `limit` keeps the first N. The whole file is
    checked whatever the filters select."""
    path = Path(path)
    if isinstance(question_types, str):  # one type given bare, not a set of its letters
        question_types = (question_types,)
    wanted = None if question_types is None else set(question_types)
    if limit is not None and limit < 0:
        raise ConfigError(f"load_longmemeval: limit must be >= 0 or None, got {limit}.")
    raw = _read(path)
    records = [_check_fields(path, i, q) for i, q in enumerate(raw)]
    seen: dict[str, int] = {}
    for i, q in enumerate(records):
        qid = q["question_id"]
        if qid in seen:
            raise FixtureError(f"{path}: question {qid!r} (#{i}) repeats the question_id of #{seen[qid]}")
        seen[qid] = i
    shared = _shared_session_ids(records)
    loaded = [_build(path, q, shared, app_name) for q in records]

    if wanted is not None:
        known = set(QUESTION_TYPES) | {ABSTENTION} | {item.question_type for item in loaded}
        unknown = sorted(wanted - known)
        if unknown:
            raise ConfigError(
                f"load_longmemeval: unknown question type(s) {unknown}; use some of {sorted(known)} ({path})."
            )
    selected = []
    for item in loaded:
        if wanted is not None and item.question_type not in wanted and item.question.qtype not in wanted:
            continue
        if item.abstention and not include_abstention:
            continue
        selected.append(item)
    if limit is not None:
        selected = selected[:limit]
    name = path.name.removesuffix(".gz").removesuffix(".json")
    return Dataset(
        name=name, users=[item.history for item in selected], questions=[item.question for item in selected]
    )


def extract_longmemeval(path: str | Path, question_ids: Iterable[str]) -> list[dict[str, Any]]:
    """The records of `question_ids`, in file order, as a file of their own that loads to the same data: a
    session id the whole file shares between questions (named `question_id/session_id` by the loader, a rule
    over the whole file) is written under that name, so the extract gives the same ids and checksum as the whole
    file's selection. An id the file does not hold raises FixtureError."""
    path = Path(path)
    records = [_check_fields(path, i, q) for i, q in enumerate(_read(path))]
    wanted = set(question_ids)
    missing = sorted(wanted - {q["question_id"] for q in records})
    if missing:
        raise FixtureError(f"{path}: no question(s) {missing[:5]} to extract")
    shared = _shared_session_ids(records)

    def named(qid: str, ids: list[str]) -> list[str]:
        return [f"{qid}/{sid}" if sid in shared else sid for sid in ids]

    return [{**q, "haystack_session_ids": named(q["question_id"], q["haystack_session_ids"]),
             "answer_session_ids": named(q["question_id"], q["answer_session_ids"])}
            for q in records if q["question_id"] in wanted]  # fmt: skip


def longmemeval_type(question: Question) -> str:
    """The question's LongMemEval type, also for abstention questions (whose qtype is "abstention")."""
    return question.id.partition("/")[0]


def summarize_longmemeval(labelled: Dataset) -> pd.DataFrame:
    """Per qtype (and a final "all" row): questions, users, sessions, turns, answerable questions, relevant
    turns, relevant sessions, and sessions dated after their question was asked."""
    users = {(u.app_name, u.user_id): u for u in labelled.users}
    rows: dict[str, Counter[str]] = {}
    user_sets: dict[str, set[tuple[str, str]]] = {}
    for q in labelled.questions:
        for key in (q.qtype, "all"):
            row = rows.setdefault(key, Counter())
            seen = user_sets.setdefault(key, set())
            row["questions"] += 1
            row["answerable"] += q.answerable
            row["relevant_turns"] += len(q.relevant)
            row["relevant_sessions"] += len(q.relevant_sessions)
            user = users.get((q.app_name, q.user_id))
            if user is None or (q.app_name, q.user_id) in seen:
                continue
            seen.add((q.app_name, q.user_id))
            row["sessions"] += len(user.sessions)
            row["turns"] += user.event_count
            if q.asked_at is not None:
                row["sessions_after_question"] += sum(
                    1 for s in user.sessions if s.events and s.events[0].timestamp > q.asked_at
                )
    columns = [
        "questions",
        "users",
        "sessions",
        "turns",
        "answerable",
        "relevant_turns",
        "relevant_sessions",
        "sessions_after_question",
    ]
    order = sorted(k for k in rows if k != "all") + (["all"] if "all" in rows else [])
    data = [[len(user_sets[k]) if c == "users" else rows[k][c] for c in columns] for k in order]
    frame = pd.DataFrame(data, index=pd.Index(order, name="qtype"), columns=columns)
    return frame.astype("int64")


# -- parsing -------------------------------------------------------------------------------------------------


def _read(path: Path) -> list[Any]:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as f:
                data = load(f, path)
        else:
            with path.open(encoding="utf-8") as f:
                data = load(f, path)
    except json.JSONDecodeError as e:
        raise FixtureError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from e
    except (OSError, EOFError, UnicodeDecodeError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise FixtureError(f"{path}: cannot read the file: {e}") from e
    if not isinstance(data, list):
        raise FixtureError(f"{path}: expected a JSON list of questions, got {type(data).__name__}")
    return data


def _where(path: Path, index: int, q: Any) -> str:
    qid = q.get("question_id") if isinstance(q, dict) else None
    return f"{path}: question {qid!r} (#{index})" if isinstance(qid, str) and qid else f"{path}: question #{index}"


def _check_fields(path: Path, index: int, q: Any) -> dict[str, Any]:
    """Required fields present and of the right shape; the three haystack lists of equal length."""
    where = _where(path, index, q)
    if not isinstance(q, dict):
        raise FixtureError(f"{where}: expected an object, got {type(q).__name__}")
    missing = [k for k in _FIELDS if q.get(k) is None]
    if missing:
        raise FixtureError(f"{where}: required field(s) {missing} missing")
    for key in ("question_id", "question_type", "question", "question_date"):
        if not isinstance(q[key], str) or not q[key].strip():
            raise FixtureError(f"{where}: {key} must be a non-empty string, got {q[key]!r}")
    if not isinstance(q["answer"], str | int | float) or isinstance(q["answer"], bool):
        raise FixtureError(f"{where}: answer must be a string or a number, got {type(q['answer']).__name__}")
    for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions", "answer_session_ids"):
        if not isinstance(q[key], list):
            raise FixtureError(f"{where}: {key} must be a list, got {type(q[key]).__name__}")
    for key in ("haystack_session_ids", "haystack_dates", "answer_session_ids"):
        bad = [x for x in q[key] if not isinstance(x, str) or not x.strip()]
        if bad:
            raise FixtureError(f"{where}: {key} must hold non-empty strings, found {bad[0]!r}")
    lengths = {k: len(q[k]) for k in ("haystack_session_ids", "haystack_dates", "haystack_sessions")}
    if len(set(lengths.values())) != 1:
        raise FixtureError(f"{where}: haystack lists differ in length: {lengths}")
    haystack = set(q["haystack_session_ids"])
    stray = [s for s in q["answer_session_ids"] if s not in haystack]
    if stray:
        raise FixtureError(f"{where}: answer_session_ids {stray} are not in haystack_session_ids")
    return q


def _parse_date(value: str, where: str, key: str) -> datetime:
    m = _DATE.fullmatch(value.strip())
    problem = f"{where}: {key} {value!r} is not a date like '2023/05/20 (Sat) 02:21'"
    if m is None:
        raise FixtureError(problem)
    year, month, day, weekday, hour, minute = m.groups()
    try:
        at = datetime(int(year), int(month), int(day), int(hour), int(minute), tzinfo=UTC)
    except ValueError as e:
        raise FixtureError(f"{problem} ({e})") from e
    if at.strftime("%a") != weekday:
        raise FixtureError(f"{problem}: {at.date()} is a {at.strftime('%a')}, not a {weekday}")
    return at


def _shared_session_ids(records: list[dict[str, Any]]) -> set[str]:
    """Session ids that appear in the haystacks of more than one question."""
    owners: Counter[str] = Counter()
    for q in records:
        owners.update(set(q["haystack_session_ids"]))
    return {sid for sid, n in owners.items() if n > 1}


def _build(path: Path, q: dict[str, Any], shared: set[str], app_name: str) -> _Loaded:
    qid, qtype = q["question_id"], q["question_type"]
    where = f"{path}: question {qid!r}"
    abstention = qid.endswith(ABS_SUFFIX)
    asked_at = _parse_date(q["question_date"], where, "question_date")
    answer_ids = set(q["answer_session_ids"])
    roles_counted = {"user", "assistant"} if qtype == "single-session-assistant" else {"user"}

    copies: Counter[str] = Counter()
    dated: list[tuple[datetime, int, Session]] = []
    relevant: list[str] = []
    relevant_sessions: dict[str, list[str]] = {s: [] for s in q["answer_session_ids"]}
    for n, (raw_id, date, turns) in enumerate(
        zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True)
    ):
        copies[raw_id] += 1
        sid = f"{qid}/{raw_id}" if raw_id in shared else raw_id
        if copies[raw_id] > 1:
            sid = f"{sid}~{copies[raw_id]}"
        start = _parse_date(date, where, f"haystack_dates[{n}]")
        if not isinstance(turns, list) or not turns:
            raise FixtureError(f"{where}: haystack_sessions[{n}] ({raw_id!r}) must be a non-empty list of turns")
        events = []
        for i, turn in enumerate(turns):
            at = f"{where}: haystack_sessions[{n}][{i}] ({raw_id!r})"
            if not isinstance(turn, dict):
                raise FixtureError(f"{at}: expected a turn object, got {type(turn).__name__}")
            role, content, has_answer = turn.get("role"), turn.get("content"), turn.get("has_answer")
            if role not in _AUTHORS:
                raise FixtureError(f"{at}: role must be 'user' or 'assistant', got {role!r}")
            if not isinstance(content, str):
                raise FixtureError(f"{at}: content must be a string, got {type(content).__name__}")
            if has_answer is not None and not isinstance(has_answer, bool):
                raise FixtureError(f"{at}: has_answer must be true, false or absent, got {has_answer!r}")
            event_id = f"{sid}_{i + 1}"
            events.append(Event(id=event_id, author=_AUTHORS[role], timestamp=start + i * TURN_STEP, text=content))
            if has_answer and raw_id in answer_ids and role in roles_counted:
                relevant.append(event_id)
        if raw_id in answer_ids:
            relevant_sessions[raw_id].append(sid)
        dated.append((start, n, Session(app_name=app_name, user_id=qid, id=sid, events=events)))

    dated.sort(key=lambda d: (d[0], d[1]))
    sessions = [s for _, _, s in dated]
    history = UserHistory(
        app_name=app_name,
        user_id=qid,
        sessions=sessions,
        description=f"LongMemEval {qtype} question {qid}",
        source=str(path),
        replay=[s.id for s in sessions],
    )
    question = Question(
        id=f"{qtype}/{qid}",
        app_name=app_name,
        user_id=qid,
        text=q["question"],
        relevant=() if abstention else tuple(relevant),
        asked_at=asked_at,
        qtype=ABSTENTION if abstention else qtype,
        relevant_sessions=() if abstention else tuple(s for ids in relevant_sessions.values() for s in ids),
        answer=str(q["answer"]),
    )
    return _Loaded(question=question, history=history, question_type=qtype, abstention=abstention)
