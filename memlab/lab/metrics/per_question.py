"""What a metric's per-question function reads, and the functions of memlab's own metrics.

A metric scored per question (memlab.lab.metrics.definitions) is either a pure function of one question's result
and its labels, `(QuestionResult, Question) -> float`, or an ir-measures measure (`IrMeasure`), which
memlab.lab.metrics.scoring computes for all questions at once on the events of their hits. NaN means "not defined for
this
question": the mean over questions skips it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ir_measures import Measure

from memlab.lab.base.identity import EventKey
from memlab.lab.datasets.model import Question
from memlab.lab.metrics.ranking import recall_vs_exact

UnitKey = tuple[str | None, str]  # (session id, unit id) inside one question's (app, user)
# the columns of a per-question score table that are not metrics: the question, what its search gave, its groups
RECORD_COLUMNS = ("dataset", "system", "question_id", "app_name", "user_id", "qtype", "answerable", "returned", "empty",
                  "latency_ms", "plan", "rerank_error", "memory_units", "size_bucket")  # fmt: skip


@dataclass(frozen=True)
class ScoredHit:
    """One ranked hit of a question: its rank, unit, the events it holds (as the run recorded them: a session
    None is not known, memlab.lab.base.identity), its distance and the characters it hands to the model."""

    rank: int
    unit: UnitKey
    events: tuple[EventKey, ...]
    distance: float
    chars: int


@dataclass(frozen=True)
class QuestionResult:
    """One question's result as it is scored: `hits` within k after the cut-off, in rank order; `searched`, what
    the search recorded once for the question (`latency_ms`, `plan`, and a re-ranked run's `rerank_seconds`,
    `rerank_tokens`, `rerank_error`); `uncut`, the system's units before the cut-off, in rank order; `exact`, the
    units the exact reference returned (None: no reference)."""

    hits: tuple[ScoredHit, ...]
    k: int
    searched: Mapping[str, Any] = field(default_factory=dict)
    uncut: tuple[UnitKey, ...] = ()
    exact: tuple[UnitKey, ...] | None = None


QuestionFunction = Callable[[QuestionResult, Question], float]


@dataclass(frozen=True)
class IrMeasure:
    """An ir-measures measure as a metric's per-question function. `cut`: measured `@k` (otherwise as given: the
    run is cut at k before scoring either way, so RR is RR@k, computed by pytrec_eval as memlab always has).
    `no_hits`: the value of a question given no hit, which ir-measures leaves out (NaN: not defined)."""

    measure: Measure
    cut: bool = True
    no_hits: float = 0.0

    def at(self, k: int) -> Measure:
        return self.measure @ k if self.cut else self.measure


def no_hit(result: QuestionResult, question: Question) -> float:
    """1.0 when the question was given no hit at all (an answer lost, or a no-answer question rightly left empty)."""
    return float(not result.hits)


def answer_sessions_found(result: QuestionResult, question: Question) -> float:
    """Share of the question's answer sessions that a hit comes from (the sessions its events carry; an event whose
    session is not known counts for none)."""
    wanted = set(question.relevant_sessions)
    if not wanted:
        return np.nan
    found = {session for hit in result.hits for session, _ in hit.events if session is not None}
    return len(wanted & found) / len(wanted)


def exact_overlap(result: QuestionResult, question: Question) -> float:
    """Share of the exact reference's top k the system returned before the cut-off (NaN without a reference)."""
    if result.exact is None:
        return np.nan
    return recall_vs_exact(list(result.uncut), list(result.exact), result.k)


def context_size(result: QuestionResult, question: Question) -> int:
    """Characters of the hits handed to the model."""
    return int(sum(hit.chars for hit in result.hits))


def recorded(name: str) -> QuestionFunction:
    """A figure the search recorded for the question, as a number (NaN where it was not recorded)."""

    def read(result: QuestionResult, question: Question) -> float:
        value = result.searched.get(name)
        return np.nan if value is None else float(value)

    read.__name__ = read.__qualname__ = f"recorded_{name}"
    return read


def unmatched_share(result: QuestionResult, question: Question) -> float:
    """Share of a black box's hits within k that matched no labelled event (NaN: no hit, or not a black box)."""
    value = result.searched.get("unmatched")
    if value is None or not result.hits or np.isnan(float(value)):
        return np.nan
    return float(value) / len(result.hits)


def rerank_failed(result: QuestionResult, question: Question) -> float:
    """1.0 when re-ranking failed and the embedding order was kept, 0.0 when it was re-ranked, NaN when the question
    was not re-ranked."""
    seconds = result.searched.get("rerank_seconds")
    if seconds is None or np.isnan(float(seconds)):
        return np.nan
    error = result.searched.get("rerank_error")
    return float(isinstance(error, str) and bool(error))


__all__ = ["RECORD_COLUMNS", "IrMeasure", "QuestionFunction", "QuestionResult", "ScoredHit", "UnitKey",
           "answer_sessions_found", "context_size", "exact_overlap", "no_hit", "recorded", "rerank_failed"]
