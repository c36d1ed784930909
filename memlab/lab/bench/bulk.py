"""Write and index-build costs at scale: binary COPY against row-by-row INSERT, each with and without the
HNSW index in place, and HNSW build time per (m, ef_construction).

Both run in a dedicated layer of a bench model (`memlab-bench-<dim>d`) under the bench app, emptied before
and after (index dropped, rows deleted, table vacuumed), so they neither see nor leave other rows' graphs.
Numbers are rates, to be compared as ratios measured side by side.

The one workbench module that writes unit rows with `memlab.storage.units` itself: what it measures is the
table's own writers (COPY against the row-by-row INSERT kept for this comparison, each with the index in place)
and `create_vector_index`'s build settings, which no EventMemory call exposes (`EventMemory.bulk_load`, the
public bulk path, always drops the index first).
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from memlab.events.units import Unit
from memlab.storage import units as sqlu
from memlab.storage.schema import ModelInfo
from memlab.storage.store import Store

BENCH_APP = "memlab-bench"
BULK_LAYER = "bench:bulk"
BUILD_LAYER = "bench:build"
USERS = 100  # rows are spread over this many users, as a multi-tenant table is
_T0 = datetime(2026, 1, 1, tzinfo=UTC)


def bench_model(store: Store, dimension: int) -> ModelInfo:
    """The model id bench rows are stored under: one per dimension, never a real embedder's."""
    return store.register_model(f"memlab-bench-{dimension}d", dimension)


def _vectors(vectors: np.ndarray, rows: int) -> np.ndarray:
    """The first `rows` vectors; distinct vectors are needed (pgvector folds exact duplicates into one graph
    node, which would make indexed writes look cheaper than they are)."""
    data = np.asarray(vectors, dtype=np.float32)
    if data.ndim != 2:
        raise ValueError(f"vectors must be 2-d (rows x dimension), got shape {data.shape}")
    if rows <= 0 or rows > len(data):
        raise ValueError(f"rows={rows} needs 1 to {len(data)} rows: only {len(data)} vectors were given")
    return data[:rows]


def bench_rows(model: ModelInfo, layer: str, vectors: np.ndarray, start: int = 0) -> list[tuple]:
    """`copy_rows` rows for these vectors: unit `u<i>` of user `user-<i mod USERS>`, numbered from `start`."""
    rows = []
    for offset, vector in enumerate(vectors):
        i = start + offset
        scope = sqlu.Scope(BENCH_APP, f"user-{i % USERS}", layer, model)
        unit = Unit("s0", f"u{i}", (f"u{i}",), "user", _T0 + timedelta(seconds=i), f"bench row {i}")
        rows.append(sqlu.unit_row(scope, unit, vector))
    return rows


def clean_layer(store: Store, model: ModelInfo, layer: str) -> None:
    """Drop the layer's index, delete its rows and vacuum, so the next measurement starts from an empty layer
    on a table without dead rows."""
    store.drop_vector_index(model.model_id, layer)
    store.delete_layer(BENCH_APP, layer)
    store.vacuum()


def _index_listed(store: Store, name: str) -> bool:
    with store.connection() as conn:
        return bool(conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = %s", [name]).fetchone()[0])


def _layer_rows(store: Store, model: ModelInfo, layer: str) -> int:
    with store.connection() as conn:
        return sqlu.count_layer(conn, model.model_id, layer)


_WRITERS = {"copy": sqlu.copy_rows, "executemany": sqlu.insert_rows}


def bulk_write(
    store: Store,
    vectors: np.ndarray,
    *,
    rows: int,
    batch_rows: int = 5000,
    executemany_rows: int | None = None,
    layer: str = BULK_LAYER,
) -> pd.DataFrame:
    """Rows per second written by binary COPY (`copy_rows`, what ingest uses) and by `executemany` INSERT
    (`insert_rows`), each into an empty layer with no HNSW index and with the layer's index already built
    (every row then pays its graph insert), one transaction per `batch_rows`.

    COPY writes `rows` rows; executemany only `executemany_rows` (default a tenth of `rows`, at least 1,000),
    so compare `rows_per_s`, not seconds. One row per (method, index): method, index ('none' / 'hnsw'),
    rows, rows_written (counted in the table afterwards), seconds, rows_per_s, batch_rows, index_present
    (the index listed in pg_indexes when the writes ended)."""
    data = _vectors(vectors, rows)
    slow_rows = min(rows, executemany_rows or max(1000, rows // 10))
    model = bench_model(store, data.shape[1])
    name = sqlu.index_name_for(model.model_id, layer)
    out = []
    clean_layer(store, model, layer)
    try:
        for method, n in (("copy", rows), ("executemany", slow_rows)):
            prepared = bench_rows(model, layer, data[:n])
            for indexed in (False, True):
                if indexed:
                    store.ensure_vector_index(model.model_id, layer)  # on the empty layer: instant
                started = time.perf_counter()
                for i in range(0, n, batch_rows):
                    with store.transaction() as conn:
                        _WRITERS[method](conn, prepared[i : i + batch_rows])
                seconds = time.perf_counter() - started
                out.append(
                    {
                        "method": method,
                        "index": "hnsw" if indexed else "none",
                        "rows": n,
                        "rows_written": _layer_rows(store, model, layer),
                        "seconds": seconds,
                        "rows_per_s": n / seconds,
                        "batch_rows": batch_rows,
                        "index_present": _index_listed(store, name),
                    }
                )
                clean_layer(store, model, layer)
    finally:
        clean_layer(store, model, layer)
    return pd.DataFrame(out)


def _index_facts(store: Store, name: str) -> tuple[int, str]:
    """(bytes on disk, definition) of an index."""
    with store.connection() as conn:
        size, definition = conn.execute(
            "SELECT pg_relation_size(to_regclass(%s)), indexdef FROM pg_indexes WHERE indexname = %s", [name, name]
        ).fetchone()
    return int(size), str(definition)


def load_layer(store: Store, vectors: np.ndarray, *, rows: int, layer: str, batch_rows: int = 5000) -> ModelInfo:
    """Empty `layer`, then COPY `rows` of `vectors` into it with no index (the fast way) and ANALYZE."""
    data = _vectors(vectors, rows)
    model = bench_model(store, data.shape[1])
    clean_layer(store, model, layer)
    for i in range(0, rows, batch_rows):
        with store.transaction() as conn:
            sqlu.copy_rows(conn, bench_rows(model, layer, data[i : i + batch_rows], start=i))
    store.analyze()
    return model


def hnsw_build(
    store: Store,
    vectors: np.ndarray,
    *,
    rows: int,
    m: tuple[int, ...] = (16,),
    ef_construction: tuple[int, ...] = (64,),
    maintenance_work_mem: str | None = None,
    workers: int | None = None,
    layer: str = BUILD_LAYER,
) -> pd.DataFrame:
    """Seconds to build the layer's HNSW index over `rows` rows, once per (m, ef_construction), through
    `units.create_vector_index` (what `Store.ensure_vector_index` runs), with its memory and worker settings
    sized from the rows unless given.

    One row per build: m, ef_construction, rows, seconds (the row count that sizes the build included),
    rows_per_s, maintenance_work_mem and max_parallel_maintenance_workers (read back inside the build's
    transaction), graph_bytes_estimate, graph_fits (pgvector did not report the graph outgrowing
    maintenance_work_mem), index_bytes, and indexdef_m / indexdef_ef_construction parsed from pg_indexes
    (the parameters really reached the SQL)."""
    model = load_layer(store, vectors, rows=rows, layer=layer)
    name = sqlu.index_name_for(model.model_id, layer)
    out = []
    try:
        for m_value in m:
            for efc in ef_construction:
                store.drop_vector_index(model.model_id, layer)
                notices: list[str] = []
                with store.transaction() as conn:

                    def keep(diag, notices=notices) -> None:
                        notices.append(diag.message_primary or "")

                    conn.add_notice_handler(keep)
                    try:
                        started = time.perf_counter()
                        settings = sqlu.create_vector_index(
                            conn,
                            model,
                            layer,
                            m=m_value,
                            ef_construction=efc,
                            maintenance_work_mem=maintenance_work_mem,
                            workers=workers,
                        )
                        seconds = time.perf_counter() - started
                        memory, parallel = conn.execute(
                            "SELECT current_setting('maintenance_work_mem'), "
                            "current_setting('max_parallel_maintenance_workers')"
                        ).fetchone()
                    finally:
                        conn.remove_notice_handler(keep)
                size, definition = _index_facts(store, name)
                out.append(
                    {
                        "m": m_value,
                        "ef_construction": efc,
                        "rows": rows,
                        "seconds": seconds,
                        "rows_per_s": rows / seconds,
                        "maintenance_work_mem": memory,
                        "max_parallel_maintenance_workers": int(parallel),
                        "graph_bytes_estimate": settings.graph_bytes if settings else None,
                        "graph_fits": not any("no longer fits" in n for n in notices),
                        "index_bytes": size,
                        "indexdef_m": _option(definition, "m"),
                        "indexdef_ef_construction": _option(definition, "ef_construction"),
                    }
                )
    finally:
        clean_layer(store, model, layer)
    return pd.DataFrame(out)


def _option(definition: str, key: str) -> int | None:
    """An index option's value in a pg_indexes definition: `WITH (m='16', ef_construction='64')`."""
    found = re.search(rf"\b{key}\s*=\s*'?(\d+)'?", definition)
    return int(found.group(1)) if found else None
