"""The model_safety reliability family, run directly: its own loopback servers trickle, flood, redirect, swap
models (chat, re-rank and embeddings), give unusable replies and hold replies and embeddings across an erasure, and
every must-be-zero figure is 0 (with the checks really run: a zero means something)."""

from __future__ import annotations

import time

from memlab.lab.reliability.probes.model_safety import FIGURES, model_safety_family


def test_model_safety_family_finds_every_must_be_zero_figure_at_zero(scratch_store, embedder, tmp_path):
    embedder.embed_query("warm up")  # the model's load is the run's, not the family's
    started = time.monotonic()
    family = model_safety_family(scratch_store, embedder, tmp_path)
    assert family.failures() == [], family.found
    assert set(family.must_be_zero) == set(FIGURES)
    for name in FIGURES:
        assert family.figures[name] == 0, family.found
    assert family.figures["deadline_calls"] == 12 and family.figures["body_calls"] == 12
    assert family.figures["redirect_calls"] >= 15 and family.figures["served_checks"] == 8
    assert family.figures["unusable_replies"] == 4 and family.figures["erasure_races"] == 2
    assert family.figures["vector_checks"] == 5 and family.figures["vector_erasure_races"] == 3
    assert time.monotonic() - started < 20, "each check is fast"
