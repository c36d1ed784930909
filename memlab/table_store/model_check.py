"""Is the embedder memlab will search with the model that wrote the table? Re-embed stored texts and compare each
pair of vectors: same model and input -> cosine ~1 and the same norm; another model -> unrelated directions (or
another dimension); the same model fed another input (an instruction prefix such as 'passage: ', a template
around the text, truncation) or another revision -> close but not equal; another normalisation -> same directions,
other lengths. A mismatch is one `ModelMismatchError` naming the model values, what differs and the fix."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memlab.errors import ConfigError

MIN_COSINE = 0.99  # a halfvec column still keeps the cosine of a pair above 0.999
NORM_TOLERANCE = 0.02  # relative difference of the mean norms
UNRELATED_BELOW = 0.5  # mean cosine of vectors from two different models of the same size


class ModelMismatchError(ConfigError):
    """The embedder does not reproduce the table's stored vectors; the message says how they differ and the fix."""


@dataclass(frozen=True)
class ModelCheck:
    """The comparison for one model value (None: the table keeps no model column, or the store is scoped to
    one): `sample` pairs compared, their mean and smallest cosine, the mean norm of the stored and of the
    re-embedded vectors, `matches`, and `problem` (what differs, else None). `worst` are the event ids of the
    pairs furthest apart."""

    model: str | None
    embedder: str
    sample: int
    mean_cosine: float
    min_cosine: float
    stored_norm: float
    embedded_norm: float
    matches: bool
    problem: str | None = None
    worst: tuple[str, ...] = ()


def compare(model: str | None, embedder_id: str, ids: list[str], stored: np.ndarray, fresh: np.ndarray,
            *, min_cosine: float = MIN_COSINE) -> ModelCheck:  # fmt: skip
    """The ModelCheck of stored vectors against the same texts re-embedded (rows in the same order)."""
    where = f"rows of model {model!r}" if model is not None else "the stored vectors"
    if stored.shape[1] != fresh.shape[1]:
        return ModelCheck(model, embedder_id, len(ids), 0.0, 0.0, _mean_norm(stored), _mean_norm(fresh), False,
                          f"{where} have {stored.shape[1]} dimensions and {embedder_id} gives {fresh.shape[1]}: "
                          "another model", tuple(ids[:3]))  # fmt: skip
    a, b = stored.astype(np.float64), fresh.astype(np.float64)
    norms_a, norms_b = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    cos = (a * b).sum(axis=1) / np.maximum(norms_a * norms_b, 1e-12)
    order = np.argsort(cos)
    worst = tuple(ids[i] for i in order[:3] if cos[i] < min_cosine)
    mean, low = float(cos.mean()), float(cos.min())
    stored_norm, embedded_norm = float(norms_a.mean()), float(norms_b.mean())
    problem = None
    if mean < UNRELATED_BELOW:
        problem = (f"{where} point elsewhere than {embedder_id}'s vectors of the same texts (mean cosine {mean:.3f}):"
                   " another model wrote them")  # fmt: skip
    elif low < min_cosine:
        bad = int((cos < min_cosine).sum())
        problem = (f"{where} are close to but not {embedder_id}'s vectors of the same texts ({bad} of {len(ids)} "
                   f"pairs below cosine {min_cosine}, mean {mean:.3f}, lowest {low:.3f}): the writer embedded "
                   "another input (an instruction prefix such as 'passage: ' or 'search_document: ', a template "
                   "around the text, truncation) or another revision or quantisation of the model")  # fmt: skip
        if bad < len(ids) / 2:
            problem += "; or those rows' texts changed after they were embedded"
    elif abs(stored_norm - embedded_norm) > NORM_TOLERANCE * max(embedded_norm, 1e-12):
        problem = (f"{where} have the directions of {embedder_id}'s vectors but another length (mean norm "
                   f"{stored_norm:.3f} stored, {embedded_norm:.3f} re-embedded): the writer normalises differently, "
                   "so cosine distances agree but L2 and inner-product distances (and their indexes) do not")
    return ModelCheck(model, embedder_id, len(ids), mean, low, stored_norm, embedded_norm, problem is None, problem,
                      worst)  # fmt: skip


def _mean_norm(vectors: np.ndarray) -> float:
    return float(np.linalg.norm(vectors.astype(np.float64), axis=1).mean()) if len(vectors) else 0.0


def mismatch(checks: list[ModelCheck], table: str) -> ModelMismatchError:
    """One error for the failed checks of `table`, each with its problem, and the fix."""
    lines = [f"- {c.problem} (pairs furthest apart: {', '.join(c.worst) or 'all'})" for c in checks if not c.matches]
    embedder = checks[0].embedder if checks else "the embedder"
    return ModelMismatchError(
        f"the embedder {embedder} does not reproduce the vectors stored in {table}:\n" + "\n".join(lines) + "\n"
        "Fix: search with the model and input format that wrote the table (the same model, the same prefix or "
        "template, the same normalisation); or, if the table's model is the one you want, configure that model "
        "as the embedder. memlab never re-embeds into your table.")  # fmt: skip
