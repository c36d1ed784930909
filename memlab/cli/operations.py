"""Running memlab against real systems: check reliability, probe, bench, and the embedded server (db)."""

from __future__ import annotations

import json
import logging
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

import memlab
from memlab.cli.main import app, check_app, console, fail, user_errors, workbench
from memlab.storage import embedded_status, psql_path, start_embedded, stop_embedded


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
