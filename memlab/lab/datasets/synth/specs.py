"""The shapes of the template banks (fact kinds, multi-session episodes, distractor topics) and their loader.

The text itself is data (`data/*.yaml`), so a phrasing can be added or reworded without touching the generator;
this module reads it into these shapes, once per process.

Slots in templates: {v} the value, {old} the value it replaces, {x} the fact's extra (a pet's species, a
service name), {past}/{future} a date a few weeks before/after the session ("14 May"). Only user turns carry
dates. Replies (model turns) may repeat {v}/{old}; when they do, that model turn states the value too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).with_name("data")

Pair = tuple[str, str]  # (user turn, model reply)


@dataclass(frozen=True)
class FactSpec:
    """One registry predicate the generator can give a user, with its phrasings."""

    predicate: str
    topic: str
    values: tuple[str, ...]
    state: tuple[Pair, ...]  # the user says the value for the first time
    ask: tuple[str, ...]  # paraphrased questions for the current value ({x} allowed)
    about: str  # noun phrase for combined questions: "the city the user lives in"
    change: tuple[Pair, ...] = ()  # a later session: the value changes ({old} -> {v}); empty: never changes
    before: tuple[str, ...] = ()  # questions for the value before the latest change ({v} = current value)
    order: tuple[str, ...] = ()  # questions for every value, oldest first
    history: tuple[str, ...] = ()  # questions for every value, any order
    when: tuple[str, ...] = ()  # questions for the date in a dated statement of value {v}
    extras: tuple[str, ...] = ("",)  # one is drawn per user and kept across changes
    subject: str = "user"  # "service:{x}" for facts about a service
    no_answer: bool = True  # may be asked of users who never mention it
    near_miss: bool = True  # may be asked with another of its extras (a user with a dog asked about a rabbit)
    groups: tuple[tuple[str, ...], ...] = ()  # when set, one user's values all come from one group

    @property
    def changeable(self) -> bool:
        return bool(self.change)


@dataclass(frozen=True)
class EpisodeSpec:
    """Several options the user brings up in different sessions (a trip shortlist, gift ideas)."""

    kind: str
    topic: str
    bank: str  # the chatter slot bank the items come from (so distractors talk about other items)
    first: tuple[Pair, ...]  # {v} the item, {x} the occasion in the user's words
    more: tuple[Pair, ...]  # the next items
    ask: tuple[str, ...]  # {y}: the occasion in the third person
    extras: tuple[tuple[str, str], ...]  # (first person, third person)


@dataclass(frozen=True)
class Topic:
    """Distractor talk on one topic: user turns with slots, each with replies that pick up its slots."""

    name: str
    pairs: tuple[tuple[str, tuple[str, ...]], ...]


@cache
def load(name: str) -> Any:
    """One data file (`data/<name>.yaml`), parsed once: every user the generator builds draws from it."""
    return yaml.safe_load((DATA / f"{name}.yaml").read_text(encoding="utf-8"))


def text(value: Any, where: str) -> str:
    """A string from the data, refused if YAML read it as something else (a bare `no`, `12` or `null`)."""
    if not isinstance(value, str):
        raise TypeError(f"memlab-synth data: {where} must be a string, not {value!r}")
    return value


def texts(value: Any, where: str) -> tuple[str, ...]:
    """A list of strings from the data, as the tuple the specs hold."""
    if not isinstance(value, list):
        raise TypeError(f"memlab-synth data: {where} must be a list of strings")
    return tuple(text(v, where) for v in value)


def pairs(value: Any, where: str) -> tuple[Pair, ...]:
    """(user turn, model reply) pairs, written as `{user: ..., reply: ...}`."""
    return tuple((text(p["user"], where), text(p["reply"], where)) for p in value)


def turns(value: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """User turns with the replies that can answer them, written as `{user: ..., replies: [...]}`."""
    return tuple((text(t["user"], where), texts(t["replies"], where)) for t in value)


def dates() -> tuple[str, ...]:
    """Every 1st to 28th of every month ("14 May"): the values of `values: dates` (birthdays)."""
    return tuple(f"{day} {month}" for month in texts(load("banks")["months"], "months") for day in range(1, 29))


def _fact(raw: dict[str, Any], where: str) -> FactSpec:
    fields = dict(raw)
    for key in ("predicate", "topic", "about", "subject"):
        if key in fields:
            text(fields[key], f"{where}: {key}")
    for key in ("state", "change"):
        if key in fields:
            fields[key] = pairs(fields[key], f"{where}: {key}")
    for key in ("ask", "before", "order", "history", "when", "extras"):
        if key in fields:
            fields[key] = texts(fields[key], f"{where}: {key}")
    if "groups" in fields:  # the values are the groups in order
        fields["groups"] = tuple(texts(group, f"{where}: groups") for group in fields["groups"])
        fields.setdefault("values", [v for group in fields["groups"] for v in group])
    values = fields.get("values")
    fields["values"] = dates() if values == "dates" else texts(values, f"{where}: values")
    return FactSpec(**fields)


def fact_specs(name: str) -> tuple[FactSpec, ...]:
    """The fact kinds of one data file (`facts_*.yaml`), in file order (the generator samples from that order)."""
    return tuple(_fact(raw, f"{name}.yaml: {raw.get('predicate')}") for raw in load(name))


def topics(name: str) -> tuple[Topic, ...]:
    """The distractor topics of one data file (`chatter_*.yaml`)."""
    return tuple(
        Topic(text(raw["name"], name), turns(raw["pairs"], f"{name}.yaml: {raw['name']}")) for raw in load(name)
    )


def episodes(value: Any) -> tuple[EpisodeSpec, ...]:
    """Episode specs as written under `episodes:` in `banks.yaml`."""
    return tuple(
        EpisodeSpec(
            kind=text(raw["kind"], "episodes"),
            topic=text(raw["topic"], "episodes"),
            bank=text(raw["bank"], "episodes"),
            first=pairs(raw["first"], f"episodes: {raw['kind']}"),
            more=pairs(raw["more"], f"episodes: {raw['kind']}"),
            ask=texts(raw["ask"], f"episodes: {raw['kind']}"),
            extras=tuple((text(e["first"], "extras"), text(e["third"], "extras")) for e in raw["extras"]),
        )
        for raw in value
    )
