"""`memlab probe`: a labelled set's questions asked of an existing (production) store, read-only, through event
memory or a config's fact system (memlab.lab.live.probe_facts), saved as a run folder the workbench's report and
gate read like any `memlab eval` run.

The store is opened read-only (`open_store(read_only=True)`: no DDL, every transaction read-only), so a role with
SELECT privilege only is enough and nothing is ingested or written: the query log stays off and the users' events
the viewer shows are read back from the store (the folder keeps the texts of labelled events and hits within k
only). Labels the store no longer holds are stale and leave the denominator (memlab.lab.live.probe_set); they are
counted and alerted as lost labels (memlab.lab.live.lost_labels). On top of the run's scores come the probe's own
metrics (`stale_rate`, the lost labels, and `drift_p` against the previous probe), the alerts judged on them
(memlab.lab.live.alerts), the plans the searches ran (memlab.lab.live.probe_plans), the index health of the live
store (memlab.lab.live.index_health), a section of report.md on all of these, and optionally a Prometheus
textfile (memlab.lab.live.textfile), which a failed probe marks failed.

`--store NAME` probes a user's own pgvector table of a config's `stores:` instead (memlab.lab.live.probe_table,
with its index health in memlab.lab.live.table_health); both probes write their folder the same way
(memlab.lab.live.probe_folder)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab.embedding.base import Embedder, embed_queries
from memlab.errors import ConfigError
from memlab.events.memory import EventMemory
from memlab.events.units import EVENT_LAYER
from memlab.facts.memory import FactMemory
from memlab.lab.base.json_bounds import loads
from memlab.lab.base.outputs import claim_folder
from memlab.lab.base.redacted import write_json
from memlab.lab.config.parse import load_config
from memlab.lab.datasets.model import Question
from memlab.lab.live.alerts import Alert, parse_alert
from memlab.lab.live.index_health import health_meta, index_health
from memlab.lab.live.lost_labels import with_lost_alert
from memlab.lab.live.probe_facts import fact_hits
from memlab.lab.live.probe_folder import (
    Asked,
    HealthRecord,
    SystemRun,
    check_drift_alerts,
    finish,
    previous_probe,
    probe_embedder,
    write_probe_report,
)
from memlab.lab.live.probe_plans import ef_search_given, plan_notes, plans_ran
from memlab.lab.live.probe_report import ProbeResult
from memlab.lab.live.probe_set import drop_stale, load_probe_set, stored_events
from memlab.lab.live.probe_table import probe_table
from memlab.lab.live.textfile import check_textfile, write_failed_textfile
from memlab.lab.report.probe_section import HEALTH_TABLES, is_probe
from memlab.lab.runs.folder import RunFolder
from memlab.lab.runs.format import run_mark
from memlab.lab.runs.records import collect
from memlab.lab.systems.kinds import EventSystem, FactSystem
from memlab.safety.redact import redact_error
from memlab.storage.store import Store, open_store
from memlab.types import Hits, SearchSettings

PROBE_SYSTEM = "probe"  # the system's name when the settings come from flags


def _system(config: Any, name: str | None, overrides: dict[str, Any]) -> EventSystem | FactSystem:
    """The probed system: one of the config's by name (event or fact memory), else the flags' settings on the
    defaults; explicit flags (k, max distance, strategy, ef_search) override an event system's."""
    if name is None:
        return EventSystem(PROBE_SYSTEM, settings=replace(SearchSettings(), **overrides))
    if config is None:
        raise ConfigError(f"--system {name!r} names a system of an experiment config; give --config (or a config as "
                          "--labels)")  # fmt: skip
    parsed = {s.name: s for s in config.systems}  # parsed with the config
    if name not in parsed:
        raise ConfigError(f"{config.source} has no system {name!r}; it has {', '.join(parsed) or 'none'}")
    system = parsed[name]
    if isinstance(system, FactSystem):
        if overrides:
            raise ConfigError(f"system {name!r} is a fact system, which has no {', '.join(sorted(overrides))}: "
                              "drop those flags (k limits the facts served)")  # fmt: skip
        return system
    if system.fact_keys is not None:
        raise ConfigError(f"system {name!r} embeds fact keys (fact_keys: {system.fact_keys}); probe its layer by "
                          "name with --layer and the settings as flags")  # fmt: skip
    return replace(system, settings=replace(system.settings, **overrides))


def _memory(store: Store, model: Embedder, chosen: EventSystem | FactSystem, layer: str | None, k: int
            ) -> tuple[str, Callable[[Question, Any], Hits]]:  # fmt: skip
    """The event layer the labels are checked against, and how a question is asked. A fact system searches the
    live fact tables (memlab.lab.live.probe_facts); its labels are checked against the event layer (`layer`,
    default the event granularity's) and the user's fact observations."""
    if isinstance(chosen, FactSystem):
        facts = FactMemory(store, model)  # read-only: checks the fact tables, extracts nothing
        return layer or EVENT_LAYER, lambda q, v: fact_hits(facts, q, k)
    args = chosen.memory_args()
    memory = EventMemory(store, model, layer=layer, **args) if layer else EventMemory(store, model, **args)
    return memory.layer, lambda q, v: chosen.search(memory, q, v, k)


def run_probe(
    labels: str | Path | None, out: str | Path, *, dsn: str | None = None, home: str | Path | None = None,
    dataset: str | None = None, config: str | Path | None = None, system: str | None = None, k: int | None = None,
    max_distance: float | None = None, strategy: str | None = None, ef_search: int | None = None,
    layer: str | None = None, embedder: Embedder | None = None, alerts: Sequence[str | Alert] = (),
    against: str | Path | None = None, textfile: str | Path | None = None, health: bool = True,
    progress: bool = False, store: str | None = None,
) -> ProbeResult:  # fmt: skip
    """Probe the store at `dsn` (None: MEMLAB_DSN, else the embedded server under `home`) with the labelled set
    `labels` (a memlab JSONL file, or an experiment config with `dataset` naming its data set), read-only, into the
    run folder `out`. The system: `system` of `config` (or of the labels' config), else the flags' settings;
    `embedder` replaces the configured one (the default: the packaged model). `alerts` ('recall@10<0.8') are
    judged against the previous probe `against` when given, which also gives `drift_p`; the built-in alert on
    labels lost since then (memlab.lab.live.lost_labels) is judged too. `textfile` writes the Prometheus textfile.
    With `store`, the probed store is that entry of `config`'s `stores:` (a user's own pgvector table, probed
    where it is: memlab.lab.live.probe_table) instead of memlab's own store at `dsn`.
    Raises ConfigError (and writes nothing to the store, ever) on bad input. A probe that fails for any reason
    leaves its textfile saying so (`memlab_probe_success 0`, no metric of an earlier probe) and, once it has
    started writing its folder, a manifest whose status is `failed`."""
    started = time.perf_counter()
    target = check_textfile(Path(textfile)) if textfile is not None else None
    state: dict[str, Path] = {}
    try:
        out = claim_folder(Path(out))
        parsed = with_lost_alert([a if isinstance(a, Alert) else parse_alert(a) for a in alerts])
        previous = previous_probe(Path(against) if against is not None else None, out)
        check_drift_alerts(parsed, previous)
        overrides = {key: value for key, value in (("max_distance", max_distance), ("strategy", strategy),
                                                   ("ef_search", ef_search)) if value is not None}  # fmt: skip
        finishing = functools.partial(finish, out=out, state=state, started=started, alerts=parsed,
                                      previous=previous, textfile=target)  # fmt: skip
        if store is not None:
            if dsn is not None or layer is not None:
                raise ConfigError(f"--store {store} probes the table of that entry of the config's stores: (its DSN "
                                  "and table come from there); drop --dsn and --layer")  # fmt: skip
            return probe_table(labels, store, finishing, config=config, dataset=dataset, system=system, k=k,
                               overrides=overrides, embedder=embedder, home=home, health=health, progress=progress)
        if labels is None:
            raise ConfigError("give --labels (a memlab JSONL file of questions, or an experiment config holding "
                              "them), or --store NAME with --config to probe a table of the config's stores:")
        return _probe(labels, finishing, dsn=dsn, home=home, dataset=dataset, config=config, system=system, k=k,
                      overrides=overrides, layer=layer, embedder=embedder, health=health, progress=progress)
    except BaseException as exc:
        if "written" in state:
            _mark_failed(state["written"], exc, started)
        if target is not None:
            write_failed_textfile(target, run_time=datetime.now(UTC))
        raise


def _mark_failed(out: Path, exc: BaseException, started: float) -> None:
    """A folder a probe began to write and could not finish says so in its manifest (no report reads it as a
    finished run)."""
    file = out / "manifest.json"
    try:
        manifest = loads(file.read_text(), str(file), ConfigError) if file.exists() else run_mark()
    except (ValueError, ConfigError):
        manifest = run_mark()
    manifest.update(status="failed", error=f"{type(exc).__name__}: {redact_error(exc)}",
                    finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
                    seconds=round(time.perf_counter() - started, 2))  # fmt: skip
    write_json(file, manifest, indent=2, sort_keys=True, default=str)


def _probe(labels: str | Path, finishing: Callable[[Asked], ProbeResult], *, dsn: str | None,
           home: str | Path | None, dataset: str | None, config: str | Path | None, system: str | None,
           k: int | None, overrides: dict[str, Any], layer: str | None, embedder: Embedder | None, health: bool,
           progress: bool) -> ProbeResult:  # fmt: skip
    """The probe of memlab's own store: event memory, or a config's fact system."""
    probe = load_probe_set(labels, dataset)
    source = load_config(Path(config)) if config is not None else probe.config
    chosen = _system(source, system, overrides)
    k = int(k if k is not None else (source.resolved.get("k", 10) if source is not None else 10))
    model = probe_embedder(source, chosen, embedder, home)
    with open_store(dsn, home=home, read_only=True) as store:
        layer_used, search = _memory(store, model, chosen, layer, k)
        users = [(q.app_name, q.user_id) for q in probe.questions]
        stored = stored_events(store, users, layer_used, facts=isinstance(chosen, FactSystem))
        questions, stale = drop_stale(probe.questions, stored)
        vectors = embed_queries(model, [q.text for q in questions]) if questions else []
        frame = collect(chosen.name, search, questions,
                        {q.id: v for q, v in zip(questions, vectors, strict=True)},
                        progress=f"probe {probe.name}: {chosen.name}" if progress else None)  # fmt: skip
        vector_version, model_id = store.vector_version, model.model_id
    notes = plan_notes(getattr(chosen, "settings", None), plans_ran(frame), layer_used,
                       ef_search_given(chosen, overrides))  # fmt: skip
    apps = sorted({q.app_name for q in probe.questions})

    def checked() -> HealthRecord | None:
        if not health:
            return None
        found = index_health(dsn, layer=layer_used, model_id=model_id, apps=apps, home=home)
        return HealthRecord(found, "health", health_meta(found), dict(zip(HEALTH_TABLES, (
            found.buckets, found.indexes, found.models), strict=True)))  # fmt: skip

    facts = isinstance(chosen, FactSystem)
    return finishing(Asked(probe, questions, stale, stored, [SystemRun(chosen.name, frame)], [chosen.describe()],
                           "facts" if facts else "events", layer_used, model_id, chosen.embedder, vector_version, k,
                           plan_notes=notes, health=checked))  # fmt: skip


def is_probe_folder(path: str | Path) -> bool:
    """Whether `path` is a run folder holding a probe (its manifest's `probe` entry)."""
    return Path(path).is_dir() and is_probe(RunFolder(Path(path)))


__all__ = ["PROBE_SYSTEM", "ProbeResult", "is_probe_folder", "run_probe", "write_probe_report"]
