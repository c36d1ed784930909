"""A probe's run folder, written from what it asked and found, whatever store it probed.

A probe of memlab's own store (memlab.lab.live.probe) and one of a user's own pgvector table
(memlab.lab.live.probe_table) differ in how they read the labelled users and ask the questions; both hand an
`Asked` to `finish`, which writes the same run folder: labels, runs, scores, the probe's own metrics (stale and
lost labels, drift against the previous probe), the alerts judged on them, the index health, report.md and the
Prometheus textfile. The probed system's run comes first; its metrics are the ones alerted and exported."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

import memlab
from memlab.embedding.base import Embedder
from memlab.errors import ConfigError
from memlab.lab.base.redacted import write_json
from memlab.lab.datasets.model import Dataset, Question
from memlab.lab.experiment.run import git_commit, make_embedders, score_folder
from memlab.lab.live.alerts import Alert, evaluate_alerts
from memlab.lab.live.drift import distance_drift
from memlab.lab.live.lost_labels import LOST_METRICS, lost_by_question, lost_figures
from memlab.lab.live.probe_plans import plans_ran
from memlab.lab.live.probe_report import ProbeResult, textfile_rows
from memlab.lab.live.probe_set import ProbeSet, UserKey, shown_events, stored_dataset
from memlab.lab.live.textfile import write_textfile
from memlab.lab.metrics.keys import keys_of
from memlab.lab.report.gate import metrics_experiment
from memlab.lab.report.probe_section import save_probe_tables
from memlab.lab.report.writer import write_report
from memlab.lab.runs.folder import RunFolder, save_labels, save_table
from memlab.lab.runs.format import run_mark
from memlab.lab.runs.records import Run
from memlab.safety.redact import redact

OUTPUTS = ("scores.csv", "scores.parquet", "metrics.json", "question_scores.parquet", "report.md", "report.html")


@dataclass
class HealthRecord:
    """Index health as the folder keeps it: what was found (ProbeResult.health), the manifest's probe key and
    entry the report reads, and its tables by name (saved under tables/)."""

    found: Any
    key: str
    meta: dict[str, Any]
    tables: dict[str, pd.DataFrame]


@dataclass
class SystemRun:
    """One system's answers: its name, run frame, and the exact system it is compared with (recall_vs_exact)."""

    name: str
    frame: pd.DataFrame
    reference: str | None = None


@dataclass
class Asked:
    """What a probe asked and found, before anything is written. `runs` holds the probed system's run first;
    `stored` each labelled user's stored units as `stored_events` reads them; `memory` is events, facts or table;
    `extra` goes into the manifest's `probe` entry, `top` into the manifest itself; `health` reads the index
    health (None: not asked for), after the folder's scores are written."""

    probe: ProbeSet
    questions: list[Question]
    stale: pd.DataFrame
    stored: Mapping[UserKey, list[tuple]]
    runs: list[SystemRun]
    systems: list[dict[str, Any]]
    memory: str
    layer: str
    model_id: str
    embedder: str
    vector_version: str
    k: int
    plan_notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    top: dict[str, Any] = field(default_factory=dict)
    health: Callable[[], HealthRecord | None] = lambda: None


def previous_probe(against: Path | None, out: Path) -> RunFolder | None:
    """The previous probe's folder (`--against`), checked."""
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


def check_drift_alerts(alerts: Sequence[Alert], previous: RunFolder | None) -> None:
    if previous is None and any(a.metric == "drift_p" for a in alerts):
        raise ConfigError("an alert on drift_p needs --against PREVIOUS_RUN (drift is measured against the previous "
                          "probe's folder)")  # fmt: skip


def probe_embedder(config: Any, system: Any, given: Embedder | None, home: str | Path | None) -> Embedder:
    """The embedder `system` searches with: `given`, else the config's by the system's `embedder` name, else the
    packaged model."""
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


def seconds_per_question(frame: pd.DataFrame) -> float:
    """Mean seconds of one question's search (each question's rows carry its search's latency)."""
    return float(frame.drop_duplicates("question_id").latency_ms.mean() / 1000) if len(frame) else float("nan")


def _clear(out: Path) -> None:
    """A folder holds one run: what an earlier run left is removed first."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("runs", "labels", "tables"):
        shutil.rmtree(out / name, ignore_errors=True)
    for path in (*out.glob("*.png"), *(out / n for n in OUTPUTS)):
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


def _stale_rate(questions: Sequence, stale: pd.DataFrame) -> float:
    """Stale labelled events over all labelled events (session labels included) of the set."""
    labelled = sum(len(q.evidence) + len(q.relevant_sessions) for q in questions)
    return len(stale) / labelled if labelled else 0.0


def finish(asked: Asked, out: Path, state: dict[str, Path], *, started: float, alerts: Sequence[Alert],
           previous: RunFolder | None, textfile: Path | None) -> ProbeResult:  # fmt: skip
    """Write the probe's run folder from `asked` (see the module docstring) and return what it found."""
    probe, questions, stale, k = asked.probe, asked.questions, asked.stale, asked.k
    probed_run = asked.runs[0]
    frames = [r.frame for r in asked.runs if len(r.frame)]
    hits = pd.concat(frames, ignore_index=True) if frames else probed_run.frame
    data = stored_dataset(probe, questions, asked.stored, shown_events(questions, hits, k))
    _clear(out)  # only now: a probe refused before leaves the folder's earlier run as it was
    state["written"] = out
    save_labels(out, data)
    for run in asked.runs:
        if len(run.frame):  # every label lost: no question to ask, no run (its scores have no value)
            Run(data.name, run.name, run.frame, run.reference).save(out)
    manifest = _manifest(asked, data, previous)
    manifest["probe"].update(plans=plans_ran(probed_run.frame), plan_notes=asked.plan_notes,
                             lost=lost_by_question(probe.questions, stale))  # fmt: skip
    manifest["warnings"] += asked.plan_notes
    write_json(out / "manifest.json", manifest, indent=2, sort_keys=True, default=str)
    score_folder(out)
    folder = RunFolder(out)
    probed = (data.name, probed_run.name)
    scores = _question_scores(folder, probed)
    metrics = {**_flat(folder, probed), "stale_rate": _stale_rate(probe.questions, stale),
               **lost_figures(probe.questions, questions, stale, previous, scores, k)}  # fmt: skip
    drift_table = None
    if previous is not None and len(probed_run.frame):
        metrics["drift_p"], drift_table = _drift_p(out, previous, probed_run.name)
    if not questions:  # nothing left to ask: the scores' metrics have no value, not a missing key
        metrics.update({a.metric: float("nan") for a in alerts if a.metric not in metrics})
    results = evaluate_alerts(
        alerts, metrics, question_scores=scores,
        previous_question_scores=_question_scores(previous, _probed(previous)) if previous is not None else None,
        previous_metrics=_flat(previous, _probed(previous)) if previous is not None else None,
    )  # fmt: skip
    health = asked.health()
    per_question = seconds_per_question(probed_run.frame)
    result = ProbeResult(out, data.name, probed_run.name, metrics, len(questions), stale, results,
                         metrics.get("drift_p"), None if health is None else health.found, per_question)  # fmt: skip
    lost = {key: metrics[key] for key in (*LOST_METRICS, f"recall@{k}_all_labels")}
    manifest.update(status="complete", finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
                    seconds=round(time.perf_counter() - started, 2), probe={
                        **manifest["probe"], "metrics": {"stale_rate": metrics["stale_rate"],
                                                         "drift_p": metrics.get("drift_p"), **lost},
                        "seconds_per_question": per_question,
                        "alerts": [{"alert": a.alert.text, "value": a.value, "fired": a.fired, "reason": a.reason,
                                    "p_value": a.p_value} for a in results]})  # fmt: skip
    save_probe_tables(out, data.name, drift=drift_table)
    if health is not None:
        manifest["probe"][health.key] = health.meta
        for name, frame in health.tables.items():
            save_table(out, name, data.name, frame)
    write_json(out / "manifest.json", manifest, indent=2, sort_keys=True, default=str)
    write_probe_report(out)  # from the folder alone, the probe's section included (memlab.lab.report.probe_section)
    if textfile is not None:
        write_textfile(textfile, textfile_rows(folder, result, probe.questions), run_time=datetime.now(UTC),
                       questions=result.questions, stale_labels=len(stale), alerts=results,
                       new_lost_labels=int(metrics["new_lost_labels"]))  # fmt: skip
    return result


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


def _manifest(asked: Asked, data: Dataset, previous: RunFolder | None) -> dict[str, Any]:
    """The run folder's manifest: what `memlab eval` writes (so the report and gate read it), plus `probe`."""
    probe, stale = asked.probe, asked.stale
    return {
        **run_mark(), "status": "running", "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(), "previous": str(previous.path) if previous is not None else None,
        "config": {"source": probe.source, "given": {}, "overrides": [],
                   "resolved": {"name": f"probe {data.name}", "k": asked.k, "sweeps": [], "systems": asked.systems,
                                "datasets": [{"name": data.name, "format": probe.format, "path": probe.source}]}},
        "datasets": [{"name": data.name, "checksum": data.checksum(), **data.summary(), "path": probe.source,
                      "format": probe.format, **({"pool": data.pool} if data.pool else {})}],
        "warnings": [], "embedders": {asked.embedder: asked.model_id}, "skipped_embedders": {},
        "versions": {"memlab": memlab.__version__, "pgvector": asked.vector_version}, **asked.top,
        "probe": {"dataset": data.name, "system": asked.runs[0].name, "layer": asked.layer,
                  "model_id": asked.model_id, "memory": asked.memory,
                  "labelled_questions": len(probe.questions), "asked": len(data.questions),
                  "stale_labels": len(stale), "left_out": int(stale.drop_duplicates("question_id")
                                                              .question_left_out.sum()) if len(stale) else 0,
                  "stale": [{k: (bool(v) if k == "question_left_out" else redact(str(v))) for k, v in row.items()}
                            for row in stale.to_dict("records")], **asked.extra},
    }  # fmt: skip


__all__ = ["Asked", "HealthRecord", "SystemRun", "check_drift_alerts", "finish", "previous_probe", "probe_embedder",
           "seconds_per_question", "write_probe_report"]  # fmt: skip
