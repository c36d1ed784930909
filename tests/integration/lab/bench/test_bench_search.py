"""The search bench at small scale on the real embedded PostgreSQL, real embeddings and FAISS: exact search is
exact in every bucket, the table is reloaded (not stacked) from one size to the next, the fixed user is there at
every size, and the summaries are ordered as percentiles must be."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from memlab.lab.bench import corpora, search
from memlab.lab.bench import markdown as bench_markdown
from memlab.storage import units as sqlu

SIZES = (2_000, 3_000)


@pytest.fixture(scope="module")
def frames(embedder, store):
    """search_bench at two sizes on one scratch database (module scope: the load is the slow part)."""
    import memlab

    texts = [t for t in corpora.real_texts(6000) if len(t) <= 140][:300]  # test_bench_corpora embeds these too
    real = corpora.embedded(embedder, texts, name="test-bench-real")
    vectors = corpora.corpus("real", max(SIZES), real)
    queries = corpora.embedded(embedder, corpora.real_questions(3), name="test-search-questions")
    out = []
    with memlab.scratch_store(store, prefix="bench_search") as db:
        for size in SIZES:
            out.append(search.search_bench(db, embedder, vectors[:size], queries, total_rows=size, corpus_name="real",
                                           background_tenants=20))  # fmt: skip
        model = db.register_model(embedder.model_id, embedder.dimension)
        with db.connection() as conn:
            names = [sqlu.tenant_index_name(model.model_id, "bench:search:real", search.APP, t)
                     for t in set(out[-1].tenant)]  # fmt: skip
            kept = [n for n in names if sqlu.index_exists(conn, n)]
        assert not kept, "search_bench drops the per-tenant indexes it built"
        left = search.clear(db, model.model_id)
    return out, left


def test_layout_shares_and_rows():
    tenants = search.layout(10_000, 4_000, background_tenants=30)
    by = {t.bucket: t for t in tenants if t.bucket != "background"}
    assert {k: v.size for k, v in by.items()} == {"fixed-50": 50, "0.01%": 1, "0.1%": 10, "1%": 100, "10%": 1000}
    assert sum(t.size for t in tenants) == 10_000
    np.testing.assert_array_equal(by["fixed-50"].rows, np.arange(50))
    drawn = np.concatenate([t.rows for t in tenants if t.bucket != "fixed-50"])
    assert drawn.min() >= 50 and len(np.unique(drawn[:3_950])) == 3_950, "no repeat before the corpus runs out"
    with pytest.raises(ValueError):
        search.layout(50, 4_000)


def test_exact_is_exact_in_every_bucket_and_every_cell_is_there(frames):
    (small, big), _ = frames
    for frame in (small, big):
        exact = frame[frame.strategy == "exact"].groupby("bucket").recall.mean()
        assert set(exact.index) == {"fixed-50", "0.01%", "0.1%", "1%", "10%"}
        assert (exact == 1.0).all(), exact
        assert (frame[frame.strategy == "exact"].returned == frame[frame.strategy == "exact"].expected).all()
        assert set(frame.strategy) == set(search.STRATEGIES)
        assert set(frame[frame.strategy == "partial"].bucket) == {"1%", "10%"}, "partial index only at >= 1%"
        assert frame.groupby(["bucket", "strategy"]).size().eq(3).all(), "three queries per cell"
        auto = frame[frame.strategy == "auto"]
        assert auto.plan.notna().all()
        assert (auto[auto.plan == "exact"].recall == 1.0).all(), "auto's exact scans are exact"
        assert (frame.latency_ms > 0).all() and frame.recall.between(0, 1).all()
        assert frame.attrs["index_s"] > 0 and frame.attrs["copy_s"] > 0


def test_tables_are_reloaded_not_stacked(frames):
    (small, big), left = frames
    assert set(small.rows_total) == {2_000} and set(big.rows_total) == {3_000}
    assert left == 3_000, "the second load replaced the first; clear() then deleted exactly that table"
    assert big[big.bucket == "10%"].tenant_rows.iloc[0] == 300


def test_summary_percentiles_and_scaling_curve(frames):
    (small, big), _ = frames
    frame = pd.concat([small, big], ignore_index=True)
    summary = search.summarize_search(frame)
    assert (summary.latency_ms_p50 <= summary.latency_ms_p95).all()
    assert (summary.latency_ms_p95 <= summary.latency_ms_p99).all()
    assert len(summary) == frame.groupby(["rows_total", "corpus", "bucket", "strategy"]).ngroups
    curve = search.scaling_curve(frame)
    assert set(curve.strategy) == set(search.STRATEGIES) - {"partial"}
    sizes = curve.groupby("strategy").rows_total.apply(tuple)
    assert all(s == SIZES for s in sizes), f"the fixed user at every size: {sizes}"
    assert (curve[curve.strategy == "exact"].recall == 1.0).all()
    # the span of the fixed user's auto searches at one size is its block's latencies summed (the HNSW walks take
    # their turns in a block of their own after them); only auto re-reads
    fixed = frame[frame.bucket == search.FIXED_USER]
    walking = fixed.strategy.isin(search.SHARED_WALKS)
    assert set(fixed[walking].block) == {"walks"} and set(fixed[~walking].block) == {"turns"}
    for (corpus, rows), span in curve.groupby(["corpus", "rows_total"]).spanned_s.first().items():
        mine = fixed[(fixed.corpus == corpus) & (fixed.rows_total == rows) & (fixed.block == "turns")]
        assert span == pytest.approx(mine.latency_ms.sum() / 1000)
    assert (curve[curve.strategy != "auto"].count_rereads == 0).all()
    assert (curve.count_rereads <= curve.queries).all()
    md = "\n".join(bench_markdown.rereads_text(curve))
    assert "re-read" in md and f"{SIZES[0]:,} rows" in md


def test_the_fixed_users_plan_is_captured_at_every_size(frames):
    (small, big), _ = frames
    for frame in (small, big):
        plan = frame.attrs["fixed_explain"]
        assert plan["strategy"] == "auto" and plan["access_path"] == "scope_index", plan["access_path"]
        assert "Planning Time" in plan["plan"] and "Execution Time" in plan["plan"]
        assert plan["planning_ms"] > 0 and plan["execution_ms"] > 0
        assert plan["shared_hit"] + plan["shared_read"] > 0, "a search reads the user's pages"
