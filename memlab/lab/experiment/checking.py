"""`memlab eval --dry-run`: every data set of a config loaded as a run loads it, or why it does not, with no
database, model or run folder. A run stops at its first bad data set; this lists every one, with the file each
was read from (a config's folder, the working folder, the memlab checkout, or the data packaged with memlab)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memlab.errors import MemlabError
from memlab.lab.config.parse import ExperimentConfig
from memlab.lab.config.stores import load_configured
from memlab.lab.datasets.model import Dataset
from memlab.lab.datasets.paths import resolve_path


@dataclass(frozen=True)
class DatasetCheck:
    """One configured data set: loaded (`dataset`, read from `path` when it names a file), or `problem`."""

    name: str
    dataset: Dataset | None = None
    path: Path | None = None
    problem: str | None = None


def check_datasets(config: ExperimentConfig) -> list[DatasetCheck]:
    """Each data set of `config`, in order, loaded as `run_experiment` loads it (a table store's from its table)."""
    checks = []
    for spec in config.resolved["datasets"]:
        name = str(spec["name"])
        try:
            data = load_configured(spec, config)
            path = resolve_path(spec["path"], config.base_dirs, f"data set {name!r}") if spec.get("path") else None
            checks.append(DatasetCheck(name, data, path))
        except MemlabError as exc:
            checks.append(DatasetCheck(name, problem=str(exc)))
    return checks


__all__ = ["DatasetCheck", "check_datasets"]
