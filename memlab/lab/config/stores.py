"""A config's `stores:` section: the pgvector tables a run measures where they are, read-only.

    stores:
      - name: agent
        dsn_env: AGENT_DSN            # the variable holding the DSN (preferred: no password in the file); or dsn:
        layout: agent-memory          # a preset (memlab.table_store.PRESETS), its table and columns
        table: memory.agent_memory    # optional: another table name
        columns: {session: null}      # optional: single columns mapped elsewhere (all of them without a layout)
        app: my-agent                 # optional: the app every question that names none asks
        model: all-MiniLM-L6-v2       # optional: the embedding-model value the rows are read for
        limits: {max_qps: 20, statement_timeout: 30}   # optional: memlab.table_store.ReadOnlyLimits
    datasets:
      - {name: mine, format: memlab, path: questions.jsonl, store: agent}   # questions only; events: the rows
    systems:
      - {name: hnsw40, store: agent, strategy: hnsw, ef_search: 40}   # none: agent-hnsw and agent-exact

Everything is checked when the config is read (unknown keys, a variable that is not set, a layout that does not
parse, a store no system or data set names), before any database is opened; the table and its columns are
checked against the catalog when the run opens it. `memlab eval --config FILE --store NAME` runs one store's data
sets and systems (`only_store`). A `config` here is a parsed ExperimentConfig (memlab.lab.config.parse, which calls
`check_stores`; typed loosely so the two modules do not import each other)."""

from __future__ import annotations

import copy
import os
from dataclasses import fields, replace
from typing import Any

from memlab.config import configured_dsn
from memlab.errors import ConfigError
from memlab.lab.base.suggest import did_you_mean, unknown_keys
from memlab.lab.datasets.loaders import load_dataset
from memlab.lab.datasets.model import Dataset
from memlab.lab.datasets.stores import StoreSpec, load_store_dataset, table_sessions
from memlab.lab.sweeps import applies
from memlab.lab.systems.table import TableStores
from memlab.table_store import PRESETS, Columns, Layout, ReadOnlyLimits

STORE_KEYS = ("name", "dsn_env", "dsn", "table", "layout", "columns", "app", "model", "limits")
LIMIT_KEYS = tuple(f.name for f in fields(ReadOnlyLimits))
ON_TABLES = ("cutoff", "table")  # the sweeps that run on a table store's data set; the others ingest it


def _text(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 4096:
        raise ConfigError(f"{where} must be non-empty text, got {value!r}")
    return value


def _dsn(entry: dict[str, Any], where: str) -> tuple[str, str]:
    """(the DSN, where it came from); exactly one of `dsn_env` (preferred) and `dsn`. The value is never shown."""
    given = [key for key in ("dsn_env", "dsn") if entry.get(key) is not None]
    if len(given) != 1:
        raise ConfigError(f"{where}: give the table's database as `dsn_env: VAR` (the environment variable holding "
                          "its DSN; preferred, the password stays out of the file) or `dsn: postgresql://...`, "
                          f"exactly one; got {', '.join(f'`{k}`' for k in given) or 'neither'}")  # fmt: skip
    if given == ["dsn_env"]:
        variable = _text(f"{where}.dsn_env", entry["dsn_env"])
        raw = os.environ.get(variable)
        if not raw:
            raise ConfigError(f"{where}: `dsn_env` names {variable}, which is not set; export the DSN of the database "
                              f"holding the table in it (export {variable}=postgresql://user:password@host/dbname)")
        source = f"dsn_env {variable}"
    else:
        raw, source = _text(f"{where}.dsn", entry["dsn"]), "dsn"
    try:
        return str(configured_dsn(raw)), source
    except ConfigError as exc:  # its message holds no part of the value
        raise ConfigError(f"{where} ({source}): {exc}") from None


def _layout(entry: dict[str, Any], where: str) -> Layout:
    """The preset `layout` (with `table` and single `columns` overridden), or `table` and every `columns` field."""
    columns = entry.get("columns") or {}
    if not isinstance(columns, dict):
        raise ConfigError(f"{where}.columns must map memlab's fields to the table's columns (user: user_id, ...), got "
                          f"{columns!r}")  # fmt: skip
    table = entry.get("table")
    if table is not None:
        _text(f"{where}.table", table)
    try:
        if entry.get("layout") is not None:
            preset = entry["layout"]
            if preset not in PRESETS:
                raise ConfigError(f"layout {preset!r} is not a preset{did_you_mean(preset, PRESETS)}; the presets are "
                                  f"{', '.join(sorted(PRESETS))} (or leave `layout` out and map every field in "
                                  "`columns` with `table`)")  # fmt: skip
            return Layout.preset(preset, table=table, **columns)
        if table is None or not columns:
            raise ConfigError(f"give `layout: PRESET` ({', '.join(sorted(PRESETS))}), or `table` and `columns` mapping "
                              "user, event_id, text and embedding (and app, session, author, time, model where the "
                              "table has them)")  # fmt: skip
        return Layout(table, Columns.from_mapping(columns))
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except TypeError as exc:
        raise ConfigError(f"{where}: columns {columns!r} is not a mapping of field names ({exc})") from None


def _limits(raw: Any, where: str) -> ReadOnlyLimits:
    if raw is None:
        return ReadOnlyLimits()
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}.limits must be a mapping of {', '.join(LIMIT_KEYS)}, got {raw!r}")
    extra = set(raw) - set(LIMIT_KEYS)
    if extra:
        raise ConfigError(f"{where}.limits: {unknown_keys(extra, LIMIT_KEYS)}; known: {list(LIMIT_KEYS)}")
    try:
        return ReadOnlyLimits(**raw)
    except ConfigError as exc:
        raise ConfigError(f"{where}.limits: {exc}") from None


def parse_store(entry: Any, index: int, source: str) -> StoreSpec:
    """One `stores:` entry, checked (see the module docstring)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
        raise ConfigError(f"{source}: stores[{index}] must be a mapping with a `name`, `dsn_env` (or `dsn`) and a "
                          f"`layout`; got {entry!r}")  # fmt: skip
    where = f"{source}: stores[{index}] ({entry['name']!r})"
    extra = set(entry) - set(STORE_KEYS)
    if extra:
        hint = "; a preset is given as `layout: NAME`" if "preset" in extra else ""
        raise ConfigError(f"{where}: {unknown_keys(extra, STORE_KEYS)}; known: {list(STORE_KEYS)}{hint}")
    dsn, came_from = _dsn(entry, where)
    for key in ("app", "model"):
        if entry.get(key) is not None:
            _text(f"{where}.{key}", entry[key])
    return StoreSpec(entry["name"], _layout(entry, where), dsn, came_from, entry.get("app"), entry.get("model"),
                     _limits(entry.get("limits"), where))  # fmt: skip


def parse_stores(raw: Any, source: str) -> dict[str, StoreSpec]:
    """The `stores:` section by name."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ConfigError(f"{source}: `stores` must be a list of {{name, dsn_env, layout, ...}} entries, got {raw!r}")
    out: dict[str, StoreSpec] = {}
    for i, entry in enumerate(raw):
        spec = parse_store(entry, i, source)
        if spec.name in out:
            raise ConfigError(f"{source}: stores[{i}]: the name {spec.name!r} repeats; every store needs its own name")
        out[spec.name] = spec
    return out


def default_systems(stores: Any, datasets: Any, systems: list[Any]) -> list[dict[str, Any]]:
    """The systems of a store that data sets read and no system searches: `<store>-hnsw` (the table's own index)
    and `<store>-exact` (every row of the user scored), so a store needs no systems: of its own."""
    known = {e.get("name") for e in stores or [] if isinstance(e, dict)}
    named = {s.get("store") for s in systems if isinstance(s, dict)}
    read = [d.get("store") for d in datasets or [] if isinstance(d, dict) and isinstance(d.get("store"), str)]
    return [{"name": f"{store}-{strategy}", "store": store, "strategy": strategy}
            for store in dict.fromkeys(read) if store in known and store not in named
            for strategy in ("hnsw", "exact")]  # fmt: skip


def check_stores(resolved: dict[str, Any], source: str) -> None:
    """The `stores:` section, and every use of a store: each a system or data set names exists, a store's data
    set is a memlab questions file and has a system of its store to run, every table system has a data set of
    its store, and only the sweeps that work on a table run on its data sets (the others would copy it). A data
    set's format reads `store` only where it is memlab's JSONL (memlab.lab.datasets.loaders checks that)."""
    stores = parse_stores(resolved.get("stores"), source)
    systems = {s["name"]: s["store"] for s in resolved["systems"] if isinstance(s, dict) and "store" in s}
    datasets = {d["name"]: d["store"] for d in resolved["datasets"] if d.get("store") is not None}
    for kind, uses in (("system", systems), ("data set", datasets)):
        for name, store in uses.items():
            if store not in stores:
                raise ConfigError(f"{source}: {kind} {name!r} names store {store!r}, which the config's stores: does "
                                  f"not hold{did_you_mean(store, stores)}; stores: {sorted(stores) or 'none'}")
    for name, store in datasets.items():
        if store not in systems.values():
            raise ConfigError(f"{source}: data set {name!r} reads store {store!r}, but no system searches it; add "
                              f"one, e.g. {{name: {store}-hnsw, store: {store}, strategy: hnsw}}")  # fmt: skip
        copying = [sweep for sweep in applies(resolved, name) if sweep not in ON_TABLES]
        if copying:
            raise ConfigError(f"{source}: sweep(s) {', '.join(copying)} would run on data set {name!r}, which reads "
                              f"the table of store {store!r}: they ingest a data set into memlab's own memory, and a "
                              f"table is measured where it is (sweeps on a table: {', '.join(ON_TABLES)}). Give "
                              f"each `datasets:` in its options without {name!r}")  # fmt: skip
    for name, store in systems.items():
        if store not in datasets.values():
            raise ConfigError(f"{source}: system {name!r} searches store {store!r}, but no data set asks it "
                              f"questions; add {{name: ..., format: memlab, path: questions.jsonl, store: {store}}} "
                              "to datasets (its labels name the table's event ids)")  # fmt: skip
    unused = sorted(set(stores) - set(systems.values()))
    if unused:
        raise ConfigError(f"{source}: store(s) {unused} are named by no system; remove them or add a system with "
                          f"`store: {unused[0]}`")  # fmt: skip


def store_specs(config: Any) -> dict[str, StoreSpec]:
    return parse_stores(config.resolved.get("stores"), config.source)


def open_stores(config: Any) -> TableStores:
    """The run's table stores (each opened on first use; close them, or use it as a context manager)."""
    return TableStores(store_specs(config))


def load_configured(spec: dict[str, Any], config: Any) -> Dataset:
    """A configured data set: read from its store's table where it names one, else by its format."""
    if spec.get("store") is None:
        return load_dataset(spec, config.base_dirs)
    return load_store_dataset(spec, config.base_dirs, store_specs(config)[spec["store"]])


def store_spec(config: Any, name: str, flag: str = "--store") -> StoreSpec:
    """The config's store `name`; an unknown name is refused with the nearest and the list."""
    stores = store_specs(config)
    if name not in stores:
        raise ConfigError(f"{flag} {name}: {config.source} has no store of that name{did_you_mean(name, stores)}; "
                          f"its stores: {sorted(stores) or 'none (add a stores: section)'}")  # fmt: skip
    return stores[name]


def store_sessions(config: Any, name: str, *, app: str | None = None) -> Dataset:
    """Every user of the app of the config's store `name` (or `app`) with their rows as sessions, read-only: what
    `memlab questions generate --config FILE --store NAME` writes questions from."""
    return table_sessions(store_spec(config, name), app=app, name=name)


def only_store(config: Any, name: str) -> Any:
    """`config` narrowed to store `name`: its data sets and systems only (`memlab eval --store NAME`)."""
    store_spec(config, name)
    resolved = copy.deepcopy(config.resolved)
    resolved["stores"] = [s for s in resolved["stores"] if s["name"] == name]
    resolved["datasets"] = [d for d in resolved["datasets"] if d.get("store") == name]
    resolved["systems"] = [s for s in resolved["systems"] if isinstance(s, dict) and s.get("store") == name]
    return replace(config, resolved=resolved, systems=[s for s in config.systems if getattr(s, "store", None) == name])


__all__ = ["ON_TABLES", "check_stores", "default_systems", "load_configured", "only_store", "open_stores",
           "parse_stores", "store_sessions", "store_spec", "store_specs"]  # fmt: skip
