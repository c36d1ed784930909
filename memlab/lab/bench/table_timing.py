"""What memlab adds to a search of a user's table: its per-question search (a table system over TableStore.search,
as `memlab eval` and a probe ask it) against the same SELECT with the same settings on a plain psycopg connection.

Both get the question's vector embedded beforehand (the model costs the same either way) and run the statement in
a transaction of their own: memlab's read-only transaction from its pool, with its timeouts and the search's
settings SET LOCAL, the statement, its rows made hits; the bare path BEGIN, the search's settings SET LOCAL (none
for an exact search), the statement with its parameters already bound, COMMIT. A third path, `guarded`, is the
bare one with memlab's guard: the read-only check and the timeouts SET LOCAL beside the settings, the one round
trip memlab adds to an exact search; what memlab takes beyond it is Python (pool, statement, hits). None prepares
the statement (memlab never does, so the plans compare). The paths take turns question by question, their order
rotating, after one untimed pass that warms the caches. Each question's time is its median over the rounds;
the ratios are of the medians (and p95s) over the questions, with a bootstrap interval over the questions."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import psycopg
from pgvector.psycopg import register_vector

from memlab.embedding.base import Embedder
from memlab.lab.datasets.model import Question
from memlab.lab.metrics.uncertainty import quantile_ratio_ci
from memlab.lab.systems.table import TableHandle, TableSystem
from memlab.table_store import ReadOnlyLimits, open_table

GOAL = 1.5  # memlab's time per question at most this times the bare statement's
GUARD = ReadOnlyLimits(max_qps=None)  # the timeouts memlab sets in each transaction (the guarded path sets them too)
FIGURES = ("memlab_ms_p50", "bare_ms_p50", "guarded_ms_p50", "p50_ratio", "p50_ratio_low", "p50_ratio_high",
           "guard_ratio", "memlab_ms_p95", "bare_ms_p95", "p95_ratio", "p95_ratio_low", "p95_ratio_high",
           "same_results")  # fmt: skip


PATHS = ("memlab", "bare", "guarded")


def _bare(conn: psycopg.Connection, statement: str, params: dict, knobs: list[tuple[str, str]],
          guard: bool = False) -> list[str]:  # fmt: skip
    """The SELECT as an application runs it: its own transaction with the settings SET LOCAL (with `guard`,
    memlab's read-only check and timeouts too); the event ids."""
    with conn.transaction():
        if guard:
            knobs = [*GUARD.settings(), *knobs]
        if knobs or guard:
            check = "current_setting('transaction_read_only'), " if guard else ""
            conn.execute("SELECT " + check + ", ".join("set_config(%s, %s, true)" for _ in knobs),
                         [v for kv in knobs for v in kv])  # fmt: skip
        rows = conn.execute(statement, params).fetchall()
    return [str(r[0]) for r in rows]


def time_searches(reader_dsn: str, app: str, embedder: Embedder, records: Sequence[dict[str, Any]],
                  systems: Sequence[TableSystem], *, questions: int, rounds: int,
                  k: int = 10, seed: int = 0) -> tuple[pd.DataFrame, dict[str, float]]:  # fmt: skip
    """Per system: memlab's time per question over the bare statement's on `questions` of `records` (JSONL
    question records: user, text), drawn with `seed`, each searched `rounds` times both ways. Returns the
    summary table and bench.json's `table_store.timing.<system>.*` figures."""
    picked = random.Random(seed).sample(list(records), min(questions, len(records)))
    vectors = [np.asarray(embedder.embed_query(r["text"]), dtype=np.float32) for r in picked]
    asked = [Question(id=r["id"], app_name=app, user_id=r["user"], text=r["text"], relevant=()) for r in picked]
    rows, figures = [], {}
    table = open_table(reader_dsn, "agent-memory", model=embedder.model_id, limits=ReadOnlyLimits(max_qps=None))
    try:
        handle = TableHandle(table, prefix="")
        with psycopg.connect(reader_dsn, prepare_threshold=None) as bare:
            register_vector(bare)  # the query vector goes as pgvector's binary form, as memlab sends it
            for system in systems:
                settings = system.search_settings()
                bound = []
                for q, v in zip(asked, vectors, strict=True):
                    statement, params, knobs = table.search_statement(app, q.user_id, v, k=k, **settings)
                    bound.append((statement.as_string(bare), params, knobs))
                took = np.zeros((len(PATHS), len(asked), rounds))
                same = 0
                for r in range(-1, rounds):  # round -1 warms every path, untimed
                    for i, (q, v) in enumerate(zip(asked, vectors, strict=True)):
                        ids: dict[int, list[str]] = {}
                        for step in range(len(PATHS)):
                            which = (r + i + step) % len(PATHS)
                            started = time.perf_counter()
                            if which == 0:
                                ids[which] = system.search(handle, q, v, k).unit_ids
                            else:
                                ids[which] = _bare(bare, *bound[i], guard=which == 2)
                            if r >= 0:
                                took[which, i, r] = (time.perf_counter() - started) * 1000
                        same += int(r == 0 and ids[0] == ids[1] == ids[2])
                mine, theirs, guarded = np.median(took, axis=2)
                row = summarize(system.name, mine, theirs)
                row["guarded_ms_p50"] = float(np.percentile(guarded, 50)) if len(guarded) else float("nan")
                row["guard_ratio"] = row["guarded_ms_p50"] / row["bare_ms_p50"] if len(guarded) else float("nan")
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
    """Medians and p95s of per-question times (ms) both ways, their ratios with 95% bootstrap intervals, and
    whether the p50 ratio meets GOAL (`met`, `missed`, or `within noise` when the interval holds it)."""
    out: dict[str, Any] = {"system": system}
    for q, name in ((50, "p50"), (95, "p95")):
        ratio, low, high = quantile_ratio_ci(mine, theirs, q=q) if len(mine) > 1 else (np.nan, np.nan, np.nan)
        out |= {f"memlab_ms_{name}": float(np.percentile(mine, q)) if len(mine) else np.nan,
                f"bare_ms_{name}": float(np.percentile(theirs, q)) if len(theirs) else np.nan,
                f"{name}_ratio": ratio, f"{name}_ratio_low": low, f"{name}_ratio_high": high}  # fmt: skip
    low, high = out["p50_ratio_low"], out["p50_ratio_high"]
    out["verdict"] = "met" if high <= GOAL else "missed" if low > GOAL else "within noise"
    return out


__all__ = ["GOAL", "PATHS", "summarize", "time_searches"]
