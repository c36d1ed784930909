"""Index health of a user's own pgvector table, read-only: each vector index (kind, operator class and so the
distance it serves, build parameters, size against the table, validity), the rows no search can find (a NULL
embedding, or another dimension than the query's), and per labelled user the plan of the probed system's search:
whether it walked the index or scanned the user's rows exactly.

Everything comes from the catalog (memlab.table_store.catalog), one count of the table's rows by dimension
(`TableStore.count_rows`, bounded by statement_timeout) and EXPLAIN (ANALYZE, BUFFERS) of one search per user (a
SELECT, in the search's own read-only transaction), all on the table's read-only, rate-limited connection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from memlab.lab.datasets.model import Question
from memlab.lab.systems.table import TableSystem
from memlab.table_store import TableStore
from memlab.table_store.store import EXACT_BELOW

TABLES = ("probe_table_indexes", "probe_table_rows", "probe_table_users")
EXPLAIN_KIND = "EXPLAIN (ANALYZE, BUFFERS) of the probed system's search, one per user, with its first question"
INDEX_COLUMNS = ["index", "method", "opclass", "distance", "params", "partial", "cast", "valid", "index_bytes",
                 "table_bytes", "ratio", "scans"]  # fmt: skip
ROW_COLUMNS = ["rows", "estimated_rows", "null_embeddings", "other_dimension", "dimension", "dimensions"]
USER_COLUMNS = ["app", "user", "rows", "strategy", "index", "index_used", "access", "scans_exactly", "planning_ms",
                "execution_ms", "shared_hit", "shared_read"]  # fmt: skip
SHOWN_USERS = 10  # users named in one warning (all of them are in the users table)

_SIZES = ("SELECT pg_table_size(c.oid), coalesce(s.idx_scan, 0), s.indexrelname FROM pg_class c "
          "JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_stat_all_indexes s ON s.relid = c.oid "
          "WHERE n.nspname = %s AND c.relname = %s")  # fmt: skip


@dataclass
class TableHealth:
    """What `table_health` found: `indexes`, `rows` (one row of counts), `users` (one row per labelled user) and
    `warnings` (one line each: the problem and its fix), for the probed `system`'s `distance`."""

    table: str
    system: str
    distance: str
    indexes: pd.DataFrame
    rows: pd.DataFrame
    users: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    explain: str = EXPLAIN_KIND

    def meta(self) -> dict[str, Any]:
        """What the report's section says beside its tables (kept in the probe's manifest)."""
        return {"table": self.table, "system": self.system, "distance": self.distance, "explain": self.explain,
                "warnings": list(self.warnings),
                "exact_users": [f"{a}/{u}" for a, u, exact in zip(self.users.app, self.users.user,
                                                                  self.users.scans_exactly, strict=True) if exact]}

    def tables(self) -> dict[str, pd.DataFrame]:
        return dict(zip(TABLES, (self.indexes, self.rows, self.users), strict=True))


def _sizes(table: TableStore) -> tuple[int, dict[str, int]]:
    """The table's size (heap and TOAST, without indexes) and each of its indexes' scans so far."""
    catalog = table.catalog
    with table.connection.work() as work:
        found = work.execute(_SIZES, [catalog.schema, catalog.table]).fetchall()
    size = int(found[0][0]) if found and found[0][0] is not None else 0
    return size, {str(name): int(scans) for _, scans, name in found if name is not None}


def _indexes(table: TableStore, table_bytes: int, scans: Mapping[str, int]) -> pd.DataFrame:
    rows = [{"index": i.name, "method": i.method, "opclass": i.opclass, "distance": i.distance,
             "params": ", ".join(f"{k}={v}" for k, v in sorted(i.params.items())), "partial": i.predicate is not None,
             "cast": i.cast or "", "valid": i.valid, "index_bytes": int(i.size_bytes or 0), "table_bytes": table_bytes,
             "ratio": (i.size_bytes or 0) / table_bytes if table_bytes else float("nan"),
             "scans": scans.get(i.name, 0)} for i in table.catalog.indexes]  # fmt: skip
    return pd.DataFrame(rows, columns=INDEX_COLUMNS)


def _rows(table: TableStore) -> pd.DataFrame:
    catalog = table.count_rows()
    dims = ", ".join(f"{d}: {n}" for d, n in sorted((catalog.dimensions or {}).items()))
    return pd.DataFrame([{"rows": catalog.rows, "estimated_rows": catalog.estimated_rows,
                          "null_embeddings": catalog.null_embeddings, "other_dimension": catalog.other_dimension,
                          "dimension": catalog.dimension, "dimensions": dims}], columns=ROW_COLUMNS)  # fmt: skip


def _users(table: TableStore, system: TableSystem, questions: Sequence[Question], vectors: Mapping[str, np.ndarray],
           k: int) -> pd.DataFrame:  # fmt: skip
    """Per labelled user (with a question asked): rows, and the plan of the system's search of their first
    question."""
    first: dict[tuple[str, str], Question] = {}
    for q in questions:
        first.setdefault((q.app_name, q.user_id), q)
    counts: dict[str, dict[str, int]] = {}
    out = []
    for (app, user), q in sorted(first.items()):
        rows = counts.setdefault(app, table.users(app)).get(user, 0)
        plan = table.explain(app, user, vectors[q.id], k=system.k or k, **system.search_settings())
        out.append({"app": app, "user": user, "rows": rows, "strategy": plan.strategy, "index": plan.index or "",
                    "index_used": plan.index_used, "access": plan.access, "scans_exactly": not plan.index_used,
                    "planning_ms": plan.planning_ms, "execution_ms": plan.execution_ms,
                    "shared_hit": plan.shared_hit, "shared_read": plan.shared_read})  # fmt: skip
    return pd.DataFrame(out, columns=USER_COLUMNS)


def _named(users: pd.DataFrame) -> str:
    names = [f"{a}/{u} ({n} rows)" for a, u, n in zip(users.app, users.user, users.rows, strict=True)]
    more = f" and {len(names) - SHOWN_USERS} more" if len(names) > SHOWN_USERS else ""
    return ", ".join(names[:SHOWN_USERS]) + more


def _warnings(table: TableStore, system: TableSystem, distance: str, rows: pd.DataFrame,
              users: pd.DataFrame) -> list[str]:  # fmt: skip
    catalog = table.catalog
    out = []
    column = table.layout.columns.embedding
    if catalog.index_for(distance) is None:
        served = sorted({i.distance for i in catalog.indexes if i.distance and i.serves(i.distance)})
        out.append(f"no valid vector index of {catalog.qualified} serves {distance} distance (indexes serve: "
                   f"{', '.join(served) or 'none'}), so every search by it scans the user's rows. Fix: the table's "
                   f"owner builds one (CREATE INDEX ... USING hnsw ({column} vector_{_ops(distance)}_ops)); memlab "
                   "never creates one")  # fmt: skip
    for index in catalog.indexes:
        if not index.valid:
            out.append(f"index {index.name} is invalid (a failed or unfinished build): the planner cannot use it. "
                       f"Fix: the table's owner rebuilds it (REINDEX INDEX CONCURRENTLY {index.name})")  # fmt: skip
        elif index.predicate is not None:
            out.append(f"index {index.name} is partial (WHERE {index.predicate}): a search of every row cannot use "
                       "it")  # fmt: skip
    counted = rows.iloc[0]
    if counted.null_embeddings:
        out.append(f"{int(counted.null_embeddings)} of {int(counted.rows)} rows have a NULL {column}: no search can "
                   "find them (written before their vector, or a failed embedding call). Fix: embed them")
    if counted.other_dimension:
        out.append(f"{int(counted.other_dimension)} rows have embeddings of another dimension than "
                   f"{counted.dimension} ({counted.dimensions}): a query of {counted.dimension} dimensions is never "
                   "compared with them. Fix: re-embed them with the table's model")  # fmt: skip
    exact = users[users.scans_exactly.astype(bool)]
    if system.strategy in ("hnsw", "ivfflat") and len(exact):
        out.append(f"strategy {system.strategy} was asked for, but the plan scanned the rows of {len(exact)} of "
                   f"{len(users)} users exactly: {_named(exact)}. The planner found the scan cheaper, or no index "
                   f"serves {distance} distance")  # fmt: skip
    elif system.strategy == "auto" and len(exact):
        big = exact[exact.rows > EXACT_BELOW]
        if len(big):
            out.append(f"`auto` scanned the rows of {len(big)} users of more than {EXACT_BELOW} rows exactly (no "
                       f"index serves {distance} distance, or the planner found the scan cheaper): {_named(big)}")
    return out


def _ops(distance: str) -> str:
    return {"cosine": "cosine", "l2": "l2", "inner_product": "ip", "l1": "l1"}[distance]


def table_health(table: TableStore, system: TableSystem, questions: Sequence[Question],
                 vectors: Mapping[str, np.ndarray], k: int) -> TableHealth:  # fmt: skip
    """The index health of `table` for the probed `system`, over the users of `questions` (`vectors`: each
    question's query vector, by question id). Read-only (see the module docstring)."""
    distance = system.distance or table.catalog.default_distance
    table_bytes, scans = _sizes(table)
    rows = _rows(table)
    users = _users(table, system, questions, vectors, k)
    indexes = _indexes(table, table_bytes, scans)
    return TableHealth(table.catalog.qualified, system.name, distance, indexes, rows, users,
                       _warnings(table, system, distance, rows, users))  # fmt: skip


__all__ = ["TABLES", "TableHealth", "table_health"]
