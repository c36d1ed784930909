"""Search while writing on the real embedded PostgreSQL, the real model and FAISS, at a tiny size: no reader sees
part of a session (and the check can fail), every written memory is found under each strategy within the poll
bound, recall during the writes is measured, the keys bench.json needs are there, and nothing written is left.
No timing is asserted (the machine is noisy)."""

from __future__ import annotations

import pandas as pd
import pytest

from memlab.lab.bench import (
    StreamingRun,
    StreamingSize,
    corpus,
    search_bench,
    streaming_bench,
    streaming_section,
    summarize_streaming,
)
from memlab.lab.bench.corpora import embedded, real_questions, real_texts
from memlab.lab.bench.streaming import half_written

ROWS = 2_000
TINY = StreamingSize("test", clients=2, quiet_seconds=1.0, sessions=6, rate=4.0, events=3, partial_seed_rows=60,
                     max_polls=200, max_poll_seconds=5.0, max_write_seconds=120.0)  # fmt: skip
KEYS = ["streaming.quiet.p95_ms", "streaming.writing.p95_ms", "streaming.p95_vs_quiet", "streaming.recall_vs_quiet",
        "streaming.quiet.recall", "streaming.writing.recall", "streaming.half_written", "streaming.checks",
        "streaming.write_rate", "streaming.write_rate_target",
        *(f"streaming.visible_ms.{s}.{q}" for s in ("exact", "hnsw", "partial")
          for q in ("p50", "p95", "max"))]  # fmt: skip


@pytest.fixture(scope="module")
def streamed(embedder, store):
    """search_bench loads a 2,000-row table (exact only: the table is what matters), then the streaming run."""
    import memlab

    texts = [t for t in real_texts(6000) if len(t) <= 140][:300]  # test_bench_search embeds the same texts
    vectors = corpus("real", ROWS, embedded(embedder, texts, name="test-bench-real"))
    queries = embedded(embedder, real_questions(3), name="test-search-questions")
    with memlab.scratch_store(store, prefix="bench_stream") as db:
        search_bench(db, embedder, vectors, queries, total_rows=ROWS, corpus_name="real", strategies=("exact",),
                     background_tenants=20)  # fmt: skip
        with pytest.raises(ValueError, match="run search_bench with the same arguments"):
            streaming_bench(db, embedder, vectors, queries, total_rows=3_000, background_tenants=20, size=TINY)
        run = streaming_bench(db, embedder, vectors, queries, total_rows=ROWS, background_tenants=20, size=TINY)
        memory = memlab.EventMemory(db, embedder, layer="bench:search:real")
        left = {user: memory.count("memlab-bench", user) for user in set(run.writes.user)}
        with db.connection() as conn:
            found = conn.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'memlab_tenant%'")
            indexes = [r[0] for r in found]
    return run, left, indexes


def test_no_reader_sees_half_a_session_and_the_checks_really_ran(streamed):
    run, _, _ = streamed
    _, results = summarize_streaming(run)
    assert results["streaming.half_written"] == 0
    checks = run.checks
    assert results["streaming.checks"] == len(checks) > 0 and results["streaming.checks.writing"] > 0
    assert set(checks.kind) == {"count", "search"}
    assert {"exact", "hnsw", "partial"} <= set(checks[checks.phase == "writing"].strategy)
    # Both states were seen: a session not written yet (before the writes) and whole ones.
    assert results["streaming.checks.absent"] > 0 and results["streaming.checks.whole"] > 0
    assert (run.writes.added == run.writes.units).all() and (run.writes.units == TINY.events).all()


def test_every_written_memory_became_visible_under_each_strategy(streamed):
    run, _, _ = streamed
    writes = run.writes
    assert len(writes) == TINY.sessions
    assert writes.groupby("strategy").size().to_dict() == {"exact": 2, "hnsw": 2, "partial": 2}
    assert writes.found.all(), writes
    assert (writes.polls >= 1).all() and (writes.polls <= TINY.max_polls).all()
    assert (writes[writes.strategy == "partial"].user == "stream-partial").all()
    assert run.meta["plans"]["partial"].startswith("index:memlab_tenant_"), run.meta["plans"]
    _, results = summarize_streaming(run)
    for strategy in ("exact", "hnsw", "partial"):
        assert results[f"streaming.visible.{strategy}.found"] == 1.0
        assert results[f"streaming.visible_ms.{strategy}.p50"] <= results[f"streaming.visible_ms.{strategy}.max"]


def test_recall_and_latency_quiet_and_during_writes(streamed):
    run, _, _ = streamed
    table, results = summarize_streaming(run)
    missing = [k for k in KEYS if k not in results]
    assert not missing, missing
    searches = run.searches
    assert set(searches.phase) == {"quiet", "writing"} and set(searches[searches.phase == "quiet"].part) == {
        "before", "after"}  # fmt: skip
    assert set(searches.strategy) == {"auto", "hnsw-relaxed"} and searches.recall.between(0, 1).all()
    assert (searches.latency_ms > 0).all()
    by = table.set_index(["phase", "strategy"])
    assert by.loc[("writing", "all"), "searches"] == (searches.phase == "writing").sum() > 0
    assert results["streaming.writing.recall"] == pytest.approx(searches[searches.phase == "writing"].recall.mean())
    assert results["streaming.recall_vs_quiet"] == pytest.approx(
        results["streaming.writing.recall"] / results["streaming.quiet.recall"])  # fmt: skip
    assert (searches[(searches.strategy == "auto") & (searches.plan == "exact")].recall == 1.0).all()
    lines = "\n".join(streaming_section(table, results))
    assert "## Search while writing" in lines and "Half-written sessions seen: **0**" in lines


def test_nothing_written_is_left(streamed):
    _, left, indexes = streamed
    assert left and set(left.values()) == {0}, left
    assert indexes == [], "the partial user's index went with forget_user"


def test_the_half_written_check_flags_part_of_a_session():
    assert half_written([0, 0, 4, 4], 4) == 0
    assert half_written([0, 1, 3, 4], 4) == 2
    assert half_written([5], 4) == 1  # more than the session: not whole either
    # A run whose checker saw 2 of a session's 3 units reports it.
    checks = pd.DataFrame([
        {"phase": "writing", "session": "s", "strategy": "exact", "kind": "count", "seen": seen, "units": 3,
         "partial": half_written([seen], 3) > 0} for seen in (0, 2, 3)])  # fmt: skip
    run = StreamingRun(pd.DataFrame(), pd.DataFrame(), checks, {"strategies": []})
    _, results = summarize_streaming(run)
    assert results["streaming.half_written"] == 1 and results["streaming.checks"] == 3
