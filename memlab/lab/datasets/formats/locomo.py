"""Load LoCoMo (Maharana et al., 2024) in its own layout into a Dataset (`format: locomo`).

The file (`data/locomo10.json` of the snap-research/locomo GitHub repository, CC BY-NC: not shipped with memlab)
is a JSON list of samples: `sample_id`, `conversation` (`speaker_a`, `speaker_b`, `session_N` turn lists and
`session_N_date_time`) and `qa` (`question`, `answer` or `adversarial_answer`, `evidence`, `category`).

- Each conversation is one user's memory (user id = `sample_id`, app `locomo`); session ids are `session_N`; a
  turn is an event with its speaker as author and its `dia_id` as id, written `D<session>:<turn>`. A turn with a
  `blip_caption` (an image shared) gets ` [image: caption]` appended to its text.
- Time: `session_N_date_time` ("1:56 pm on 8 May, 2023") is read as UTC (the file gives no zone); the turns of a
  session follow a minute apart. Every question is asked a minute after the conversation's last turn.
- Evidence is parsed as written in the wild: one list item may hold several ids (`"D1:3; D2:8"`, `"D1:3,D2:8"`,
  `"D1:3 D2:8"`), with stray spaces (`"D1: 3"`), brackets or leading zeros (`"D30:05"`). An id the conversation
  does not hold, or a piece that is no id at all, is left out and listed in `Dataset.dropped`; a question left
  with no evidence is dropped and counted (never scored as a miss). An id the conversation lacks is a label lost:
  its share of all evidence ids is reported with every run, and a file that lost most of them is refused.
- Categories follow the numbering of LoCoMo's own evaluation code (snap-research/locomo, task_eval/):
  evaluation.py scores 1 with the multi-answer F1 (answers split at commas: multi-hop), 2, 3 and 4 with plain F1
  (3's answer cut at ';': open-domain / commonsense), 5 by "no information available" / "not mentioned"
  (adversarial); the evaluate_* scripts add the date hint to category 2 only (temporal); evaluation_stats.py
  prints categories in the order [4, 1, 2, 3, 5], the paper's columns single-hop, multi-hop, temporal,
  open-domain, adversarial. So: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
- Category 5 questions are no-answer questions (nothing in memory answers them: the right result is no hit),
  whatever their evidence says; their `adversarial_answer` is the distractor, so `answer` stays empty.

Malformed input raises FixtureError naming the file, the sample and the fix.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError, FixtureError
from memlab.lab.base.json_bounds import load
from memlab.lab.datasets.model import Dataset, Question, UserHistory
from memlab.types import Event, Session

CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5
TURN_STEP = timedelta(minutes=1)
MISSING = "evidence ids not in the conversation"
ALL_MISSING = "questions whose evidence ids are all missing"
NO_EVIDENCE = "questions without evidence"
UNREAD = "evidence pieces that are not ids"

_ID = re.compile(r"D\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)
_FILLER = re.compile(r"[\s;,()\[\]'\"]+")
_SESSION = re.compile(r"session_(\d+)")
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})", re.IGNORECASE)
_MONTHS = {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                           "nov", "dec"))}  # fmt: skip


@dataclass
class _Conversation:
    """One sample, built and checked: its user, its kept questions and what it dropped."""

    history: UserHistory
    questions: list[Question]
    dropped: dict[str, list[str]] = field(default_factory=dict)
    labels: int = 0  # evidence ids its questions give, found or not


def parse_evidence(value: Any) -> tuple[list[str], list[str]]:
    """(ids written `D<session>:<turn>`, in order and once each; pieces that are no id). A list item may hold
    several ids separated by `;`, `,` or spaces."""
    items = value if isinstance(value, list) else [value]
    ids: dict[str, None] = {}
    unread: list[str] = []
    for item in items:
        if item is None:
            continue
        text = str(item)
        for m in _ID.finditer(text):
            ids.setdefault(f"D{int(m.group(1))}:{int(m.group(2))}", None)
        rest = _FILLER.sub(" ", _ID.sub(" ", text)).split()
        unread.extend(rest)
    return list(ids), unread


def parse_session_date(value: Any, where: str) -> datetime:
    """"1:56 pm on 8 May, 2023" as a UTC datetime (LoCoMo gives no zone)."""
    m = _DATE.search(value) if isinstance(value, str) else None
    problem = f"{where}: {value!r} is not a date like '1:56 pm on 8 May, 2023'"
    if m is None:
        raise FixtureError(f"{problem}; fix the session's date_time")
    hour, minute, half, day, month, year = m.groups()
    month_no = _MONTHS.get(month[:3].lower())
    if month_no is None or not 1 <= int(hour) <= 12:
        raise FixtureError(f"{problem}; fix the session's date_time")
    hour24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
    try:
        return datetime(int(year), month_no, int(day), hour24, int(minute), tzinfo=UTC)
    except ValueError as e:
        raise FixtureError(f"{problem} ({e}); fix the session's date_time") from e


def load_locomo(path: str | Path, *, conversations: int | None = None, per_category: int | None = None,
                app_name: str = "locomo") -> Dataset:  # fmt: skip
    """The samples of a LoCoMo file (.json or .json.gz), one user each. `conversations: N` keeps the first N;
    `per_category: N` keeps the first N questions of each category in each conversation (after dropping those
    without evidence). The whole file is checked whatever the options keep."""
    path = Path(path)
    for key, value in (("conversations", conversations), ("per_category", per_category)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"load_locomo: {key} must be a whole number >= 1 or None, got {value!r}")
    raw = _read(path)
    seen: dict[str, int] = {}
    built = []
    for i, sample in enumerate(raw):
        conv = _build(path, i, sample, app_name)
        if conv.history.user_id in seen:
            raise FixtureError(f"{path}: sample #{i} repeats the sample_id {conv.history.user_id!r} of sample "
                               f"#{seen[conv.history.user_id]}; give each conversation its own sample_id")  # fmt: skip
        seen[conv.history.user_id] = i
        built.append(conv)
    built = built[:conversations] if conversations is not None else built
    users, questions, dropped = [], [], {}
    given = sum(conv.labels for conv in built)
    for conv in built:
        kept = conv.questions
        if per_category is not None:
            taken: Counter[str] = Counter()
            kept = []
            for q in conv.questions:
                taken[q.qtype] += 1
                if taken[q.qtype] <= per_category:
                    kept.append(q)
        if kept:
            users.append(conv.history)
            questions.extend(kept)
        for kind, items in conv.dropped.items():
            dropped.setdefault(kind, []).extend(items)
    name = path.name.removesuffix(".gz").removesuffix(".json")
    return Dataset(name=name, users=users, questions=questions, dropped=dropped, label_kinds=(MISSING,),
                   labels_given=given)  # fmt: skip


# -- parsing -------------------------------------------------------------------------------------------------


def _read(path: Path) -> list[Any]:
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            data = load(f, path)
    except json.JSONDecodeError as e:
        raise FixtureError(f"{path}:{e.lineno}:{e.colno}: not valid JSON ({e.msg}); LoCoMo's file is one JSON "
                           "list of samples") from e  # fmt: skip
    except (OSError, EOFError, UnicodeDecodeError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise FixtureError(f"{path}: cannot read the file: {e}") from e
    if not isinstance(data, list):
        raise FixtureError(f"{path}: expected a JSON list of samples (LoCoMo's layout: [{{sample_id, conversation, "
                           f"qa}}, ...]), got {type(data).__name__}")  # fmt: skip
    return data


def _text(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
        raise FixtureError(f"{where}: `{key}` must be a non-empty string, got {value!r}")
    return str(value).strip()


def _sessions(path: Path, where: str, conv: dict[str, Any], app_name: str, user: str) -> list[Session]:
    """The conversation's sessions in session-number order, each turn an event a minute after the last."""
    numbers = sorted(int(m.group(1)) for key in conv if (m := _SESSION.fullmatch(key)))
    sessions: list[Session] = []
    seen: dict[str, str] = {}
    for n in numbers:
        turns = conv[f"session_{n}"]
        at = f"{where}: session_{n}"
        if not isinstance(turns, list):
            raise FixtureError(f"{at}: expected a list of turns, got {type(turns).__name__}")
        if not turns:
            continue  # an empty session adds nothing to memory
        start = parse_session_date(conv.get(f"session_{n}_date_time"), f"{at}_date_time")
        events = []
        for i, turn in enumerate(turns):
            here = f"{at}[{i}]"
            if not isinstance(turn, dict):
                raise FixtureError(f"{here}: expected a turn object {{speaker, dia_id, text}}, got "
                                   f"{type(turn).__name__}")  # fmt: skip
            speaker = _text(turn.get("speaker"), here, "speaker")
            ids, unread = parse_evidence(_text(turn.get("dia_id"), here, "dia_id"))
            if len(ids) != 1 or unread:
                raise FixtureError(f"{here}: dia_id {turn.get('dia_id')!r} is not one id like 'D1:3'; fix the turn")
            event_id = ids[0]
            if event_id in seen:
                raise FixtureError(f"{here}: dia_id {event_id!r} repeats (also in {seen[event_id]}); each turn of a "
                                   "conversation needs its own dia_id")  # fmt: skip
            seen[event_id] = f"session_{n}"
            text = turn.get("text") or ""
            if not isinstance(text, str):
                raise FixtureError(f"{here}: `text` must be a string, got {type(text).__name__}")
            caption = turn.get("blip_caption")
            if isinstance(caption, str) and caption.strip():
                text = f"{text} [image: {caption.strip()}]".strip()
            if not text.strip():
                raise FixtureError(f"{here}: the turn has no text and no blip_caption; give it one")
            events.append(Event(id=event_id, author=speaker, timestamp=start + i * TURN_STEP, text=text))
        sessions.append(Session(app_name=app_name, user_id=user, id=f"session_{n}", events=events))
    if not sessions:
        raise FixtureError(f"{where}: the conversation has no turns (expected session_1, session_2, ... lists)")
    return sessions


def _build(path: Path, index: int, sample: Any, app_name: str) -> _Conversation:
    if not isinstance(sample, dict):
        raise FixtureError(f"{path}: sample #{index}: expected an object, got {type(sample).__name__}")
    user = _text(sample.get("sample_id"), f"{path}: sample #{index}", "sample_id")
    where = f"{path}: sample {user!r}"
    conv, qa = sample.get("conversation"), sample.get("qa")
    if not isinstance(conv, dict):
        raise FixtureError(f"{where}: `conversation` must be an object with speaker_a, speaker_b and session_N lists")
    if not isinstance(qa, list):
        raise FixtureError(f"{where}: `qa` must be a list of questions")
    sessions = _sessions(path, where, conv, app_name, user)
    session_of = {e.id: s.id for s in sessions for e in s.events}
    asked_at = max(e.timestamp for s in sessions for e in s.events) + TURN_STEP
    speakers = " and ".join(str(conv[k]) for k in ("speaker_a", "speaker_b") if conv.get(k))
    history = UserHistory(app_name=app_name, user_id=user, sessions=sessions, source=str(path),
                          description=f"LoCoMo conversation {user}" + (f" between {speakers}" if speakers else ""),
                          replay=[s.id for s in sessions])  # fmt: skip
    out = _Conversation(history, [])
    for j, item in enumerate(qa):
        qid = f"{user}/q{j + 1}"
        here = f"{where}: qa[{j}]"
        if not isinstance(item, dict):
            raise FixtureError(f"{here}: expected a question object, got {type(item).__name__}")
        text = _text(item.get("question"), here, "question")
        category = item.get("category")
        if isinstance(category, str) and category.strip().isdigit():
            category = int(category)
        if category not in CATEGORIES or isinstance(category, bool):
            raise FixtureError(f"{here}: category must be one of 1-5 ({CATEGORIES}), got {category!r}")
        qtype = CATEGORIES[category]
        if category == ADVERSARIAL:  # no-answer: the conversation does not say; the answer given is a distractor
            out.questions.append(Question(qid, app_name, user, text, (), asked_at=asked_at, qtype=qtype))
            continue
        ids, unread = parse_evidence(item.get("evidence") or [])
        out.labels += len(ids)
        out.dropped.setdefault(UNREAD, []).extend(f"{qid}: {piece!r}" for piece in unread)
        found = [e for e in ids if e in session_of]
        out.dropped.setdefault(MISSING, []).extend(f"{qid}: {e}" for e in ids if e not in session_of)
        if not found:
            out.dropped.setdefault(ALL_MISSING if ids or unread else NO_EVIDENCE, []).append(qid)
            continue
        answer = item.get("answer")
        out.questions.append(Question(
            qid, app_name, user, text, tuple(found), asked_at=asked_at, qtype=qtype,
            evidence=tuple((session_of[e], e) for e in found),
            relevant_sessions=tuple(dict.fromkeys(session_of[e] for e in found)),
            answer=None if answer is None else str(answer),
        ))  # fmt: skip
    out.dropped = {kind: items for kind, items in out.dropped.items() if items}
    return out
