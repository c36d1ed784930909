"""Markdown tables in report.md and bench.md: counts as integers, rates to three decimals, nothing as a repr."""

from __future__ import annotations

import numpy as np
import pandas as pd

from memlab import lab
from memlab.lab.base import markdown_table


def _cells(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def test_counts_print_as_integers_and_rates_keep_three_decimals():
    frame = pd.DataFrame({
        "batch_units": [64, 256, 1024],  # an int column
        "questions": [12.0, 53.0, 71.0],  # counts that became floats in a pivot
        "recall": [1.0, 0.0, 0.25],  # a rate that happens to be whole
        "rows_per_s": [19_600.4, 526.25, 12.0],  # big figures lose their decimals, small ones keep three
        "system": ["a", "b", None],
    })  # fmt: skip
    rows = _cells(markdown_table(frame))
    assert rows[0] == ["64", "12", "1.000", "19,600", "a"]
    assert rows[1] == ["256", "53", "0.000", "526", "b"]
    assert rows[2] == ["1024", "71", "0.250", "12.000", ""]


def test_missing_values_and_numpy_scalars():
    frame = pd.DataFrame({"n": pd.array([1, None], dtype="Int64"), "x": [np.nan, 0.5], "ok": [True, False]})
    rows = _cells(markdown_table(frame))
    assert rows == [["1", "", "true"], ["", "0.500", "false"]]


def test_memory_size_buckets_are_in_size_order():
    scores = pd.DataFrame([
        {"dataset": "d", "system": "s", "metric": "recall@10", "group": "size", "group_value": b, "value": v,
         "questions": 3}
        for b, v in ((">2000", 0.1), ("51-500", 0.5), ("<=50", 0.9), ("501-2000", 0.3))
    ])  # fmt: skip
    assert list(lab.base.breakdown(scores, ["s"], "recall@10", "size").columns) == [
        "system", "<=50", "51-500", "501-2000", ">2000"
    ]  # fmt: skip
