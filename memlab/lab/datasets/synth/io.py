"""A compact JSON form of a Dataset (users, sessions, events, questions) and transcripts for reading.

Datetimes are ISO 8601 strings with their offset. Only the fields a data set of this kind uses are written:
a session's gold fact candidates go under its optional `facts` list (`{subject, predicate, value, quote, event}`,
plus `negated: true` for a retraction and `basis: inferred` when not stated; their time and session are the
event's); expected facts of fact fixtures are not (write_json refuses a set that has them).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from memlab.facts.types import Candidate
from memlab.lab.datasets.model import Dataset, Question, UserHistory
from memlab.types import Event, FunctionCall, FunctionResponse, Session

FORMAT = "memlab-labelled/1"


def _event_to_json(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"id": event.id, "author": event.author, "at": event.timestamp.isoformat()}
    if event.text is not None:
        out["text"] = event.text
    if event.partial:
        out["partial"] = True
    if event.function_calls:
        out["function_calls"] = [{"name": c.name, "args": c.args} for c in event.function_calls]
    if event.function_responses:
        out["function_responses"] = [{"name": r.name, "response": r.response} for r in event.function_responses]
    return out


def _event_from_json(raw: dict[str, Any]) -> Event:
    return Event(
        id=raw["id"],
        author=raw["author"],
        timestamp=datetime.fromisoformat(raw["at"]),
        text=raw.get("text"),
        function_calls=tuple(FunctionCall(c["name"], c.get("args", {})) for c in raw.get("function_calls", ())),
        function_responses=tuple(
            FunctionResponse(r["name"], r.get("response", {})) for r in raw.get("function_responses", ())
        ),
        partial=raw.get("partial", False),
    )


def _candidate_to_json(c: Candidate) -> dict[str, Any]:
    out: dict[str, Any] = {"subject": c.subject, "predicate": c.predicate, "value": c.value, "quote": c.quote,
                           "event": c.event_id}  # fmt: skip
    if c.negated:
        out["negated"] = True
    if c.basis != "stated":
        out["basis"] = c.basis
    return out


def _candidate_from_json(raw: dict[str, Any], events: dict[str, Event], session_id: str) -> Candidate:
    event = events.get(raw["event"])
    if event is None:
        raise ValueError(f"session {session_id!r}: gold fact {raw!r} names event {raw['event']!r}, not in the session")
    if raw["quote"] not in (event.text or ""):
        raise ValueError(f"session {session_id!r}: quote {raw['quote']!r} is not in the text of {event.id!r}")
    return Candidate(subject=raw["subject"], predicate=raw["predicate"], value=raw["value"], quote=raw["quote"],
                     basis=raw.get("basis", "stated"), negated=bool(raw.get("negated", False)), event_id=event.id,
                     event_time=event.timestamp, session_id=session_id)  # fmt: skip


def _session_to_json(session: Session, gold: list[Candidate]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": session.id, "events": [_event_to_json(e) for e in session.events]}
    if gold:
        out["facts"] = [_candidate_to_json(c) for c in gold]
    return out


def _session_from_json(app: str, user: str, raw: dict[str, Any], gold: dict[str, list[Candidate]]) -> Session:
    session = Session(app, user, raw["id"], [_event_from_json(e) for e in raw["events"]])
    if raw.get("facts"):
        events = {e.id: e for e in session.events}
        gold[session.id] = [_candidate_from_json(c, events, session.id) for c in raw["facts"]]
    return session


def to_json(labelled: Dataset) -> dict[str, Any]:
    users = []
    for user in labelled.users:
        if user.expected_facts is not None:
            raise ValueError(f"user {user.user_id!r} has expected facts, which this form omits")
        stray = sorted(set(user.gold_candidates) - {s.id for s in user.sessions})
        if stray:
            raise ValueError(f"user {user.user_id!r} has gold candidates for sessions {stray} it does not have")
        users.append(
            {
                "app_name": user.app_name,
                "user_id": user.user_id,
                "description": user.description,
                "source": user.source,
                "expected_skips": user.expected_skips,
                "replay": user.replay,
                "sessions": [_session_to_json(s, user.gold_candidates.get(s.id, [])) for s in user.sessions],
            }
        )
    questions = [
        {
            "id": q.id,
            "app_name": q.app_name,
            "user_id": q.user_id,
            "text": q.text,
            "relevant": list(q.relevant),
            "asked_at": q.asked_at.isoformat() if q.asked_at else None,
            "qtype": q.qtype,
            "fact_key": q.fact_key,
            "relevant_sessions": list(q.relevant_sessions),
            "answer": q.answer,
        }
        for q in labelled.questions
    ]
    return {"format": FORMAT, "name": labelled.name, "users": users, "questions": questions}


def from_json(data: dict[str, Any]) -> Dataset:
    if data.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} document (format is {data.get('format')!r})")
    users = []
    for u in data["users"]:
        gold: dict[str, list[Candidate]] = {}
        users.append(
            UserHistory(
                app_name=u["app_name"],
                user_id=u["user_id"],
                sessions=[_session_from_json(u["app_name"], u["user_id"], s, gold) for s in u["sessions"]],
                description=u.get("description", ""),
                expected_skips=dict(u.get("expected_skips", {})),
                source=u.get("source", ""),
                gold_candidates=gold,
                replay=list(u.get("replay", [])),
            )
        )
    questions = [
        Question(
            id=q["id"],
            app_name=q["app_name"],
            user_id=q["user_id"],
            text=q["text"],
            relevant=tuple(q["relevant"]),
            asked_at=datetime.fromisoformat(q["asked_at"]) if q.get("asked_at") else None,
            qtype=q.get("qtype", "default"),
            fact_key=q.get("fact_key"),
            relevant_sessions=tuple(q.get("relevant_sessions", ())),
            answer=q.get("answer"),
        )
        for q in data["questions"]
    ]
    return Dataset(name=data["name"], users=users, questions=questions)


def write_json(labelled: Dataset, path: str | Path) -> Path:
    """Write `labelled` as compact JSON (one line, UTF-8); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(labelled), ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    return path


def read_json(path: str | Path) -> Dataset:
    """Read a set written by write_json."""
    return from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def _user(labelled: Dataset, user_id: str) -> UserHistory:
    for user in labelled.users:
        if user.user_id == user_id:
            return user
    raise KeyError(f"no user {user_id!r} in {labelled.name}")


def sample_transcript(
    labelled: Dataset, user_id: str, n_sessions: int = 2, *, session_ids: list[str] | None = None
) -> str:
    """A readable transcript of `n_sessions` of one user (or the sessions named), for checking by hand.

    By default the first sessions that hold an event some question names as relevant; those events are
    marked with the question ids, e.g. `<- u007-q3`."""
    user = _user(labelled, user_id)
    cited: dict[tuple, list[str]] = {}  # (session, event id) -> question ids: ids repeat across sessions
    for q in labelled.questions:
        if (q.app_name, q.user_id) == (user.app_name, user.user_id):
            for key in q.evidence:
                cited.setdefault(key, []).append(q.id)
    if session_ids is None:
        keep = [i for i, s in enumerate(user.sessions) if any((s.id, e.id) in cited for e in s.events)]
        keep += [i for i in range(len(user.sessions)) if i not in keep]
        sessions = [user.sessions[i] for i in sorted(keep[:n_sessions])]
    else:
        sessions = [user.session(sid) for sid in session_ids]
    lines = [f"# {user.user_id}: {user.description}"]
    for session in sessions:
        lines.append(f"\n## {session.id} ({session.events[0].timestamp:%Y-%m-%d %H:%M %Z})")
        for event in session.events:
            mark = f"   <- {', '.join(cited[(session.id, event.id)])}" if (session.id, event.id) in cited else ""
            lines.append(f"[{event.id.rsplit('-', 1)[-1]}] {event.author}: {event.text}{mark}")
    return "\n".join(lines)


def explain_questions(labelled: Dataset, user_id: str | None = None, limit: int | None = None) -> str:
    """Each question (of one user, or all) with its type, answer and the text of its relevant events."""
    texts = {(s.app_name, s.user_id, s.id, e.id): (e.author, e.text) for s in labelled.sessions() for e in s.events}
    lines = []
    chosen = [q for q in labelled.questions if user_id is None or q.user_id == user_id][:limit]
    for q in chosen:
        lines.append(f"{q.id} [{q.qtype}] {q.fact_key or '-'}\n  Q: {q.text}\n  A: {q.answer}")
        for session, eid in q.evidence:  # an event is (app, user, session, id)
            author, text = texts.get((q.app_name, q.user_id, session, eid), ("?", "(not in the data set)"))
            lines.append(f"    {eid} {author}: {text}")
    return "\n".join(lines)
