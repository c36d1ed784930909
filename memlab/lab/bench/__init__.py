"""memlab bench: ingest vs the model, search latency and recall per strategy and tenant size at 10k to 1M rows
on corpora that look like real memory, the scaling curve, lexical and hybrid search against vector per user size,
search while sessions are written, search from concurrent clients, FAISS against the memory bandwidth, bulk writes
and HNSW builds, and `memlab eval` on a user's own pgvector table at 100,000 rows (table_store). `run_bench` runs
them all (what `memlab bench` calls); each bench's run, summary and section are public for notebooks. Modules here
are internal (corpus and hardware helpers included); use the names below."""

from __future__ import annotations

from memlab.lab.bench.bulk import bulk_write, hnsw_build
from memlab.lab.bench.concurrency import (
    CONCURRENCY_SIZES,
    ConcurrencySize,
    concurrency_bench,
    concurrency_section,
    summarize_concurrency,
)
from memlab.lab.bench.corpora import corpus
from memlab.lab.bench.ingest_sets import ingest_set
from memlab.lab.bench.lexical import lexical_bench, summarize_lexical
from memlab.lab.bench.run import (
    PARTS,
    SIZES,
    BenchSize,
    auto_goal,
    bench_parts,
    calibrate,
    latency_verdict,
    run_bench,
)
from memlab.lab.bench.search import STRATEGIES, scaling_curve, search_bench, summarize_search
from memlab.lab.bench.streaming import (
    STREAMING_SIZES,
    StreamingRun,
    StreamingSize,
    streaming_bench,
    streaming_section,
    summarize_streaming,
)
from memlab.lab.bench.table_store import TABLE_SIZES, TableSize, table_store_bench
from memlab.lab.systems.ingest_timing import (
    BENCH_APP,
    STAGES,
    IngestBench,
    measure_batch_sizes,
    measure_ingest,
    model_threads,
)

__all__ = [
    "BENCH_APP",
    "CONCURRENCY_SIZES",
    "PARTS",
    "SIZES",
    "STAGES",
    "STRATEGIES",
    "STREAMING_SIZES",
    "TABLE_SIZES",
    "BenchSize",
    "ConcurrencySize",
    "IngestBench",
    "StreamingRun",
    "StreamingSize",
    "TableSize",
    "auto_goal",
    "bench_parts",
    "bulk_write",
    "calibrate",
    "concurrency_bench",
    "concurrency_section",
    "corpus",
    "hnsw_build",
    "ingest_set",
    "latency_verdict",
    "lexical_bench",
    "measure_batch_sizes",
    "measure_ingest",
    "model_threads",
    "run_bench",
    "scaling_curve",
    "search_bench",
    "streaming_bench",
    "streaming_section",
    "summarize_concurrency",
    "summarize_lexical",
    "summarize_search",
    "summarize_streaming",
    "table_store_bench",
]
