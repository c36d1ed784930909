"""Memory-size buckets: users grouped by how many units they hold, so recall and empty rate read by memory size."""

from __future__ import annotations

import numpy as np

SIZE_BINS = [0, 50, 500, 2000, np.inf]
SIZE_LABELS = ["<=50", "51-500", "501-2000", ">2000"]


def size_bucket(n: int | float) -> str:
    """The memory-size bucket of a user with `n` units (SIZE_LABELS; 'nan' outside the bins)."""
    if n >= SIZE_BINS[0]:  # NaN fails every comparison
        for upper, label in zip(SIZE_BINS[1:], SIZE_LABELS, strict=True):
            if n <= upper:
                return label
    return "nan"
