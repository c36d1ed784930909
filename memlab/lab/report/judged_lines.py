"""What report.md says of a judged set: the pool its labels come from, and every system that was not in it. Labels
made by pooling are complete only for the pooled systems' top hits, so another system's relevant hits outside the
pool count as misses: its recall is biased low (trec_eval's convention is to flag such runs, not to hide them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memlab.lab.datasets.judged.origins import is_generated_only, origin_lines


def pooled_system(system: str, pooled: set[str], parent: str | None = None) -> bool:
    """Whether a system's hits were pooled: its own name, or (`parent` given) a distance cut of a pooled system (a
    cut only drops hits, so its hits within the depth are all in the pool)."""
    return system in pooled or (parent is not None and parent in pooled)


def unpooled(systems: list[str], pool: dict[str, Any], parents: Mapping[str, str] | None = None) -> list[str]:
    """The systems of a run on a judged set that were not in its pool (`parents`: each cut system's parent)."""
    pooled = set(pool.get("systems", []))
    parents = parents or {}
    return [s for s in dict.fromkeys(systems) if not pooled_system(s, pooled, parents.get(s))]


def pool_lines(pool: dict[str, Any] | None, systems: list[str], k: int,
               parents: Mapping[str, str] | None = None) -> list[str]:  # fmt: skip
    """The report's paragraph on a data set's pool (nothing for a data set with complete labels); `parents` names
    the system each cut-off system was cut from, as the run records it."""
    if not pool:
        return []
    if is_generated_only(pool) and not pool.get("systems"):  # the generator's own labels: no system pooled
        return origin_lines(pool, k)
    names = ", ".join(f"`{s}`" for s in pool.get("systems", []))
    depth = int(pool.get("depth", 0))
    lines = [f"**Judged set**: labels from the pool `{pool.get('path')}` (config `{pool.get('config')}`, made "
             f"{pool.get('created_at')}): systems {names} at depth {depth} (events per system and query). "
             f"`recall@{k}` is over the events judged relevant; `judged@{k}` is the share of a system's hits within "
             f"{k} that someone judged; `bpref` scores only judged hits (Buckley and Voorhees 2004), so it is the "
             "fairer figure where judged@k is low."]  # fmt: skip
    outside = unpooled(systems, pool, parents)
    if outside:
        lines.append("**Not in the pool**: " + ", ".join(f"`{s}`" for s in outside) + f". Their hits outside the "
                     f"pool were never judged and count as misses, so their recall@{k} is biased low (the trec_eval "
                     "convention); compare them by bpref and judged@k, or pool again with them.")  # fmt: skip
    for pair in pool.get("agreement", []):
        a, b = pair["assessors"]
        kappa = "undefined (one label throughout)" if pair["kappa"] != pair["kappa"] else f"{pair['kappa']:.2f}"
        lines.append(f"`{a}` and `{b}` both judged {pair['items']} events: Cohen's kappa {kappa}, same verdict on "
                     f"{pair['agreement']:.0%}.")  # fmt: skip
    if k > depth:
        lines.append(f"k = {k} is beyond the pool depth {depth}: a pooled system's hits below rank {depth} were "
                     "judged only where another system pooled them.")  # fmt: skip
    return [" ".join(lines), "", *origin_lines(pool, k)]  # generated questions among them: said, per origin
