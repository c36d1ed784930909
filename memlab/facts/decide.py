"""Consolidation as pure functions: fold a candidate into the rows of its key, then say what happened.

The article's `decide()` compares a candidate with the *current* rows only, so the final state depends on
ingestion order: a retraction that arrives before the fact it retracts is lost, and a late old session
re-inserts it. Here every value of a key keeps the times consolidation reasons with (last stated, last
inferred, last retracted), history rows included, and the statuses are recomputed from those times alone
by `resolve()`. The set of observations, not their order, decides the state:

- a value is retracted when its latest retraction is at or after its latest assertion;
- single-valued keys: the value with the latest *stated* assertion is current unless retracted; otherwise
  the latest live *inferred* value newer than that statement is current (inferred never beats stated);
- many-valued keys: every value that is not retracted is current.

`decide()` reports the article's outcome (insert, reinforce, supersede, dispute, retract, ignore) by
comparing the state before and after.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from memlab.facts.types import Candidate, Cardinality, Decision, Fact, Sensitivity

BASE_CONFIDENCE = {"stated": 0.95, "inferred": 0.4}
CONFIDENCE_CAP = {"stated": 0.99, "inferred": 0.6}  # repetition alone never lifts an inference to serving level
REINFORCE_STEP = 0.02


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _asserted_at(row: Fact) -> datetime | None:
    return _later(row.last_stated_at, row.last_inferred_at)


def _alive(said: datetime | None, retracted: datetime | None) -> bool:
    """An assertion survives a retraction only if it is strictly newer (the retraction wins ties)."""
    return said is not None and (retracted is None or said > retracted)


def observe(
    rows: Sequence[Fact], candidate: Candidate, *, cardinality: Cardinality = "one", sensitivity: Sensitivity = "normal"
) -> list[Fact]:
    """Fold the candidate's times into the row of its value (creating it if new). Statuses are stale
    until `resolve()`; this only records what was said, when and by which session."""
    if candidate.event_time is None:
        raise ValueError(f"candidate {candidate.key}={candidate.value!r} has no event_time: consolidation needs it")
    t, session = candidate.event_time, candidate.session_id
    out = [r for r in rows if r.value != candidate.value]
    old = next((r for r in rows if r.value == candidate.value), None)
    if old is None:
        old = Fact(
            subject=candidate.subject,
            predicate=candidate.predicate,
            value=candidate.value,
            status="retracted" if candidate.negated else "current",
            basis=candidate.basis,
            confidence=0.0,
            source_session=session,
            source_ts=t,
            quote=candidate.quote,
            confirmed_at=t,
            confirmed_by=session,
            sensitivity=sensitivity,
            cardinality=cardinality,
        )
        first = True
    else:
        first = False
    if candidate.negated:
        newer = old.retracted_at is None or t >= old.retracted_at
        row = replace(
            old,
            retracted_at=_later(old.retracted_at, t),
            retracted_by=session if newer else old.retracted_by,
        )
    else:
        unsaid = old.last_stated_at is None and old.last_inferred_at is None  # only a retraction so far
        earlier = first or unsaid or t < old.source_ts
        later = first or unsaid or t >= old.confirmed_at
        row = replace(
            old,
            last_stated_at=_later(old.last_stated_at, t) if candidate.basis == "stated" else old.last_stated_at,
            last_inferred_at=_later(old.last_inferred_at, t) if candidate.basis == "inferred" else old.last_inferred_at,
            source_ts=t if earlier else old.source_ts,
            source_session=session if earlier else old.source_session,
            quote=candidate.quote if earlier else old.quote,
            confirmed_at=t if later else old.confirmed_at,
            confirmed_by=session if later else old.confirmed_by,
            sessions=tuple(sorted({*old.sessions, session})),
        )
    out.append(row)
    return out


def _confidence(row: Fact, basis: str) -> float:
    sessions = max(len(row.sessions), 1)
    return round(min(BASE_CONFIDENCE[basis] + REINFORCE_STEP * (sessions - 1), CONFIDENCE_CAP[basis]), 4)


def _current_one(rows: Sequence[Fact]) -> tuple[Fact | None, str]:
    stated = [r for r in rows if r.last_stated_at is not None]
    latest = max(stated, key=lambda r: (r.last_stated_at, r.value), default=None)
    if latest is not None and _alive(latest.last_stated_at, latest.retracted_at):
        return latest, "stated"
    floor = latest.last_stated_at if latest is not None else None
    inferred = [
        r for r in rows if _alive(r.last_inferred_at, r.retracted_at) and (floor is None or r.last_inferred_at > floor)
    ]
    pick = max(inferred, key=lambda r: (r.last_inferred_at, r.value), default=None)
    return pick, "inferred"


def resolve(rows: Sequence[Fact], cardinality: Cardinality) -> list[Fact]:
    """Recompute status, basis and confidence of every value row of one key from their times alone."""
    out: list[Fact] = []
    if cardinality == "many":
        for r in rows:
            if _alive(_asserted_at(r), r.retracted_at):
                basis = "stated" if _alive(r.last_stated_at, r.retracted_at) else "inferred"
                out.append(replace(r, status="current", basis=basis, confidence=_confidence(r, basis)))
            else:
                out.append(replace(r, status="retracted", confidence=0.0))
        return sorted(out, key=lambda r: r.value)
    current, how = _current_one(rows)
    for r in rows:
        if current is not None and r.value == current.value:
            out.append(replace(r, status="current", basis=how, confidence=_confidence(r, how)))
            continue
        basis = "stated" if r.last_stated_at is not None else "inferred"
        if not _alive(_asserted_at(r), r.retracted_at):
            status = "retracted"
        elif (
            basis == "inferred"
            and current is not None
            and how == "stated"
            and r.last_inferred_at is not None
            and r.last_inferred_at > current.last_stated_at
        ):
            status = "disputed"  # the agent claims something newer than what the user said: keep, never serve
        else:
            status = "superseded"
        out.append(replace(r, status=status, basis=basis, confidence=0.0))
    return sorted(out, key=lambda r: r.value)


def current_values(rows: Sequence[Fact]) -> set[str]:
    return {r.value for r in rows if r.status == "current"}


def decide(candidate: Candidate, current_rows: Sequence[Fact], cardinality: Cardinality) -> Decision:
    """Consolidate one candidate with the rows of its key (current *and* history rows).

    Pure: returns the action and the complete new state of the key; the store writes it."""
    if cardinality not in ("one", "many"):
        raise ValueError(f"cardinality must be 'one' or 'many', got {cardinality!r}")
    rows = [r for r in current_rows if r.key == candidate.key]
    before = resolve(rows, cardinality)
    v = candidate.value
    if candidate.negated and candidate.basis == "inferred":
        return Decision("ignore", v, "agent or tool text never retracts a fact", tuple(before))
    sensitivity = next((r.sensitivity for r in rows), "normal")
    after = resolve(observe(rows, candidate, cardinality=cardinality, sensitivity=sensitivity), cardinality)
    was, now = current_values(before), current_values(after)
    if candidate.negated:
        if v in was and v not in now:
            return Decision("retract", v, "the user withdrew a current value", tuple(after))
        if v in now:
            return Decision("ignore", v, "the value was stated again after this retraction", tuple(after))
        return Decision(
            "ignore", v, "nothing current to retract; kept so an older statement stays retracted", tuple(after)
        )
    row = next(r for r in after if r.value == v)
    if v in was and v in now:
        return Decision("reinforce", v, "the same value was said again", tuple(after))
    if v in now:
        if was - now:
            return Decision("supersede", v, f"replaces {sorted(was - now)}", tuple(after))
        return Decision("insert", v, "a new value", tuple(after))
    if row.status == "disputed":
        return Decision("dispute", v, "an inference conflicts with what the user stated", tuple(after))
    if row.status == "retracted":
        return Decision("ignore", v, "retracted at or after the time this was said", tuple(after))
    return Decision("ignore", v, "older than the current value (late, older news)", tuple(after))
