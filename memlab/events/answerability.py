"""When to return nothing: a per-question answerability gate over features every search already has.

One distance cut-off separates relevant from irrelevant hits poorly: the first hit of a question memory cannot
answer is often as near as the first hit of one it can. A question's whole result list says more: how near
the first hit is, how far the list falls off behind it, whether full-text search found the question's words.
The gate is a logistic regression over those features, fitted in the workbench (`memlab.lab.metrics.answerability`)
and saved as a small JSON artefact (`answerability.json`) that `AnswerabilityGate.load` reads here, with no
scikit-learn at run time; `EventMemory.search(..., gate=)` and the ADK event service apply it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memlab.errors import ConfigError
from memlab.types import Hit

FEATURES: tuple[str, ...] = (
    "first_distance",  # distance of the best hit (2.0 when nothing came back)
    "gap_second",  # second minus first distance: a lone near hit stands out
    "gap_last",  # last (k-th) minus first distance: how fast the list falls off
    "mean_distance",  # mean distance of the hits
    "lexical_best",  # best full-text (BM25) score among the hits
    "lexical_share",  # share of hits that full-text search also found
    "coverage_best",  # most of the question's IDF mass one hit holds: an unheard-of name covers little
    "log_memory",  # log(1 + units the user has): big memories always have something near
)
# with hits a re-ranker ordered (the workbench's `rerank:` stage): the model's score of the top hit, read against
# the question itself, which the distances above are not. A gate fitted with it names it in its `features`.
RERANK_FEATURE = "rerank_top"


def _values(values: Sequence[float | None]) -> list[float]:
    return [0.0 if v is None or math.isnan(float(v)) else float(v) for v in values]


def question_features(
    distances: Sequence[float],
    lexical: Sequence[float | None],
    memory_size: int,
    coverage: Sequence[float | None] = (),
) -> np.ndarray:
    """The gate's features of one question's ranked hits (nearest first), in `FEATURES` order."""
    d = [float(x) for x in distances if x is not None and not math.isnan(float(x))]
    lex = _values(lexical)
    covered = max(_values(coverage), default=0.0)
    if not d:
        return np.array([2.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, math.log1p(max(memory_size, 0))], dtype=np.float64)
    first = min(d)
    return np.array([
        first,
        (sorted(d)[1] - first) if len(d) > 1 else 0.0,
        max(d) - first,
        float(np.mean(d)),
        max(lex, default=0.0),
        (sum(1 for v in lex if v > 0) / len(lex)) if lex else 0.0,
        covered,
        math.log1p(max(memory_size, 0)),
    ], dtype=np.float64)  # fmt: skip


def hits_features(hits: Sequence[Hit], memory_size: int, *, rerank: bool = False) -> np.ndarray:
    """The gate's features of `hits`; with `rerank`, the top hit's re-ranker score after them (0.0 with no hits).
    Hits no re-ranker scored are refused then: the gate would read a score that was never there."""
    x = question_features([h.distance for h in hits], [h.lexical for h in hits], memory_size,
                          [h.coverage for h in hits])  # fmt: skip
    if not rerank:
        return x
    scores = [h.rerank for h in hits if h.rerank is not None and not math.isnan(h.rerank)]
    if hits and not scores:
        raise ConfigError(f"this answerability gate reads the re-ranker's score ({RERANK_FEATURE}) and these hits "
                          "carry none; give it the hits of the re-ranked system it was fitted on, or refit it on "
                          "a system without `rerank:`")  # fmt: skip
    return np.append(x, max(scores, default=0.0))


@dataclass(frozen=True)
class AnswerabilityGate:
    """A fitted logistic gate: p(answerable) = sigmoid(intercept + coef . (x - mean) / scale); a question whose
    p is below `threshold` gets no hits. `settings` are the search settings it was fitted for (a gate fitted
    on hybrid hits expects hybrid hits) and `fitted` records where it came from (data set, rule, rates)."""

    coef: tuple[float, ...]
    intercept: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    threshold: float
    features: tuple[str, ...] = FEATURES
    settings: dict[str, Any] = field(default_factory=dict)
    fitted: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.features)
        if tuple(self.features) not in (FEATURES, (*FEATURES, RERANK_FEATURE)):
            raise ConfigError(f"answerability gate: features {list(self.features)} are not this memlab's "
                              f"{list(FEATURES)} (+ {RERANK_FEATURE!r} for re-ranked hits); refit it with "
                              "`memlab eval` (retrieval sweep).")  # fmt: skip
        if not (len(self.coef) == len(self.mean) == len(self.scale) == n):
            raise ConfigError(f"answerability gate: coef, mean and scale need {n} values each.")
        if not 0.0 <= self.threshold <= 1.0:
            raise ConfigError(f"answerability gate: threshold {self.threshold} is not a probability.")

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """p(answerable) for rows of features in `FEATURES` order (the workbench scores whole tables)."""
        x = (np.asarray(features, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        z = np.clip(self.intercept + x @ np.asarray(self.coef), -50.0, 50.0)
        return 1.0 / (1.0 + np.exp(-z))

    @property
    def reranked(self) -> bool:
        """Whether the gate reads the re-ranker's score (it was fitted on a re-ranked system's hits)."""
        return RERANK_FEATURE in self.features

    def probability(self, hits: Sequence[Hit], memory_size: int) -> float:
        x = hits_features(hits, memory_size, rerank=self.reranked)
        return float(self.probabilities(x.reshape(1, -1))[0])

    def answerable(self, hits: Sequence[Hit], memory_size: int) -> bool:
        return bool(hits) and self.probability(hits, memory_size) >= self.threshold

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"kind": "memlab.answerability/1", **asdict(self)}, indent=2, default=str))
        return path

    @classmethod
    def load(cls, path: str | Path) -> AnswerabilityGate:
        """Read a gate written by `save` (the retrieval sweep writes `answerability.json` to its run folder)."""
        path = Path(path)
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"answerability gate {path} does not exist; run `memlab eval` with the retrieval "
                              "sweep to fit one.") from None  # fmt: skip
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"answerability gate {path} is not readable JSON ({exc}).") from None
        if not isinstance(raw, dict) or raw.pop("kind", None) != "memlab.answerability/1":
            raise ConfigError(f"{path} is not a memlab answerability gate (kind memlab.answerability/1).")
        try:
            return cls(**{**raw, **{k: tuple(raw[k]) for k in ("coef", "mean", "scale", "features") if k in raw}})
        except TypeError as exc:
            raise ConfigError(f"answerability gate {path}: {exc}") from None


__all__ = ["FEATURES", "RERANK_FEATURE", "AnswerabilityGate", "hits_features", "question_features"]
