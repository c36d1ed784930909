"""Slot fillers for distractor talk, multi-session episodes, small talk, openers and closers, read from
`data/banks.yaml` (the fact kinds and topics are in `data/facts_*.yaml` and `data/chatter_*.yaml`).

No filler here may contain a fact value: the tests check it, which is what lets the generator say that only
fact statements mention a fact's value.
"""

from __future__ import annotations

from memlab.lab.datasets.synth.specs import EpisodeSpec, episodes, load, texts, turns

_DATA = load("banks")

MONTHS = texts(_DATA["months"], "months")  # also the dates the generator writes ("14 May")
BANKS: dict[str, tuple[str, ...]] = {name: texts(words, f"slots: {name}") for name, words in _DATA["slots"].items()}
EPISODES: tuple[EpisodeSpec, ...] = episodes(_DATA["episodes"])
OPENERS = turns(_DATA["openers"], "openers")
ASIDES = turns(_DATA["asides"], "asides")
SWITCHES = texts(_DATA["switches"], "switches")
PREFIXES = texts(_DATA["prefixes"], "prefixes")
FIRST_PREFIXES = texts(_DATA["first_prefixes"], "first_prefixes")
CLOSERS = texts(_DATA["closers"], "closers")
CROSS_QUESTIONS = texts(_DATA["cross_questions"], "cross_questions")  # {a} and {b}: two facts' `about` phrases
