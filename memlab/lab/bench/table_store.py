"""The table-store part of `memlab bench`: `memlab eval` on a large `agent_memory` table, measured where it is.

What a user of `stores:` gets at scale, on one table built for the purpose:

1. a labelled set from memlab's synthetic generator (users of log-uniform sizes, sessions, questions whose gold
   event ids are known), one row per (user, text);
2. the design article's `agent_memory` table (its DDL as printed, the dimension set to the packaged model's) in a
   database of its own, filled by COPY with the texts and the model's vectors (through memlab's embedding cache,
   so a rerun embeds nothing), then its HNSW index (vector_cosine_ops) and scope index built as the table's owner
   would after a bulk load, and a questions-only JSONL naming the table's event ids;
3. `run_experiment` on it as a role that may only SELECT the table: systems exact and hnsw, sweeps cutoff and
   table (ef_search x iterative_scan, EXPLAIN of the smallest and the largest user);
4. memlab's per-question search (the table system over TableStore.search) timed against the same SELECT on
   plain psycopg connections, and `memlab probe --store` run on the same questions (memlab.lab.bench.table_timing).

Figures go to bench.json as `table_store.*` (recall against the labels and against FAISS exact over the table's
vectors, the cut-off advice, the plans, memlab's time over the bare statement's) and to bench.md's section
"Table store". The database and the role are dropped afterwards."""

from __future__ import annotations

import json
import os
import random
import secrets
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from memlab.embedding.base import Embedder
from memlab.errors import ConfigError
from memlab.lab.base.sizes import SIZE_LABELS
from memlab.lab.bench.table_section import table_store_section
from memlab.lab.bench.table_timing import picked, probe_timing, time_searches
from memlab.lab.config.parse import parse_config
from memlab.lab.datasets.synth import generate
from memlab.lab.experiment.run import run_experiment
from memlab.lab.runs.folder import RunFolder
from memlab.lab.sweeps.table import grid_name
from memlab.lab.systems.table import TableSystem

# The article's DDL as printed there; the dimension is set to the model's ("must equal your model's dimension"). The
# indexes are built after the rows are loaded, as an owner bulk-loading a table would.
ARTICLE_TABLE = """
CREATE TABLE agent_memory (
    id           bigserial    PRIMARY KEY,
    app_name     text         NOT NULL,
    user_id      text         NOT NULL,
    session_id   text         NOT NULL,
    event_id     text         NOT NULL,
    author       text,
    occurred_at  timestamptz  NOT NULL,
    body         text         NOT NULL,
    embed_model  text         NOT NULL,
    embedding    vector(768)  NOT NULL,          -- must equal your model's dimension
    UNIQUE (app_name, user_id, event_id, embed_model)
)"""
ARTICLE_INDEXES = (
    "CREATE INDEX agent_memory_hnsw ON agent_memory USING hnsw (embedding vector_cosine_ops)",
    "CREATE INDEX agent_memory_scope ON agent_memory (app_name, user_id, occurred_at DESC)",
)
COLUMNS = ("app_name", "user_id", "session_id", "event_id", "author", "occurred_at", "body", "embed_model",
           "embedding")  # fmt: skip
COPY_TYPES = ("text", "text", "text", "text", "text", "timestamptz", "text", "text", "vector")
BUILD_MEMORY = "1GB"  # maintenance_work_mem for the HNSW build: the graph of the full size fits, as an owner sets it
STORE = "agent"
DATASET = "agent-table"
DSN_ENV = "MEMLAB_BENCH_TABLE_DSN"  # the reader's DSN, handed to the run's `stores:` entry (never written)
SYSTEMS = ({"name": "exact", "store": STORE, "strategy": "exact"},
           {"name": "hnsw", "store": STORE, "strategy": "hnsw", "ef_search": 40, "iterative_scan": "relaxed_order"})
K = 10
EMBED_CHUNK = 4_096
ADVICE = ("recommended_max_distance", "recall_at_recommended", "false_memory_at_recommended",
          "question_distance_roc_auc", "hit_distance_roc_auc")  # the cut-off sweep's metrics


@dataclass(frozen=True)
class TableSize:
    """How big the table-store part is: the synthetic set's `users` and their sizes (log-uniform between
    `min_events` and `max_events`), questions asked per user, the table sweep's grid, and how many questions
    (`timed_questions`, each `timed_rounds` times) time memlab against the bare statement."""

    users: int
    min_events: int
    max_events: int
    questions_per_user: int
    ef_search: tuple[int, ...]
    iterative_scan: tuple[str, ...]
    timed_questions: int
    timed_rounds: int
    cutoff_grid: tuple[float, ...] | None = None  # the cut-off sweep's distances (None: its default grid)
    seed: int = 0


TABLE_SIZES = {
    # a thousand-odd rows of 20 users: a smoke of every section, well under a minute with a warm cache
    "ci": TableSize(users=20, min_events=5, max_events=200, questions_per_user=2, ef_search=(10, 100),
                    iterative_scan=("off", "relaxed_order"), timed_questions=20, timed_rounds=2,
                    cutoff_grid=tuple(round(0.2 + 0.1 * i, 1) for i in range(11))),
    # over 100,000 rows of 1,000 users, one question each: a walk with an iterative scan takes a small user's
    # search past 100 ms at this size, so the grid's nine such points dominate the run
    "full": TableSize(users=1_000, min_events=5, max_events=600, questions_per_user=1, ef_search=(10, 40, 100, 200),
                      iterative_scan=("off", "relaxed_order", "strict_order"), timed_questions=100, timed_rounds=3),
}  # fmt: skip


@dataclass
class Labelled:
    """The table's rows (COLUMNS without the model and embedding), the questions asked (JSONL records) and the
    rows per user."""

    rows: list[tuple]
    questions: list[dict[str, Any]]
    sizes: dict[str, int]

    @property
    def app(self) -> str:
        return str(self.rows[0][0])


def labelled_set(spec: TableSize) -> Labelled:
    """memlab-synth at `spec`'s size, one row per (user, text) (two rows of one user never tie on distance), and
    up to `questions_per_user` questions of each user, drawn with the seed (answerable and no-answer ones alike),
    each label naming a row that was written."""
    data = generate(seed=spec.seed, users=spec.users, min_events=spec.min_events, max_events=spec.max_events)
    rows, texts, ids = [], set(), set()
    for session in data.sessions():
        for event in session.events:
            if not event.text or (session.user_id, event.text) in texts or (session.user_id, event.id) in ids:
                continue
            texts.add((session.user_id, event.text))
            ids.add((session.user_id, event.id))
            rows.append((session.app_name, session.user_id, session.id, event.id, event.author, event.timestamp,
                         event.text))  # fmt: skip
    sizes: dict[str, int] = defaultdict(int)
    for row in rows:
        sizes[row[1]] += 1
    held = {(r[1], r[3]) for r in rows}
    by_user = defaultdict(list)
    for q in data.questions:
        kept = [e for e in q.relevant if (q.user_id, e) in held]
        if not q.relevant or kept:  # a label whose row was not written would make it another question
            by_user[q.user_id].append({"type": "question", "id": q.id, "user": q.user_id, "text": q.text,
                                       "relevant": kept})  # fmt: skip
    rng = random.Random(spec.seed)
    questions = [q for user in sorted(by_user) for q in
                 rng.sample(by_user[user], min(spec.questions_per_user, len(by_user[user])))]  # fmt: skip
    return Labelled(rows, questions, dict(sizes))


def embed_rows(embedder: Embedder, rows: list[tuple], log: Callable[[str], Any]) -> np.ndarray:
    """Each row's document vector: every distinct text embedded once (the embedder's cache keeps them for reruns)."""
    texts = list(dict.fromkeys(r[6] for r in rows))
    found = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
    for start in range(0, len(texts), EMBED_CHUNK):
        found[start:start + EMBED_CHUNK] = embedder.embed_documents(texts[start:start + EMBED_CHUNK])
        if len(texts) > EMBED_CHUNK:
            log(f"bench table store: embedded {min(len(texts), start + EMBED_CHUNK):,} of {len(texts):,} texts")
    position = {t: i for i, t in enumerate(texts)}
    return found[[position[r[6]] for r in rows]]


@dataclass
class BuiltTable:
    """The filled table: the owner's DSN, a SELECT-only role's DSN, and what loading and indexing took."""

    owner_dsn: str
    reader_dsn: str
    copy_seconds: float
    index_seconds: float
    index_bytes: int


@contextmanager
def agent_memory_table(admin_dsn: str, labelled: Labelled, vectors: np.ndarray, model: str) -> Iterator[BuiltTable]:
    """A database of its own holding the filled `agent_memory` table and a login role that may only SELECT it;
    both dropped on leaving."""
    name = f"memlab_bench_table_{uuid.uuid4().hex[:10]}"
    role, password = f"memlab_bench_reader_{uuid.uuid4().hex[:8]}", secrets.token_urlsafe(16)
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    owner = psycopg.conninfo.make_conninfo(admin_dsn, dbname=name)
    try:
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
            conn.execute(ARTICLE_TABLE.replace("vector(768)", f"vector({vectors.shape[1]})"))
            started = time.perf_counter()
            with conn.cursor() as cur, cur.copy(sql.SQL("COPY agent_memory ({}) FROM STDIN WITH (FORMAT BINARY)")
                                                .format(sql.SQL(", ").join(map(sql.Identifier, COLUMNS)))) as copy:
                copy.set_types(list(COPY_TYPES))
                for row, vector in zip(labelled.rows, vectors, strict=True):
                    copy.write_row((*row, model, vector))
            copied = time.perf_counter() - started
            conn.execute(f"SET maintenance_work_mem = '{BUILD_MEMORY}'")
            for statement in ARTICLE_INDEXES:
                conn.execute(statement)
            conn.execute("VACUUM ANALYZE agent_memory")
            indexed = time.perf_counter() - started - copied
            size = conn.execute("SELECT pg_relation_size('agent_memory_hnsw')").fetchone()[0]
            select_only(conn, name, role, password)
        reader = psycopg.conninfo.make_conninfo(owner, user=role, password=password)
        yield BuiltTable(owner, reader, copied, indexed, int(size))
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def select_only(conn: psycopg.Connection, database: str, role: str, password: str) -> None:
    """A login role with CONNECT on `database`, USAGE on schema public and SELECT on agent_memory, nothing else
    (PUBLIC loses its default rights there, so not even a temp table)."""
    who, where = sql.Identifier(role), sql.Identifier(database)
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(who, sql.Literal(password)))
    conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(where))
    conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(where, who))
    conn.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(who))
    conn.execute(sql.SQL("GRANT SELECT ON agent_memory TO {}").format(who))


def experiment(spec: TableSize, questions: Path, app: str, model: str) -> dict[str, Any]:
    """The run's config: the table as store `agent` (read through DSN_ENV), its questions, exact and hnsw, the
    cut-off and table sweeps."""
    return {
        "name": "bench-table-store", "k": K, "plots": False,
        "stores": [{"name": STORE, "dsn_env": DSN_ENV, "layout": "agent-memory", "app": app, "model": model,
                    "limits": {"max_qps": None}}],
        "datasets": [{"name": DATASET, "format": "memlab", "path": str(questions), "store": STORE}],
        "systems": [dict(s) for s in SYSTEMS],
        "sweeps": ["cutoff", "table"],
        "options": {"table": {"systems": ["hnsw"], "ef_search": list(spec.ef_search),
                              "iterative_scan": list(spec.iterative_scan)},
                    **({"cutoff": {"grid": list(spec.cutoff_grid)}} if spec.cutoff_grid else {})},
    }  # fmt: skip


@contextmanager
def _reader_env(dsn: str) -> Iterator[None]:
    before = os.environ.get(DSN_ENV)
    os.environ[DSN_ENV] = dsn
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DSN_ENV, None)
        else:
            os.environ[DSN_ENV] = before


def run_figures(run: Path, spec: TableSize) -> tuple[dict[str, float], dict[str, pd.DataFrame], list[str]]:
    """bench.json's `table_store.*` figures from the run folder (its metrics.json and the table sweep's plans),
    tables (grid, plans, cut-offs, memory sizes) and the cut-off sentences."""
    metrics = json.loads((run / "metrics.json").read_text())
    folder = RunFolder(run)
    results: dict[str, float] = {}

    def metric(system: str, name: str) -> float:
        return float(metrics.get(f"{DATASET}/{system}/{name}", float("nan")))

    reference = TableSystem("exact", STORE).reference().name
    for system in (*(s["name"] for s in SYSTEMS), reference):
        key = "faiss_exact" if system == reference else system
        for name in (f"recall@{K}", "recall_vs_exact", "latency_ms_p50", "latency_ms_p95"):
            results[f"table_store.{key}.{name}"] = metric(system, name)
    faiss_p50 = results["table_store.faiss_exact.latency_ms_p50"]
    grid = []
    for scan in spec.iterative_scan:
        for ef in spec.ef_search:
            name = grid_name("hnsw", ef, scan)
            point = {"ef_search": ef, "iterative_scan": scan, f"recall@{K}": metric(name, f"recall@{K}"),
                     "recall_vs_exact": metric(name, "recall_vs_exact"), "empty_rate": metric(name, "empty_rate"),
                     "latency_ms_p50": metric(name, "latency_ms_p50"), "latency_ms_p95": metric(name, "latency_ms_p95")}
            point["p50_vs_faiss_exact"] = point["latency_ms_p50"] / faiss_p50 if faiss_p50 else float("nan")
            grid.append(point)
            for figure in (f"recall@{K}", "recall_vs_exact", "empty_rate", "p50_vs_faiss_exact"):
                results[f"table_store.grid.ef{ef}.{scan}.{figure}"] = point[figure]
    tables = {"table_store_grid": pd.DataFrame(grid)}
    plans = folder.table("table", DATASET)
    if plans is not None and len(plans):
        tables["table_store_explain"] = plans
        for row in plans.itertuples(index=False):
            for figure in ("rows", "index_used", "planning_ms", "execution_ms", "shared_hit", "shared_read"):
                results[f"table_store.explain.{row.system}.{row.user_size}.{figure}"] = float(getattr(row, figure))
    advices, lines = [], []
    for system in (s["name"] for s in SYSTEMS):  # as the cut-off sweep stored its advice (memlab.lab.metrics.cutoffs)
        advice = {name: metric(system, name) for name in ADVICE}
        advices.append({"system": system, **advice, f"recall@{K}_uncut": metric(system, f"recall@{K}")})
        results.update({f"table_store.cutoff.{system}.{name}": value for name, value in advice.items()})
        lines.append(cutoff_line(system, advices[-1]))
    tables["table_store_cutoff"] = pd.DataFrame(advices)
    tables["table_store_sizes"] = size_table(folder)
    return results, tables, lines


def cutoff_line(system: str, advice: dict[str, float]) -> str:
    """The advice in one sentence (the run's report.md says why where none is advised)."""
    cut = advice["recommended_max_distance"]
    if cut != cut:
        return (f"Cut-off for `{system}`: none advised (the run's report.md says why); recall@{K} uncut "
                f"{advice[f'recall@{K}_uncut']:.3f}, false memories on "
                f"{advice['false_memory_at_recommended']:.0%} of the no-answer questions.")  # fmt: skip
    return (f"Cut-off advised for `{system}`: max_distance {cut:.3f}, keeping recall@{K} "
            f"{advice['recall_at_recommended']:.3f} of {advice[f'recall@{K}_uncut']:.3f} uncut, with false memories "
            f"on {advice['false_memory_at_recommended']:.0%} of the no-answer questions (per-question ROC AUC of "
            f"the nearest hit's distance {advice['question_distance_roc_auc']:.2f}).")  # fmt: skip


def size_table(folder: RunFolder) -> pd.DataFrame:
    """recall@k and recall_vs_exact per memory-size bucket (users by their rows in the table; smallest first),
    for exact, hnsw, FAISS exact and the grid's points."""
    scores = folder.scores
    scores = scores[(scores.dataset == DATASET) & (scores.group == "size")
                    & scores.metric.isin([f"recall@{K}", "recall_vs_exact"])]  # fmt: skip
    if scores.empty:
        return pd.DataFrame()
    smallest_first = {b: i for i, b in enumerate(SIZE_LABELS)}
    scores = scores.assign(order=scores.group_value.map(smallest_first)).sort_values(["metric", "order"])
    scores = scores.assign(column=scores.metric + " (" + scores.group_value + " rows)")
    wide = scores.pivot_table(index="system", columns="column", values="value", sort=False)
    return wide.reset_index()


def table_store_bench(admin_dsn: str, embedder: Embedder, size: str, out: Path, *,
                      log: Callable[[str], Any] = print) -> tuple[dict[str, float], dict[str, pd.DataFrame], list[str]]:
    """The whole part at `size` (see the module docstring): (bench.json figures, tables for CSV, bench.md's
    section)."""
    if size not in TABLE_SIZES:
        raise ConfigError(f"bench size {size!r} is unknown for the table store; use one of {sorted(TABLE_SIZES)}.")
    spec = TABLE_SIZES[size]
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def step(name: str) -> None:
        nonlocal clock
        seconds[name] = time.perf_counter() - clock
        clock = time.perf_counter()
        log(f"bench table store: {name} done ({seconds[name]:.0f} s)")

    labelled = labelled_set(spec)
    step("generate")
    vectors = embed_rows(embedder, labelled.rows, log)
    step("embed")
    folder = out / "table-store"
    folder.mkdir(parents=True, exist_ok=True)
    questions = folder / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in labelled.questions))
    raw = experiment(spec, questions, labelled.app, embedder.model_id)
    timed = picked(labelled.questions, spec.timed_questions)
    with agent_memory_table(admin_dsn, labelled, vectors, embedder.model_id) as table:
        step("table")
        with _reader_env(table.reader_dsn):
            config = parse_config(raw, source=str(folder / "experiment"), base_dirs=[folder])
            run_experiment(config, folder / "run", dsn=admin_dsn, log=lambda *_: None)
            step("eval")
            timing, figures = time_searches(table.reader_dsn, labelled.app, embedder, timed,
                                            [TableSystem(**s) for s in SYSTEMS], rounds=spec.timed_rounds, k=K)
            step("timing")
            probed, _ = probe_timing(folder / "probe", raw, STORE, timed)
            step("probe")
    results, tables, cutoffs = run_figures(folder / "run", spec)
    tables["table_store_timing"] = timing
    results.update(figures | probed)
    users = len(labelled.sizes)
    results.update({"table_store.rows": float(len(labelled.rows)), "table_store.users": float(users),
                    "table_store.questions": float(len(labelled.questions)),
                    "table_store.answerable": float(sum(1 for q in labelled.questions if q["relevant"])),
                    "table_store.user_rows_min": float(min(labelled.sizes.values())),
                    "table_store.user_rows_max": float(max(labelled.sizes.values())),
                    "table_store.copy_seconds": table.copy_seconds, "table_store.index_seconds": table.index_seconds,
                    "table_store.hnsw_bytes": float(table.index_bytes),
                    "table_store.dimension": float(vectors.shape[1]),
                    **{f"table_store.seconds.{k}": v for k, v in seconds.items()}})  # fmt: skip
    return results, tables, table_store_section(results, tables, cutoffs)


__all__ = ["ARTICLE_INDEXES", "ARTICLE_TABLE", "TABLE_SIZES", "BuiltTable", "Labelled", "TableSize",
           "agent_memory_table", "embed_rows", "experiment", "labelled_set", "run_figures", "select_only",
           "table_store_bench"]  # fmt: skip
