"""The labels sweep end to end on the event fixtures with three cheap systems (one memory build shared by vector
and lexical search, one of chunks): pools, recall on pooled vs full labels, tau, tests, leave-one-out, report."""

from __future__ import annotations

import pytest

from memlab import ConfigError, lab
from tests.conftest import EVENT_FIXTURES
from tests.support.scores import labelled

SYSTEMS = ["event", "text/lexical", "chunk4o1"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory, memlab_home, store):
    config = lab.parse_config({
        "name": "labels", "k": 5,
        "datasets": [{"name": "fixtures", "format": "fixtures", "path": str(EVENT_FIXTURES)}],
        "sweeps": ["labels"],
        "options": {"labels": {"systems": SYSTEMS, "depths": [2, 5], "pool_sizes": [2, 3], "loo_depth": 5}},
    })  # fmt: skip
    out = tmp_path_factory.mktemp("labels") / "run"
    lab.run_experiment(config, out, home=memlab_home)
    return lab.RunFolder(out)


def _value(folder, system: str, metric: str) -> float:
    s = labelled(folder.scores)
    return float(s[(s.dataset == "fixtures") & (s.system == system) & (s.metric == metric)].value.iloc[0])


def test_the_sweep_runs_its_systems_deep_enough_for_the_largest_pool(folder):
    deep = folder.table("labels", "fixtures")
    assert set(deep.system) == set(SYSTEMS)
    assert deep["rank"].max() == 5, "depth 5 = k here; the largest depth decides how deep each system is asked"


def test_a_bigger_pool_captures_more_gold_and_pooled_systems_are_not_scored_lower(folder):
    capture = {p: _value(folder, "labels", f"pool_capture[pool={p}]") for p in ("d2n2", "d2n3", "d5n2", "d5n3")}
    assert 0 < capture["d2n2"] <= capture["d2n3"] <= capture["d5n3"] <= 1
    assert capture["d2n2"] <= capture["d5n2"] <= capture["d5n3"]
    for system in ("event", "text/lexical"):  # pooled at depth k: every gold event in their top k was judged
        assert _value(folder, system, "pooled_recall@5[pool=d5n2]") >= _value(folder, system, "recall@5") - 1e-9
    tau = _value(folder, "labels", "pool_tau[pool=d5n3]")
    assert -1 <= tau <= 1
    assert 0 <= _value(folder, "labels", "pool_tests_agree[pool=d5n3]") <= 1


def test_leave_one_out_compares_each_system_with_its_full_labels(folder):
    for system in SYSTEMS:
        without = _value(folder, system, "loo_recall@5")
        assert _value(folder, system, "loo_bias") == pytest.approx(without - _value(folder, system, "recall@5"))


def test_the_report_section_says_how_far_to_trust_the_labels_with_the_measured_numbers(folder):
    report = (folder.path / "report.md").read_text()
    assert "How far to trust each source of labels" in report
    capture = _value(folder, "labels", "pool_capture[pool=d5n3]")
    assert f"Pool `d5n3` (3 systems, depth 5: event, text/lexical, chunk4o1) holds {capture:.0%}" in report
    assert "Left out of the pool" in report


def test_bad_labels_options_are_refused_before_any_work():
    base = {"name": "x", "datasets": [{"name": "d", "format": "fixtures", "path": str(EVENT_FIXTURES)}],
            "sweeps": ["labels"]}  # fmt: skip
    for options, message in (({"depths": [0]}, "depths"), ({"pool_sizes": "3"}, "pool_sizes"),
                             ({"systems": ["event"]}, "at least 2"), ({"deph": [5]}, "deph")):  # fmt: skip
        with pytest.raises(ConfigError, match=message):
            lab.parse_config({**base, "options": {"labels": options}})


def test_generated_questions_are_answered_by_the_same_systems_and_compared_with_the_own_ones(folder):
    made = folder.table("labels-generated-questions", "fixtures")
    assert made is not None and len(made) > 0, "the fixtures' sessions hold facts the templates turn into questions"
    assert set(folder.table("labels-generated", "fixtures").system) == set(SYSTEMS)
    report = (folder.path / "report.md").read_text()
    for system in SYSTEMS:
        generated = _value(folder, system, "generated_recall@5")
        assert 0 <= generated <= 1
        own = _value(folder, system, "recall@5")
        assert f"| {system} | {own:.3f} | {generated:.3f} | {generated - own:.3f} |" in report
    assert "Generated questions: recall@5 is" in report
