"""Data sets by format, from a config entry: memlab JSONL, LongMemEval's, LoCoMo's and BEIR's own layouts, fixture
YAML, memlab-synth, judged sets. The formats, their readers and their options are one table,
memlab.lab.datasets.formats.registry (DATA_FORMATS); this module checks an entry against it and loads it.

The name given in the config is the name every output uses. An entry with `optional: true` and no `path` is
left out of the run (memlab.lab.config.parse), so a suite can name a data set the user brings with `--set`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlab.errors import ConfigError, FixtureError
from memlab.lab.datasets.formats.registry import DATA_FORMATS, aliases, entry_options
from memlab.lab.datasets.label_loss import refuse_lost_labels
from memlab.lab.datasets.model import Dataset
from memlab.lab.datasets.paths import CHECKOUT, resolve_path

FORMATS = tuple(DATA_FORMATS)  # the formats' names, in the registry's order
ALIASES = aliases()  # `format: jsonl` reads memlab's JSON Lines, as `format: memlab` does


def check_spec(spec: dict[str, Any], where: str, *, missing_ok: bool = False) -> str:
    """The format a data set entry names (`jsonl` is another name for `memlab`), after checking the entry
    against that format's options (memlab.lab.datasets.formats.registry.entry_options)."""
    return entry_options(spec, where, missing_ok=missing_ok)[0].name


def load_dataset(spec: dict[str, Any], base_dirs: list[Path] | None = None) -> Dataset:
    """Load one configured data set; every error names the data set and the fix."""
    if not isinstance(spec, dict) or not spec.get("name"):
        raise ConfigError(f"every data set needs a `name` and a `format`; got {spec!r}")
    try:
        return _load(spec, base_dirs)
    except RecursionError:  # the readers bound nesting where they parse; this names any depth they missed
        raise FixtureError(f"data set {spec['name']!r}: refused: {spec.get('path') or 'a file of it'} is nested too "
                           "deeply to read; write the values out flat") from None  # fmt: skip


def _load(spec: dict[str, Any], base_dirs: list[Path] | None) -> Dataset:
    name = str(spec["name"])
    fmt, options = entry_options(spec, f"data set {name!r}")
    return checked(name, fmt.read(name, options, base_dirs or []))


def checked(name: str, data: Dataset) -> Dataset:
    """A loaded data set under its configured name, refused when most of its labels point outside it or it has
    no questions (nor facts to check)."""
    data.name = name
    refuse_lost_labels(data)  # most labels pointing outside the data: its scores would measure the loader
    if not data.questions and not any(u.expected_facts is not None for u in data.users):
        raise ConfigError(f"data set {name!r}: no questions after loading (check `limit` and the file)")
    return data


__all__ = ["ALIASES", "CHECKOUT", "FORMATS", "check_spec", "checked", "load_dataset", "resolve_path"]
