"""The erasure_writes family: no unit stored after an erasure that committed while a multi-batch add or a bulk
load ran, no guard bypassed by bulk_load, no secret reply in the query log."""

from __future__ import annotations

from memlab.lab.reliability.probes.erasure_writes import erasure_writes_family


def test_the_erasure_writes_family_finds_nothing(scratch_store, embedder, tmp_path):
    family = erasure_writes_family(scratch_store, embedder, tmp_path)
    assert family.figures["erasure_races"] == 3 and family.figures["bulk_cases"] == 3
    assert family.figures["query_log_cases"] == 4
    assert not family.failures(), family.found
    for figure in ("units_after_erasure", "bulk_guard_bypasses", "secrets_in_query_log"):
        assert family.figures[figure] == 0, family.found
