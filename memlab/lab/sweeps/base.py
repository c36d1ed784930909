"""The sweep protocol: what a sweep may add to a run, as declared hooks with their types.

A sweep yields systems to run on a data set (`systems`), may measure what is not a ranked list and save it as
tables (`measure`, with `measures = True` so the progress line counts it), adds long-form scores read from the
saved runs and tables (`scores`), and writes its part of report.md (`section`); `planned` counts what it will
add from the options alone, before anything is built (the config's size bound). Every hook has a do-nothing
default, so a sweep declares only what it adds. The run (memlab.lab.experiment.run) and the report
(memlab.lab.report.writer)
call the hooks of the sweeps a config names, in the config's order."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.base.options import OptionRow, check_options, check_value, describe, option_rows
from memlab.lab.datasets.model import Dataset
from memlab.lab.metrics.scoring import SCORE_COLUMNS
from memlab.lab.runs.folder import RunFolder
from memlab.lab.systems.derived import DerivedRun
from memlab.lab.systems.kinds import Env, System
from memlab.models import ModelSpec


@dataclass
class SweepContext:
    """What a sweep's `systems` and `measure` see besides the data set: the resolved config and the systems
    already chosen for the data set (configured ones first, then earlier sweeps')."""

    config: dict[str, Any]
    systems: list[Any] = field(default_factory=list)

    @property
    def embedder_names(self) -> list[str]:
        return [e["name"] for e in self.config.get("embedders", [])]


@dataclass(frozen=True)
class NoOptions:
    """A sweep that reads no option but `datasets`."""


DATASETS = list[str] | None  # every sweep's `datasets`: where it runs
DATASETS_DOC = "the data sets the sweep runs on (default: every one)"


class Sweep:
    """One sweep. Subclasses set `name`, `options_type` (a dataclass declaring the keys of the sweep's block of
    the config's `options`: types, defaults, bounds, one line each; memlab.lab.base.options) and override the hooks
    they need; `options` is that block as given, without `datasets` (which only says where the sweep runs)."""

    name: ClassVar[str]
    measures: ClassVar[bool] = False  # True when `measure` does work (a step of the run's progress line)
    options_type: type = NoOptions

    def parse_options(self, settings: Any, where: str) -> Any:
        """The sweep's block of `options` checked against `options_type`, as an instance of it: the one check of
        every sweep's options (unknown keys with the nearest valid one, types, bounds, the type's own `check`),
        run when the config is read (`where`: `ci.yaml: options.answer`)."""
        settings = {} if settings is None else settings
        if isinstance(settings, dict) and "datasets" in settings:
            try:
                check_value(f"{where}.datasets", settings["datasets"], DATASETS)
            except ConfigError as exc:
                raise ConfigError(f"{exc}; e.g. `datasets: [NAME]`, or leave it out (every data set)") from None
        given = {k: v for k, v in settings.items() if k != "datasets"} if isinstance(settings, dict) else settings
        return check_options(self.options_type, given, where, owner=f"the {self.name} sweep", also=("datasets",))

    def typed(self, options: dict[str, Any]) -> Any:
        """`options` (checked when the config was read) as an instance of `options_type`, defaults filled in."""
        return self.parse_options(options, f"options.{self.name}")

    def option_rows(self) -> list[OptionRow]:
        """The sweep's options as rows (sweep, key, type, default, description), `datasets` last."""
        return [*option_rows(self.options_type, self.name),
                OptionRow(self.name, "datasets", describe(DATASETS, {}), "none", DATASETS_DOC)]  # fmt: skip

    def check_models(self, options: dict[str, Any], models: dict[str, ModelSpec], source: str) -> None:
        """Refuse options naming a model the config's `models:` section lacks, or one of the wrong kind (raise
        ConfigError), when the config is read."""

    def systems(self, dataset: Dataset, options: dict[str, Any],
                context: SweepContext) -> list[System | DerivedRun]:  # fmt: skip
        """Systems to run on `dataset` besides the configured ones (names already taken are skipped), and runs
        derived from their saved runs (memlab.lab.systems.derived), each after its parent."""
        return []

    def planned(self, options: dict[str, Any], config: dict[str, Any]) -> int:
        """At most how many runs it adds on one data set (its systems, plus the grid points `measure` works
        through), counted from the options alone: the config's size bound (memlab.lab.config.expansion) adds these up
        before anything is expanded. `options` are checked already."""
        return 0

    def measure(self, env: Env, dataset: Dataset, options: dict[str, Any], context: SweepContext,
                out: Path) -> None:  # fmt: skip
        """Measurements that are not ranked lists, saved as tables in the run folder `out`."""

    def scores(self, folder: RunFolder, dataset: str, options: dict[str, Any], base: pd.DataFrame) -> pd.DataFrame:
        """Extra long-form scores from saved runs and tables: SCORE_COLUMNS for figures over all questions, or
        LONG_COLUMNS with a breakdown in its group columns (memlab.lab.metrics.keys); `base` holds the scores so
        far, earlier data sets included."""
        return pd.DataFrame(columns=SCORE_COLUMNS)

    def section(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
        """Its part of report.md (may draw PNGs into the folder); None adds nothing."""
        return None


def distinct(values: Any) -> int:
    """How many different values an option's list holds (a single value counts one): what a grid multiplies."""
    if not isinstance(values, list | tuple):
        return 1
    return len({repr(v) for v in values})


def sweep_options(config: dict[str, Any], name: str) -> dict[str, Any]:
    """A sweep's options without `datasets` (which only says where the sweep runs)."""
    return {k: v for k, v in (config.get("options") or {}).get(name, {}).items() if k != "datasets"}


def applies(config: dict[str, Any], dataset: str) -> list[str]:
    """The sweeps that run on `dataset`: all configured ones, unless a sweep's options list its `datasets`."""
    out = []
    for name in config.get("sweeps", []):
        only = (config.get("options") or {}).get(name, {}).get("datasets")
        if only is None or dataset in only:
            out.append(name)
    return out


__all__ = ["NoOptions", "Sweep", "SweepContext", "applies", "distinct", "sweep_options"]
