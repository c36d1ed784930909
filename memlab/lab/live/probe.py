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
textfile (memlab.lab.live.textfile), which a failed probe marks failed."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

import memlab
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
from memlab.lab.experiment.run import git_commit, make_embedders, score_folder
from memlab.lab.live.alerts import Alert, evaluate_alerts, parse_alert
from memlab.lab.live.drift import distance_drift
from memlab.lab.live.index_health import health_meta, index_health
from memlab.lab.live.lost_labels import LOST_METRICS, lost_by_question, lost_figures, with_lost_alert
from memlab.lab.live.probe_facts import fact_hits
from memlab.lab.live.probe_plans import ef_search_given, plan_notes, plans_ran
from memlab.lab.live.probe_report import ProbeResult, textfile_rows
from memlab.lab.live.probe_set import ProbeSet, drop_stale, load_probe_set, shown_events, stored_dataset, stored_events
from memlab.lab.live.textfile import check_textfile, write_failed_textfile, write_textfile
from memlab.lab.metrics.keys import keys_of
from memlab.lab.report.gate import metrics_experiment
from memlab.lab.report.probe_section import is_probe, save_probe_tables
from memlab.lab.report.writer import write_report
from memlab.lab.runs.folder import RunFolder, save_labels
from memlab.lab.runs.format import run_mark
from memlab.lab.runs.records import Run, collect
from memlab.lab.systems.kinds import EventSystem, FactSystem
from memlab.safety.redact import redact, redact_error
from memlab.storage.store import Store, open_store
from memlab.types import Hits, SearchSettings

PROBE_SYSTEM = "probe"  # the system's name when the settings come from flags
_OUTPUTS = ("scores.csv", "scores.parquet", "metrics.json", "question_scores.parquet", "report.md", "report.html")


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


def _embedder(config: Any, system: EventSystem | FactSystem, given: Embedder | None,
              home: str | Path | None) -> Embedder:
    if given is not None:
        return given
    if config is None:
        return memlab.default_embedder(home=home)
    embedders, skipped = make_embedders(config.resolved.get("embedders", []), home=home)
    if system.embedder not in embedders:
        why = f" (skipped: {skipped[system.embedder]})" if system.embedder in skipped else ""
        raise ConfigError(f"system {system.name!r} embeds with {system.embedder!r}, which the config does not "
                          f"give{why}")  # fmt: skip
    return embedders[system.embedder]


def _previous(against: Path | None, out: Path) -> RunFolder | None:
    if against is None:
        return None
    against = Path(against)
    if not (against / "manifest.json").exists():
        raise ConfigError(f"--against {against}: not a run folder (no manifest.json); give the --out folder of the "
                          "previous probe")  # fmt: skip
    if against.resolve() == out.resolve():
        raise ConfigError(f"--against {against} is --out too; a probe replaces its folder, so give the previous "
                          "probe's folder a name of its own (e.g. copy it first)")  # fmt: skip
    return RunFolder(against)


def _clear(out: Path) -> None:
    """A folder holds one run: what an earlier run left is removed first."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("runs", "labels", "tables"):
        shutil.rmtree(out / name, ignore_errors=True)
    for path in (*out.glob("*.png"), *(out / n for n in _OUTPUTS)):
        path.unlink(missing_ok=True)


def _probed(folder: RunFolder) -> tuple[str, str] | None:
    """(data set, system) a probe folder holds: its manifest's, else the one run it saved."""
    named = folder.manifest.get("probe", {})
    if named.get("dataset") and named.get("system"):
        return named["dataset"], named["system"]
    runs = folder.all_runs
    return (runs[0].dataset, runs[0].system) if len(runs) == 1 else None


def _flat(folder: RunFolder, probed: tuple[str, str] | None) -> dict[str, float]:
    if probed is None:
        return {}
    scores = folder.scores
    mine = scores[(scores.dataset == probed[0]) & (scores.system == probed[1])]
    return {key.label: float(v) for key, v in zip(keys_of(mine), mine.value, strict=True)}


def _question_scores(folder: RunFolder, probed: tuple[str, str] | None) -> pd.DataFrame | None:
    qs = folder.question_scores
    if probed is None or qs.empty:
        return None
    return qs[(qs.dataset == probed[0]) & (qs.system == probed[1])].reset_index(drop=True)


def _drift_p(out: Path, previous: RunFolder, system: str) -> tuple[float, pd.DataFrame]:
    table = distance_drift(out, previous.path)
    rows = table[table.hits == "all"]
    mine = rows[rows.system == system]
    picked = mine if len(mine) else rows
    return (float(picked.p_value.iloc[0]) if len(picked) else float("nan")), table


def run_probe(
    labels: str | Path, out: str | Path, *, dsn: str | None = None, home: str | Path | None = None,
    dataset: str | None = None, config: str | Path | None = None, system: str | None = None, k: int | None = None,
    max_distance: float | None = None, strategy: str | None = None, ef_search: int | None = None,
    layer: str | None = None, embedder: Embedder | None = None, alerts: Sequence[str | Alert] = (),
    against: str | Path | None = None, textfile: str | Path | None = None, health: bool = True,
    progress: bool = False,
) -> ProbeResult:  # fmt: skip
    """Probe the store at `dsn` (None: MEMLAB_DSN, else the embedded server under `home`) with the labelled set
    `labels` (a memlab JSONL file, or an experiment config with `dataset` naming its data set), read-only, into the
    run folder `out`. The system: `system` of `config` (or of the labels' config), else the flags' settings;
    `embedder` replaces the configured one (the default: the packaged model). `alerts` ('recall@10<0.8') are
    judged against the previous probe `against` when given, which also gives `drift_p`; the built-in alert on
    labels lost since then (memlab.lab.live.lost_labels) is judged too. `textfile` writes the Prometheus textfile.
    Raises ConfigError (and writes nothing to the store, ever) on bad input. A probe that fails for any reason
    leaves its textfile saying so (`memlab_probe_success 0`, no metric of an earlier probe) and, once it has
    started writing its folder, a manifest whose status is `failed`."""
    started = time.perf_counter()
    target = check_textfile(Path(textfile)) if textfile is not None else None
    state: dict[str, Path] = {}
    try:
        out = claim_folder(Path(out))
        return _probe(labels, out, state, started=started, dsn=dsn, home=home, dataset=dataset, config=config,
                      system=system, k=k, max_distance=max_distance, strategy=strategy, ef_search=ef_search,
                      layer=layer, embedder=embedder, alerts=alerts, against=against, textfile=target, health=health,
                      progress=progress)  # fmt: skip
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


def _probe(labels: str | Path, out: Path, state: dict[str, Path], *, started: float, dsn: str | None,
           home: str | Path | None, dataset: str | None, config: str | Path | None, system: str | None,
           k: int | None, max_distance: float | None, strategy: str | None, ef_search: int | None, layer: str | None,
           embedder: Embedder | None, alerts: Sequence[str | Alert], against: str | Path | None,
           textfile: Path | None, health: bool, progress: bool) -> ProbeResult:  # fmt: skip
    parsed = with_lost_alert([a if isinstance(a, Alert) else parse_alert(a) for a in alerts])
    previous = _previous(Path(against) if against is not None else None, out)
    if previous is None and any(a.metric == "drift_p" for a in parsed):
        raise ConfigError("an alert on drift_p needs --against PREVIOUS_RUN (drift is measured against the previous "
                          "probe's folder)")  # fmt: skip
    probe = load_probe_set(labels, dataset)
    source = load_config(Path(config)) if config is not None else probe.config
    overrides = {key: value for key, value in (("max_distance", max_distance), ("strategy", strategy),
                                               ("ef_search", ef_search)) if value is not None}  # fmt: skip
    chosen = _system(source, system, overrides)
    k = int(k if k is not None else (source.resolved.get("k", 10) if source is not None else 10))
    model = _embedder(source, chosen, embedder, home)
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
    data = stored_dataset(probe, questions, stored, shown_events(questions, frame, k))
    _clear(out)  # only now: a probe refused above leaves the folder's earlier run as it was
    state["written"] = out
    save_labels(out, data)
    if len(frame):  # every label lost: no question to ask, no run (its scores have no value)
        Run(data.name, chosen.name, frame, None).save(out)
    plans = plans_ran(frame)
    notes = plan_notes(getattr(chosen, "settings", None), plans, layer_used, ef_search_given(chosen, overrides))
    manifest = _manifest(probe, data, chosen, k, model_id, layer_used, stale, previous, vector_version)
    manifest["probe"].update(plans=plans, plan_notes=notes, lost=lost_by_question(probe.questions, stale))
    manifest["warnings"] += notes
    write_json(out / "manifest.json", manifest, indent=2, sort_keys=True, default=str)
    score_folder(out)
    folder = RunFolder(out)
    probed = (data.name, chosen.name)
    scores = _question_scores(folder, probed)
    metrics = {**_flat(folder, probed), "stale_rate": _stale_rate(probe.questions, stale),
               **lost_figures(probe.questions, questions, stale, previous, scores, k)}  # fmt: skip
    drift_table = None
    if previous is not None and len(frame):
        metrics["drift_p"], drift_table = _drift_p(out, previous, chosen.name)
    if not questions:  # nothing left to ask: the scores' metrics have no value, not a missing key
        metrics.update({a.metric: float("nan") for a in parsed if a.metric not in metrics})
    results = evaluate_alerts(
        parsed, metrics, question_scores=scores,
        previous_question_scores=_question_scores(previous, _probed(previous)) if previous is not None else None,
        previous_metrics=_flat(previous, _probed(previous)) if previous is not None else None,
    )  # fmt: skip
    apps = sorted({q.app_name for q in probe.questions})
    checked = index_health(dsn, layer=layer_used, model_id=model_id, apps=apps, home=home) if health else None
    per_question = float(frame.drop_duplicates("question_id").latency_ms.mean() / 1000) if len(frame) else float("nan")
    result = ProbeResult(out, data.name, chosen.name, metrics, len(questions), stale, results,
                         metrics.get("drift_p"), checked, per_question)  # fmt: skip
    lost = {key: metrics[key] for key in (*LOST_METRICS, f"recall@{k}_all_labels")}
    manifest.update(status="complete", finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
                    seconds=round(time.perf_counter() - started, 2), probe={
                        **manifest["probe"], "metrics": {"stale_rate": metrics["stale_rate"],
                                                         "drift_p": metrics.get("drift_p"), **lost},
                        "seconds_per_question": per_question,
                        "alerts": [{"alert": a.alert.text, "value": a.value, "fired": a.fired, "reason": a.reason,
                                    "p_value": a.p_value} for a in results]})  # fmt: skip
    if checked is not None:
        manifest["probe"]["health"] = health_meta(checked)
    save_probe_tables(out, data.name, drift=drift_table, health=None if checked is None else
                      (checked.buckets, checked.indexes, checked.models))  # fmt: skip
    write_json(out / "manifest.json", manifest, indent=2, sort_keys=True, default=str)
    write_probe_report(out)  # from the folder alone, the probe's section included (memlab.lab.report.probe_section)
    if textfile is not None:
        write_textfile(textfile, textfile_rows(folder, result, probe.questions), run_time=datetime.now(UTC),
                       questions=result.questions, stale_labels=len(stale), alerts=results,
                       new_lost_labels=int(metrics["new_lost_labels"]))  # fmt: skip
    return result


def is_probe_folder(path: str | Path) -> bool:
    """Whether `path` is a run folder holding a probe (its manifest's `probe` entry)."""
    return Path(path).is_dir() and is_probe(RunFolder(Path(path)))


def write_probe_report(path: str | Path, baseline: str | Path | None = None) -> str | None:
    """Redo a probe folder's report.md and report.html from the folder alone (`memlab report --run`), against
    `baseline` when it is a baseline of the same probe. Returns why the probe is not gated against `baseline`
    (missing, or another suite's: a probe's alerts are its gate), None when it is."""
    baseline = Path(baseline) if baseline is not None else None
    same = baseline is not None and baseline.exists() and metrics_experiment(baseline) in (
        None, metrics_experiment(path))  # fmt: skip
    write_report(Path(path), baseline=baseline if same else None)
    if baseline is None or not baseline.exists():
        return f"no baseline at {baseline} (a probe's alerts are its gate)"
    return None if same else f"{baseline} is a baseline of another suite, not of this probe"


def _stale_rate(questions: Sequence, stale: pd.DataFrame) -> float:
    """Stale labelled events over all labelled events (session labels included) of the set."""
    labelled = sum(len(q.evidence) + len(q.relevant_sessions) for q in questions)
    return len(stale) / labelled if labelled else 0.0


def _manifest(probe: ProbeSet, data: Any, system: EventSystem | FactSystem, k: int, model_id: str, layer: str,
              stale: pd.DataFrame, previous: RunFolder | None, vector_version: str) -> dict[str, Any]:  # fmt: skip
    """The run folder's manifest: what `memlab eval` writes (so the report and gate read it), plus `probe`."""
    return {
        **run_mark(), "status": "running", "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(), "previous": str(previous.path) if previous is not None else None,
        "config": {"source": probe.source, "given": {}, "overrides": [],
                   "resolved": {"name": f"probe {data.name}", "k": k, "sweeps": [], "systems": [system.describe()],
                                "datasets": [{"name": data.name, "format": probe.format, "path": probe.source}]}},
        "datasets": [{"name": data.name, "checksum": data.checksum(), **data.summary(), "path": probe.source,
                      "format": probe.format, **({"pool": data.pool} if data.pool else {})}],
        "warnings": [], "embedders": {system.embedder: model_id}, "skipped_embedders": {},
        "versions": {"memlab": memlab.__version__, "pgvector": vector_version},
        "probe": {"dataset": data.name, "system": system.name, "layer": layer, "model_id": model_id,
                  "memory": "facts" if isinstance(system, FactSystem) else "events",
                  "labelled_questions": len(probe.questions), "asked": len(data.questions),
                  "stale_labels": len(stale), "left_out": int(stale.drop_duplicates("question_id")
                                                              .question_left_out.sum()) if len(stale) else 0,
                  "stale": [{k: (bool(v) if k == "question_left_out" else redact(str(v))) for k, v in row.items()}
                            for row in stale.to_dict("records")]},
    }  # fmt: skip


__all__ = ["PROBE_SYSTEM", "ProbeResult", "is_probe_folder", "run_probe", "write_probe_report"]
