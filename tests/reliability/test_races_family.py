"""The races reliability family, run directly: every erasure-vs-add race and the "currently" order hold, and the
cases were really run (a zero means something)."""

from __future__ import annotations

from memlab.lab.reliability.probes import races_family


def test_races_family_finds_no_resurrection_and_keeps_the_currently_order(scratch_store, embedder, tmp_path):
    family = races_family(scratch_store, embedder, tmp_path)
    assert family.failures() == [], family.found
    for name in family.must_be_zero:
        assert family.figures[name] == 0, family.found
    assert family.figures["event_races"] == 6 and family.figures["fact_races"] == 3
    assert family.figures["boost_cases"] == 12
