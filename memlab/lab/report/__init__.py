"""Reports: report.md/html and the per-question viewer, comparing two runs, exporting a run, the regression gate
against a baseline, and notebooks rendered into a run folder. Modules here are internal; use the names below."""

from memlab.lab.report.compare import Comparison, compare_runs, config_differences, write_comparison
from memlab.lab.report.export import docid as export_docid
from memlab.lab.report.export import export_run
from memlab.lab.report.gate import (
    check_same_experiment,
    compare,
    gate_markdown,
    gate_table,
    gated,
    gating,
    judge,
    load_metrics,
    load_questions,
    load_rules,
    metrics_experiment,
    read_baseline_file,
    regressions,
    ungated,
    write_baseline,
)
from memlab.lab.report.judged_lines import pool_lines as judged_pool_lines
from memlab.lab.report.notebooks import render_notebooks
from memlab.lab.report.viewer import question_hits, viewer_systems, write_html
from memlab.lab.report.writer import write_report

__all__ = [
    "Comparison",
    "check_same_experiment",
    "compare",
    "compare_runs",
    "config_differences",
    "export_docid",
    "export_run",
    "gate_markdown",
    "gate_table",
    "gated",
    "gating",
    "judge",
    "judged_pool_lines",
    "load_metrics",
    "load_questions",
    "load_rules",
    "metrics_experiment",
    "question_hits",
    "read_baseline_file",
    "regressions",
    "render_notebooks",
    "ungated",
    "viewer_systems",
    "write_baseline",
    "write_comparison",
    "write_html",
    "write_report",
]
