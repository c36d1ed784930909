"""What memlab adds to a search of a user's table: its per-question search (a table system over TableStore.search,
as `memlab eval` and `memlab probe --store` ask it) against the same SELECT with the same settings on plain psycopg
connections, and the probe itself run as a user runs it.

Three paths per question, each given the question's vector embedded beforehand (the model costs the same either
way), none preparing the statement (memlab never does, so the plans compare):

- `memlab`: the table system's search: a read-only transaction from memlab's pool with its timeouts, check and
  settings, the statement, its rows made hits;
- `bare`: the SELECT alone on a plain autocommit connection whose session holds the search's settings (SET once
  per system): the query's own time, one round trip;
- `app`: the SELECT as the design article's service sends it: BEGIN, the settings SET LOCAL (one statement), the
  SELECT, COMMIT, one statement at a time.

The paths take turns question by question, their order rotating, after one untimed pass that warms the caches.
Each question's time is its median over the rounds; the ratios are of the medians (and p95s) over the questions,
`memlab` over `bare` with a bootstrap interval over the questions (the goal: at most GOAL).

`probe_timing` runs `memlab probe --store` (a process of its own, as a user runs it) on the same questions and
reads what it measured: its time per question against the bare statement on its own connection (the two measured
in the probe's run; times from runs minutes apart on a shared machine do not compare)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import psycopg
import yaml
from pgvector.psycopg import register_vector

from memlab.embedding.base import Embedder
from memlab.errors import ConfigError
from memlab.lab.datasets.model import Question
from memlab.lab.metrics.uncertainty import quantile_ratio_ci
from memlab.lab.systems.table import TableHandle, TableSystem
from memlab.table_store import ReadOnlyLimits, open_table

GOAL = 1.5  # memlab's time per question at most this times the bare statement's
PATHS = ("memlab", "bare", "app")
FIGURES = ("memlab_ms_p50", "bare_ms_p50", "app_ms_p50", "p50_ratio", "p50_ratio_low", "p50_ratio_high",
           "app_ratio", "memlab_vs_app", "memlab_ms_p95", "bare_ms_p95", "p95_ratio", "p95_ratio_low",
           "p95_ratio_high", "same_results")  # fmt: skip
PROBE_FIGURES = ("p50_seconds_per_question", "bare_sql_p50_seconds_per_question", "p50_ratio_to_bare_sql",
                 "seconds_per_question", "bare_sql_seconds_per_question", "ratio_to_bare_sql")  # fmt: skip
PROBE_TIMEOUT = 3_600  # seconds the probe of the full table may take at most


def picked(records: Sequence[dict[str, Any]], questions: int, seed: int = 0) -> list[dict[str, Any]]:
    """The questions timed: `questions` of `records`, drawn with `seed` (the probe is given the same ones)."""
    return random.Random(seed).sample(list(records), min(questions, len(records)))


def _session(conn: psycopg.Connection, knobs: list[tuple[str, str]]) -> None:
    """The bare connection's session settings for one system (RESET ALL first: the previous system's go)."""
    conn.execute("RESET ALL")
    for name, value in knobs:
        conn.execute("SELECT set_config(%s, %s, false)", [name, value])


def _app(conn: psycopg.Connection, statement: str, params: dict, knobs: list[tuple[str, str]]) -> list[str]:
    """The SELECT in a transaction of its own with the settings SET LOCAL (one statement), as the article's service
    runs it."""
    with conn.transaction():
        if knobs:
            conn.execute("SELECT " + ", ".join("set_config(%s, %s, true)" for _ in knobs),
                         [v for kv in knobs for v in kv])  # fmt: skip
        rows = conn.execute(statement, params).fetchall()
    return [str(r[0]) for r in rows]


def time_searches(reader_dsn: str, app: str, embedder: Embedder, records: Sequence[dict[str, Any]],
                  systems: Sequence[TableSystem], *, rounds: int,
                  k: int = 10) -> tuple[pd.DataFrame, dict[str, float]]:  # fmt: skip
    """Per system: memlab's time per question against the bare statement's and the article's transaction's, on
    `records` (JSONL question records: id, user, text), each searched `rounds` times every way. Returns the
    summary table and bench.json's `table_store.timing.<system>.*` figures."""
    vectors = [np.asarray(embedder.embed_query(r["text"]), dtype=np.float32) for r in records]
    asked = [Question(id=r["id"], app_name=app, user_id=r["user"], text=r["text"], relevant=()) for r in records]
    rows, figures = [], {}
    table = open_table(reader_dsn, "agent-memory", model=embedder.model_id, limits=ReadOnlyLimits(max_qps=None))
    try:
        handle = TableHandle(table, prefix="")
        with psycopg.connect(reader_dsn, prepare_threshold=None, autocommit=True) as bare, \
                psycopg.connect(reader_dsn, prepare_threshold=None) as service:  # fmt: skip
            for conn in (bare, service):
                register_vector(conn)  # the query vector goes in pgvector's binary form, as memlab sends it
            for system in systems:
                bound = []
                for q, v in zip(asked, vectors, strict=True):
                    statement, params, knobs = table.search_statement(app, q.user_id, v, k=k,
                                                                      **system.search_settings())  # fmt: skip
                    bound.append((statement.as_string(bare), params, knobs))
                _session(bare, bound[0][2] if bound else [])
                took = np.zeros((len(PATHS), len(asked), rounds))
                same = 0
                for r in range(-1, rounds):  # round -1 warms every path, untimed
                    for i, q in enumerate(asked):
                        ids: list[list[str]] = [[], [], []]
                        for step in range(len(PATHS)):
                            which = (r + i + step) % len(PATHS)
                            started = time.perf_counter()
                            if which == 0:
                                ids[0] = system.search(handle, q, vectors[i], k).unit_ids
                            elif which == 1:
                                ids[1] = [str(row[0]) for row in bare.execute(*bound[i][:2]).fetchall()]
                            else:
                                ids[2] = _app(service, *bound[i])
                            if r >= 0:
                                took[which, i, r] = (time.perf_counter() - started) * 1000
                        same += int(r == 0 and ids[0] == ids[1] == ids[2])
                mine, theirs, served = np.median(took, axis=2)
                row = summarize(system.name, mine, theirs)
                row["app_ms_p50"] = float(np.percentile(served, 50)) if len(served) else float("nan")
                row["app_ratio"] = row["app_ms_p50"] / row["bare_ms_p50"] if len(served) else float("nan")
                row["memlab_vs_app"] = row["memlab_ms_p50"] / row["app_ms_p50"] if len(served) else float("nan")
                row["same_results"] = same / len(asked) if asked else float("nan")
                row.update({"questions": len(asked), "rounds": rounds, "strategy": system.strategy,
                            "ef_search": system.ef_search if system.strategy == "hnsw" else None,
                            "iterative_scan": system.iterative_scan if system.strategy == "hnsw" else None})
                rows.append(row)
                figures.update({f"table_store.timing.{system.name}.{f}": float(row[f]) for f in FIGURES})
    finally:
        table.close()
    return pd.DataFrame(rows), figures


def summarize(system: str, mine: np.ndarray, theirs: np.ndarray) -> dict[str, Any]:
    """Medians and p95s of per-question times (ms) memlab's way and bare, their ratios with 95% bootstrap
    intervals, and whether the p50 ratio meets GOAL (`met`, `missed`, or `within noise` when the interval holds
    it)."""
    out: dict[str, Any] = {"system": system}
    for q, name in ((50, "p50"), (95, "p95")):
        ratio, low, high = quantile_ratio_ci(mine, theirs, q=q) if len(mine) > 1 else (np.nan, np.nan, np.nan)
        out |= {f"memlab_ms_{name}": float(np.percentile(mine, q)) if len(mine) else np.nan,
                f"bare_ms_{name}": float(np.percentile(theirs, q)) if len(theirs) else np.nan,
                f"{name}_ratio": ratio, f"{name}_ratio_low": low, f"{name}_ratio_high": high}  # fmt: skip
    low, high = out["p50_ratio_low"], out["p50_ratio_high"]
    out["verdict"] = "met" if high <= GOAL else "missed" if low > GOAL else "within noise"
    return out


def probe_timing(folder: Path, config: dict[str, Any], store: str,
                 records: Sequence[dict[str, Any]]) -> tuple[dict[str, float], dict[str, Any]]:  # fmt: skip
    """`memlab probe --store STORE` on `records` (written as its labels) with `config` (written as its config),
    in a process of its own under this one's environment (the reader's DSN variable included). Returns
    bench.json's `table_store.probe.*` figures (its time per question and the bare statement's, both measured by
    the probe in its run: times taken minutes apart on a shared machine do not compare) and its manifest's
    timing."""
    folder.mkdir(parents=True, exist_ok=True)
    labels, cfg = folder / "labels.jsonl", folder / "probe.yaml"
    labels.write_text("".join(json.dumps(r) + "\n" for r in records))
    cfg.write_text(yaml.safe_dump(config))
    out = folder / "run"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memlab.cli", "probe", "--store", store, "--config", str(cfg),
                           "--labels", str(labels), "--out", str(out)], capture_output=True, text=True,
                          env=dict(os.environ), timeout=PROBE_TIMEOUT, check=False)  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise ConfigError(f"memlab probe --store {store} on the bench's table failed (exit {done.returncode}): "
                          f"{(done.stderr or done.stdout).strip()[-2000:]}")  # fmt: skip
    timing = json.loads((out / "manifest.json").read_text()).get("probe", {}).get("timing", {})
    figures = {f"table_store.probe.{name}": float(timing[name]) for name in PROBE_FIGURES if name in timing}
    figures["table_store.probe.questions"] = float(len(records))
    figures["table_store.probe.wall_seconds"] = seconds
    return figures, timing


__all__ = ["GOAL", "PATHS", "picked", "probe_timing", "summarize", "time_searches"]
