"""Metrics: the metric registry, scoring saved runs, intervals and paired tests, the cut-off rule and distance
analysis, the answerability gate's fit. Modules here are internal; use the names below."""

from memlab.lab.metrics.answerability import calibration as answerability_calibration
from memlab.lab.metrics.answerability import evaluate as evaluate_answerability
from memlab.lab.metrics.answerability import fit as fit_answerability
from memlab.lab.metrics.answerability import question_table as answerability_table
from memlab.lab.metrics.cutoffs import CutoffAdvice, CutRun, cutoff_grid, recommend
from memlab.lab.metrics.cutoffs import advise as advise_cutoff
from memlab.lab.metrics.definitions import ALL as ALL_QUESTIONS
from memlab.lab.metrics.definitions import ANSWERABLE, NO_ANSWER, MetricDefinition
from memlab.lab.metrics.definitions import DEFINITIONS as METRIC_DEFINITIONS
from memlab.lab.metrics.definitions import definition_of as metric_definition
from memlab.lab.metrics.definitions import definitions as metric_registry
from memlab.lab.metrics.definitions import register as register_metric
from memlab.lab.metrics.definitions import registered as registered_metrics
from memlab.lab.metrics.definitions import unregister as unregister_metric
from memlab.lab.metrics.distances import drift, labelled_distances
from memlab.lab.metrics.keys import ScoreKey, metric_key
from memlab.lab.metrics.per_question import IrMeasure, QuestionResult, ScoredHit
from memlab.lab.metrics.scoring import flat_metrics, long_scores, score, session_recall, summarize
from memlab.lab.metrics.uncertainty import (
    QuestionTable,
    bootstrap_ci,
    holm,
    intervals,
    paired_differences,
    paired_p,
    quantile_ratio_ci,
)

__all__ = [
    "ALL_QUESTIONS",
    "ANSWERABLE",
    "METRIC_DEFINITIONS",
    "NO_ANSWER",
    "CutRun",
    "CutoffAdvice",
    "IrMeasure",
    "MetricDefinition",
    "QuestionResult",
    "QuestionTable",
    "ScoreKey",
    "ScoredHit",
    "advise_cutoff",
    "answerability_calibration",
    "answerability_table",
    "bootstrap_ci",
    "cutoff_grid",
    "drift",
    "evaluate_answerability",
    "fit_answerability",
    "flat_metrics",
    "holm",
    "intervals",
    "labelled_distances",
    "long_scores",
    "metric_definition",
    "metric_key",
    "metric_registry",
    "paired_differences",
    "paired_p",
    "quantile_ratio_ci",
    "recommend",
    "register_metric",
    "registered_metrics",
    "score",
    "session_recall",
    "summarize",
    "unregister_metric",
]
