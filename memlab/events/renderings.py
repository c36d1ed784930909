"""Renderings: the text embedded (and indexed for full-text search) for a unit, which may differ from the body
stored and returned.

What is embedded matters as much as how it is searched: a bare turn ("Yes, the blue one.") carries neither who
said it nor when, and questions ask about both ("what did I buy in May?"). A rendering is a pure function of
the unit and the events around it:

- `text`: the body as said (the default; the unit's layer keeps its plain name).
- `speaker`: the author's name first ("user: ...").
- `speaker_date`: the event's date and weekday, then the author ("[2023-05-20 Sat] user: ...").
- `context`: the previous kept event of the session as context, then the unit ("user: ...\\nassistant: ...").

Fact keys (`fact_keys=`) add the facts an extractor reads from a unit's events to any rendering
("... [facts: user diet = vegetarian]"), so a question about a fact finds the turn that stated it.

The rendering's name is part of the unit's layer (`event+speaker_date`, `chunk:4:1+speaker+facts:rules`), so
renderings of one session live side by side in one table, each with its own HNSW index, and are compared in
one run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Literal

from memlab.errors import ConfigError
from memlab.events.units import Unit, render_lines
from memlab.types import Event

Rendering = Literal["text", "speaker", "speaker_date", "context"]
RENDERINGS: tuple[str, ...] = ("text", "speaker", "speaker_date", "context")
FACTS_OPEN = "[facts: "


QUERY_RENDERINGS: tuple[str, ...] = ("as_is", "first_person")

# An agent asks memory about "the user" (ADK's load_memory queries are written by the model); the user wrote
# the memory as "I". `first_person` puts the question in the memory's perspective before it is embedded and
# searched: "What is the user's dog called?" -> "What is my dog called?". Rules run in order.
_FIRST_PERSON = [
    (r"\bthe user'?s\b|\buser's\b", "my"),
    (r"\b(does|do) the user\b", "do I"),
    (r"\bdid the user\b", "did I"),
    (r"\bis the user\b", "am I"),
    (r"\b(has|have) the user\b", "have I"),
    (r"\b(was|were) the user\b", "was I"),
    (r"\b(can|could|should|would|will|must|might) the user\b", r"\1 I"),
    (r"\bthe user is\b", "I am"),
    (r"\bthe user has\b", "I have"),
    (r"\bthe user (themselves|themself|himself|herself)\b", "myself"),
    (r"\b(for|to|with|about|from|of|by|at|on|than|like|towards?|against|without|behind|near|employs|employ|"
     r"helps?|tells?|told|gives?|gave|sent|sends?|called|calls?|asked|asks?|visits?|visited|met|meets?) the user\b",
     r"\1 me"),
    (r"\bthe user\b", "I"),
]


def render_query(query: str, how: str = "as_is") -> str:
    """The query as it is embedded and searched: as asked, or in the memory's first person."""
    if how == "as_is":
        return query
    if how != "first_person":
        raise ConfigError(f"query rendering {how!r} is unknown; use one of {', '.join(QUERY_RENDERINGS)}.")
    for pattern, replacement in _FIRST_PERSON:
        query = re.sub(pattern, replacement, query, flags=re.IGNORECASE)
    return query


def check_rendering(rendering: str) -> str:
    if rendering not in RENDERINGS:
        raise ConfigError(f"rendering {rendering!r} is unknown; use one of {', '.join(RENDERINGS)}.")
    return rendering


def rendered_layer(layer: str, rendering: str, fact_keys: str | None = None) -> str:
    """The stored layer of a granularity under a rendering: the plain layer for raw text, else
    `<layer>+<rendering>` (and `+facts:<extractor>` when fact keys are added)."""
    check_rendering(rendering)
    parts = [layer] + ([rendering] if rendering != "text" else []) + ([f"facts:{fact_keys}"] if fact_keys else [])
    return "+".join(parts)


def _date(event: Event) -> str:
    return f"[{event.timestamp:%Y-%m-%d %a}]"


def _line(event: Event) -> str:
    return f"{event.author}: {(event.text or '').strip()}"


def render_unit(rendering: str, unit: Unit, events: Sequence[Event], previous: Event | None, *, chunk: bool) -> str:
    """The text to embed for `unit`, whose kept events are `events`; `previous` is the kept event just before
    the unit in its session (None at the start). A chunk's body already names each line's author."""
    is_chunk = chunk
    if rendering == "text":
        return unit.body
    if rendering == "speaker":
        return unit.body if is_chunk else _line(events[0])
    if rendering == "speaker_date":
        first = events[0]
        body = unit.body if is_chunk else _line(first)
        return f"{_date(first)} {body}"
    if rendering == "context":
        body = unit.body if is_chunk else _line(events[0])
        return body if previous is None else f"{_line(previous)}\n{body}"
    raise ConfigError(f"rendering {rendering!r} is unknown; use one of {', '.join(RENDERINGS)}.")


def fact_suffix(lines: Sequence[str]) -> str:
    """The fact-key tail added to a rendered unit: its facts as 'subject predicate = value' items."""
    return f"\n{FACTS_OPEN}{'; '.join(lines)}]" if lines else ""


def render_units(
    rendering: str,
    units: Sequence[Unit],
    kept: Sequence[Event],
    facts_by_event: Mapping[str, Sequence[str]] | None = None,
    *,
    chunk: bool = False,
) -> list[Unit]:
    """Each unit with its `rendered` text set (None where it equals the body, so plain text costs nothing)."""
    check_rendering(rendering)
    position = {e.id: i for i, e in enumerate(kept)}
    out = []
    for unit in units:
        idx = [position[i] for i in unit.event_ids if i in position]
        events = [kept[i] for i in idx] or []
        previous = kept[idx[0] - 1] if idx and idx[0] > 0 else None
        text = render_unit(rendering, unit, events, previous, chunk=chunk) if events else unit.body
        if facts_by_event:
            lines = [line for e in unit.event_ids for line in facts_by_event.get(e, ())]
            text += fact_suffix(list(dict.fromkeys(lines)))
        out.append(replace(unit, rendered=None if text == unit.body else text))
    return out


__all__ = ["QUERY_RENDERINGS", "RENDERINGS", "Rendering", "check_rendering", "render_lines", "render_query",
           "render_units", "rendered_layer"]  # fmt: skip
