"""The table-store bench's sizes and its timing verdict, without a server or a model: the full table is the size the
benchmark promises (at least 100,000 rows of 1,000 users of varied sizes), every label names a row written, and
the verdict on memlab's time over the bare statement follows the bootstrap interval."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from memlab.lab.bench.table_store import TABLE_SIZES, labelled_set
from memlab.lab.bench.table_timing import GOAL, summarize


@pytest.mark.parametrize(("size", "rows", "users"), [("ci", (800, 10_000), 20), ("full", (100_000, 200_000), 1_000)])
def test_the_table_of_each_size(size, rows, users):
    labelled = labelled_set(TABLE_SIZES[size])
    low, high = rows
    assert low <= len(labelled.rows) <= high
    assert len(labelled.sizes) == users
    assert min(labelled.sizes.values()) <= 10 and max(labelled.sizes.values()) >= 150, "small and large users"
    keys = [(r[1], r[3]) for r in labelled.rows]
    assert len(set(keys)) == len(keys), "one row per (user, event id)"
    texts = [(r[1], r[6]) for r in labelled.rows]
    assert len(set(texts)) == len(texts), "one row per (user, text): no two rows of a user tie"
    held = set(keys)
    assert all((q["user"], e) in held for q in labelled.questions for e in q["relevant"])
    per_user = Counter(q["user"] for q in labelled.questions)
    assert max(per_user.values()) <= TABLE_SIZES[size].questions_per_user
    answerable = sum(1 for q in labelled.questions if q["relevant"])
    assert 0 < answerable < len(labelled.questions), "answerable and no-answer questions, for the cut-off"


def test_the_verdict_follows_the_interval_of_the_median_ratio():
    rng = np.random.default_rng(0)
    bare = rng.lognormal(0.0, 0.3, 200)
    close = summarize("x", bare * 1.1, bare)
    assert close["p50_ratio"] == pytest.approx(1.1) and close["verdict"] == "met"
    assert close["p50_ratio_low"] <= close["p50_ratio"] <= close["p50_ratio_high"] <= GOAL
    slow = summarize("x", bare * 3.0, bare)
    assert slow["p50_ratio_low"] > GOAL and slow["verdict"] == "missed"
    noisy = summarize("x", np.array([1.0, 1.0, 5.0, 5.0]), np.array([1.0, 5.0, 1.0, 5.0]))
    assert noisy["verdict"] == "within noise"
