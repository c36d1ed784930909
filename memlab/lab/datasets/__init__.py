"""Data sets: the questions-and-histories model, the loaders of every format (memlab JSONL, fixtures, synth, BEIR,
LoCoMo, LongMemEval, judged sets), judged query files and pools, and generated questions.
Modules here are internal; use the names below."""

from memlab.lab.datasets.checks import author_note, dataset_warnings, load_summary
from memlab.lab.datasets.formats.beir import load_beir
from memlab.lab.datasets.formats.fixtures import load_event_fixtures as load_fixtures
from memlab.lab.datasets.formats.fixtures import load_fixture_file
from memlab.lab.datasets.formats.jsonl import load_jsonl, write_jsonl
from memlab.lab.datasets.formats.judged import judged_summary, load_judged
from memlab.lab.datasets.formats.locomo import load_locomo
from memlab.lab.datasets.formats.longmemeval import extract_longmemeval, load_longmemeval
from memlab.lab.datasets.generated.by_model import model_questions
from memlab.lab.datasets.generated.templates import load_templates, template_questions
from memlab.lab.datasets.generated.written import is_generated_judgments, is_generated_pool, write_generated
from memlab.lab.datasets.judged.agreement import agreement as assessor_agreement
from memlab.lab.datasets.judged.judgments import Judgment, read_judgments
from memlab.lab.datasets.judged.pools import Pool, read_pool, write_pool
from memlab.lab.datasets.judged.queries import Query, read_queries
from memlab.lab.datasets.judged.sampling import (
    is_query_file,
    read_plain_queries,
    sample_logged_queries,
    write_query_file,
)
from memlab.lab.datasets.loaders import FORMATS, load_dataset
from memlab.lab.datasets.model import Dataset, Question, UserHistory
from memlab.lab.datasets.synth import generate as generate_synth

__all__ = [
    "FORMATS",
    "Dataset",
    "Judgment",
    "Pool",
    "Query",
    "Question",
    "UserHistory",
    "assessor_agreement",
    "author_note",
    "dataset_warnings",
    "extract_longmemeval",
    "generate_synth",
    "is_generated_judgments",
    "is_generated_pool",
    "is_query_file",
    "judged_summary",
    "load_beir",
    "load_dataset",
    "load_fixture_file",
    "load_fixtures",
    "load_jsonl",
    "load_judged",
    "load_locomo",
    "load_longmemeval",
    "load_summary",
    "load_templates",
    "model_questions",
    "read_judgments",
    "read_plain_queries",
    "read_pool",
    "read_queries",
    "sample_logged_queries",
    "template_questions",
    "write_generated",
    "write_jsonl",
    "write_pool",
    "write_query_file",
]
