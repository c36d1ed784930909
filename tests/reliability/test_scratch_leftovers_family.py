"""The scratch_leftovers family: scratch databases of SIGKILLed and SIGTERMed runs are gone after the next start,
a live run's is kept."""

from __future__ import annotations

from memlab.lab.reliability.probes.scratch_leftovers import scratch_leftovers_family


def test_dead_runs_leave_no_scratch_database_and_a_live_one_keeps_its_own(scratch_store, embedder, tmp_path):
    family = scratch_leftovers_family(scratch_store, embedder, tmp_path)
    assert family.figures["children"] == 3
    assert not family.failures(), family.found
    for figure in ("dead_scratch_kept", "live_scratch_dropped", "sigterm_scratch_left"):
        assert family.figures[figure] == 0, family.found
    assert family.seconds < 60, family.seconds
