"""Experiment configs: one YAML file names the data sets, embedders, systems, sweeps, k and the output folder.

The built-in suites (`ci`, `full`, `fixtures`) are such files shipped in `memlab/lab/config/suites/`; `--suite NAME`
loads one, `--config FILE` loads yours, and `--set key=value` overrides one entry (dotted keys, list items by
index or by `name`: `k=5`, `datasets.0.limit=3`, `datasets.locomo.path=locomo10.json`, `options.cutoff.target=0.1`).
Values are read as YAML scalars.

A data set entry with `optional: true` and no `path` is left out of the run (`ExperimentConfig.skipped` says so):
a suite can name a data set the user brings, such as LoCoMo's file, which runs once its path is given with
`--set datasets.NAME.path=FILE`."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError
from memlab.lab.base.suggest import did_you_mean, unknown_keys
from memlab.lab.base.yaml_bounds import load_yaml_file, load_yaml_text
from memlab.lab.config.checks import (
    check_dataset_values,
    check_distinct_files,
    check_distinct_runs,
    check_embedder_values,
    check_llm_model,
    check_system_values,
    check_top_values,
)
from memlab.lab.config.expansion import check_expansion
from memlab.lab.config.stores import check_stores, default_systems
from memlab.lab.datasets.loaders import resolve_path
from memlab.lab.sweeps import SWEEPS
from memlab.lab.systems.kinds import EventSystem, FactSystem, system_from_config
from memlab.lab.systems.rerank import check_rerank_model
from memlab.models import ModelSpec, parse_models

SUITES_DIR = Path(__file__).with_name("suites")
TOP_KEYS = {"name", "description", "k", "out", "embedders", "datasets", "systems", "sweeps", "options", "llm",
            "models", "plots", "stores"}  # fmt: skip


@dataclass
class ExperimentConfig:
    """A config as given (`raw`) and as resolved (defaults filled in), with the folders relative paths start from
    and the configured systems parsed (once, here: the run and every workflow use these)."""

    raw: dict[str, Any]
    resolved: dict[str, Any]
    base_dirs: list[Path] = field(default_factory=list)
    source: str = ""
    overrides: list[str] = field(default_factory=list)  # the --set assignments applied to `raw`
    skipped: list[str] = field(default_factory=list)  # optional data sets left out: no `path` given
    models: dict[str, ModelSpec] = field(default_factory=dict)  # the `models:` section, checked, by name
    systems: list[EventSystem | FactSystem] = field(default_factory=list)  # `systems:`, parsed, in order

    @property
    def name(self) -> str:
        return self.resolved["name"]

    @property
    def k(self) -> int:
        return self.resolved["k"]


@contextmanager
def _as_config_error(where: str) -> Iterator[None]:
    """A value a check did not foresee still ends as one line naming the entry, not a traceback."""
    try:
        yield
    except ConfigError:
        raise
    except (TypeError, ValueError, OverflowError, KeyError, AttributeError) as exc:
        raise ConfigError(f"{where}: invalid value ({type(exc).__name__}: {exc})") from None


def suite_names() -> list[str]:
    return sorted(p.stem for p in SUITES_DIR.glob("*.yaml"))


def suite_path(name: str) -> Path:
    path = SUITES_DIR / f"{name}.yaml"
    if not path.exists():
        raise ConfigError(f"unknown suite {name!r}; use one of {suite_names()} or --config FILE")
    return path


def set_value(config: dict[str, Any], assignment: str) -> None:
    """Apply one `dotted.key=value` override in place."""
    if "=" not in assignment:
        raise ConfigError(f"--set {assignment!r}: write key=value, e.g. --set k=5 or --set datasets.0.limit=3")
    key, _, text = assignment.partition("=")
    value = load_yaml_text(text, f"--set {key.strip()}")
    parts = key.strip().split(".")
    node: Any = config
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            part = _list_index(node, part, key, '.'.join(parts[:i]) or 'config')
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if i == 0 and part not in TOP_KEYS:
                raise ConfigError(f"--set {key}: unknown config key {part!r}{did_you_mean(part, TOP_KEYS)}; known: "
                                  f"{sorted(TOP_KEYS)}")  # fmt: skip
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise ConfigError(f"--set {key}: {'.'.join(parts[:i])} is a value, not a mapping or list")


def _list_index(node: list[Any], part: str, key: str, where: str) -> str:
    """A list item's index as text: given as an index, or as the `name` of a mapping in the list."""
    if part.isdigit() and int(part) < len(node):
        return part
    names = [item.get("name") if isinstance(item, dict) else None for item in node]
    if part in names:
        return str(names.index(part))
    named = [str(n) for n in names if n is not None]
    raise ConfigError(f"--set {key}: {where} is a list of {len(node)}; use an index 0..{len(node) - 1}"
                      + (f" or a name ({', '.join(named)}){did_you_mean(part, named)}" if named else ""))  # fmt: skip


def parse_config(raw: Any, *, source: str = "<config>", base_dirs: list[Path] | None = None,
                 overrides: list[str] | None = None) -> ExperimentConfig:  # fmt: skip
    """Check a config mapping and fill in defaults; nothing is loaded or run here. A value that is wrong because
    of a `--set` override is reported as that override's, not the file's."""
    try:
        return _parse_config(raw, source=source, base_dirs=base_dirs, overrides=overrides)
    except ConfigError as exc:
        culprit = _blamed_override(raw, source, overrides or [], exc, base_dirs)
        if culprit is None:
            raise
        text = str(exc)
        text = text[len(source) + 2:] if text.startswith(f"{source}: ") else text
        raise ConfigError(f"--set {culprit}: {text}") from None


def _outcome(raw: Any, source: str, overrides: list[str], base_dirs: list[Path] | None) -> str | None:
    """The error a config gives with these overrides (None when it is valid)."""
    try:
        _parse_config(raw, source=source, overrides=overrides, base_dirs=base_dirs)
    except ConfigError as exc:
        return str(exc)
    return None


def _blamed_override(raw: Any, source: str, overrides: list[str], error: ConfigError,
                     base_dirs: list[Path] | None = None) -> str | None:  # fmt: skip
    """The override the error comes from: the last one whose removal changes the outcome (the config passes, or
    fails another way). None when the file alone is at fault, or the error already names its override."""
    if not overrides or str(error).startswith("--set "):
        return None
    for i in reversed(range(len(overrides))):
        if _outcome(raw, source, overrides[:i] + overrides[i + 1:], base_dirs) != str(error):
            return overrides[i]
    return None


def _parse_config(raw: Any, *, source: str, base_dirs: list[Path] | None = None,
                  overrides: list[str] | None = None) -> ExperimentConfig:  # fmt: skip
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: a config is a YAML mapping with name, datasets, systems, sweeps")
    given = copy.deepcopy(raw)
    data = copy.deepcopy(raw)
    for assignment in overrides or []:
        set_value(data, assignment)
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise ConfigError(f"{source}: {unknown_keys(unknown, TOP_KEYS)}; known: {sorted(TOP_KEYS)}")
    if not data.get("datasets"):
        raise ConfigError(f"{source}: `datasets` is empty; name at least one (see docs/howto/config.md)")
    if not isinstance(data["datasets"], list):
        raise ConfigError(f"{source}: `datasets` must be a list of {{name, format, path}} entries")
    names = [d.get("name") if isinstance(d, dict) else None for d in data["datasets"]]
    check_distinct_files("data sets", names, source)  # each becomes labels/<name>.*, runs/<name>__*, tables/*
    for i, entry in enumerate(data["datasets"]):
        check_dataset_values(entry, i, source)
    skipped = [d.get("name") for d in data["datasets"] if d.get("optional") and not d.get("path")]
    data["datasets"] = [d for d in data["datasets"] if not (d.get("optional") and not d.get("path"))]
    if not data["datasets"]:
        raise ConfigError(f"{source}: every data set is optional and has no `path` ({', '.join(map(str, skipped))}); "
                          f"give one with --set datasets.{skipped[0]}.path=FILE")  # fmt: skip
    names = [d.get("name") for d in data["datasets"]]
    check_top_values(data, source)
    k = data.get("k", 10)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000:
        raise ConfigError(f"{source}: k must be a whole number in 1..1000, got {k!r}")
    sweeps = data.get("sweeps") or []
    if not isinstance(sweeps, list) or any(s not in SWEEPS for s in sweeps):
        wrong = next((s for s in sweeps if s not in SWEEPS), None) if isinstance(sweeps, list) else None
        raise ConfigError(f"{source}: sweeps must be a list of {sorted(SWEEPS)}; got {sweeps!r}"
                          f"{did_you_mean(wrong, SWEEPS) if wrong is not None else ''}")  # fmt: skip
    systems = data.get("systems") or []
    if not isinstance(systems, list):
        raise ConfigError(f"{source}: `systems` must be a list of {{name, ...}} entries")
    systems = [*systems, *default_systems(data.get("stores"), data["datasets"], systems)]
    embedders = data.get("embedders") or [{"name": "default", "kind": "packaged"}]
    if not isinstance(embedders, list) or not all(isinstance(e, dict) and e.get("name") for e in embedders):
        raise ConfigError(f"{source}: `embedders` must be a list of {{name, kind, ...}} entries")
    options = data.get("options") or {}
    if not isinstance(options, dict) or any(o not in SWEEPS for o in options):
        wrong = next((o for o in options if o not in SWEEPS), None) if isinstance(options, dict) else None
        raise ConfigError(f"{source}: `options` maps a sweep name ({sorted(SWEEPS)}) to its settings; got "
                          f"{sorted(options) if isinstance(options, dict) else options!r}"
                          f"{did_you_mean(wrong, SWEEPS) if wrong is not None else ''}")  # fmt: skip
    for sweep in dict.fromkeys([*sweeps, *options]):  # each sweep's typed options (none given: its defaults, and a
        SWEEPS[sweep].parse_options(options.get(sweep), f"{source}: options.{sweep}")  # required one is missing)
    options = {sweep: settings or {} for sweep, settings in options.items()}  # `retrieval:` alone: its defaults
    check_distinct_files("embedders", [e["name"] for e in embedders], source)
    for i, entry in enumerate(embedders):
        check_embedder_values(entry, i, source)  # a models sweep names systems so
    models = parse_models(_model_paths(data.get("models"), base_dirs or []), source)
    check_llm_model(data.get("llm"), models, source)
    for sweep, settings in options.items():  # names of `models:` entries a sweep calls
        with _as_config_error(f"{source}: options.{sweep}"):
            SWEEPS[sweep].check_models(settings, models, source)
    resolved = {
        "name": str(data.get("name") or Path(source).stem or "experiment"),
        "description": data.get("description", ""),
        "k": k,
        "out": data.get("out"),
        "embedders": embedders,
        "datasets": data["datasets"],
        "systems": systems,
        "sweeps": sweeps,
        "options": options,
        "llm": data.get("llm"),
        "models": [asdict(spec) for spec in models.values()],  # names of key variables only, never a key
        "plots": data.get("plots", True),  # false: the report's sections draw no PNG (RunFolder.plots)
    }
    # fail now, before a database is opened, on a bad system entry
    for i, entry in enumerate(systems):
        check_system_values(entry, i, source)
    check_distinct_files("systems", [s.get("name") for s in systems], source)  # each becomes runs/*__<name>
    check_distinct_runs(names, [s["name"] for s in systems], source)
    parsed = []
    for i, entry in enumerate(systems):
        with _as_config_error(f"{source}: systems[{i}]"):
            system = system_from_config(entry, k=k)
        parsed.append(system)
        if system.embedder not in {e["name"] for e in embedders}:
            raise ConfigError(f"{source}: system {system.name!r} uses embedder {system.embedder!r}, which is not "
                              f"configured; configured: {[e['name'] for e in embedders]}")  # fmt: skip
        check_rerank_model(getattr(system, "rerank", None), system.name, models, source)  # a black box has none
    resolved["stores"] = data.get("stores") or []  # tables measured where they are (memlab.lab.config.stores)
    check_stores(resolved, source)
    check_expansion(resolved, source)  # counted from the lists' lengths, before any sweep builds a system
    return ExperimentConfig(given, resolved, base_dirs or [], source, list(overrides or []), skipped, models, parsed)


def _model_paths(entries: Any, base_dirs: list[Path]) -> Any:
    """The `models:` entries with a cross-encoder's relative `path` found as data set paths are: against the
    config's folder, then the memlab checkout (a path found nowhere is left for parse_models to name)."""
    if not isinstance(entries, list):
        return entries
    out = []
    for entry in entries:
        path = entry.get("path") if isinstance(entry, dict) else None
        local = isinstance(entry, dict) and entry.get("kind") == "cross-encoder"
        if local and isinstance(path, str) and path and not Path(path).expanduser().is_absolute():
            with suppress(ConfigError):
                entry = {**entry, "path": str(resolve_path(path, base_dirs, f"model {entry.get('name')!r}"))}
        out.append(entry)
    return out


def load_config(path: str | Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Read and check an experiment config file (bounded: size, aliases, nesting); relative paths in it start
    from the file's folder."""
    path = Path(path)
    raw = load_yaml_file(path)
    return parse_config(raw, source=str(path), base_dirs=[path.resolve().parent, Path.cwd()], overrides=overrides)


def load_suite(name: str, overrides: list[str] | None = None) -> ExperimentConfig:
    return load_config(suite_path(name), overrides)
