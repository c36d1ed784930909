"""What names one figure of a run: as columns of the long-form scores, and as the flat key of metrics.json.

A figure is (dataset, system, metric, group, group_value): `metric` as the metric registry writes it
(`recall@10`, `empty_rate`) and, for a breakdown, the group it is broken down by (one of BREAKDOWNS: `qtype`,
`size`) and the group's value (both "" for a figure over all the questions). Long-form scores (scores.parquet,
`long_scores`) hold these as columns, and a reader picks a breakdown by them.

metrics.json and baselines hold one flat key per figure, `dataset/system/metric`, a breakdown written after the
metric as `[group=value]` (`synth/event/recall@10[qtype=temporal]`): the form the gate compares, unchanged since
memlab first wrote it. `metric_key` writes it and `parse_key` reads it back for the files that hold nothing else
(metrics.json, baselines, an alert's metric): this module is the one place that knows the flat form."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

GROUP_COLUMNS = ["group", "group_value"]  # "" and "": the figure is over all the questions


@dataclass(frozen=True)
class Breakdown:
    """A way scores are broken down: its `name` (the `group` column, the flat key's tag) and the per-question
    column its values come from ("": a sweep's own breakdown, no per-question values)."""

    name: str
    column: str


BREAKDOWNS = {b.name: b for b in (
    Breakdown("qtype", "qtype"),  # the question's type
    Breakdown("size", "size_bucket"),  # the memory's size in units: <=50, 51-500, 501-2000, >2000
    Breakdown("share", ""),  # the filtered sweep's tenant share of the table (no per-question column)
    Breakdown("pool", ""),  # the labels sweep's pool (depth x systems; no per-question column)
    Breakdown("user", ""),  # the table sweep's plans: the smallest and the largest user (no per-question column)
)}  # fmt: skip

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_METRIC = re.compile(rf"^(?P<name>{_NAME})(?:@\d+)?$")
_KEY = re.compile(rf"^(?P<dataset>[^/]+)/(?P<system>.+)/(?P<metric>{_NAME}(?:@\d+)?)"
                  r"(?:\[(?P<group>[^=\[\]/]+)=(?P<value>.*)\])?$", re.DOTALL)


@dataclass(frozen=True)
class ScoreKey:
    """One figure's name in parts; `str(key)` is its flat metrics.json key."""

    dataset: str
    system: str
    metric: str
    group: str = ""
    group_value: str = ""

    @property
    def label(self) -> str:
        """The metric part of the flat key: `recall@10`, `recall@10[qtype=temporal]`."""
        return metric_label(self.metric, self.group, self.group_value)

    @property
    def name(self) -> str | None:
        """The base name the metric registry knows the metric by (`recall@10` -> `recall`), None when the metric
        is not of the registry's form."""
        return metric_name(self.metric)

    def __str__(self) -> str:
        return f"{self.dataset}/{self.system}/{self.label}"


def metric_name(metric: str) -> str | None:
    """The registry's name of a metric as scores write it (`recall@10` -> `recall`; no breakdown), or None."""
    match = _METRIC.match(metric)
    return match["name"] if match else None


def metric_label(metric: str, group: str = "", group_value: str = "") -> str:
    """A metric with its breakdown, as a flat key writes it (`recall@10[qtype=temporal]`)."""
    return f"{metric}[{group}={group_value}]" if group else metric


def metric_key(dataset: str, system: str, metric: str, group: str = "", group_value: str = "") -> str:
    """The one key scheme of metrics.json and the gate: `dataset/system/metric[group=value]`."""
    return str(ScoreKey(dataset, system, metric, group, group_value))


def parse_key(key: str | ScoreKey) -> ScoreKey | None:
    """A flat key in parts (a system may hold slashes, a breakdown's value too), or None for a key not of that
    form; a ScoreKey as it is."""
    if isinstance(key, ScoreKey):
        return key
    match = _KEY.match(key)
    if match is None:
        return None
    return ScoreKey(match["dataset"], match["system"], match["metric"], match["group"] or "", match["value"] or "")


def label_key(label: str, dataset: str, system: str) -> ScoreKey | None:
    """A metric with its breakdown as a flat key writes it (an alert's metric), as the figure of `system` on
    `dataset`; None when it is not of that form."""
    return parse_key(f"{dataset}/{system}/{label}")


def keys_of(scores: pd.DataFrame) -> list[ScoreKey]:
    """Each row of long-form scores as its ScoreKey (rows without group columns: no breakdown)."""
    groups = [scores[c] if c in scores.columns else [""] * len(scores) for c in GROUP_COLUMNS]
    return [ScoreKey(str(d), str(s), str(m), str(g), str(v))
            for d, s, m, g, v in zip(scores.dataset, scores.system, scores.metric, *groups, strict=True)]  # fmt: skip


def overall(scores: pd.DataFrame) -> pd.Series:
    """Rows of long-form scores over all the questions (no breakdown)."""
    return scores["group"] == "" if "group" in scores.columns else pd.Series(True, index=scores.index)


def by_group(scores: pd.DataFrame, group: str) -> pd.Series:
    """Rows of long-form scores broken down by `group` (a name of BREAKDOWNS)."""
    return scores["group"] == group if "group" in scores.columns else pd.Series(False, index=scores.index)


def keyed(keys: Iterable[str | ScoreKey]) -> list[ScoreKey]:
    """The keys of the flat form among `keys`, in parts (others left out)."""
    return [p for k in keys if (p := parse_key(k)) is not None]


__all__ = ["BREAKDOWNS", "GROUP_COLUMNS", "Breakdown", "ScoreKey", "by_group", "keyed", "keys_of", "label_key",
           "metric_key", "metric_label", "metric_name", "overall", "parse_key"]
