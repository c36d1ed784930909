"""The input-checks reliability family, run directly on a scratch database: every hostile input ends as a memlab
error or a counted skip, stores nothing and leaves every reader of the app working."""

from __future__ import annotations

from memlab.lab.reliability.probes import inputs_family


def test_the_input_checks_family_finds_no_hole(scratch_store, embedder, tmp_path):
    family = inputs_family(scratch_store, embedder, tmp_path)
    assert family.failures() == [], family.found
    figures = family.figures
    assert {"other_endings", "stored_after_refusal", "poisoned_users"} <= set(family.must_be_zero)
    assert figures["cases"] >= 100 and figures["memlab_errors"] > 0 and figures["counted_skips"] > 0
    assert figures["reads_checked"] >= figures["cases"]
    assert figures["adk_cases"] > 0 or figures["adk_skipped"] == 1
    assert len(figures["table"]) == figures["cases"]
