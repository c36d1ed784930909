"""Whether a current fact is served, and under which heading, as of the question's time.

Decay alone would hide old facts silently, which is the wrong failure for the facts that matter most: an
allergy that drops out of the prompt because nobody mentioned it for two years. The registry marks such
predicates `impact: high` and gives them a clock (`confirm_after_days`). The rule, pure so it is tested alone:

- `current`: served as a plain dated fact;
- `stale`: served under memlab's confirm heading (`render.STALE_HEADING`): a high-impact fact past its
  `confirm_after_days`, or whose decayed confidence fell below the threshold; a normal-impact fact past a
  `confirm_after_days` it has while its confidence still reaches the threshold;
- `hidden`: not served: a normal-impact fact below the threshold, or any fact that never reached it (an
  inference at 0.4 is not promoted to the prompt by being high impact).

A confirmation (the same value stated again, or `FactMemory.confirm`) moves `confirmed_at`, which resets both."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from memlab.facts.registry import Predicate
from memlab.facts.types import Fact

Serving = Literal["current", "stale", "hidden"]
DEFAULT_HALF_LIFE_DAYS = 365.0  # a row whose predicate left the registry


@dataclass(frozen=True)
class ServingState:
    """How one fact is served at one time: `state`, its decayed `confidence` and its `age_days` since the last
    confirmation."""

    state: Serving
    confidence: float
    age_days: float


def age_days(confirmed_at: datetime, now: datetime) -> float:
    """Days from the last confirmation to `now`; 0 for a confirmation after `now` (a replayed history)."""
    return max((now - confirmed_at).total_seconds() / 86400.0, 0.0)


def decayed(confidence: float, confirmed_at: datetime, half_life_days: float, now: datetime) -> float:
    """Confidence halved every `half_life_days` since the last confirmation."""
    return confidence * math.pow(0.5, age_days(confirmed_at, now) / half_life_days)


def serving_state(fact: Fact, predicate: Predicate | None, now: datetime, threshold: float) -> ServingState:
    """The rule above for one current fact (`predicate` None: a predicate no longer registered, normal impact)."""
    half_life = predicate.half_life_days if predicate is not None else DEFAULT_HALF_LIFE_DAYS
    high = predicate is not None and predicate.impact == "high"
    clock = predicate.confirm_after_days if predicate is not None else None
    age = age_days(fact.confirmed_at, now)
    confidence = decayed(fact.confidence, fact.confirmed_at, half_life, now)
    if confidence >= threshold:
        state: Serving = "stale" if clock is not None and age > clock else "current"
    else:
        state = "stale" if high and fact.confidence >= threshold else "hidden"
    return ServingState(state, confidence, age)


def stale_after_days(predicate: Predicate, confidence: float, threshold: float) -> float | None:
    """Days after a confirmation at `confidence` at which a fact of `predicate` is first served as stale, or
    None when it never is (a normal-impact fact without a clock, or one decay hides before its clock)."""
    if not confidence >= threshold > 0:
        return None  # never served at all (or a threshold of 0: never below it)
    crossing = predicate.half_life_days * math.log2(confidence / threshold)
    clock = predicate.confirm_after_days
    if predicate.impact == "high":
        return crossing if clock is None else min(crossing, clock)
    return clock if clock is not None and clock < crossing else None
