"""Sweeps: each is a `Sweep` (memlab.lab.sweeps.base) that yields systems, may measure what is not a ranked list,
scores what it adds from saved runs and writes its report section. SWEEPS is the one table of them by name (the
reference page docs/reference/sweeps.md is generated from it): to add a sweep, write its class in a module here and
add it to SWEEPS.
Modules here are internal; use the names below."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from memlab.errors import ConfigError
from memlab.lab.sweeps.answer import AnswerSweep
from memlab.lab.sweeps.base import Sweep, SweepContext, applies, sweep_options
from memlab.lab.sweeps.cutoff import CutoffSweep
from memlab.lab.sweeps.facts import FactsSweep
from memlab.lab.sweeps.filtered import FilteredSweep
from memlab.lab.sweeps.granularity import GranularitySweep
from memlab.lab.sweeps.ingest import IngestSweep
from memlab.lab.sweeps.labels import LabelsSweep
from memlab.lab.sweeps.models import ModelsSweep
from memlab.lab.sweeps.retrieval import RetrievalSweep
from memlab.lab.sweeps.table import TableSweep

SWEEPS: Mapping[str, Sweep] = MappingProxyType({
    sweep.name: sweep
    for sweep in (GranularitySweep(), RetrievalSweep(), CutoffSweep(), FilteredSweep(), ModelsSweep(), FactsSweep(),
                  IngestSweep(), LabelsSweep(), AnswerSweep(), TableSweep())
})  # fmt: skip


def get_sweep(name: str) -> Sweep:
    """The sweep called `name` (config checks refuse unknown names first; this is the error for a caller that
    skipped them)."""
    if name not in SWEEPS:
        raise ConfigError(f"unknown sweep {name!r}; use some of {tuple(SWEEPS)}")
    return SWEEPS[name]


__all__ = ["SWEEPS", "Sweep", "SweepContext", "applies", "get_sweep", "sweep_options"]
