"""memlab.lab: the workbench. Data sets x systems -> runs -> scores -> report, driven by one config file.

    from memlab import lab
    config = lab.load_config("experiment.yaml")          # or lab.load_suite("ci")
    folder = lab.run_experiment(config, Path("reports/my-run"))
    scores = lab.RunFolder(folder).scores                 # dataset, system, metric, group, group_value, value, ...
    result = lab.run_reliability("reports/reliability", size="ci")   # memlab check reliability

The memory library (memlab) never imports this package; the CLI, the notebooks and the tests use these names."""

from memlab.lab import bench
from memlab.lab.base import outputs, plots
from memlab.lab.base.identity import is_relevant
from memlab.lab.base.tables import breakdown, format_cell, markdown_table
from memlab.lab.config.parse import ExperimentConfig, load_config, load_suite, parse_config, suite_names
from memlab.lab.datasets.checks import author_note, dataset_warnings, load_summary
from memlab.lab.datasets.formats.beir import load_beir
from memlab.lab.datasets.formats.fixtures import load_event_fixtures as load_fixtures
from memlab.lab.datasets.formats.fixtures import load_fixture_file
from memlab.lab.datasets.formats.jsonl import load_jsonl, write_jsonl
from memlab.lab.datasets.formats.judged import judged_summary, load_judged
from memlab.lab.datasets.formats.locomo import CATEGORIES as LOCOMO_CATEGORIES
from memlab.lab.datasets.formats.locomo import load_locomo
from memlab.lab.datasets.formats.locomo import parse_evidence as locomo_evidence
from memlab.lab.datasets.formats.locomo import parse_session_date as locomo_date
from memlab.lab.datasets.formats.longmemeval import load_longmemeval, longmemeval_type, summarize_longmemeval
from memlab.lab.datasets.generated.by_model import model_questions
from memlab.lab.datasets.generated.templates import QuestionTemplates, load_templates, template_questions
from memlab.lab.datasets.generated.written import Generation, is_generated_judgments, is_generated_pool, write_generated
from memlab.lab.datasets.judged.agreement import agreement as assessor_agreement
from memlab.lab.datasets.judged.judgments import Judgment, read_judgments
from memlab.lab.datasets.judged.origins import origin_lines
from memlab.lab.datasets.judged.pools import Pool, read_pool, write_pool
from memlab.lab.datasets.judged.queries import Query, read_queries
from memlab.lab.datasets.judged.sampling import (
    QuerySample,
    is_query_file,
    query_record,
    read_plain_queries,
    sample_logged_queries,
    write_query_file,
)
from memlab.lab.datasets.loaders import FORMATS, load_dataset
from memlab.lab.datasets.model import Dataset, Question, UserHistory
from memlab.lab.datasets.synth import generate as generate_synth
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
from memlab.lab.judging.model_assessor import model_judgments
from memlab.lab.judging.model_assessor import write_judgments as write_model_judgments
from memlab.lab.judging.page import page_data as judging_page_data
from memlab.lab.judging.page import write_judge_page
from memlab.lab.judging.pool import pool_queries
from memlab.lab.judging.widget import JudgeWidget, judge_widget
from memlab.lab.live import (
    Alert,
    AlertResult,
    IndexHealth,
    ProbeResult,
    distance_drift,
    evaluate_alerts,
    health_markdown,
    index_health,
    parse_alert,
    run_probe,
    write_textfile,
)
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
from memlab.lab.metrics.scoring import (
    flat_metrics,
    long_scores,
    score,
    session_recall,
    size_bucket,
    summarize,
)
from memlab.lab.metrics.uncertainty import (
    QuestionTable,
    bootstrap_ci,
    holm,
    intervals,
    paired_differences,
    paired_p,
    quantile_ratio_ci,
)
from memlab.lab.reliability import probes
from memlab.lab.reliability.run import FAMILY_NAMES as RELIABILITY_FAMILIES
from memlab.lab.reliability.run import SIZES as RELIABILITY_SIZES
from memlab.lab.reliability.run import reliability_markdown, run_reliability
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
from memlab.lab.runs.folder import RunFolder, load_runs
from memlab.lab.runs.format import FORMAT_VERSION
from memlab.lab.runs.records import RUN_COLUMNS, Run, collect
from memlab.lab.sweeps import SWEEPS, Sweep
from memlab.lab.systems.facts import run_fact_eval, summarize_facts
from memlab.lab.systems.faiss_exact import FaissExact
from memlab.lab.systems.kinds import Env, EventSystem, FactSystem, FaissExactSystem, System
from memlab.lab.systems.rerank import RerankSpec
from memlab.lab.systems.roles import SystemRole

__all__ = [
    "ALL_QUESTIONS",
    "ANSWERABLE",
    "FORMATS",
    "FORMAT_VERSION",
    "LOCOMO_CATEGORIES",
    "METRIC_DEFINITIONS",
    "NO_ANSWER",
    "RELIABILITY_FAMILIES",
    "RELIABILITY_SIZES",
    "RUN_COLUMNS",
    "SWEEPS",
    "Alert",
    "AlertResult",
    "Comparison",
    "CutRun",
    "CutoffAdvice",
    "Dataset",
    "Env",
    "EventSystem",
    "ExperimentConfig",
    "FactSystem",
    "FaissExact",
    "FaissExactSystem",
    "Generation",
    "IndexHealth",
    "IrMeasure",
    "JudgeWidget",
    "Judgment",
    "MetricDefinition",
    "Pool",
    "ProbeResult",
    "Query",
    "QuerySample",
    "Question",
    "QuestionResult",
    "QuestionTable",
    "QuestionTemplates",
    "RerankSpec",
    "Run",
    "RunFolder",
    "RunProgress",
    "ScoreKey",
    "ScoredHit",
    "Sweep",
    "System",
    "SystemRole",
    "UserHistory",
    "advise_cutoff",
    "answerability_calibration",
    "answerability_table",
    "assessor_agreement",
    "author_note",
    "bench",
    "bootstrap_ci",
    "breakdown",
    "check_same_experiment",
    "collect",
    "compare",
    "compare_runs",
    "config_differences",
    "cutoff_grid",
    "dataset_warnings",
    "default_run_folder",
    "distance_drift",
    "drift",
    "evaluate_alerts",
    "evaluate_answerability",
    "export_docid",
    "export_run",
    "fit_answerability",
    "flat_metrics",
    "format_cell",
    "gate_markdown",
    "gate_table",
    "gated",
    "gating",
    "generate_synth",
    "headline",
    "health_markdown",
    "holm",
    "index_health",
    "intervals",
    "is_finished",
    "is_generated_judgments",
    "is_generated_pool",
    "is_query_file",
    "is_relevant",
    "judge",
    "judge_widget",
    "judged_pool_lines",
    "judged_summary",
    "judging_page_data",
    "labelled_distances",
    "load_beir",
    "load_config",
    "load_dataset",
    "load_fixture_file",
    "load_fixtures",
    "load_jsonl",
    "load_judged",
    "load_locomo",
    "load_longmemeval",
    "load_metrics",
    "load_questions",
    "load_rules",
    "load_runs",
    "load_suite",
    "load_summary",
    "load_templates",
    "locomo_date",
    "locomo_evidence",
    "long_scores",
    "longmemeval_type",
    "markdown_table",
    "metric_definition",
    "metric_key",
    "metric_registry",
    "metrics_experiment",
    "model_judgments",
    "model_questions",
    "origin_lines",
    "outputs",
    "paired_differences",
    "paired_p",
    "parse_alert",
    "parse_config",
    "plots",
    "pool_queries",
    "probes",
    "publish_latest",
    "quantile_ratio_ci",
    "query_record",
    "question_hits",
    "question_scores",
    "read_baseline_file",
    "read_judgments",
    "read_plain_queries",
    "read_pool",
    "read_queries",
    "recommend",
    "register_metric",
    "registered_metrics",
    "regressions",
    "reliability_markdown",
    "render_notebooks",
    "run_experiment",
    "run_fact_eval",
    "run_probe",
    "run_reliability",
    "run_systems",
    "sample_logged_queries",
    "score",
    "score_folder",
    "session_recall",
    "size_bucket",
    "suite_names",
    "summarize",
    "summarize_facts",
    "summarize_longmemeval",
    "template_questions",
    "ungated",
    "unregister_metric",
    "viewer_systems",
    "write_baseline",
    "write_comparison",
    "write_generated",
    "write_html",
    "write_jsonl",
    "write_judge_page",
    "write_model_judgments",
    "write_pool",
    "write_query_file",
    "write_report",
    "write_textfile",
]
