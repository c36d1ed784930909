"""`Dataset`: the labelled form every data set is turned into (memlab JSONL, LongMemEval files, fixture YAML,
memlab-synth): users with their sessions, and questions that name the events answering them (an empty list
means nothing in memory answers it: the right result is no hit). A label is (session, event id) within the
question's user (`Question.evidence`), since an event id is unique within its session only (memlab.lab.base.identity);
a Dataset fills in the session of a label given by id alone."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memlab.errors import FixtureError
from memlab.facts.types import Candidate
from memlab.lab.base.identity import EventKey, resolve, session_index
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
    evidence: tuple[EventKey, ...] = ()  # (session, event id) of each relevant event; session None until resolved
    judged: tuple[EventKey, ...] = ()  # every event judged for it, relevant or not (a judged set's pool); () where
    # the labels are complete (every event not in `evidence` is not relevant)

    def __post_init__(self) -> None:
        ids = tuple(dict.fromkeys(e for _, e in self.evidence))
        if self.evidence and (not self.relevant or set(ids) == set(self.relevant)):
            object.__setattr__(self, "relevant", ids)  # the labelled ids follow the evidence: they cannot disagree
        else:  # labelled by id alone (or the ids were replaced): a Dataset fills in each session
            object.__setattr__(self, "evidence", tuple((None, e) for e in self.relevant))

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)


DEFAULT_APP = "default"  # the app of a record or query that names none
SERVED = ("current", "stale", "hidden")  # how fact search serves a value (memlab.facts.staleness)


@dataclass(frozen=True)
class ServingCheck:
    """A fact fixture's check of serving: asked at `at`, the current value `value` of (subject, predicate) is
    served as `served`: `current` (a plain dated fact), `stale` (under the confirm heading) or `hidden`."""

    at: datetime
    subject: str
    predicate: str
    value: str
    served: str


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
    serving: list[ServingCheck] = field(default_factory=list)  # fact fixtures: how values are served, when

    def session(self, session_id: str) -> Session:
        return next(s for s in self.sessions if s.id == session_id)

    @property
    def event_count(self) -> int:
        return sum(len(s.events) for s in self.sessions)


@dataclass
class Dataset:
    """Users, sessions and questions of one data set, with its name for reports."""

    name: str
    users: list[UserHistory]
    questions: list[Question]
    pool: dict[str, Any] | None = None  # a judged set's pool: the systems and depth its labels come from
    # what loading left out, by kind ("evidence ids not in the conversation": ["conv-1/q3: D9:99", ...]): counted
    # and shown by `memlab check-dataset`, so a reference that points nowhere is never silently scored as a miss
    dropped: dict[str, list[str]] = field(default_factory=dict)
    # the kinds of `dropped` that are labels naming an event the data does not hold, and how many labels the source
    # gave its questions in all (kept and dropped): scores count only the labels kept, so the share lost is said
    # wherever the data set is used, and a data set that lost most of its labels is refused (`label_loss`)
    label_kinds: tuple[str, ...] = ()
    labels_given: int = 0

    def __post_init__(self) -> None:
        """Every label gets its session (refused where an id is ambiguous): scoring compares (session, event).
        Question ids must be unique: runs, scores and the gate key a question by its id within the data set."""
        repeated = sorted(qid for qid, n in Counter(q.id for q in self.questions).items() if n > 1)
        if repeated:
            raise FixtureError(f"{self.name}: question id(s) {repeated[:5]} repeat; a question id must be unique "
                               "within a data set (prefix it with the user or conversation)")  # fmt: skip
        index = self._event_sessions()
        self.questions = [
            replace(q, evidence=resolve(q.id, q.user_id, q.relevant, q.evidence, q.relevant_sessions,
                                        index.get((q.app_name, q.user_id)), where=f"{self.name}: "))
            if any(session is None for session, _ in q.evidence) else q
            for q in self.questions
        ]  # fmt: skip

    def _event_sessions(self) -> dict[tuple[str, str], dict[str, list[str]]]:
        return session_index((s.app_name, s.user_id, s.id, e.id) for s in self.sessions() for e in s.events)

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

    def namespaced(self, prefix: str) -> Dataset:
        """The same data with every app name written `prefix/app`: two data sets in one database (an oracle and
        an S setting that reuse the same user ids, say) can never share a user's memory."""

        def app(name: str) -> str:
            return f"{prefix}/{name}"

        users = [
            replace(u, app_name=app(u.app_name), sessions=[replace(s, app_name=app(s.app_name)) for s in u.sessions])
            for u in self.users
        ]
        questions = [replace(q, app_name=app(q.app_name)) for q in self.questions]
        return Dataset(self.name, users, questions, pool=self.pool, dropped=self.dropped, label_kinds=self.label_kinds,
                       labels_given=self.labels_given)  # fmt: skip

    def label_loss(self) -> tuple[int, int]:
        """(labels dropped because they name an event the data does not hold, labels the source gave in all); a
        format that refuses such labels instead of dropping them gave the labels its questions hold."""
        lost = sum(len(self.dropped.get(kind, ())) for kind in self.label_kinds)
        given = self.labels_given or sum(len(q.evidence) for q in self.questions)
        return lost, max(given, lost)

    def checksum(self) -> str:
        """sha256 over the content (sessions, events, questions): two runs on the same data show the same value."""
        digest = hashlib.sha256()
        for s in self.sessions():
            digest.update(json.dumps([s.app_name, s.user_id, s.id], ensure_ascii=False).encode())
            for e in s.events:
                row = [e.id, e.author, e.timestamp.isoformat(), e.text]
                digest.update(json.dumps(row, ensure_ascii=False).encode())
        # which session a label names is content only where an id is in several sessions of a user (checksums of
        # data sets with unique ids stay what they were)
        repeats = any(len(held) > 1 for events in self._event_sessions().values() for held in events.values())
        for q in self.questions:
            row = [q.id, q.app_name, q.user_id, q.text, list(q.relevant), q.qtype,
                   q.asked_at.isoformat() if q.asked_at else None]  # fmt: skip
            judged = [[list(key) for key in q.judged]] if q.judged else []  # pooled labels only: others' sums stay
            digest.update(json.dumps(row + ([[s for s, _ in q.evidence]] if repeats else []) + judged,
                                     ensure_ascii=False).encode())  # fmt: skip
        return digest.hexdigest()

    def texts(self, min_chars: int = 15) -> list[str]:
        """Distinct event texts, in order (a corpus for benchmarks built from this data set)."""
        seen: dict[str, None] = {}
        for s in self.sessions():
            for e in s.events:
                if e.text and len(e.text) >= min_chars:
                    seen.setdefault(e.text, None)
        return list(seen)
