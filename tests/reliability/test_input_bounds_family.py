"""The input_bounds family of `memlab check reliability` run on its own: labels pointing outside the data in every
format, judgments in every order, configs past their bounds and nesting past the bound in every reader; every
must-be-zero figure is zero, each kind of case ran (so the zeros mean something), and it takes seconds."""

from __future__ import annotations

import time

from memlab.lab.reliability.probes.input_bounds import input_bounds_family


def test_input_bounds_family_finds_nothing_and_checks_every_kind(store, embedder, tmp_path):
    started = time.perf_counter()
    family = input_bounds_family(store, embedder, tmp_path)
    assert time.perf_counter() - started < 30, "a few seconds"
    assert not family.failures(), family.found
    zero = ["silently_dropped_labels", "order_dependent_verdicts", "unbounded_expansions", "tracebacks"]
    assert set(zero) <= set(family.must_be_zero)
    assert {k: family.figures[k] for k in family.must_be_zero} == dict.fromkeys(family.must_be_zero, 0)
    assert family.figures["label_cases"] >= 12 and family.figures["order_sets"] >= 4
    assert family.figures["judgment_orders"] >= 100 and family.figures["bound_cases"] >= 20
    assert family.figures["nesting_cases"] >= 30 and family.figures["ordinary_configs"] >= 5
    assert sum(1 for _ in (tmp_path / "input_bounds").rglob("*.json*")) > 20  # its files are written under `work`
