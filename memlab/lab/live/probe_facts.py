"""Fact memory probed live: a config's fact system asks the production store's fact tables, read-only.

Production facts live under the app's own name (the workbench's FactSystem keeps each extractor's facts under an
app name of its own; a live store has one fact memory per app), so the probe searches `FactMemory.search` with the
question's app and user as they are. Nothing is extracted or written: the extractor is not used, the query log is
off, and `search` only reads (decay and staleness are computed, never stored).

A fact hit cites the events its observations were read from (session and event id), and recall is scored on
those. A labelled event counts as still in the store while the user's event layer holds it or any of the user's
fact observations (the provenance `why()` shows) still cites it; erasing a session's facts and its events makes
its labels stale. The observations also give the viewer the quoted text of events the event layer never held."""

from __future__ import annotations

import psycopg

from memlab.facts.memory import FactMemory
from memlab.lab.datasets.model import Question
from memlab.storage import fact_tables as tables
from memlab.types import Hit, Hits

ALL_SENSITIVITIES = ("personal", "health")  # the probe measures what memory holds; serving filters are the app's


def fact_hits(facts: FactMemory, question: Question, k: int) -> Hits:
    """The facts the question's user would be served (threshold and decay as of the time asked, all
    sensitivities), at most k, each citing the (session, event) pairs its observations came from."""
    found = facts.search(question.app_name, question.user_id, question.text, allow=ALL_SENSITIVITIES, limit=k,
                         now=question.asked_at)  # fmt: skip
    return Hits([Hit(unit_id=h.unit_id, text=h.text, distance=h.distance, event_ids=h.event_ids,
                     event_sessions=h.event_sessions) for h in found], plan="facts")  # fmt: skip


def observed_units(conn: psycopg.Connection, app_name: str, user_id: str) -> list[tuple]:
    """The events one user's fact observations cite, as units of `stored_units`' shape (session, unit id, event
    ids, author, time, quote): what keeps a label live for a fact probe, and the viewer's text of the event."""
    return [(session, f"observed:{event}", [event], "user" if basis == "stated" else "", at, quote)
            for session, event, basis, at, quote in tables.cited_events(conn, app_name, user_id)]  # fmt: skip


__all__ = ["fact_hits", "observed_units"]
