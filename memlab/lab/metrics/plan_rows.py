"""Rows a lexical search statement handles, counted from its EXPLAIN ANALYZE plan.

Seconds on two shared cores say little, so the lexical reliability family and the bench both count rows: every
node of the plan adds the rows it produced and the rows its filters removed, times its loops. A leaf module, so the
bench and the probes both read it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memlab.events.memory import EventMemory
from memlab.storage import units as sqlu

__all__ = ["TOP_K", "PlanRows", "lexical_plan_rows", "plan_rows", "random_vectors"]

TOP_K = 50


def random_vectors(n: int, dimension: int, *, seed: int = 0) -> np.ndarray:
    """Random unit vectors: lexical search reads the text; a vector only gives each hit its distance."""
    vectors = np.random.default_rng(seed).normal(size=(n, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@dataclass(frozen=True)
class PlanRows:
    """Rows one statement's plan handled: produced plus removed by filters, each node times its loops."""

    rows: float
    removed_by_join_filter: float
    max_loops: int


def plan_rows(plan: dict) -> PlanRows:
    """Count the rows of an EXPLAIN (ANALYZE, FORMAT JSON) plan (its top node or the whole JSON)."""
    node = plan[0]["Plan"] if isinstance(plan, list) else plan.get("Plan", plan)
    total = joined = 0.0
    loops_max = 0
    stack = [node]
    while stack:
        n = stack.pop()
        loops = int(n.get("Actual Loops", 1))
        loops_max = max(loops_max, loops)
        removed = sum(n.get(k, 0) for k in ("Rows Removed by Filter", "Rows Removed by Join Filter",
                                            "Rows Removed by Index Recheck"))  # fmt: skip
        total += (float(n.get("Actual Rows", 0)) + removed) * loops
        joined += float(n.get("Rows Removed by Join Filter", 0)) * loops
        stack.extend(n.get("Plans", []))
    return PlanRows(total, joined, loops_max)


def lexical_plan_rows(memory: EventMemory, app: str, user: str, query: str, top_k: int = TOP_K) -> PlanRows:
    """Run the lexical search statement of (app, user) under EXPLAIN ANALYZE and count its rows."""
    scope = memory.scope(app, user)
    vector = random_vectors(1, memory.model.dimension, seed=1)[0]
    with memory.store.transaction() as conn:
        plan = conn.execute(*sqlu.lexical_statement(conn, scope, query, vector, top_k, explain=True)).fetchone()[0]
    return plan_rows(plan)
