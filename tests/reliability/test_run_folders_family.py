"""The run_folders reliability family, run directly: a probe's folder holds no unlabelled memory, every plan
label is the plan that ran, lost labels are counted and alerted, a failed probe's textfile says it failed, the
redactor survives odd DSNs and keeps data set ids; and the cases were really run (a zero means something)."""

from __future__ import annotations

from memlab.lab.reliability.probes.run_folders import MUST_BE_ZERO, UNLABELLED, run_folders_family


def test_run_folders_family_finds_nothing(scratch_store, embedder, tmp_path):
    family = run_folders_family(scratch_store, embedder, tmp_path)
    assert family.failures() == [], family.found
    for name in MUST_BE_ZERO:
        assert family.figures[name] == 0, family.found
    assert family.figures["memories_checked"] == 2 * 2 * UNLABELLED  # two folders, two users each
    assert family.figures["plans_checked"] >= 8 and family.figures["hnsw_plans_seen"] == 1
    assert family.figures["lost_labels_checked"] == 3 and family.figures["failures_checked"] == 2
    assert family.figures["dsns_checked"] >= 300 and family.figures["ids_checked"] >= 200
