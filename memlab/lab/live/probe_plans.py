"""The plans a probe's searches ran, against the settings it was given. Each hit carries the plan its search
really ran (memlab.events.search labels it from the index that exists, or EXPLAIN), so a probe asked for
`--strategy hnsw --ef-search N` on a layer without an HNSW index records `exact`; this says so in the report,
and that ef_search then had no effect, instead of leaving settings that did not apply to be read as measured."""

from __future__ import annotations

from typing import Any

import pandas as pd

from memlab.types import SearchSettings

INDEX_PLANS = ("hnsw", "tenant-index")  # plans that walk an HNSW graph, where ef_search applies


def _vector_part(plan: str) -> str:
    """The vector search's plan of a fused one (`exact+lexical`), or the plan itself."""
    return str(plan).split("+")[0]


def plans_ran(frame: pd.DataFrame) -> dict[str, int]:
    """Questions per plan that ran (each question's first row carries its search's plan)."""
    if not len(frame):
        return {}
    firsts = frame.drop_duplicates("question_id").plan.fillna("").astype(str)
    return {str(p): int(n) for p, n in firsts.value_counts().sort_index().items()}


def plan_notes(settings: SearchSettings | None, plans: dict[str, int], layer: str, ef_given: bool) -> list[str]:
    """What the report says where the plans that ran are not the ones the settings asked for. `settings` is None
    for a fact system (no plan to ask for); `ef_given` is whether ef_search was set (flag or config)."""
    if settings is None or not plans:
        return []
    asked = sum(plans.values())
    ran = ", ".join(f"{p or 'none'} ({n})" for p, n in plans.items())
    walked = sum(n for p, n in plans.items() if _vector_part(p) in INDEX_PLANS)
    notes = []
    if settings.strategy == "hnsw" and walked < asked:
        notes.append(f"strategy {settings.strategy} was asked for, but {asked - walked} of {asked} searches walked no "
                     f"HNSW index (plans that ran: {ran}): layer `{layer}` has no HNSW index they could use (a "
                     "read-only probe builds none), so they scored the user's every unit exactly. Each hit is "
                     "labelled with the plan that ran.")  # fmt: skip
    if ef_given and walked == 0:
        notes.append(f"ef_search {settings.ef_search} had no effect: no search walked an HNSW index.")
    elif ef_given and walked < asked:
        notes.append(f"ef_search {settings.ef_search} applied to {walked} of {asked} searches only (the others walked "
                     "no HNSW index).")  # fmt: skip
    return notes


def ef_search_given(system: Any, overrides: dict[str, Any]) -> bool:
    """Whether ef_search was set: a flag, or a system's settings other than the default."""
    settings = getattr(system, "settings", None)
    return "ef_search" in overrides or (settings is not None and settings.ef_search != SearchSettings().ef_search)


__all__ = ["INDEX_PLANS", "ef_search_given", "plan_notes", "plans_ran"]
