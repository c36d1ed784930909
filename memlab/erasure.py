"""Erasure across both memories: what a deletion request really asks for.

Event memory and fact memory each know how to forget their own rows; a session (or an event) the user wants
gone lives in both. `forget_session` removes the session's units and their cached vectors, and the facts the
session produced, re-evaluating every key those facts touched from the remaining history (a value the session
had superseded becomes current again if nothing else replaced it). `forget_event` does the same for one event."""

from __future__ import annotations

from dataclasses import dataclass

from memlab.errors import ConfigError
from memlab.events.memory import EventMemory
from memlab.facts.memory import FactForgetReport, FactMemory
from memlab.storage.disk_erasure import check_level
from memlab.types import DeletionReport


@dataclass(frozen=True)
class ErasureReport:
    """What one erasure removed from each memory (None where that memory was not given)."""

    events: DeletionReport | int | None = None
    facts: FactForgetReport | None = None


def _check(events: EventMemory | None, facts: FactMemory | None) -> None:
    if events is None and facts is None:
        raise ConfigError("erasure needs the memories to erase from: pass events=EventMemory(...) and/or "
                          "facts=FactMemory(...)")  # fmt: skip


def forget_session(
    app_name: str, user_id: str, session_id: str, *, events: EventMemory | None = None,
    facts: FactMemory | None = None, vacuum: bool | str = False,
) -> ErasureReport:  # fmt: skip
    """Forget one session everywhere it is remembered; `vacuum` is the erasure level (False, True, "full",
    "wal": see memlab.storage.disk_erasure), run once after both memories deleted (it covers both's tables)."""
    _check(events, facts)
    check_level(vacuum)
    fact_vacuum = vacuum if events is None else False
    fact_report = facts.forget_session(app_name, user_id, session_id, vacuum=fact_vacuum) if facts else None
    event_report = events.forget_session(app_name, user_id, session_id, vacuum=vacuum) if events is not None else None
    return ErasureReport(event_report, fact_report)


def forget_event(
    app_name: str, user_id: str, event_id: str, *, session_id: str | None = None,
    events: EventMemory | None = None, facts: FactMemory | None = None, vacuum: bool | str = False,
) -> ErasureReport:  # fmt: skip
    """Forget one event (in `session_id` only, if given): its units and the facts read from it; `vacuum` as in
    `forget_session`."""
    _check(events, facts)
    check_level(vacuum)
    fact_vacuum = vacuum if events is None else False
    fact_report = (facts.forget_events(app_name, user_id, [event_id], session_id=session_id, vacuum=fact_vacuum)
                   if facts else None)  # fmt: skip
    event_report = (events.delete_memory(app_name, user_id, event_id, session_id=session_id, vacuum=vacuum)
                    if events is not None else None)  # fmt: skip
    return ErasureReport(event_report, fact_report)


__all__ = ["ErasureReport", "forget_event", "forget_session"]
