"""Reliability family `lexical`: the cost of lexical search (and so of hybrid, the recommended mode) must grow
linearly with the user's units. The planner can make it quadratic: for a user who grew since the last ANALYZE it
may choose a nested loop joining every hit to every score, which runs for minutes at tens of thousands of units.

Seconds on two shared cores say little, so this counts rows: every node of the statement's EXPLAIN ANALYZE adds
the rows it produced and the rows its filters removed, times its loops. Two users of N and 4N units of the same
kind of text are searched with the same questions; linear work reads about 4x the rows, a quadratic plan about
16x. Both statistics states are checked: taken while the app was small (the user grew since) and fresh.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

import memlab
from memlab.events.memory import EventMemory
from memlab.events.units import Unit
from memlab.lab.metrics.plan_rows import TOP_K, PlanRows, lexical_plan_rows, plan_rows, random_vectors  # noqa: F401 (the tests read them here)
from memlab.lab.reliability.probes.family import Family
from memlab.storage import units as sqlu

SIZES = (500, 2_000)  # units of the small and the big user (4x)
GROWTH_LIMIT = 6.0  # plan rows may grow at most this much for 4x units: linear reads ~4x, quadratic ~16x
QUERIES = ("w1 w5 w30 w200 w999", "w3 w40", "what did w2 say about w60 and w1500?", "w2500 w7")
# Words few units hold: with stale or fresh statistics their search must read fewer rows than the user has (BM25's
# N and mean length come from the kept counts, the hits from the side table's full-text index, which no b-tree scan
# can replace, the k rows returned by one index probe each).
SELECTIVE = ("w2990 w2991 w2992 w2993 w2994 w2995 w2996 w2997 w2998 w2999", "w2801 w2802 w2803")
VOCABULARY = 3_000  # distinct words of the probe's texts, drawn Zipf-like (a few common, many rare)
LAYER = "probe:lexical"
_T0 = datetime(2024, 1, 1, tzinfo=UTC)


def cheap_texts(n: int, *, seed: int = 0) -> list[str]:
    """`n` texts of 5 to 24 words from a Zipf-like vocabulary: the mix of common and rare words that makes a
    search hit many units for one word and few for another (full-text search reads words, not meaning)."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    words = rng.choice(VOCABULARY, size=(n, 24), p=weights / weights.sum())
    lengths = rng.integers(5, 25, size=n)
    return [" ".join(f"w{w}" for w in row[:length]) for row, length in zip(words, lengths, strict=True)]


def _units(user: str, texts: list[str]) -> Iterator[Unit]:
    for j, text in enumerate(texts):
        yield Unit(f"{user}-s{j // 100}", f"u{j}", (f"u{j}",), "user", _T0 + timedelta(minutes=j), text)


def add_user(memory: EventMemory, app: str, user: str, texts: list[str], *, analyze: bool, seed: int = 0) -> None:
    """Store `texts` as the user's units. `analyze=False` writes them as ingest does (no ANALYZE: the planner
    still sees the statistics of before); `analyze=True` goes through `bulk_load`, which refreshes them."""
    vectors = random_vectors(len(texts), memory.model.dimension, seed=seed)
    rows = [(app, user, unit, v) for unit, v in zip(_units(user, texts), vectors, strict=True)]
    if analyze:
        memory.bulk_load(rows)
        return
    scope = memory.scope(app, user)
    with memory.store.transaction() as conn:
        sqlu.copy_rows(conn, [sqlu.unit_row(scope, unit, v) for _, _, unit, v in rows])


def growth(memory: EventMemory, app: str, small: str, big: str, query: str) -> tuple[PlanRows, PlanRows, float]:
    """Plan rows for the small and the big user and their ratio."""
    a = lexical_plan_rows(memory, app, small, query)
    b = lexical_plan_rows(memory, app, big, query)
    return a, b, b.rows / max(a.rows, 1.0)


def lexical_family(store: memlab.Store, embedder: memlab.Embedder, workdir: Path) -> Family:
    """Users of SIZES units searched with QUERIES; `quadratic_plans` counts (statistics state, query) pairs whose
    plan rows grew more than GROWTH_LIMIT for 4x units (must be 0). Figures: plans checked, the largest growth
    and the rows per unit at each size. `user_passes` counts selective queries (SELECTIVE) whose plan read as many
    rows as the big user has units, with stale or fresh statistics: a pass over the user's units (must be 0)."""
    started = time.perf_counter()
    family = Family("lexical", {"users": 0, "plans_checked": 0, "quadratic_plans": 0, "max_growth": 0.0,
                                "selective_plans_checked": 0, "user_passes": 0},
                    must_be_zero=["quadratic_plans", "user_passes"])  # fmt: skip
    memory = EventMemory(store, embedder, layer=LAYER)
    app = f"probe-lexical-{uuid.uuid4().hex[:8]}"
    small, big = SIZES
    try:
        # Statistics taken while the app held one small user; the users searched come after (as ingest adds them).
        add_user(memory, app, "seed", cheap_texts(20, seed=9), analyze=True)
        for state in ("stale", "fresh"):
            users = {n: f"{state}-{n}" for n in SIZES}
            for n, user in users.items():
                add_user(memory, app, user, cheap_texts(n, seed=n), analyze=state == "fresh" and n == big, seed=n)
                family.add("users")
            for query in QUERIES:
                a, b, ratio = growth(memory, app, users[small], users[big], query)
                family.add("plans_checked", 2)
                family.figures["max_growth"] = round(max(family.figures["max_growth"], ratio), 2)
                for n, rows in ((small, a), (big, b)):
                    key = f"rows_per_unit.{state}.{n}"
                    family.figures[key] = round(max(family.figures.get(key, 0.0), rows.rows / n), 1)
                if ratio > GROWTH_LIMIT:
                    family.problem("quadratic_plans", f"{state} statistics, {query!r}: {a.rows:,.0f} plan rows at "
                                   f"{small} units, {b.rows:,.0f} at {big} ({ratio:.1f}x for 4x the units; "
                                   f"join filter removed {b.removed_by_join_filter:,.0f})")  # fmt: skip
            for query in SELECTIVE:
                rows = lexical_plan_rows(memory, app, users[big], query)
                family.add("selective_plans_checked")
                if rows.rows >= big:
                    family.problem("user_passes", f"{query!r}: {rows.rows:,.0f} plan rows for a user of {big} units "
                                   "(a pass over the user's units for a query of rare words)")  # fmt: skip
    finally:
        store.delete_layer(app, LAYER)
    family.notes.append(f"growth limit {GROWTH_LIMIT}x plan rows for {big // small}x units; linear work reads ~4x")
    family.seconds = time.perf_counter() - started
    return family
