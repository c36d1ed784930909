"""Which event a label or a hit means. memlab identifies an event by (app, user, session, event id): ADK numbers
events per session and public benchmarks number turns per conversation (`D1:3` in every one), so an event id
alone names many events.

Labels and hits are compared per question, and every hit of a question comes from the asking user's memory
(each search is scoped by app and user in SQL), so within a question an event is `(session id, event id)`: the
app and user are the question's. Anything that pools events of several users (an event -> session map, the text
shown for an event, facts cited in a data set) keys them by all four parts.

A session None means it is not known (a run folder of an older format whose hits did not record it and whose
event id several sessions of the user hold: memlab.lab.runs.format; a label a data set could not place): such an
event matches a label on the event id alone, which is how such runs were scored when they were made."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from memlab.errors import FixtureError

EventKey = tuple[str | None, str]  # (session id, event id) inside one question's (app, user)


def doc_id(key: EventKey) -> str:
    """One string per event key, for ir-measures' document ids (json: no separator an id could contain)."""
    return json.dumps(list(key), ensure_ascii=False)


def hit_events(event_ids: Sequence[str], sessions: Sequence[str | None] | None) -> list[EventKey]:
    """The event keys of one hit: its event ids with the session of each (None where the run did not save it)."""
    ids = list(event_ids if event_ids is not None else [])
    found = list(sessions) if sessions is not None else []
    if len(found) != len(ids):
        found = [None] * len(ids)
    return list(zip(found, ids, strict=True))


def run_events(run: pd.DataFrame) -> list[list[EventKey]]:
    """The event keys of every row of a run frame, in row order (a frame built by hand without the session
    columns: sessions not known)."""
    sessions = run["event_sessions"] if "event_sessions" in run.columns else [None] * len(run)
    return [hit_events(ids, s) for ids, s in zip(run["event_ids"], sessions, strict=True)]


def unit_keys(run: pd.DataFrame) -> list[tuple[str | None, str]]:
    """(session id, unit id) of every row: an event unit's id is its event id, unique within its session only."""
    sessions = run["session_id"] if "session_id" in run.columns else [None] * len(run)
    return [(None if pd.isna(s) else s, u) for s, u in zip(sessions, run["unit_id"], strict=True)]


def labelled(evidence: Iterable[EventKey], key: EventKey) -> bool:
    """Whether `key` (a hit's event) is one of the labelled events; where either session is not known (None) they
    are matched on the event id."""
    session, event = key
    return any(e == event and (session is None or s is None or s == session) for s, e in evidence)


def as_labelled(gold: Sequence[EventKey], key: EventKey) -> EventKey:
    """A hit's event key as the labels name it: the first label it matches (`labelled`), else itself. Scoring and
    the TREC export both name a hit's events this way."""
    return next((g for g in gold if labelled([g], key)), key)


def holds_labelled(evidence: Iterable[EventKey], keys: Iterable[EventKey]) -> bool:
    gold = list(evidence)
    return any(labelled(gold, k) for k in keys)


def is_relevant(hit, question) -> bool:
    """Whether a search hit (memlab.Hit) holds an event labelled for `question` (a memlab.lab.Question), by
    session and id: what a notebook or script should use instead of comparing bare event ids."""
    sessions = list(hit.event_sessions) or [hit.session_id] * len(hit.event_ids)
    return holds_labelled(question.evidence, hit_events(hit.event_ids, sessions))


def relevant_hits(run: pd.DataFrame, evidence_of: Mapping[str, Sequence[EventKey]]) -> list[bool]:
    """Per row of `run`: whether the hit holds an event labelled for its question (`evidence_of` by question id)."""
    return [holds_labelled(evidence_of.get(qid, ()), keys)
            for qid, keys in zip(run["question_id"], run_events(run), strict=True)]  # fmt: skip


def session_index(rows: Iterable[tuple[str, str, str, str]]) -> dict[tuple[str, str], dict[str, list[str]]]:
    """(app, user) -> event id -> the sessions holding it, from (app, user, session, event) rows."""
    out: dict[tuple[str, str], dict[str, list[str]]] = {}
    for app, user, session, event in rows:
        sessions = out.setdefault((app, user), {}).setdefault(event, [])
        if session not in sessions:
            sessions.append(session)
    return out


def resolve(question_id: str, user: str, relevant: Sequence[str], evidence: Sequence[EventKey],
            relevant_sessions: Sequence[str], events: Mapping[str, list[str]] | None,
            where: str = "") -> tuple[EventKey, ...]:  # fmt: skip
    """A question's labels as (session, event) pairs, given its user's event id -> sessions map. A label without
    its session takes the one session holding that id, or the one among `relevant_sessions`; an id several
    sessions hold (and the question does not narrow) is refused, as is a label naming an event its session lacks.
    Without the user's events (`events` None) unqualified labels keep session None (matched on the id)."""
    given = list(evidence) if evidence else [(None, e) for e in relevant]
    if events is None:
        return tuple(given)
    out = []
    for session, event in given:
        holders = events.get(event, [])
        if session is not None:
            if session not in holders:
                raise FixtureError(f"{where}question {question_id!r}: labelled event {event!r} of session "
                                   f"{session!r} is not an event of user {user!r} (that id is in sessions "
                                   f"{holders or 'none'})")  # fmt: skip
            out.append((session, event))
            continue
        narrowed = [s for s in holders if s in relevant_sessions] if len(holders) > 1 else holders
        if len(narrowed) != 1:
            raise FixtureError(
                f"{where}question {question_id!r}: relevant event id {event!r} is in sessions {holders} of user "
                f"{user!r}; name the session: \"relevant\": [{{\"session\": \"{holders[0]}\", \"event\": "
                f"\"{event}\"}}] (or list only that session in relevant_sessions)"
                if holders else f"{where}question {question_id!r}: relevant event id {event!r} is not an event of "
                                f"user {user!r}")  # fmt: skip
        out.append((narrowed[0], event))
    return tuple(out)
