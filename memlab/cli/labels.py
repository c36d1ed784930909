"""Labels of one's own: judge (pools and judge.html), queries (from real traffic), questions (generated)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

import memlab
from memlab.cli.main import app, console, fail, note_authors, user_errors, workbench

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
        note_authors(source)
    if not made.queries:
        fail(f"no question was generated from {sessions or f'store {store}'}; see the counts above (the rule "
             "extractor found no fact with a template, or every model reply was refused)")
    written = lab.datasets.write_generated(made, source, files["queries"], files["judgments"], files["pool"])
    entry = {"name": "generated", "format": "judged", "queries": str(written["queries"].resolve()), **where,
             "pool": str(written["pool"].resolve()), "judgments": str(written["judgments"].resolve())}  # fmt: skip
    console.print(f"[green]wrote[/] {len(made.queries)} questions to {out}, with {written['judgments']} and "
                  f"{written['pool']}. As a data set:\n  {json.dumps(entry)}", soft_wrap=True, highlight=False)


