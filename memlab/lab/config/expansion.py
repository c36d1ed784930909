"""How big a config is once expanded, counted before anything is: per data set, its configured systems plus what
each sweep that runs on it adds (systems, and the grid points it measures). A few kilobytes of config can name
millions of systems (the retrieval sweep multiplies authors x caps x renderings x modes): building them, or only
listing them, takes gigabytes before the first question is asked. So the count comes from the lengths of the
lists alone (`Sweep.planned`), and a config past MAX_RUNS is refused with the count, the limit, what makes it big
and how to split it."""

from __future__ import annotations

from collections import Counter
from typing import Any

from memlab.errors import ConfigError
from memlab.lab.sweeps import SWEEPS, applies, sweep_options

MAX_RUNS = 100_000  # runs of one config: data sets x (systems + sweep grid points); every shipped suite is far under
CONFIGURED = "configured systems"


def planned_runs(config: dict[str, Any]) -> dict[str, dict[str, int]]:
    """data set -> what runs on it, by source (`configured systems`, `<sweep> sweep`), at most."""
    systems = len(config.get("systems") or [])
    out: dict[str, dict[str, int]] = {}
    for entry in config.get("datasets") or []:
        name = str(entry.get("name"))
        parts = {CONFIGURED: systems}
        for sweep in applies(config, name):
            parts[f"{sweep} sweep"] = SWEEPS[sweep].planned(sweep_options(config, sweep), config)
        out[name] = parts
    return out


def _lists(config: dict[str, Any], part: str) -> str:
    """The lists that multiply in `part`, longest first: `options.retrieval.authors (1,000 items)`."""
    if part == CONFIGURED:
        return f"`systems` ({len(config.get('systems') or []):,} entries)"
    sweep = part.removesuffix(" sweep")
    sized = sorted(((len(v), k) for k, v in sweep_options(config, sweep).items() if isinstance(v, list) and len(v) > 1),
                   reverse=True)  # fmt: skip
    return ", ".join(f"options.{sweep}.{key} ({n:,} items)" for n, key in sized) or f"the {sweep} sweep's defaults"


def check_expansion(config: dict[str, Any], source: str) -> None:
    """ConfigError when the config would expand past MAX_RUNS runs, before anything is expanded."""
    runs = planned_runs(config)
    total = sum(sum(parts.values()) for parts in runs.values())
    if total <= MAX_RUNS:
        return
    by_part: Counter[str] = Counter()
    for parts in runs.values():
        by_part.update(parts)
    biggest = [part for part, n in by_part.most_common(3) if n]
    raise ConfigError(f"{source}: this config expands to {total:,} runs ({len(runs)} data set(s) x their systems and "
                      f"sweep grid points: {', '.join(f'{p} {by_part[p]:,}' for p in biggest)}), over the limit of "
                      f"{MAX_RUNS:,}; nothing was expanded. Split it into smaller configs (one per data set or per "
                      "sweep, each `datasets:` in a sweep's options narrowing where it runs; `memlab report --against` "
                      f"compares their runs), or shorten the lists that multiply: {_lists(config, biggest[0])}")
