"""The `memlab` command line. It calls the same public functions the notebooks use."""

from __future__ import annotations

import logging
import time
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


@app.command("eval")
def eval_command(
    fixtures: Path = typer.Option(Path("fixtures/events"), help="Folder of event fixtures (YAML/JSON)."),
    out: Path = typer.Option(Path("reports/latest"), help="Run folder to write."),
    dsn: str | None = typer.Option(None, help="PostgreSQL DSN (default: MEMLAB_DSN, else the embedded server)."),
    k: int = typer.Option(10, help="Cut the rankings at k."),
    bench_repeat: int = typer.Option(4, help="Copies of the fixture sessions used for the ingest-rate benchmark."),
) -> None:
    """Ingest the event fixtures, answer their labelled queries, compare pgvector with FAISS exact, write a report."""
    import memlab
    from memlab.evaluation.fixture_run import run_fixture_eval
    from memlab.evaluation.fixtures import load_event_fixtures
    from memlab.evaluation.ingest_bench import measure_ingest
    from memlab.evaluation.report import markdown_table, write_run

    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    try:
        labelled = load_event_fixtures(fixtures)
        console.print(f"[bold]fixtures[/] {fixtures}: {labelled.summary()}")
        with memlab.open_store(dsn) as store:
            console.print(f"[bold]store[/] pgvector {store.vector_version}, embedded={store.embedded}")
            embedder = memlab.default_embedder()
            run = run_fixture_eval(store, embedder, labelled, k=k, progress=True)
            summary = run.summary()
            raw_model = getattr(embedder, "inner", embedder)
            bench = measure_ingest(store, raw_model, labelled, repeat=bench_repeat)
    except memlab.MemlabError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    console.print(_summary_table(summary, f"recall@{k} on {labelled.name} (answerable questions)"))
    console.print(
        f"[bold]ingest[/] {bench.ingest_units_per_s:.0f} units/s vs raw encode {bench.raw_encode_per_s:.0f} texts/s "
        f"(ratio {bench.ratio:.2f}, {bench.texts} texts)"
    )
    skipped = {g: dict(r.skipped) for g, r in run.ingest.items()}
    flat = {
        f"{r.granularity}.{r.config}.{m}": float(r[m])
        for _, r in summary.iterrows()
        for m in ("recall_at_k", "recall_vs_exact", "mrr", "hit_rate", "empty_rate", "correct_empty_rate")
    }
    flat.update({f"ingest.{key}": float(v) for key, v in bench.as_dict().items()})
    sections = {
        "Ingest": (
            f"- units added per granularity: { {g: r.added for g, r in run.ingest.items()} }\n"
            f"- events skipped by reason: {skipped}\n"
            f"- ingest rate {bench.ingest_units_per_s:.1f} units/s vs the model's raw encode rate "
            f"{bench.raw_encode_per_s:.1f} texts/s on the same {bench.texts} texts (ratio {bench.ratio:.2f})"
        ),
        "Plans taken by the `planner` strategy": markdown_table(
            run.questions[run.questions.config == "planner"]
            .groupby(["granularity", "plan"])
            .size()
            .rename("questions")
            .reset_index()
        ),
    }
    write_run(
        out,
        questions=run.questions,
        summary=summary,
        config={"dataset": labelled.name, "fixtures": str(fixtures), "k": k, "embedder": embedder.model_id},
        extra_sections=sections,
        metrics=flat,
    )
    console.print(f"[green]wrote[/] {out}/report.md in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":  # pragma: no cover
    app()
