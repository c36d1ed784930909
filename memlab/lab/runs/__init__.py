"""Runs: asking a system every question, the run (each question's ranked hits) and the run folder it is saved in,
with its versioned format. Modules here are internal; use the names below."""

from memlab.lab.runs.folder import RunFolder, load_runs
from memlab.lab.runs.format import FORMAT_VERSION
from memlab.lab.runs.records import RUN_COLUMNS, Run, collect

__all__ = ["FORMAT_VERSION", "RUN_COLUMNS", "Run", "RunFolder", "collect", "load_runs"]
