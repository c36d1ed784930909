"""Where a data set's files are. A path in a config is absolute, or relative: then it is looked for against the
config's folder and the working folder, then in the memlab checkout (an editable install: a suite names the
checkout's `datasets/` and `fixtures/` wherever it runs from), then in the data the package ships (`packaged/`, so
an installed wheel runs the quick and example suites with no checkout). A path found nowhere is an error naming
the file and where to get it.

The packaged data mirrors the checkout's relative paths: `fixtures/events` is `packaged/fixtures/events`. Most of
it is a copy; a LongMemEval file is an extract holding only the questions the quick and example suites select
(`packaged/extracts.json` says which selections each extract serves; `extract_problem` refuses any other, so a
larger selection never quietly runs on fewer questions). `memlab.lab.config.packaged` writes that folder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

from memlab.errors import ConfigError

CHECKOUT = Path(__file__).resolve().parents[3]  # the memlab checkout (an editable install)
IS_CHECKOUT = (CHECKOUT / "pyproject.toml").is_file()  # an installed wheel sits in site-packages: no checkout
PACKAGED = Path(__file__).resolve().with_name("packaged")  # the data shipped with the package
EXTRACTS_FILE = "extracts.json"  # in PACKAGED: each extract's relative path, the selections it serves
LONGMEMEVAL_URL = "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned"
# where a relative path the suites name comes from, for the error when it is nowhere (first matching prefix)
SOURCES = (
    ("datasets/longmemeval/", "the memlab checkout's datasets/longmemeval/ (the files the suites were written for) "
                              f"or LongMemEval's release, {LONGMEMEVAL_URL} (MIT licence)"),
    ("fixtures/", "the memlab checkout's fixtures/ folder (the installed package ships only what the quick and "
                  "example suites read)"),
    ("datasets/", "the memlab checkout's datasets/ folder"),
)  # fmt: skip
# the keys of a LongMemEval entry that pick the file's questions, and their defaults
SELECTION_DEFAULTS: dict[str, Any] = {"per_type": None, "limit": None, "question_types": None,
                                      "include_abstention": True}  # fmt: skip


@dataclass(frozen=True)
class Extract:
    """A packaged file holding part of a larger one: the selections (`per_type`, `limit`, ...) it serves."""

    path: str  # relative, as a config names the whole file
    selections: tuple[dict[str, Any], ...]
    questions: int


def resolve_path(raw: str | Path, base_dirs: list[Path], what: str, key: str = "path") -> Path:
    """An absolute path as given; a relative one against `base_dirs` (the config's folder, the working folder),
    then the memlab checkout, then the packaged data. A path that is nowhere raises a ConfigError naming every
    place looked at, where the file comes from, and the key (`key`) to fix."""
    path = Path(raw).expanduser()
    if path.is_absolute():
        if not path.exists():
            raise ConfigError(f"{what}: {path} does not exist; fix `{key}` in the config")
        return path
    tried = []
    for base in [*base_dirs, *([CHECKOUT] if IS_CHECKOUT else [])]:
        candidate = (base / path).resolve()
        tried.append(str(candidate))
        if candidate.exists():
            return candidate
    packaged = packaged_path(raw)
    if packaged is not None:
        return packaged
    source = where_from(raw)
    raise ConfigError(f"{what}: {raw} not found (looked in {', '.join(dict.fromkeys(tried))}"
                      f"{', and the data packaged with memlab' if PACKAGED.is_dir() else ''})"
                      + (f"; get it from {source}, then" if source else ";")
                      + f" fix `{key}`: give an absolute path or one relative to the config file")  # fmt: skip


def _posix(raw: str | Path) -> PurePosixPath:
    """A config's relative path in one spelling, whichever separator it was written with."""
    return PurePosixPath(str(raw).replace("\\", "/"))


def packaged_path(raw: str | Path) -> Path | None:
    """The packaged copy (or extract) of a relative path a config names, if memlab ships it."""
    parts = _posix(raw).parts
    if not parts or parts[0] in ("/", "~") or ".." in parts:
        return None
    candidate = PACKAGED.joinpath(*parts)
    return candidate if candidate.exists() and candidate.name != EXTRACTS_FILE else None


def where_from(raw: str | Path) -> str | None:
    """Where a relative path of the built-in suites comes from (None: not one memlab knows)."""
    text = _posix(raw).as_posix()
    return next((source for prefix, source in SOURCES if text.startswith(prefix)), None)


@cache
def extracts() -> dict[Path, Extract]:
    """The packaged extracts by their packaged path (none when the package ships no extracts file)."""
    index = PACKAGED / EXTRACTS_FILE
    if not index.is_file():
        return {}
    found = json.loads(index.read_text(encoding="utf-8"))
    return {PACKAGED.joinpath(*PurePosixPath(rel).parts): Extract(rel, tuple(entry["selections"]), entry["questions"])
            for rel, entry in found.items()}  # fmt: skip


def selection(options: dict[str, Any]) -> dict[str, Any]:
    """The keys of a data set entry that pick its questions, defaults filled in."""
    return {key: options.get(key, default) for key, default in SELECTION_DEFAULTS.items()}


def covers(served: dict[str, Any], asked: dict[str, Any]) -> bool:
    """Whether an extract written for selection `served` holds every question selection `asked` picks from the
    whole file. Both keep questions in file order, so the first N of each type (`per_type`) hold the first n <= N
    of each type, with any `limit` after; the first N overall (`limit` alone) hold the first n <= N. Filters by
    type or abstention change which questions come first: only the selection written serves them."""
    served, asked = selection(served), selection(asked)
    if asked == served:
        return True
    plain = served["question_types"] is None and served["include_abstention"] and \
        asked["question_types"] is None and asked["include_abstention"]  # fmt: skip
    if not plain:
        return False
    if served["per_type"] is not None and served["limit"] is None:
        return asked["per_type"] is not None and asked["per_type"] <= served["per_type"]
    if served["per_type"] is None and served["limit"] is not None:
        return asked["per_type"] is None and asked["limit"] is not None and asked["limit"] <= served["limit"]
    return False


def extract_problem(path: Path, options: dict[str, Any], name: str) -> str | None:
    """Why a packaged extract cannot serve a data set entry's selection (None: it can, or `path` is no extract):
    the whole file is not shipped, so a selection beyond the extract would quietly run on fewer questions."""
    extract = extracts().get(path.resolve())
    asked = selection(options)
    if extract is None or any(covers(served, asked) for served in extract.selections):
        return None
    def shown(chosen: dict[str, Any]) -> str:
        return ", ".join(f"{k}: {v}" for k, v in chosen.items() if v != SELECTION_DEFAULTS[k]) or "every question"

    served = "; ".join(shown(s) for s in extract.selections)
    return (f"data set {name!r}: {extract.path} is not in the config's folder, the working folder or a memlab "
            f"checkout, and the installed package ships only an extract of it ({extract.questions} questions, for "
            f"{served}), not the whole file this entry selects from ({shown(asked)}); get the whole file from "
            f"{where_from(extract.path) or 'its source'}, then give its path with --set datasets.{name}.path=FILE "
            "(or run from a memlab checkout)")  # fmt: skip


__all__ = ["CHECKOUT", "EXTRACTS_FILE", "IS_CHECKOUT", "PACKAGED", "SELECTION_DEFAULTS", "Extract", "covers",
           "extract_problem", "extracts", "packaged_path", "resolve_path", "selection", "where_from"]  # fmt: skip
