"""The labelled form every data set is turned into: users with their sessions, and questions that name the
event ids answering them (an empty list means nothing in memory answers it: the right result is no hit)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from memlab.facts.types import Candidate
from memlab.types import Session


@dataclass(frozen=True)
class Question:
    """A labelled query against one user's memory."""

    id: str
    app_name: str
    user_id: str
    text: str
    relevant: tuple[str, ...]
    asked_at: datetime | None = None
    qtype: str = "default"
    fact_key: str | None = None  # "subject/predicate" the question asks about, when it asks about a fact
    relevant_sessions: tuple[str, ...] = ()  # session-level labels, where turn-level ones are not enough
    answer: str | None = None  # the expected answer text, when the data set gives one

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)


@dataclass
class UserHistory:
    """One user's sessions, plus the skip reasons the fixture expects the ingest filter to give."""

    app_name: str
    user_id: str
    sessions: list[Session]
    description: str = ""
    expected_skips: dict[str, str] = field(default_factory=dict)
    source: str = ""
    gold_candidates: dict[str, list[Candidate]] = field(default_factory=dict)  # session id -> gold facts
    replay: list[str] = field(default_factory=list)  # ingestion order (may repeat a session or go back)
    expected_facts: list[tuple[str, str, str, str]] | None = None  # (subject, predicate, value, basis)

    def session(self, session_id: str) -> Session:
        return next(s for s in self.sessions if s.id == session_id)

    @property
    def event_count(self) -> int:
        return sum(len(s.events) for s in self.sessions)


@dataclass
class LabelledSet:
    """Users, sessions and questions of one data set, with its name for reports."""

    name: str
    users: list[UserHistory]
    questions: list[Question]

    def sessions(self) -> Iterator[Session]:
        for user in self.users:
            yield from user.sessions

    def user(self, app_name: str, user_id: str) -> UserHistory:
        for user in self.users:
            if (user.app_name, user.user_id) == (app_name, user_id):
                return user
        raise KeyError(f"no user {user_id!r} of app {app_name!r} in {self.name}")

    def summary(self) -> dict[str, int]:
        return {
            "users": len(self.users),
            "sessions": sum(len(u.sessions) for u in self.users),
            "events": sum(u.event_count for u in self.users),
            "questions": len(self.questions),
            "answerable": sum(q.answerable for q in self.questions),
            "no_answer": sum(not q.answerable for q in self.questions),
        }
