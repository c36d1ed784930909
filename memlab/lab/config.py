"""Experiment configs: one YAML file names the data sets, embedders, systems, sweeps, k and the output folder.

The built-in suites (`ci`, `full`, `fixtures`) are such files shipped in `memlab/lab/suites/`; `--suite NAME`
loads one, `--config FILE` loads yours, and `--set key=value` overrides one entry (dotted keys, list items by
index: `k=5`, `datasets.0.limit=3`, `options.cutoff.target=0.1`). Values are read as YAML scalars."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memlab.errors import ConfigError

SUITES_DIR = Path(__file__).with_name("suites")
TOP_KEYS = {"name", "description", "k", "out", "embedders", "datasets", "systems", "sweeps", "options", "llm"}


@dataclass
class ExperimentConfig:
    """A config as given (`raw`) and as resolved (defaults filled in), with the folders relative paths start from."""

    raw: dict[str, Any]
    resolved: dict[str, Any]
    base_dirs: list[Path] = field(default_factory=list)
    source: str = ""
    overrides: list[str] = field(default_factory=list)  # the --set assignments applied to `raw`

    @property
    def name(self) -> str:
        return self.resolved["name"]

    @property
    def k(self) -> int:
        return self.resolved["k"]


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
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {assignment!r}: the value is not valid YAML ({exc})") from None
    parts = key.strip().split(".")
    node: Any = config
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"--set {key}: {'.'.join(parts[:i]) or 'config'} is a list of {len(node)}; "
                                  f"use an index 0..{len(node) - 1}")  # fmt: skip
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if i == 0 and part not in TOP_KEYS:
                raise ConfigError(f"--set {key}: unknown config key {part!r}; known: {sorted(TOP_KEYS)}")
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise ConfigError(f"--set {key}: {'.'.join(parts[:i])} is a value, not a mapping or list")


def parse_config(raw: Any, *, source: str = "<config>", base_dirs: list[Path] | None = None,
                 overrides: list[str] | None = None) -> ExperimentConfig:  # fmt: skip
    """Check a config mapping and fill in defaults; nothing is loaded or run here."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: a config is a YAML mapping with name, datasets, systems, sweeps")
    given = copy.deepcopy(raw)
    data = copy.deepcopy(raw)
    for assignment in overrides or []:
        set_value(data, assignment)
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {unknown}; known: {sorted(TOP_KEYS)}")
    if not data.get("datasets"):
        raise ConfigError(f"{source}: `datasets` is empty; name at least one (see README: Your own data)")
    if not isinstance(data["datasets"], list):
        raise ConfigError(f"{source}: `datasets` must be a list of {{name, format, path}} entries")
    names = [d.get("name") if isinstance(d, dict) else None for d in data["datasets"]]
    if len(set(names)) != len(names) or None in names:
        raise ConfigError(f"{source}: every data set needs a distinct `name`; got {names}")
    k = data.get("k", 10)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000:
        raise ConfigError(f"{source}: k must be a whole number in 1..1000, got {k!r}")
    from memlab.lab.sweeps import SWEEPS

    sweeps = data.get("sweeps") or []
    if not isinstance(sweeps, list) or any(s not in SWEEPS for s in sweeps):
        raise ConfigError(f"{source}: sweeps must be a list of {sorted(SWEEPS)}; got {sweeps!r}")
    systems = data.get("systems") or []
    if not isinstance(systems, list):
        raise ConfigError(f"{source}: `systems` must be a list of {{name, ...}} entries")
    embedders = data.get("embedders") or [{"name": "default", "kind": "packaged"}]
    if not isinstance(embedders, list) or not all(isinstance(e, dict) and e.get("name") for e in embedders):
        raise ConfigError(f"{source}: `embedders` must be a list of {{name, kind, ...}} entries")
    options = data.get("options") or {}
    if not isinstance(options, dict) or any(o not in SWEEPS for o in options):
        raise ConfigError(f"{source}: `options` maps a sweep name ({sorted(SWEEPS)}) to its settings; got "
                          f"{sorted(options) if isinstance(options, dict) else options!r}")  # fmt: skip
    from memlab.lab.sweeps import sweep_module

    for sweep, settings in options.items():  # a sweep that checks its settings does so now, before any work
        check = getattr(sweep_module(sweep), "check_options", None)
        if check is not None:
            check(settings or {}, source)
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
    }
    # fail now, before a database is opened, on a bad system entry
    from memlab.lab.systems import system_from_config

    seen = set()
    for entry in systems:
        system = system_from_config(entry)
        if system.name in seen:
            raise ConfigError(f"{source}: two systems are named {system.name!r}")
        seen.add(system.name)
        if system.embedder not in {e["name"] for e in embedders}:
            raise ConfigError(f"{source}: system {system.name!r} uses embedder {system.embedder!r}, which is not "
                              f"configured; configured: {[e['name'] for e in embedders]}")  # fmt: skip
    return ExperimentConfig(given, resolved, base_dirs or [], source, list(overrides or []))


def load_config(path: str | Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Read and check an experiment config file; relative paths in it start from the file's folder."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    return parse_config(raw, source=str(path), base_dirs=[path.resolve().parent, Path.cwd()], overrides=overrides)


def load_suite(name: str, overrides: list[str] | None = None) -> ExperimentConfig:
    return load_config(suite_path(name), overrides)
