"""Synthetic vectors (beside memlab-synth's synthetic conversations): background rows for filtered-search
experiments and jittered copies that top up a benchmark corpus, made from real embeddings.

Isotropic random vectors are useless here (HNSW finds nothing among them even without a filter), so each
background row is a real sentence embedding plus a little Gaussian noise, re-normalised: the corpus keeps
the clusters of real text, and many tenants crowd around the same topics as the user under test.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np

from memlab.events.units import Unit

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def jitter(base: np.ndarray, n: int, *, noise: float = 0.02, seed: int = 0) -> np.ndarray:
    """`n` unit vectors, each a randomly chosen row of `base` plus N(0, noise^2) per dimension."""
    rng = np.random.default_rng(seed)
    picks = base[rng.integers(0, len(base), size=n)]
    out = picks + rng.normal(0.0, noise, size=picks.shape).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def background_rows(
    app_name: str, sizes: dict[str, int], base: np.ndarray, *, noise: float = 0.02, seed: int = 0
) -> Iterator[tuple[str, str, Unit, np.ndarray]]:
    """Rows for `EventMemory.bulk_load`: `sizes[user]` jittered copies of `base` per user."""
    for offset, (user_id, count) in enumerate(sorted(sizes.items())):
        vectors = jitter(base, count, noise=noise, seed=seed + offset)
        for i, vector in enumerate(vectors):
            unit = Unit(
                session_id=f"{user_id}-bg",
                unit_id=f"{user_id}-bg-{i}",
                event_ids=(f"{user_id}-bg-{i}",),
                author="user",
                occurred_at=_EPOCH + timedelta(minutes=i),
                body=f"background row {i} of {user_id}",
            )
            yield app_name, user_id, unit, vector
