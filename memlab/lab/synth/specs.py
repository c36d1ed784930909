"""The shapes of the template banks: fact kinds, multi-session episodes and distractor topics.

Slots in templates: {v} the value, {old} the value it replaces, {x} the fact's extra (a pet's species, a
service name), {past}/{future} a date a few weeks before/after the session ("14 May"). Only user turns carry
dates. Replies (model turns) may repeat {v}/{old}; when they do, that model turn states the value too.
"""

from __future__ import annotations

from dataclasses import dataclass

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
