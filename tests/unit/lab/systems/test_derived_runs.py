"""Derived runs (memlab.lab.systems.derived): the run loop asks the registry whether a planned entry is a run made from
its parent's saved run, and records the role its kind states; a cut-off is one such kind, with its rule and its
cut in memlab.lab.metrics.cutoffs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd
import pytest

from memlab import ConfigError, lab
from memlab.lab.experiment.run import counted_step, plan_systems
from memlab.lab.metrics.cutoffs import CutRun, cut
from memlab.lab.systems import derived
from memlab.lab.systems.derived import derivation, derived_kind, derived_kinds, role_of_derived

RUN = pd.DataFrame({
    "system": "p", "question_id": ["q1", "q1", "q2", "q3"], "rank": [1, 2, 1, 0], "unit_id": ["a", "b", "c", None],
    "event_ids": [["e1"], ["e2"], ["e3"], []], "distance": [0.2, 0.6, 0.7, float("nan")], "chars": [5, 5, 5, 0],
    "latency_ms": 1.0, "plan": "",
})  # fmt: skip


def test_a_cut_run_is_its_parents_run_cut_under_its_own_name_with_the_role_cut():
    run = CutRun("p@cut0.5", "p", 0.5)
    assert derivation(run) is run and derived_kinds()["cutoff"] is CutRun
    frame = run.derive(RUN)
    assert set(frame.system) == {"p@cut0.5"}
    kept = frame[frame["rank"] > 0]
    assert kept.unit_id.tolist() == ["a"], "hits beyond 0.5 are dropped"
    assert sorted(frame[frame["rank"] == 0].question_id) == ["q2", "q3"], "a question left with nothing keeps a row"
    pd.testing.assert_frame_equal(frame.drop(columns="system"), cut(RUN, 0.5).drop(columns="system"))
    assert role_of_derived(run, "cutoff") == lab.systems.SystemRole("cut", "cutoff", "p")
    assert run.describe() == {"kind": "cutoff", "parent": "p", "max_distance": 0.5}


def test_a_system_that_asks_is_not_derived_and_counts_as_a_step():
    system = lab.systems.EventSystem("plain")
    assert derivation(system) is None and counted_step(system)
    assert not counted_step(CutRun("plain@cut0.5", "plain", 0.5)), "a cut is no step of the progress line"


def test_the_plan_records_each_cut_with_the_sweep_and_its_parent_whatever_the_names():
    config = lab.parse_config({"name": "t", "datasets": [{"name": "d", "format": "synth"}],
                               "systems": [{"name": "faiss-exact-mine"}, {"name": "x@cut0.3"}], "sweeps": ["cutoff"],
                               "options": {"cutoff": {"systems": ["faiss-exact-mine"], "grid": [0.4, 0.8]}}})
    dataset = lab.Dataset("d", [], [])
    systems, roles = plan_systems(dataset, config, {"default": None})
    assert [s.name for s in systems] == ["faiss-exact-mine", "x@cut0.3", "faiss-exact-mine@cut0.4",
                                         "faiss-exact-mine@cut0.8"]  # fmt: skip
    assert roles["faiss-exact-mine"] == roles["x@cut0.3"] == lab.systems.SystemRole("main")
    assert roles["faiss-exact-mine@cut0.8"] == lab.systems.SystemRole("cut", "cutoff", "faiss-exact-mine")


def test_a_new_kind_of_derived_run_is_one_registered_class(monkeypatch):
    monkeypatch.setattr(derived, "_KINDS", derived_kinds())  # the registry as it was after the test
    @derived_kind
    @dataclass(frozen=True)
    class FirstHit:
        kind: ClassVar[str] = "first-hit-test"
        role_name: ClassVar[str] = "sweep"
        name: str
        parent: str

        def derive(self, parent: pd.DataFrame) -> pd.DataFrame:
            return parent[parent["rank"] <= 1].assign(system=self.name)

        def describe(self) -> dict[str, Any]:
            return {"kind": self.kind, "parent": self.parent}

    one = FirstHit("p/top1", "p")
    assert derivation(one) is one and not counted_step(one)
    assert one.derive(RUN).question_id.tolist() == ["q1", "q2", "q3"] and set(one.derive(RUN).system) == {"p/top1"}
    assert role_of_derived(one, "mine") == lab.systems.SystemRole("sweep", "mine", "p")
    with pytest.raises(ConfigError, match="taken by FirstHit"):
        derived_kind(type("Other", (), {"kind": "first-hit-test", "role_name": "cut"}))
    with pytest.raises(ConfigError, match="role_name"):
        derived_kind(type("Nameless", (), {"kind": "nameless", "role_name": "boss"}))
