"""`memlab bench`'s lexical part: lexical and hybrid search timed against vector search per user size, with
the lexical plan's rows per unit (flat when its cost is linear in the user's units)."""

from __future__ import annotations

import numpy as np

from memlab.lab.bench import lexical as lb
from memlab.lab.bench.markdown import lexical_section
from memlab.lab.reliability.probes.lexical import cheap_texts, random_vectors


def test_lexical_bench_times_every_mode_per_user_size_and_leaves_nothing(scratch_store, embedder):
    sizes, questions = (200, 800), ["w1 w7 w300", "what did w2 say about w40", "w2500 w9"]
    texts = cheap_texts(800, seed=3)
    vectors = random_vectors(800, embedder.dimension, seed=3)
    frame = lb.lexical_bench(scratch_store, embedder, texts, vectors, questions,
                             random_vectors(3, embedder.dimension, seed=4), sizes=sizes, k=5)  # fmt: skip
    assert len(frame) == len(sizes) * len(lb.MODES) * len(questions)
    assert (frame.latency_ms > 0).all() and (frame[frame["mode"] == "lexical"].returned > 0).all()
    summary = lb.summarize_lexical(frame).set_index("units")
    assert list(summary.index) == list(sizes)
    for figure in lb.SUMMARY_FIGURES:
        assert np.isfinite(summary[figure]).all(), figure
    rows = summary["lexical_plan_rows_per_unit"]
    assert rows[800] < 1.5 * rows[200], "plan rows per unit must stay flat as the user grows (linear cost)"
    assert scratch_store.delete_layer(lb.APP, lb.LAYER) == 0, "the bench leaves no rows behind"
    page = "\n".join(lexical_section(summary.reset_index()))
    assert "## Lexical and hybrid search per user size" in page and "lexical_vs_vector_p95" in page
