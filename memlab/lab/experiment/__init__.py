"""The main workflow: config -> data sets -> systems -> runs -> scores -> report, in one run folder, with one
progress line. Modules here are internal; use the names below."""

from memlab.lab.experiment.checking import DatasetCheck, check_datasets
from memlab.lab.experiment.progress import RunProgress
from memlab.lab.experiment.run import (
    default_run_folder,
    headline,
    is_finished,
    publish_latest,
    question_scores,
    run_experiment,
    run_systems,
    score_folder,
)

__all__ = [
    "DatasetCheck",
    "RunProgress",
    "check_datasets",
    "default_run_folder",
    "headline",
    "is_finished",
    "publish_latest",
    "question_scores",
    "run_experiment",
    "run_systems",
    "score_folder",
]
