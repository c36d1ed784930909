"""Sweeps: each is one module that yields systems (and may measure what is not a ranked list), scores what it
adds from saved runs, and writes its report section. Add a module here and name it in SWEEPS to add a sweep.

A sweep module may define, all optional:
    systems(dataset, options, context) -> list[System]     systems to run on the data set
    measure(env, dataset, options, context, out) -> None  measurements saved as tables (not ranked lists)
    scores(folder, dataset, options, base) -> DataFrame   extra long-form scores from saved runs and tables
    section(folder, dataset, options) -> str | None       its part of report.md (may draw PNGs into the folder)
`context` is a SweepContext: the resolved config and the systems already chosen for the data set."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

SWEEPS = ("granularity", "retrieval", "cutoff", "filtered", "models", "facts", "ingest")


@dataclass
class SweepContext:
    config: dict[str, Any]
    systems: list[Any] = field(default_factory=list)

    @property
    def embedder_names(self) -> list[str]:
        return [e["name"] for e in self.config.get("embedders", [])]


def sweep_module(name: str) -> ModuleType:
    if name not in SWEEPS:
        from memlab.errors import ConfigError

        raise ConfigError(f"unknown sweep {name!r}; use some of {SWEEPS}")
    return importlib.import_module(f"memlab.lab.sweeps.{name}")


__all__ = ["SWEEPS", "SweepContext", "sweep_module"]
