"""The re-rank stage of a system: a model reads each of the top `depth` candidates against the question and the
system keeps the k it scores highest.

Why a stage of its own: a bi-encoder places question and memory in one space without reading them together, and
what it misses (implicit statements, paraphrases) a cross-encoder or a hosted re-ranker often finds. The stage
changes how a system is searched, never what it stored, so a re-ranked system shares the ingest of its twin.

- The memory is asked for max(depth, k) candidates with the system's own settings: `max_distance` still cuts on
  the embedding distance, before the model sees anything.
- One re-ranker call per question on the candidates' texts; order by its score (ties keep the embedding order),
  keep the top k. Each hit keeps its embedding `distance` and gets the model's score in `Hit.rerank`.
- A model error for one question (ModelError) does not stop the run: the question keeps the embedding order, its
  hits get no score, and the error is recorded with it (`RerankCost.error`, the run's `rerank_error` column).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memlab.errors import ConfigError
from memlab.lab.base.suggest import unknown_keys
from memlab.models import ModelError, ModelSpec, Reranker, deriving_from, scope_refs, session_ref, text_refs
from memlab.types import Hit, Hits

RERANK_KEYS = ("model", "depth")
DEFAULT_DEPTH = 50
MAX_DEPTH = 1000  # pgvector's ceiling of an HNSW walk; a re-ranker reads every candidate, so deeper is rarely sane


@dataclass(frozen=True)
class RerankSpec:
    """A system's `rerank:` option: the configured model's name (a `models:` entry of kind openai-rerank or
    cross-encoder) and how many embedding candidates it reads per question."""

    model: str
    depth: int = DEFAULT_DEPTH


@dataclass(frozen=True)
class RerankCost:
    """What re-ranking one question cost: wall seconds of the model call, tokens the endpoint reported (None
    when it reports none), whether the reply came from the disk cache, and the error that made the question
    fall back to the embedding order (None when it was re-ranked)."""

    seconds: float
    tokens: int | None = None
    cached: bool = False
    error: str | None = None


class RerankedHits(Hits):
    """A re-ranked question's hits with what re-ranking it cost (`rerank`), which the run records per question."""

    def __init__(self, hits: Sequence[Hit], cost: RerankCost, *, plan: str = "", dropped_by_cutoff: int = 0,
                 window: object = None) -> None:  # fmt: skip
        super().__init__(list(hits), plan=plan, dropped_by_cutoff=dropped_by_cutoff, window=window)
        self.rerank = cost


@dataclass(frozen=True)
class Reranking:
    """A re-ranked system's search handle: the memory its build made (shared with its un-reranked twin: one
    ingest) and the run's re-ranker for the system's `rerank.model`."""

    memory: Any
    reranker: Reranker


def reranking(handle: Any, system: str, spec: RerankSpec) -> Reranking:
    """`handle` as a Reranking, or a ConfigError: a re-ranked system searched with a bare memory would silently
    return the embedding order."""
    if not isinstance(handle, Reranking):
        raise ConfigError(f"system {system!r} re-ranks with model {spec.model!r}, which this search was not given; "
                          "ask it through the workbench (an experiment with that model under `models:`), or drop "
                          "`rerank:` from the system")  # fmt: skip
    return handle


def parse_rerank(raw: Any, system: str, *, k: int | None = None) -> RerankSpec:
    """A system's `rerank:` entry, e.g. `{model: my-reranker, depth: 50}`; ConfigError naming the system, the
    key and the fix. `k` (the experiment's) is the least useful depth: fewer candidates than k re-order nothing
    the user would not get anyway."""
    where = f"system {system!r}: rerank"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping such as {{model: my-reranker, depth: {DEFAULT_DEPTH}}}, "
                          f"got {raw!r}")  # fmt: skip
    extra = set(raw) - set(RERANK_KEYS)
    if extra:
        raise ConfigError(f"{where}: {unknown_keys(extra, set(RERANK_KEYS))}; allowed: {list(RERANK_KEYS)}")
    model = raw.get("model")
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(f"{where} needs `model:`, the name of a `models:` entry of kind openai-rerank or "
                          f"cross-encoder; got {model!r}")  # fmt: skip
    depth = raw.get("depth", DEFAULT_DEPTH)
    low = max(k or 1, 1)
    if isinstance(depth, bool) or not isinstance(depth, int) or not low <= depth <= MAX_DEPTH:
        why = f" (the experiment's k is {k}: the re-ranker must see at least k candidates)" if k else ""
        raise ConfigError(f"{where}.depth={depth!r} is refused: it must be a whole number in {low}..{MAX_DEPTH}, the "
                          f"embedding candidates the re-ranker reads per question{why}")  # fmt: skip
    return RerankSpec(model.strip(), depth)


RERANK_KINDS = ("openai-rerank", "cross-encoder")


def check_rerank_model(spec: RerankSpec | None, system: str, models: Mapping[str, ModelSpec], source: str) -> None:
    """A system's `rerank.model` names a re-ranker of the config's `models:` section: refused when the config is
    read, before any ingest, rather than after the first system ran."""
    if spec is None:
        return
    found = models.get(spec.model)
    if found is None or found.kind not in RERANK_KINDS:
        usable = sorted(n for n, m in models.items() if m.kind in RERANK_KINDS)
        what = "is not in the models: section" if found is None else f"is an {found.kind} model"
        raise ConfigError(f"{source}: system {system!r}: rerank.model {spec.model!r} {what}; it needs a models: "
                          f"entry of kind {' or '.join(RERANK_KINDS)} (configured: {usable or 'none'})")  # fmt: skip


def reorder(hits: Sequence[Hit], scores: Sequence[float], k: int) -> list[Hit]:
    """The hits by re-ranker score, highest first (ties keep their embedding order), cut to k, each with its
    score in `rerank`."""
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
    return [replace(hits[i], rerank=float(scores[i])) for i in order[:k]]


def _checked(scores: Sequence[float], documents: int) -> str | None:
    """Why a reply's scores cannot order the candidates (wrong count, not finite numbers), or None."""
    if len(scores) != documents:
        return f"the re-ranker returned {len(scores)} scores for {documents} candidates"
    if not all(isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) for s in scores):
        return "the re-ranker returned a score that is not a finite number"
    return None


def hit_refs(hits: Sequence[Hit], owner: tuple[str, str] | None = None) -> list[str]:
    """What stored memory the hits are (memlab.models.refs): their texts and, given the (app, user) searched,
    that user, the hits' sessions and events; the re-ranker's cached scores record them so erasure drops them."""
    refs = text_refs(h.text for h in hits)
    if owner is not None:
        app, user = owner
        refs += scope_refs(app, user, None, [e for h in hits for e in h.event_ids])
        sessions = {s for h in hits for s in (h.session_id, *h.event_sessions) if s}
        refs += [session_ref(app, user, s) for s in sorted(sessions)]
    return list(dict.fromkeys(refs))


def rerank_search(candidates: Callable[[int], Hits], reranker: Reranker, spec: RerankSpec, query: str,
                  k: int, owner: tuple[str, str] | None = None) -> RerankedHits:  # fmt: skip
    """One question through the stage: `candidates(depth)` is the system's own search (its settings, its
    max_distance on the embedding distance); the re-ranker orders what comes back and the top k are kept. A
    ModelError leaves the embedding order (top k, no scores) and is recorded in the result's cost. `owner`: the
    (app, user) searched, recorded with the cached scores (see hit_refs)."""
    found = candidates(max(spec.depth, k))
    meta = {"plan": getattr(found, "plan", ""), "dropped_by_cutoff": getattr(found, "dropped_by_cutoff", 0),
            "window": getattr(found, "window", None)}  # fmt: skip
    if not found:
        return RerankedHits([], RerankCost(0.0), **meta)
    started = time.perf_counter()
    try:
        with deriving_from(hit_refs(found, owner)):  # any Reranker, with or without its own refs argument
            reply = reranker.rerank(query, [h.text for h in found])
    except ModelError as exc:
        cost = RerankCost(time.perf_counter() - started, error=f"{spec.model}: {exc}")
        return RerankedHits(list(found)[:k], cost, **meta)
    seconds = time.perf_counter() - started
    problem = _checked(reply.scores, len(found))
    if problem is not None:
        return RerankedHits(list(found)[:k], RerankCost(seconds, error=f"{spec.model}: {problem}"), **meta)
    cost = RerankCost(seconds, reply.tokens, reply.cached)
    return RerankedHits(reorder(found, reply.scores, k), cost, **meta)


__all__ = [
    "DEFAULT_DEPTH",
    "RERANK_KINDS",
    "RerankCost",
    "RerankSpec",
    "RerankedHits",
    "Reranking",
    "check_rerank_model",
    "hit_refs",
    "parse_rerank",
    "reorder",
    "rerank_search",
    "reranking",
]
