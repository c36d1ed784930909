"""Where memlab may write: a folder memlab made (its manifest.json says so), or a new or empty one; a file memlab
wrote, or a new one. Every command that writes a folder or a file a user names asks here first, so a mistyped
`--out ~/Pictures` is refused with one line instead of losing the user's files.

A run folder is marked by its manifest.json: a JSON object with `"made_by": "memlab"` and `"folder": "run"`. Run
folders from before the mark are still recognised by the fields every memlab manifest has held (`status` running
or complete, and `config.resolved`). Anything else that is not empty belongs to someone else."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError
from memlab.lab.base.json_bounds import loads

MADE_BY = "memlab"
RUN = "run"
BENCH = "bench"
RELIABILITY = "reliability"
MARK_FILES = {RUN: "manifest.json", BENCH: "bench.json", RELIABILITY: "reliability.json"}


def mark(kind: str) -> dict[str, str]:
    """The fields that identify a folder as memlab's (merged into its manifest)."""
    return {"made_by": MADE_BY, "folder": kind}


def _read_json(path: Path) -> Any:
    try:
        return loads(path.read_text(encoding="utf-8"), str(path), ConfigError)
    except (OSError, UnicodeDecodeError, ValueError, ConfigError):
        return None


def folder_kind(folder: str | Path) -> str | None:
    """The kind of memlab folder `folder` is ("run", "bench", "reliability"), or None when memlab did not make it."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    for kind, name in MARK_FILES.items():
        data = _read_json(folder / name)
        if not isinstance(data, dict):
            continue
        if data.get("made_by") == MADE_BY and data.get("folder") == kind:
            return kind
        if kind == RUN and _legacy_run_manifest(data):
            return RUN
        if kind == BENCH and isinstance(data.get("results"), dict) and isinstance(data.get("meta"), dict):
            return BENCH
        if kind == RELIABILITY and isinstance(data.get("families"), dict | list) and "ok" in data:
            return RELIABILITY
    return None


def _legacy_run_manifest(data: dict) -> bool:
    """A manifest written by memlab before the mark: every one had these fields, from the run's first moment."""
    config = data.get("config")
    return data.get("status") in ("running", "complete") and isinstance(config, dict) \
        and isinstance(config.get("resolved"), dict)  # fmt: skip


def is_empty_folder(folder: Path) -> bool:
    return folder.is_dir() and next(folder.iterdir(), None) is None


def claim_folder(folder: str | Path, kind: str = RUN, *, flag: str = "--out") -> Path:
    """Check that memlab may write (and replace its own results) in `folder`: it does not exist yet, is empty,
    or is a memlab folder of `kind`. Otherwise raise a ConfigError and touch nothing."""
    folder = Path(folder)
    if not folder.exists() and not folder.is_symlink():
        return folder
    if not folder.is_dir():
        raise ConfigError(f"{flag} {folder}: this is a file, not a folder; give a new or empty folder.")
    if is_empty_folder(folder):
        return folder
    found = folder_kind(folder)
    if found == kind:
        return folder
    what = f"a memlab {found} folder" if found else f"not a memlab {kind} folder (no memlab {MARK_FILES[kind]})"
    raise ConfigError(f"{flag} {folder}: the folder is not empty and is {what}; memlab only replaces its own "
                      f"{kind} folders, so nothing was written. Give a new or empty folder.")  # fmt: skip


def claim_file(path: str | Path, ours: Callable[[Path], bool], *, flag: str, what: str) -> Path:
    """Check that memlab may write the file `path`: it is new, or `ours` recognises it as one memlab wrote."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{flag} {path}: this is a folder; give the {what} file's path.")
    if path.exists() and not ours(path):
        raise ConfigError(f"{flag} {path}: the file exists and is not a {what} memlab wrote; memlab will not "
                          "overwrite it. Give a new path or remove the file yourself.")  # fmt: skip
    return path


def is_baseline_file(path: Path) -> bool:
    """A baseline memlab wrote: {"experiment": ..., "metrics": {...}}, or the older flat {metric: number}."""
    data = _read_json(path)
    if not isinstance(data, dict):
        return False
    if isinstance(data.get("metrics"), dict):
        return True
    return bool(data) and all((isinstance(v, int | float) and not isinstance(v, bool)) or v is None
                              for v in data.values())  # fmt: skip


def is_gate_file(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as file:
            return file.readline().startswith("# Against the baseline")
    except (OSError, UnicodeDecodeError):
        return False


def replace_folder(source: Path, target: Path, *, kind: str = RUN) -> None:
    """Copy `source` over `target` (e.g. reports/latest), removing the old copy only if it is memlab's."""
    claim_folder(target, kind, flag="copy to")
    if target.is_symlink():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
