"""The gate_direction reliability family, run directly: every metric the definitions know and every key of the
committed baseline is judged the right way round, none is gated on a guess, and the cut-off advice says one thing
on hand-made runs; the cases were really run (a zero means something)."""

from __future__ import annotations

from memlab.lab.reliability.probes.gate_direction import CUTOFF_CASES, MUST_BE_ZERO, gate_direction_family


def test_gate_direction_family_finds_no_wrong_verdict_guess_or_contradicting_advice(tmp_path):
    family = gate_direction_family(None, None, tmp_path)  # pure: it uses no store or model
    assert family.failures() == [], family.found
    assert set(family.must_be_zero) == {"wrong_verdicts", "guessed_directions", "shadowed_definitions",
                                        "contradicting_cutoff_advice"} == set(MUST_BE_ZERO)  # fmt: skip
    for name in family.must_be_zero:
        assert family.figures[name] == 0, family.found
    assert family.figures["baseline_keys"] > 7000, "the committed baseline's keys were checked"
    assert family.figures["gated_keys"] > 4000 and family.figures["not_gated_keys"] > 0
    assert family.figures["cutoff_cases"] == len(CUTOFF_CASES) >= 5
