"""Hits of a black-box memory matched back to the labelled events they came from.

A memory memlab can only write to through its own API (an ADK memory service, mem0) hands back entries, not
memlab's units. Each entry is matched to the data set's events of the asking user by MATCH_RULE: the event ids
the system keeps in its metadata, else an entry id that is an event id of that user, else the entry's exact text
(and, among events with that text, its time). An entry that matches no event (a system that rewrites, merges or
summarises what it was given) stays in the ranking as a hit holding no labelled event and is counted, never
dropped."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memlab.lab.datasets.model import Dataset

MATCH_RULE = ("event ids the system returns in its metadata (with their session where given); else an entry id "
              "that is an event id of the asking user; else the entry's exact text among that user's events (by "
              "time where several events hold it); an entry matching none is kept and counted as unmatched")

EventRef = tuple[str, str]  # (session id, event id)


def _text_key(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Returned:
    """One entry a black-box memory returned: what it says of itself (ids it keeps, its text and time)."""

    text: str
    entry_id: str | None = None
    event_ids: tuple[str, ...] = ()
    session_id: str | None = None
    timestamp: datetime | None = None


@dataclass
class EventMatcher:
    """The labelled events of one data set by user, looked up by id and by text."""

    by_id: dict[tuple[str, str, str], list[EventRef]] = field(default_factory=lambda: defaultdict(list))
    by_text: dict[tuple[str, str, str], list[tuple[EventRef, datetime]]] = field(
        default_factory=lambda: defaultdict(list))

    @classmethod
    def of(cls, dataset: Dataset) -> EventMatcher:
        matcher = cls()
        for session in dataset.sessions():
            user = (session.app_name, session.user_id)
            for event in session.events:
                ref = (session.id, event.id)
                matcher.by_id[(*user, event.id)].append(ref)
                if event.text:
                    matcher.by_text[(*user, _text_key(event.text))].append((ref, event.timestamp))
        return matcher

    def match(self, app: str, user: str, entry: Returned) -> tuple[EventRef, ...]:
        """The events of (app, user) `entry` came from, by MATCH_RULE; () when none."""
        if entry.event_ids:
            found = [ref for ident in entry.event_ids for ref in self._by_id(app, user, ident, entry)]
            if found:
                return tuple(dict.fromkeys(found))
        if entry.entry_id:
            found = self._by_id(app, user, entry.entry_id, entry)
            if found:
                return tuple(found)
        return self._by_text(app, user, entry)

    def _by_id(self, app: str, user: str, ident: str, entry: Returned) -> list[EventRef]:
        refs = self.by_id.get((app, user, ident), [])
        if entry.session_id is not None:
            named = [r for r in refs if r[0] == entry.session_id]
            if named:
                return named[:1]
        if len(refs) <= 1:
            return list(refs)
        # an id several sessions reuse: the one holding the entry's text, else none (ambiguous)
        by_text = set(self._by_text(app, user, entry))
        return [r for r in refs if r in by_text][:1]

    def _by_text(self, app: str, user: str, entry: Returned) -> tuple[EventRef, ...]:
        candidates = self.by_text.get((app, user, _text_key(entry.text)), [])
        if not candidates:
            return ()
        if entry.timestamp is not None and len(candidates) > 1:
            same = [ref for ref, when in candidates if abs((when - entry.timestamp).total_seconds()) < 1.0]
            if same:
                return (same[0],)
        return (candidates[0][0],)


def unmatched(matches: Iterable[Sequence[EventRef]]) -> int:
    """How many of a question's returned entries matched no event."""
    return sum(1 for found in matches if not found)


__all__ = ["MATCH_RULE", "EventMatcher", "Returned", "unmatched"]
