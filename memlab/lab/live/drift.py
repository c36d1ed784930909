"""Drift between two probes: the distances of the top hits, compared by a two-sample KS test per system, as the
workbench compares two runs. A silent change of the embedding model or of the index moves every distance while
recall on a small labelled set may not move yet; the probe reads the p-value of all hits as `drift_p`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.metrics.distances import drift, labelled_distances
from memlab.lab.runs.folder import RunFolder

COLUMNS = ["dataset", "system", "hits", "ks_statistic", "p_value", "n_previous", "n_current"]


def _distances(folder: RunFolder) -> dict[str, pd.DataFrame]:
    """Per data set: every saved run's hits within k, with their distance and whether they are relevant."""
    if not list((folder.path / "runs").glob("*.parquet")):
        raise ConfigError(f"{folder.path}: no saved runs (runs/*.parquet); give the folder of an earlier "
                          "`memlab probe` (or `memlab eval`) run")  # fmt: skip
    out = {}
    for dataset in folder.datasets:
        questions = folder.questions(dataset)
        frames = [labelled_distances(run.frame, questions, k=folder.k) for run in folder.runs(dataset).values()]
        if frames:
            out[dataset] = pd.concat(frames, ignore_index=True)
    return out


def _pairs(current: dict[str, pd.DataFrame], previous: dict[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """(current data set, previous data set) compared: those of the same name, or the one of each folder when
    each holds one (the same labelled set, renamed between probes)."""
    shared = [(name, name) for name in current if name in previous]
    if not shared and len(current) == 1 and len(previous) == 1:
        shared = [(next(iter(current)), next(iter(previous)))]
    return shared


def _renamed(before: pd.DataFrame, now: pd.DataFrame) -> pd.DataFrame:
    """The previous probe's hits under the current system's name when each probe ran one system and the names
    differ (a probe is one system: a renamed one is still the thing watched); else as they are."""
    systems_before, systems_now = set(before.system), set(now.system)
    if len(systems_before) == 1 and len(systems_now) == 1 and systems_before != systems_now:
        return before.assign(system=next(iter(systems_now)))
    return before


def distance_drift(current: str | Path, previous: str | Path) -> pd.DataFrame:
    """KS two-sample test of the top hits' distances of two probe run folders, per data set and system, for all
    hits and for relevant ones: dataset, system, hits ("all" / "relevant"), ks_statistic, p_value, n_previous,
    n_current. Systems pair by name, or the one of each probe with the other; a ConfigError when none pair."""
    now, before = RunFolder(Path(current)), RunFolder(Path(previous))
    now_hits, before_hits = _distances(now), _distances(before)
    frames = []
    for name, previous_name in _pairs(now_hits, before_hits):
        table = drift(_renamed(before_hits[previous_name], now_hits[name]), now_hits[name])
        if len(table):
            frames.append(table.assign(dataset=name))
    if not frames:
        systems_now = sorted({s for d in now_hits.values() for s in d.system})
        systems_before = sorted({s for d in before_hits.values() for s in d.system})
        raise ConfigError(f"no system in common with hits to compare: the previous probe {previous} ran "
                          f"{systems_before} on {sorted(before_hits)}, this one {systems_now} on {sorted(now_hits)}; "
                          "probe with the same system (and labelled set) to measure drift")  # fmt: skip
    return pd.concat(frames, ignore_index=True)[COLUMNS]


__all__ = ["distance_drift"]
