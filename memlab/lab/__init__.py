"""memlab.lab: the workbench. Data sets x systems -> runs -> scores -> report, driven by one config file.

    from memlab import lab
    config = lab.load_config("experiment.yaml")          # or lab.load_suite("ci")
    folder = lab.run_experiment(config, Path("reports/my-run"))
    scores = lab.RunFolder(folder).scores                 # dataset, system, metric, value, questions

The memory library (memlab) never imports this package; the CLI, the notebooks and the tests use these names."""

from memlab.lab import plots
from memlab.lab.config import ExperimentConfig, load_config, load_suite, parse_config, suite_names
from memlab.lab.dataset import Dataset, Question, UserHistory
from memlab.lab.experiment import (
    headline,
    is_finished,
    publish_latest,
    question_scores,
    run_experiment,
    run_systems,
    score_folder,
    write_report,
)
from memlab.lab.faiss_exact import FaissExact
from memlab.lab.fixtures import load_event_fixtures as load_fixtures
from memlab.lab.fixtures import load_fixture_file
from memlab.lab.folder import RunFolder
from memlab.lab.gate import compare, load_metrics, load_rules, regressions
from memlab.lab.jsonl import load_jsonl, write_jsonl
from memlab.lab.loaders import FORMATS, load_dataset
from memlab.lab.longmemeval import load_longmemeval
from memlab.lab.notebooks import render_notebooks
from memlab.lab.report import markdown_table
from memlab.lab.runs import Run, collect, load_runs
from memlab.lab.scoring import flat_metrics, long_scores, metric_key, score, summarize
from memlab.lab.sweeps import SWEEPS
from memlab.lab.synth import generate as generate_synth
from memlab.lab.systems import CutoffSystem, Env, EventSystem, FactSystem, FaissExactSystem, System

__all__ = [
    "FORMATS",
    "SWEEPS",
    "CutoffSystem",
    "Dataset",
    "Env",
    "EventSystem",
    "ExperimentConfig",
    "FactSystem",
    "FaissExact",
    "FaissExactSystem",
    "Question",
    "Run",
    "RunFolder",
    "System",
    "UserHistory",
    "collect",
    "compare",
    "flat_metrics",
    "generate_synth",
    "headline",
    "is_finished",
    "load_config",
    "load_dataset",
    "load_fixture_file",
    "load_fixtures",
    "load_jsonl",
    "load_longmemeval",
    "load_metrics",
    "load_rules",
    "load_runs",
    "load_suite",
    "long_scores",
    "markdown_table",
    "metric_key",
    "parse_config",
    "plots",
    "publish_latest",
    "question_scores",
    "regressions",
    "render_notebooks",
    "run_experiment",
    "run_systems",
    "score",
    "score_folder",
    "suite_names",
    "summarize",
    "write_jsonl",
    "write_report",
]
