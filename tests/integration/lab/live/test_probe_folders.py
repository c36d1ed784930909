"""The folders family of `memlab check reliability` run on its own: every must-be-zero figure is zero, and each
kind of case was checked (so the zeros mean something)."""

from __future__ import annotations

from memlab.lab.reliability.probes import folders_family


def test_folders_family_finds_nothing_and_checks_every_kind(store, embedder, tmp_path):
    family = folders_family(store, embedder, tmp_path)
    assert not family.failures(), family.found
    assert {k: family.figures[k] for k in family.must_be_zero} == dict.fromkeys(family.must_be_zero, 0)
    assert {"user_files_lost", "silent_collisions", "escaped_writes", "unbounded_configs"} <= set(family.must_be_zero)
    for cases in ("folders_checked", "memlab_folders_checked", "collision_cases", "distinct_name_cases",
                  "bomb_configs", "ordinary_anchor_cases", "escape_names", "bad_values"):
        assert family.figures.get(cases, 0) > 0, cases
    assert family.figures["folders_checked"] >= 30 and family.figures["bomb_configs"] >= 7
