"""`memlab probe --store NAME --config FILE`: the live probe of a user's own pgvector table, where it is, read-only.

The store is an entry of the config's `stores:` (memlab.lab.config.stores): its DSN, layout, app, model and
`limits` (timeouts, max_qps), so the probe reads the table as `memlab eval --store` does, through a
`TableStore`: every statement one READ ONLY transaction, bounded and rate-limited; nothing is created or written.
The labelled set is a memlab JSONL file of questions whose labels name the table's event ids (`--labels`), or the
store's data set in the config. The systems are the store's table systems in the config (where it names none:
`<store>-hnsw` and `<store>-exact`, memlab.lab.config.stores.default_systems); the probed one (`--system`, else the
first that walks an index) is alerted and exported, and an exact system of the store is its reference
(recall_vs_exact).

Before a question is embedded, each embedder must reproduce the stored vectors (`TableStore.check_model`): a
swapped query embedder is refused with one error. A label whose row is gone (deleted by the table's owner) is a
stale label, as in memlab's own store (memlab.lab.live.probe_set). The table's index health comes first
(memlab.lab.live.table_health: its EXPLAIN ANALYZE runs each labelled user's search once, so what is timed next
meets warm caches), then each system asks every question, then the probed system's searches are timed as bare SQL
(`TableStore.bare_seconds`: the same statement alone, on the same connection), so the manifest's `timing` says what
memlab's search costs beyond the query."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from memlab.embedding.base import Embedder, embed_queries
from memlab.errors import ConfigError
from memlab.lab.base.suggest import did_you_mean
from memlab.lab.config.parse import ExperimentConfig, load_config
from memlab.lab.config.stores import only_store, store_specs
from memlab.lab.datasets.formats.jsonl import load_questions
from memlab.lab.datasets.model import Question
from memlab.lab.datasets.paths import resolve_path
from memlab.lab.datasets.stores import StoreSpec, row_time, session_of
from memlab.lab.live.probe_folder import Asked, HealthRecord, SystemRun, probe_embedder
from memlab.lab.live.probe_plans import plans_ran
from memlab.lab.live.probe_report import ProbeResult
from memlab.lab.live.probe_set import CONFIG_SUFFIXES, ProbeSet, UserKey, drop_stale
from memlab.lab.live.table_health import table_health
from memlab.lab.runs.records import collect
from memlab.lab.systems.table import TableHandle, TableStores, TableSystem
from memlab.table_store import TableStore

INDEX_STRATEGIES = ("hnsw", "ivfflat", "auto")
SHOWN_USERS = 5


def _config(config: str | Path | None, labels: str | Path | None, store: str) -> ExperimentConfig:
    """The config whose `stores:` holds `store`: --config, else --labels when that is a config."""
    if config is not None:
        return load_config(Path(config))
    if labels is not None and Path(labels).suffix in CONFIG_SUFFIXES:
        return load_config(Path(labels))
    raise ConfigError(f"--store {store} names an entry of an experiment config's stores: section; give that config "
                      "as --config FILE")  # fmt: skip


def _probe_set(labels: str | Path | None, config: ExperimentConfig, spec: StoreSpec,
               dataset: str | None) -> ProbeSet:  # fmt: skip
    """The labelled questions: a JSONL file given as --labels, else the store's data set of the config (one, or
    --dataset); each question that names no app asks the store's app."""
    if labels is not None and Path(labels).suffix not in CONFIG_SUFFIXES:
        path = Path(labels)
        if not path.exists():
            raise ConfigError(f"--labels {path}: no such file; give a memlab JSONL file of questions whose labels "
                              f"name event ids of store {spec.name!r}'s table, or leave --labels out to use the "
                              "store's data set in the config")  # fmt: skip
        if dataset is not None:
            raise ConfigError(f"--dataset {dataset!r} picks a data set of the config; --labels {path} is one set")
        name, source = path.name.split(".")[0], path
    else:
        specs = config.resolved["datasets"]
        names = [str(s["name"]) for s in specs]
        if not names:
            raise ConfigError(f"{config.source} has no data set reading store {spec.name!r}; give --labels FILE "
                              "(a memlab JSONL file of questions naming the table's event ids)")  # fmt: skip
        if dataset is None and len(names) > 1:
            raise ConfigError(f"store {spec.name!r} has {len(names)} data sets in {config.source} "
                              f"({', '.join(names)}); pick one with --dataset")  # fmt: skip
        if dataset is not None and dataset not in names:
            raise ConfigError(f"{config.source} has no data set {dataset!r} of store {spec.name!r}"
                              f"{did_you_mean(dataset, names)}; it has {', '.join(names)}")  # fmt: skip
        entry = specs[0] if dataset is None else specs[names.index(dataset)]
        name = str(entry["name"])
        source = resolve_path(entry["path"], config.base_dirs, f"data set {name!r}")
    questions = [replace(q, app_name=spec.app_of(q.app_name)) for q in load_questions(Path(source))]
    return ProbeSet(name, questions, str(source), "memlab", config=config)


def _systems(config: ExperimentConfig, store: str, name: str | None,
             overrides: Mapping[str, Any]) -> tuple[list[TableSystem], str | None]:  # fmt: skip
    """The store's systems, the probed one first with the flags' settings, and the exact system its
    recall_vs_exact is measured against (None: the store has none besides it)."""
    systems = [s for s in config.systems if isinstance(s, TableSystem) and s.store == store]
    names = [s.name for s in systems]
    if name is not None and name not in names:
        raise ConfigError(f"--system {name!r}: store {store!r} has no system of that name{did_you_mean(name, names)}; "
                          f"its systems: {', '.join(names)}")  # fmt: skip
    probed = systems[names.index(name)] if name is not None else next(
        (s for s in systems if s.strategy in INDEX_STRATEGIES), systems[0])  # fmt: skip
    probed = replace(probed, **overrides)  # checked again by TableSystem itself
    others = [s for s in systems if s.name != probed.name]
    reference = next((s.name for s in others if s.strategy == "exact"), None)
    return [probed, *others], reference


def _stored(table: TableStore, users: Sequence[UserKey], store: str) -> dict[UserKey, list[tuple]]:
    """Each labelled user's rows as units of `stored_events`' shape (session, event id, event ids, author, time,
    text); a user the table holds no row of is refused, every such user named."""
    out: dict[UserKey, list[tuple]] = {}
    for app, user in dict.fromkeys(users):
        out[(app, user)] = [(session_of(h), h.event_id, [h.event_id], h.author or "", row_time(h), h.text or "")
                            for h in table.texts(app, user)]  # fmt: skip
    unknown = [f"{a}/{u}" for (a, u), rows in out.items() if not rows]
    if unknown:
        more = " ..." if len(unknown) > SHOWN_USERS else ""
        raise ConfigError(f"the labels name {len(unknown)} user(s) the table of store {store!r} "
                          f"({table.catalog.qualified}) holds no row of: {', '.join(unknown[:SHOWN_USERS])}{more}. "
                          "Fix: check the store's app (stores: app), the user ids of the labels and the layout's "
                          "user column; drop the questions of a user erased entirely")  # fmt: skip
    return out


def _timing(table: TableStore, system: TableSystem, questions: Sequence[Question], vectors: Mapping[str, np.ndarray],
            k: int, latencies: np.ndarray, waited: float) -> dict[str, Any]:  # fmt: skip
    """The probed system's time per question (`latencies`: its run's, in seconds) against the bare SQL of the same
    searches (`bare_seconds`), as means and as p50s (a busy machine's stray delays move the mean)."""
    bare = np.array([table.bare_seconds(q.app_name, q.user_id, vectors[q.id], k=system.k or k,
                                        **system.search_settings()) for q in questions])  # fmt: skip
    if not len(bare):
        return {"max_qps": table.connection.limits.max_qps}
    mean, p50 = float(latencies.mean()), float(np.percentile(latencies, 50))
    bare_mean, bare_p50 = float(bare.mean()), float(np.percentile(bare, 50))
    return {"seconds_per_question": mean, "bare_sql_seconds_per_question": bare_mean,
            "ratio_to_bare_sql": mean / bare_mean, "p50_seconds_per_question": p50,
            "bare_sql_p50_seconds_per_question": bare_p50, "p50_ratio_to_bare_sql": p50 / bare_p50,
            "rate_limit_seconds_per_question": waited / len(questions), "max_qps": table.connection.limits.max_qps,
            "bare_sql": "the search's own statement, sent and fetched alone on the same connection after its "
                        "read-only transaction and settings are in place"}  # fmt: skip


def _notes(system: TableSystem, plans: Mapping[str, int], distance: str) -> list[str]:
    """Where the searches did not run as the probed system asked: an index strategy that found no index."""
    scanned = sum(n for p, n in plans.items() if p.endswith("-scan"))
    if not scanned:
        return []
    return [f"strategy {system.strategy} was asked for, but no valid {system.strategy} index of the table serves "
            f"{distance} distance: {scanned} of {sum(plans.values())} searches scanned the user's rows (plan "
            f"{system.strategy}-scan). A read-only probe builds none."]  # fmt: skip


def probe_table(labels: str | Path | None, store: str, finishing: Callable[[Asked], ProbeResult], *,
                config: str | Path | None, dataset: str | None, system: str | None, k: int | None,
                overrides: Mapping[str, Any], embedder: Embedder | None, home: str | Path | None, health: bool,
                progress: bool) -> ProbeResult:  # fmt: skip
    """Probe store `store` of the config (see the module docstring) and hand what was found to `finishing`."""
    narrowed = only_store(_config(config, labels, store), store)
    spec = store_specs(narrowed)[store]
    probe = _probe_set(labels, narrowed, spec, dataset)
    systems, reference = _systems(narrowed, store, system, overrides)
    probed = systems[0]
    k = int(k if k is not None else narrowed.resolved.get("k", 10))
    models = {s.embedder: probe_embedder(narrowed, s, embedder, home) for s in systems}
    apps = sorted({q.app_name for q in probe.questions})
    with TableStores({store: spec}) as tables:
        table = tables.table(store)
        for name, model in models.items():  # no question is embedded or asked before every check passed
            tables.checked(store, model, name, apps)
        stored = _stored(table, [(q.app_name, q.user_id) for q in probe.questions], store)
        questions, stale = drop_stale(probe.questions, stored)
        vectors = {name: dict(zip([q.id for q in questions], embed_queries(model, [q.text for q in questions]),
                                  strict=True)) for name, model in models.items()}  # fmt: skip
        mine = vectors[probed.embedder]
        # index health first: its EXPLAIN ANALYZE runs each user's search once, so the timed searches and the bare
        # SQL they are compared with both meet warm caches (none of them pays for the first read of a page)
        found = table_health(table, probed, questions, mine, k) if health else None
        handle = TableHandle(table, "")
        runs, waited = [], 0.0
        for s in systems:
            before = table.connection.waited
            frame = collect(s.name, lambda q, v, s=s: s.search(handle, q, v, k), questions, vectors[s.embedder],
                            progress=f"probe {probe.name}: {s.name}" if progress else None)  # fmt: skip
            waited = table.connection.waited - before if s is probed else waited
            runs.append(SystemRun(s.name, frame, reference if s is probed else None))
        first = runs[0].frame.drop_duplicates("question_id")  # each question's rows carry its search's latency
        timing = _timing(table, probed, questions, mine, k, first.latency_ms.to_numpy() / 1000, waited)
        catalog, summary = table.catalog, tables.summary()
    distance = probed.distance or catalog.default_distance
    record = None if found is None else HealthRecord(found, "table_health", found.meta(), found.tables())
    extra = {"store": store, "table": catalog.qualified, "distance": distance, "timing": timing,
             "limits": asdict(spec.limits)}  # fmt: skip
    return finishing(Asked(probe, questions, stale, stored, runs, [s.describe() for s in systems], "table",
                           catalog.qualified, models[probed.embedder].model_id, probed.embedder,
                           catalog.vector_version, k, plan_notes=_notes(probed, plans_ran(runs[0].frame), distance),
                           extra=extra, top={"stores": summary}, health=lambda: record))  # fmt: skip


__all__ = ["probe_table"]
