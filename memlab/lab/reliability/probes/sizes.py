"""How much each reliability family does, per size (smoke, ci, full)."""

from __future__ import annotations

from dataclasses import dataclass

import memlab

# -- sizes ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Size:
    """How much each family does."""

    isolation_cases: int  # random worlds (each: up to 6 (app, user) pairs with sessions, 3 more asked empty)
    matrix_bases: tuple[str, ...]  # user ids whose every look-alike gets rows, asked one by one
    matrix_apps: tuple[str, ...]
    threads: int
    processes: int
    rounds: int  # how often each concurrent writer adds every session
    users: int  # users of the concurrency family
    searches: int  # searches per thread in the pooled-settings check
    fault_users: int
    fault_sessions: int  # sessions per user in the faults family
    seed: int = 20261201


SIZES: dict[str, Size] = {
    "smoke": Size(3, ("café",), ("app", "App"), 4, 1, 1, 2, 4, 2, 2),
    "ci": Size(20, ("café", "a%b", "Dan"), ("app", "App", "app "), 8, 2, 2, 3, 12, 4, 3),
    "full": Size(200, ("café", "a%b", "a_b", "Dan", "_domain", "straße", "o'neil"),
                 ("app", "App", "app ", "ap_", "app%"), 8, 2, 6, 6, 60, 8, 6),
}  # fmt: skip
SECRET_GOALS = {"held_out_caught": (">=", 0.95), "ordinary_flagged": ("<=", 0.10)}


def memory_cached_embedder(model: memlab.Embedder | None = None) -> memlab.Embedder:
    """`model` (default: the packaged one) behind an in-memory cache: nothing of the run is written to
    MEMLAB_HOME/cache."""
    return memlab.embedding.CachedEmbedder(model or memlab.default_embedder(cache=False),
                                           memlab.embedding.EmbeddingCache())


