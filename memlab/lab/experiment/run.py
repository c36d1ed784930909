"""The experiment model: data sets x systems -> runs -> scores -> report.

`run_experiment` loads every data set first (bad input fails before anything is written to the database),
builds each system once per data set, asks every question, and saves each run; `score_folder` turns the saved
runs into scores (pure: it reads the folder only); then memlab.lab.report.writer writes report.md from the folder, once,
with the baseline it is given. Every run starts on a fresh database, so runs are reproducible."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import memlab
from memlab.embedding import make_embedder
from memlab.embedding.base import Embedder
from memlab.errors import ConfigError
from memlab.lab.base.hardware import peak_memory_mb
from memlab.lab.base.outputs import claim_folder, replace_folder
from memlab.lab.base.redacted import write_csv, write_json, write_parquet  # every run-folder file passes the redactor
from memlab.lab.config.parse import ExperimentConfig
from memlab.lab.config.stores import load_configured, open_stores
from memlab.lab.datasets.checks import dataset_warnings
from memlab.lab.datasets.label_loss import dropped_fields
from memlab.lab.datasets.model import Dataset
from memlab.lab.experiment.progress import NoProgress, RunProgress, run_progress
from memlab.lab.metrics.keys import overall
from memlab.lab.metrics.scoring import LONG_COLUMNS, flat_metrics, long_scores, score, with_groups
from memlab.lab.report.writer import write_report
from memlab.lab.runs.asking import QueryVectors, ask
from memlab.lab.runs.folder import RunFolder, save_labels
from memlab.lab.runs.format import run_mark
from memlab.lab.runs.records import Run, slug
from memlab.lab.sweeps import SweepContext, applies, get_sweep, sweep_options
from memlab.lab.systems.derived import derivation, role_of_derived
from memlab.lab.systems.kinds import Env
from memlab.lab.systems.roles import (
    CUT,
    MAIN,
    MEASURE,
    REFERENCE,
    ROLE_COLUMNS,
    SWEEP,
    SYSTEM_COLUMNS,
    SYSTEMS_FILE,
    SystemRole,
)
from memlab.lab.systems.table import fits, store_of_dataset
from memlab.models import model_cache_dir
from memlab.storage.servers import open_server, scratch_store


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)  # fmt: skip
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def _installed(distribution: str) -> str:
    """An installed package's version from its metadata (importing torch only to read its version takes seconds)."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"


def _versions(store=None) -> dict[str, str]:
    out = {"memlab": memlab.__version__, "python": platform.python_version(), "torch": _installed("torch"),
           "sentence_transformers": _installed("sentence-transformers"), "faiss": _installed("faiss-cpu"),
           "pandas": pd.__version__, "numpy": np.__version__}  # fmt: skip
    if store is not None:
        out["pgvector"] = store.vector_version
    return out


def _write_manifest(out: Path, manifest: dict) -> None:
    write_json(out / "manifest.json", manifest, indent=2, sort_keys=True, default=str)


def make_embedders(specs: list[dict[str, Any]], *, home: str | Path | None = None
                   ) -> tuple[dict[str, Embedder], dict[str, str]]:  # fmt: skip
    """The configured embedders by name; an entry with `optional: true` that cannot be had is skipped (reason
    kept for the report) instead of failing the run."""
    out, skipped = {}, {}
    for spec in specs:
        spec = dict(spec)
        name, optional = spec.pop("name"), bool(spec.pop("optional", False))
        try:
            out[name] = make_embedder(spec or None, home=home)
        except ConfigError as exc:
            if not optional:
                raise ConfigError(f"embedder {name!r}: {exc}") from None
            skipped[name] = str(exc)
    if "default" not in out and out:
        out["default"] = next(iter(out.values()))
    return out, skipped


def model_env(store: memlab.Store | None, embedders: dict[str, Embedder], config: ExperimentConfig, *, k: int,
              home: str | Path | None = None) -> Env:  # fmt: skip
    """The Env a run builds systems in, with the config's models (one client per model per run) and the LLM
    extractor's settings; model replies are cached under `home`'s (else MEMLAB_HOME's) cache/models. `store` None:
    only table systems are built (they search a table where it is and keep nothing in memlab's memory)."""
    cache = model_cache_dir(home)
    options = {"llm": config.resolved.get("llm"), "models": config.models, "model_cache": cache}
    return Env(store, embedders, k=k, progress=False, extractor_options=options, models=config.models,
               model_cache=cache)  # fmt: skip


def systems_for(dataset: Dataset, config: ExperimentConfig, embedders: dict[str, Embedder]) -> list:
    """The configured systems, then each sweep's, in order; names are unique per data set."""
    return plan_systems(dataset, config, embedders)[0]


def plan_systems(dataset: Dataset, config: ExperimentConfig, embedders: dict[str, Embedder]
                 ) -> tuple[list, dict[str, SystemRole]]:  # fmt: skip
    """systems_for's systems and the role of each by name: the configured ones (parsed with the config) main, a
    sweep's derived run the role its kind states (a cut of its parent), any other that sweep's system, whatever
    they are named."""
    cfg = config.resolved
    store = store_of_dataset(cfg, dataset.name)  # a table store's data set: only its store's systems run on it
    context = SweepContext(cfg, [s for s in config.systems if fits(s, store)])
    roles = {s.name: SystemRole(MAIN) for s in context.systems}
    for name in applies(cfg, dataset.name):
        for system in get_sweep(name).systems(dataset, sweep_options(cfg, name), context):
            if system.name not in {s.name for s in context.systems} and fits(system, store, context.systems):
                context.systems.append(system)
                derived = derivation(system)
                roles[system.name] = SystemRole(SWEEP, name) if derived is None else role_of_derived(derived, name)
    kept = [s for s in context.systems if not hasattr(s, "embedder") or s.embedder in embedders]
    return kept, roles


def counted_step(system: Any) -> bool:
    """A system that asks questions is a step of the progress line; a run derived from another's saved run is not
    (a grid of cuts would be dozens of instant steps and make the ETA far too short)."""
    return derivation(system) is None


def run_systems(env: Env, dataset: Dataset, systems: list, out: Path, *, steps: RunProgress | None = None,
                roles: Mapping[str, SystemRole] | None = None) -> list[Run]:  # fmt: skip
    """Ask every system every question of `dataset`; save each run (and each reference run once) with its role
    (`roles` by name; a system not there: main, a derived run its kind's role). A derived run
    (memlab.lab.systems.derived) is made from its parent's run, asked earlier, without asking again. Each system
    (with its reference run) is one step of `steps`, the experiment's progress display."""
    done: dict[str, Run] = {}
    roles = roles or {}
    vectors = QueryVectors(env)
    for system in (steps or NoProgress()).each(systems, lambda s: f"{dataset.name}: {s.name}", counted_step):
        derived = derivation(system)
        if derived is not None:
            parent = done.get(derived.parent)
            if parent is None:
                raise ConfigError(f"{derived.kind} run {derived.name!r}: no system named {derived.parent!r} ran on "
                                  f"{dataset.name!r} before it; name a system the config runs")  # fmt: skip
            role = roles.get(derived.name, role_of_derived(derived, None))
            done[derived.name] = Run(dataset.name, derived.name, derived.derive(parent.frame), None, role)
            done[derived.name].save(out)
            continue
        to_run = [system]
        ref = system.reference()
        if ref is not None and ref.name not in done:
            to_run.insert(0, ref)
        for s in to_run:
            frame = ask(env, s, dataset, vectors, env.k, progress=f"{dataset.name}: {s.name}" if env.progress else None)
            r = s.reference()
            role = roles.get(s.name, SystemRole()) if s is system else SystemRole(REFERENCE, parent=system.name)
            done[s.name] = Run(dataset.name, s.name, frame, r.name if r is not None else None, role)
            done[s.name].save(out)
    return list(done.values())


def described(systems: list, runs: list[Run]) -> dict[str, dict[str, Any]]:
    """Each system that ran, as the manifest records it: its role, the sweep that made it and its parent ("":
    none), and what it is (`describe()`: a cut's parent and max_distance, an event system's settings), so a reader
    never reads that from its name."""
    made = {s.name: s for s in systems}
    made.update({r.name: r for s in systems if derivation(s) is None and (r := s.reference()) is not None})
    return {run.system: {**made[run.system].describe(), "role": run.role.role, "sweep": run.role.sweep or "",
                         "parent": run.role.parent or ""}
            for run in runs if run.system in made and run.role is not None}  # fmt: skip


def run_experiment(
    config: ExperimentConfig, out: Path, *, dsn: str | None = None, home: str | Path | None = None,
    progress: bool | RunProgress = False, log=print, previous: Path | None = None, baseline: Path | None = None,
) -> Path:  # fmt: skip
    """Run a configured experiment into `out` and return it. Data sets are loaded and checked before anything
    else; then every data set runs on a fresh database of the server of `dsn` (else the embedded server under
    `home`, else MEMLAB_HOME); the database `dsn` names is never written to. Results of an earlier run in `out`
    are removed first: a folder holds one run. `previous` names an earlier run folder to compare hit distances with
    (drift); `baseline` the committed metrics report.md compares the run with (none: no comparison). `progress`
    draws one overall line (steps done of the total, ETA): True on the terminal, or a given RunProgress; no bar per
    step."""
    started = time.perf_counter()
    out = claim_folder(out)  # a folder memlab did not make is refused before anything is read or written
    cfg = config.resolved
    datasets = [load_configured(spec, config) for spec in cfg["datasets"]]  # a table store's: read from its table
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("runs", "labels", "tables"):
        shutil.rmtree(out / stale, ignore_errors=True)
    for stale in (*out.glob("*.png"), *[out / n for n in ("scores.csv", "scores.parquet", "metrics.json",
                                                          "question_scores.parquet", "report.md")]):
        stale.unlink(missing_ok=True)
    manifest: dict[str, Any] = {
        **run_mark(),  # memlab's mark and the folder's format version
        "status": "running",
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "previous": str(previous) if previous is not None and Path(previous).exists() else None,
        "config": {"source": config.source, "given": config.raw, "overrides": config.overrides, "resolved": cfg},
        "datasets": [{"name": d.name, "checksum": d.checksum(), **d.summary(),
                      "path": str(spec.get("path", "")), "format": spec.get("format"),
                      **dropped_fields(d),  # references loading dropped, labels pointing outside the data apart
                      **({"pool": d.pool} if d.pool else {})}  # a judged set's pool (the report names it)
                     for d, spec in zip(datasets, cfg["datasets"], strict=True)],
        "warnings": dataset_warnings(datasets, cfg, log),  # features the data cannot serve (run log, report.md)
    }  # fmt: skip
    _write_manifest(out, manifest)
    embedders, skipped = make_embedders(cfg["embedders"], home=home)
    manifest["embedders"] = {name: e.model_id for name, e in embedders.items()}
    manifest["skipped_embedders"] = skipped
    # the server only: its scratch database holds the run; the database `dsn` names gets nothing of memlab's
    with open_server(dsn, home=home) as server, scratch_store(server) as fresh, run_progress(progress) as steps, \
            open_stores(config) as tables:
        manifest["versions"] = _versions(fresh)
        # one overall display: the per-step bars (ingest, questions, extraction) stay off
        env = model_env(fresh, embedders, config, k=cfg["k"], home=home)
        env.tables = tables  # the config's table stores, searched where they are
        work = []
        for dataset in datasets:
            scoped = dataset.namespaced(dataset.name)  # data sets never share a user's memory
            systems, roles = plan_systems(scoped, config, embedders) if scoped.questions else ([], {})
            work.append((scoped, systems, roles, [n for n in applies(cfg, dataset.name) if get_sweep(n).measures]))
        steps.plan(sum(sum(map(counted_step, systems)) + len(measured) for _, systems, _, measured in work) + 1)
        for scoped, systems, roles, measured in work:
            save_labels(out, scoped)
            log(f"{scoped.name}: {scoped.summary()}")
            runs = run_systems(env, scoped, systems, out, steps=steps, roles=roles)
            manifest.setdefault("systems", {})[scoped.name] = described(systems, runs)
            context = SweepContext(cfg, systems)
            for name in steps.each(measured, lambda n, d=scoped.name: f"{d}: {n} sweep"):
                get_sweep(name).measure(env, scoped, sweep_options(cfg, name), context, out)
        with steps.step("scores and report"):
            score_folder(out)
            manifest["stores"] = tables.summary()  # each table's catalog and model checks
            manifest.update(status="complete", finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
                            seconds=round(time.perf_counter() - started, 1), peak_memory_mb=peak_memory_mb())
            _write_manifest(out, manifest)
            write_report(RunFolder(out), baseline=baseline)
    return out


def question_scores(folder: RunFolder, dataset: str) -> pd.DataFrame:
    """Per-question scores of every saved run of one data set (pure: reads the folder only)."""
    k = folder.k
    runs = folder.runs(dataset)
    questions = folder.questions(dataset)
    events = folder.events(dataset)
    sizes = events.groupby(["app_name", "user_id"]).size().to_dict()
    frames = []
    for run in runs.values():
        ref = runs.get(run.reference) if run.reference else None
        scored = score(run.frame, questions, k=k, exact=ref.frame if ref is not None else None, memory_sizes=sizes)
        frames.append(scored.assign(dataset=dataset))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def score_folder(out: Path) -> pd.DataFrame:
    """scores.csv / scores.parquet (long form, a breakdown in its own columns), systems.parquet (each system's
    role), question_scores.parquet and metrics.json (flat keys), from saved runs."""
    folder = RunFolder(Path(out))
    cfg = folder.manifest.get("config", {}).get("resolved", {})
    long_frames, per_question = [], []
    for dataset in folder.datasets:
        qs = question_scores(folder, dataset)
        roles = {name: run.role or SystemRole() for name, run in folder.runs(dataset).items()}
        if len(qs):  # cut-off systems get no breakdowns: the sweep's grid is what matters there
            is_cut = qs.system.isin([s for s, r in roles.items() if r.role == CUT])
            base = pd.concat([long_scores(qs[~is_cut], dataset, folder.k),
                              long_scores(qs[is_cut], dataset, folder.k, groups=())], ignore_index=True)
        else:
            base = pd.DataFrame(columns=LONG_COLUMNS)
        base = _with_roles(base, roles, SystemRole())
        parts = [base]
        for name in applies(cfg, dataset):
            earlier = pd.concat([*long_frames, base], ignore_index=True)  # a sweep may read earlier data sets
            made = with_groups(get_sweep(name).scores(folder, dataset, sweep_options(cfg, name), earlier))
            parts.append(_with_roles(made, roles, SystemRole(MEASURE, name)))
        long_frames.append(pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts)
                           else base)  # fmt: skip
        per_question.append(qs)
    scores = pd.concat(long_frames, ignore_index=True) if long_frames else \
        pd.DataFrame(columns=[*LONG_COLUMNS, *ROLE_COLUMNS])  # fmt: skip
    write_parquet(scores.drop_duplicates(["dataset", "system"])[SYSTEM_COLUMNS], out / SYSTEMS_FILE)
    scores = scores[LONG_COLUMNS]
    write_csv(scores, out / "scores.csv")
    write_parquet(scores, out / "scores.parquet")
    qs_all = pd.concat([q for q in per_question if len(q)], ignore_index=True) if any(len(q) for q in per_question) \
        else pd.DataFrame()  # fmt: skip
    if len(qs_all):
        write_parquet(qs_all, out / "question_scores.parquet")
    write_json(out / "metrics.json", flat_metrics(scores), indent=2, sort_keys=True)
    return scores


def _with_roles(scores: pd.DataFrame, roles: Mapping[str, SystemRole], other: SystemRole) -> pd.DataFrame:
    """Long-form scores with ROLE_COLUMNS: each system's as its runs record, a system of no run `other`'s (a
    figure a sweep computed from its own tables)."""
    if set(ROLE_COLUMNS) <= set(scores.columns):
        return scores
    found = [roles.get(s, other) for s in scores.system]
    return scores.assign(role=[r.role for r in found], sweep=[r.sweep or "" for r in found],
                         parent=[r.parent or "" for r in found])  # fmt: skip


def is_finished(out: Path) -> bool:
    """A run folder whose manifest says it completed (not redone unless forced)."""
    try:
        return json.loads((Path(out) / "manifest.json").read_text()).get("status") == "complete"
    except (OSError, ValueError):
        return False


def publish_latest(run_dir: Path, latest: Path) -> None:
    """Copy a finished run to reports/latest (a copy, not a link, so it survives moving the folder); the old
    copy is replaced only if it is a memlab run folder."""
    replace_folder(Path(run_dir), Path(latest))


def default_run_folder(config: ExperimentConfig, stamp: str, root: Path = Path("reports")) -> Path:
    """Where a run goes when no folder is given: `reports/<name>-<time>`, the name slugged to one folder name
    (config checks already refuse names that are paths; the slug keeps spaces and odd characters out too)."""
    return Path(root) / f"{slug(config.name)}-{slug(stamp)}"


def headline(out: Path) -> pd.DataFrame:
    """recall@k of the main systems per data set: what the CLI prints at the end of a run."""
    folder = RunFolder(Path(out))
    k = folder.k
    s = folder.scores
    s = s[(s.metric == f"recall@{k}") & overall(s) & s.role.isin([MAIN, SWEEP])]
    if s.empty:
        return pd.DataFrame()
    return s.pivot_table(index="system", columns="dataset", values="value", sort=False).reset_index()
