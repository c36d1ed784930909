"""The write and build benchmarks write what they say, where they say, with the index present or absent as
reported, and leave nothing behind. Rates are only checked to be positive (the machine is noisy)."""

from __future__ import annotations

import numpy as np
import pytest

from memlab import ConfigError
from memlab.lab.bench import bulk_write, hnsw_build
from memlab.lab.bench.bulk import BULK_LAYER, bench_model, bench_rows
from memlab.storage import units as sqlu


def _vectors(n: int, dim: int = 32) -> np.ndarray:
    rows = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _indexes(store, name: str) -> list[str]:
    with store.connection() as conn:
        return [r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE indexname = %s", [name])]


def test_bulk_write_both_methods_with_and_without_the_index(scratch_store):
    out = bulk_write(scratch_store, _vectors(3000), rows=3000, batch_rows=1000, executemany_rows=1200)
    assert sorted(zip(out["method"], out["index"], strict=True)) == [
        ("copy", "hnsw"), ("copy", "none"), ("executemany", "hnsw"), ("executemany", "none"),
    ]  # fmt: skip
    by = out.set_index(["method", "index"])
    assert by.loc[("copy", "none"), "rows"] == by.loc[("copy", "hnsw"), "rows"] == 3000
    assert by.loc[("executemany", "none"), "rows"] == by.loc[("executemany", "hnsw"), "rows"] == 1200
    assert (out["rows_written"] == out["rows"]).all()  # counted in the table, not taken from the writer
    assert list(out["index_present"]) == [i == "hnsw" for i in out["index"]]
    assert (out["rows_per_s"] > 0).all()
    # Nothing is left: no rows in the layer, no index.
    model = bench_model(scratch_store, 32)
    with scratch_store.connection() as conn:
        assert sqlu.count_layer(conn, model.model_id, BULK_LAYER) == 0
    assert _indexes(scratch_store, sqlu.index_name_for(model.model_id, BULK_LAYER)) == []


def test_bulk_write_leaves_other_layers_alone(scratch_store):
    """Cleaning the bench layer (before and after) deletes that layer only, even under the same app and model."""
    model = bench_model(scratch_store, 32)
    with scratch_store.transaction() as conn:
        sqlu.copy_rows(conn, bench_rows(model, "event", _vectors(5)))
    bulk_write(scratch_store, _vectors(1000), rows=1000, executemany_rows=1000)
    with scratch_store.connection() as conn:
        assert sqlu.count_layer(conn, model.model_id, "event") == 5


def test_bulk_write_refuses_more_rows_than_vectors(scratch_store):
    with pytest.raises(ValueError, match="only 10 vectors"):
        bulk_write(scratch_store, _vectors(10), rows=11)


def test_hnsw_build_sweeps_m_and_ef_construction_into_the_sql(scratch_store):
    out = hnsw_build(scratch_store, _vectors(2000), rows=2000, m=(8, 16), ef_construction=(32,))
    assert list(out["m"]) == [8, 16] and list(out["ef_construction"]) == [32, 32]
    assert list(out["indexdef_m"]) == [8, 16]  # read back from pg_indexes: the arguments reached CREATE INDEX
    assert list(out["indexdef_ef_construction"]) == [32, 32]
    assert (out["seconds"] > 0).all() and (out["index_bytes"] > 0).all()
    # Sized from 2,000 rows: the floor of 64MB, and one worker per core besides the leader (at most 7).
    assert (out["maintenance_work_mem"] == "64MB").all()
    assert out["graph_fits"].all()
    assert (
        out["max_parallel_maintenance_workers"] == sqlu.build_settings(2000, 32).max_parallel_maintenance_workers
    ).all()


def test_hnsw_build_records_given_settings_and_a_graph_that_does_not_fit(scratch_store):
    out = hnsw_build(scratch_store, _vectors(2500, dim=64), rows=2500, maintenance_work_mem="1MB", workers=0)
    row = out.iloc[0]
    assert row["maintenance_work_mem"] == "1MB" and row["max_parallel_maintenance_workers"] == 0
    assert not row["graph_fits"]  # pgvector's NOTICE was seen: the graph outgrew 1MB
    assert row["indexdef_m"] == 16 and row["indexdef_ef_construction"] == 64


def test_build_settings_size_memory_from_the_graph_and_honour_the_environment(monkeypatch):
    for name in (sqlu.BUILD_MEMORY_ENV, sqlu.BUILD_MEMORY_MAX_ENV, sqlu.BUILD_WORKERS_ENV):
        monkeypatch.delenv(name, raising=False)
    sized = sqlu.build_settings(100_000, 384)
    mb = sqlu.memory_mb(sized.maintenance_work_mem, source="test")
    assert sized.graph_bytes <= mb * 2**20 <= 1.31 * sized.graph_bytes + 2**20  # the estimate plus headroom
    assert sqlu.memory_mb(sqlu.build_settings(10**8, 384).maintenance_work_mem, source="test") <= sqlu.MAX_BUILD_MB
    monkeypatch.setenv(sqlu.BUILD_MEMORY_MAX_ENV, "256MB")
    assert sqlu.build_settings(10**6, 384).maintenance_work_mem == "256MB"
    monkeypatch.setenv(sqlu.BUILD_MEMORY_ENV, "2GB")
    monkeypatch.setenv(sqlu.BUILD_WORKERS_ENV, "3")
    assert sqlu.build_settings(10, 384) == sqlu.BuildSettings(
        rows=10, graph_bytes=sqlu.hnsw_graph_bytes(10, 384), maintenance_work_mem="2GB",
        max_parallel_maintenance_workers=3,
    )  # fmt: skip
    assert sqlu.build_settings(10, 384, maintenance_work_mem="96MB", workers=0).maintenance_work_mem == "96MB"
    monkeypatch.setenv(sqlu.BUILD_WORKERS_ENV, "many")
    with pytest.raises(ConfigError, match=sqlu.BUILD_WORKERS_ENV):
        sqlu.build_settings(10, 384)
    with pytest.raises(ConfigError, match="not a memory size"):
        sqlu.build_settings(10, 384, maintenance_work_mem="lots", workers=1)
