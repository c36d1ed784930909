"""The gate's verdicts as a JUnit XML file, which every CI system shows as tests: one test case per gated metric,
a failure for each regression, an ungated key as a skipped case (no definition says which way is better)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from memlab.lab.base.tables import format_cell
from memlab.lab.report.gate import UNGATED


def gate_junit(table: pd.DataFrame, *, name: str = "memlab gate") -> str:
    """The JUnit XML of a gate table (memlab.lab.report.gate.gate_table): the suite `name`, a case per metric key
    named by the key, classed by its data set and system."""
    regressions = table.verdict.astype(str).str.startswith("regression")
    skipped = table.verdict == UNGATED
    suite = ET.Element("testsuite", name=name, tests=str(len(table)), failures=str(int(regressions.sum())),
                       errors="0", skipped=str(int(skipped.sum())))  # fmt: skip
    for row, failed, ungated in zip(table.itertuples(index=False), regressions, skipped, strict=True):
        key = str(row.metric)
        case = ET.SubElement(suite, "testcase", name=key, classname="/".join(key.split("/")[:2]))
        detail = (f"baseline {format_cell(row.baseline)}, run {format_cell(row.run)}, "
                  f"change {format_cell(row.change)}, tolerance {format_cell(row.tolerance)}, "
                  f"{row.better} is better: {row.verdict}")  # fmt: skip
        if failed:
            ET.SubElement(case, "failure", message=str(row.verdict), type="regression").text = detail
        elif ungated:
            ET.SubElement(case, "skipped", message="no metric definition says which way is better")
        else:
            ET.SubElement(case, "system-out").text = detail
    ET.indent(suite)
    return ET.tostring(ET.ElementTree(suite).getroot(), encoding="unicode", xml_declaration=True) + "\n"


def write_junit(table: pd.DataFrame, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(gate_junit(table))
    return path


__all__ = ["gate_junit", "write_junit"]
