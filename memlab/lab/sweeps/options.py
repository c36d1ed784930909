"""Every sweep's options as data: one row per key a sweep's block of the config's `options` may have (sweep, key,
type, default, description), read from the sweeps' own options dataclasses (Sweep.options_type), so a reference
of `options:` is generated from what the checks enforce."""

from __future__ import annotations

from collections.abc import Mapping

from memlab.lab.base.options import OptionRow
from memlab.lab.sweeps import SWEEPS
from memlab.lab.sweeps.base import Sweep


def sweep_option_rows(sweeps: Mapping[str, Sweep] | None = None) -> list[OptionRow]:
    """The rows of every sweep of `sweeps` (default: SWEEPS), in the registry's order."""
    return [row for sweep in (SWEEPS if sweeps is None else sweeps).values() for row in sweep.option_rows()]


__all__ = ["sweep_option_rows"]
