"""Small shared helpers of the workbench: where memlab may write, score tables as text, which event a hit means.
Modules here are internal (plots, bounded readers, redacted writes, sizes, hardware); use the names below."""

from memlab.lab.base.identity import is_relevant
from memlab.lab.base.outputs import BENCH as BENCH_FOLDER
from memlab.lab.base.outputs import RELIABILITY as RELIABILITY_FOLDER
from memlab.lab.base.outputs import RUN as RUN_FOLDER
from memlab.lab.base.outputs import claim_file, claim_folder, folder_kind, is_gate_file
from memlab.lab.base.tables import breakdown, format_cell, markdown_table, pivot_scores

__all__ = [
    "BENCH_FOLDER",
    "RELIABILITY_FOLDER",
    "RUN_FOLDER",
    "breakdown",
    "claim_file",
    "claim_folder",
    "folder_kind",
    "format_cell",
    "is_gate_file",
    "is_relevant",
    "markdown_table",
    "pivot_scores",
]
