"""Checks of a config's values, run by `parse_config` before anything is loaded or written: each names the entry,
the value and what is allowed, as a ConfigError (one line, exit 2 on the command line) instead of a TypeError deep
in a run. Three kinds: names that become file or folder names, the types and ranges of values, and the sizes of
things a config asks for. A data set entry is checked against its format's typed options (memlab.lab.datasets.formats
.registry), a sweep's options against the sweep's (Sweep.parse_options): no table of their keys is kept here."""

from __future__ import annotations

import math
import types
import typing
from typing import Any, Literal, get_args, get_origin

from memlab.errors import ConfigError
from memlab.lab.datasets.loaders import check_spec
from memlab.lab.runs.records import slug
from memlab.lab.sweeps.filtered import MAX_SCAN_TUPLES
from memlab.models import ModelSpec
from memlab.types import SearchSettings

NAME_LIMIT = 100  # characters of an experiment's name (it becomes a folder name)
TEXT_LIMIT = 20_000  # characters of a description
MAX_CANDIDATES = 10_000  # each candidate list of a fused search is this deep, per question


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_experiment_name(name: Any, source: str) -> None:
    """An experiment's name becomes the folder `reports/<name>-<time>`: it must be one plain folder name, never
    a path that leads elsewhere."""
    if name is None:
        return
    if not isinstance(name, str | int) or isinstance(name, bool):
        raise ConfigError(f"{source}: `name` must be text, got {_shown(name)}")
    text = str(name)
    bad = [c for c in text if ord(c) < 32 or ord(c) == 127]
    if "/" in text or "\\" in text or text.strip() in (".", "..") or bad or len(text) > NAME_LIMIT:
        raise ConfigError(f"{source}: the experiment name {_shown(text)} is not a plain folder name (it names the "
                          f"run folder under reports/); use letters, digits, spaces and . _ - only (no / \\ or "
                          f"'..', at most {NAME_LIMIT} characters), or give --out")  # fmt: skip


def file_key(name: str) -> str:
    """The file name a name becomes, compared as a case-insensitive file system (macOS, Windows) would."""
    return slug(name).casefold()


def check_distinct_files(kind: str, names: list[Any], source: str) -> None:
    """Names that become file names must become different ones, else one result silently replaces another."""
    seen: dict[str, str] = {}
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{source}: every entry of `{kind}` needs a `name` that is text; got {_shown(name)}")
        key = file_key(name)
        if key in seen:
            other = seen[key]
            what = "are the same name" if other == name else f"would share the file name {slug(name)!r}"
            raise ConfigError(f"{source}: {kind} {other!r} and {name!r} {what}; rename one (in file names, letters, "
                              "digits and . _ @ = - are kept, any other run of characters becomes _, and case "
                              "is ignored)")  # fmt: skip
        seen[key] = name


def check_distinct_runs(datasets: list[str], systems: list[str], source: str) -> None:
    """Run files are `<data set>__<system>`: a `__` inside a name could spell another pair's file."""
    seen: dict[str, tuple[str, str]] = {}
    for dataset in datasets:
        for system in systems:
            key = f"{file_key(dataset)}__{file_key(system)}"
            if key in seen:
                (d, s) = seen[key]
                raise ConfigError(f"{source}: data set {d!r} x system {s!r} and data set {dataset!r} x system "
                                  f"{system!r} would share the run file {slug(dataset)}__{slug(system)}.parquet; "
                                  "rename one (avoid '__' in names)")  # fmt: skip
            seen[key] = (dataset, system)


# -- values --------------------------------------------------------------------------------------------------


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_whole(where: str, value: Any, low: int, high: int, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not _whole(value) or not low <= value <= high:
        raise ConfigError(f"{where} must be a whole number in {low}..{high}{' or null' if optional else ''}, got "
                          f"{_shown(value)}")  # fmt: skip


def check_number(where: str, value: Any, low: float, high: float, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not _number(value) or not low <= value <= high:
        raise ConfigError(f"{where} must be a number in {low}..{high}{' or null' if optional else ''}, got "
                          f"{_shown(value)}")  # fmt: skip


def check_text(where: str, value: Any, *, optional: bool = False, limit: int = 1000) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or len(value) > limit:
        raise ConfigError(f"{where} must be text (at most {limit} characters), got {_shown(value)}")


def _by_annotation(where: str, value: Any, annotation: Any) -> None:
    """Check a value against a SearchSettings field's type (int, float, str, a Literal, or one of these | None)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is typing.Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return
        inner = [a for a in args if a is not type(None)]
        return _by_annotation(where, value, inner[0]) if len(inner) == 1 else None
    if origin is Literal:
        if value not in args or isinstance(value, bool):
            raise ConfigError(f"{where} must be one of {list(args)}, got {_shown(value)}")
        return
    if annotation is int and not _whole(value):
        raise ConfigError(f"{where} must be a whole number, got {_shown(value)}")
    if annotation is float and not _number(value):
        raise ConfigError(f"{where} must be a finite number, got {_shown(value)}")
    if annotation is str and not isinstance(value, str):
        raise ConfigError(f"{where} must be text, got {_shown(value)}")


_BUILD = {
    "chunk_size": lambda w, v: check_whole(w, v, 1, 1000),
    "chunk_overlap": lambda w, v: check_whole(w, v, 0, 999),
    "granularity": lambda w, v: check_text(w, v),
    "embedder": lambda w, v: check_text(w, v),
    "rendering": lambda w, v: check_text(w, v),
    "extractor": lambda w, v: check_text(w, v),
    "fact_keys": lambda w, v: check_text(w, v, optional=True),
    # what sizes each search's work, bounded tighter than the store's own ranges (a run asks every question)
    "candidates": lambda w, v: check_whole(w, v, 1, MAX_CANDIDATES),
    "max_scan_tuples": lambda w, v: check_whole(w, v, 1, MAX_SCAN_TUPLES),
}


def check_system_values(entry: Any, index: int, source: str) -> None:
    """Every value of one `systems` entry has its field's type (ranges are SearchSettings' own checks)."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{source}: systems[{index}] must be a mapping with a `name`, got {_shown(entry)}")
    if "store" in entry:
        return  # a table-store system: memlab.lab.systems.table checks its values (strategy ivfflat, k, distance)
    hints = typing.get_type_hints(SearchSettings)
    name = entry.get("name")
    label = f"{source}: systems[{index}] ({name!r})" if isinstance(name, str) else f"{source}: systems[{index}]"
    for key, value in entry.items():
        if key in _BUILD:
            _BUILD[key](f"{label}.{key}", value)
        elif key in hints and key != "top_k":
            _by_annotation(f"{label}.{key}", value, hints[key])
    size, overlap = entry.get("chunk_size", 4), entry.get("chunk_overlap", 1)
    given = "chunk_size" in entry or "chunk_overlap" in entry
    if given and _whole(size) and _whole(overlap) and overlap >= size:
        raise ConfigError(f"{label}: chunk_overlap ({overlap}) must be smaller than chunk_size ({size})")


_EMBEDDER = {  # the numbers of an `embedders:` entry that size its work (memlab.embedding checks the rest)
    "batch_size": lambda w, v: check_whole(w, v, 1, 4096),
    "retries": lambda w, v: check_whole(w, v, 0, 10),
    "timeout": lambda w, v: check_number(w, v, 0.001, 3600.0),
    "truncate_dim": lambda w, v: check_whole(w, v, 1, 65_536),
    "dimension": lambda w, v: check_whole(w, v, 1, 65_536),
}


def check_embedder_values(entry: dict[str, Any], index: int, source: str) -> None:
    """An `embedders:` entry's sizes (batch, retries, timeout, dimensions) within their bounds."""
    for key, value in entry.items():
        if key in _EMBEDDER:
            _EMBEDDER[key](f"{source}: embedders[{index}] ({entry.get('name')!r}).{key}", value)


def _boolean(where: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {_shown(value)}")


def check_dataset_values(entry: Any, index: int, source: str) -> None:
    """One `datasets` entry against its format's typed options (memlab.lab.datasets.formats.registry): its format
    and keys are known, every value has its type and a sane size. An entry left out of the run (`optional` and no
    `path`) may lack what loading it would need."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{source}: datasets[{index}] must be a mapping {{name, format, path}}, got {_shown(entry)}")
    name = entry.get("name")
    where = f"{source}: datasets[{index}]" + (f" ({name!r})" if isinstance(name, str) else "")
    check_spec(entry, where, missing_ok=bool(entry.get("optional")) and not entry.get("path"))


def check_top_values(data: dict[str, Any], source: str) -> None:
    """The top-level values other than the lists: name, description, out, llm, plots (models: memlab.models
    checks)."""
    check_experiment_name(data.get("name"), source)
    _boolean(f"{source}: plots", data.get("plots", True))
    check_text(f"{source}: description", data.get("description"), optional=True, limit=TEXT_LIMIT)
    check_text(f"{source}: out", data.get("out"), optional=True, limit=4096)
    if data.get("llm") is not None and not isinstance(data["llm"], dict):
        raise ConfigError(f"{source}: llm must be a mapping (base_url, model, ...), got {_shown(data['llm'])}")


def check_llm_model(llm: Any, models: dict[str, ModelSpec], source: str) -> None:
    """`llm: {model_ref: NAME}` names an openai-chat entry of `models:` (the LLM extractor then uses it, its
    cache and retries); otherwise llm gives base_url and model itself, as before."""
    if not isinstance(llm, dict) or llm.get("model_ref") is None:
        return
    ref = llm["model_ref"]
    chat = sorted(n for n, s in models.items() if s.kind == "openai-chat")
    if ref not in models or models[ref].kind != "openai-chat":
        raise ConfigError(f"{source}: llm.model_ref {_shown(ref)} is not an openai-chat model of the models: "
                          f"section; openai-chat models configured: {chat or 'none'}")  # fmt: skip
    if set(llm) - {"model_ref"}:
        raise ConfigError(f"{source}: llm.model_ref takes base_url, model and the rest from models.{ref}; drop "
                          f"{', '.join(sorted(set(llm) - {'model_ref'}))} from llm")  # fmt: skip
