"""memlab.lab: the workbench. Data sets x systems -> runs -> scores -> report, driven by one config file.

    from memlab import lab
    config = lab.load_config("experiment.yaml")          # or lab.load_suite("ci")
    folder = lab.run_experiment(config, Path("reports/my-run"))
    scores = lab.RunFolder(folder).scores                 # dataset, system, metric, group, group_value, value, ...
    result = lab.run_reliability("reports/reliability", size="ci")   # memlab check reliability

Here are the entry points a notebook starts from, and each stage of the workbench as a package with a small face
of its own (`lab.datasets`, `lab.metrics`, `lab.report`, ...; each stage's `__all__`). Modules below a stage
package are internal. The memory library (memlab) never imports this package."""

from memlab.lab import (
    base,
    bench,
    config,
    datasets,
    experiment,
    judging,
    live,
    llama,
    metrics,
    reliability,
    report,
    runs,
    sweeps,
    systems,
)
from memlab.lab.base import is_relevant
from memlab.lab.config import ExperimentConfig, load_config, load_suite, parse_config
from memlab.lab.datasets import (
    Dataset,
    Question,
    generate_synth,
    load_dataset,
    load_fixture_file,
    load_fixtures,
    load_jsonl,
)
from memlab.lab.experiment import run_experiment, score_folder
from memlab.lab.live import run_probe
from memlab.lab.reliability import run_reliability
from memlab.lab.report import compare_runs, question_hits, write_report
from memlab.lab.runs import RunFolder
from memlab.lab.sweeps import SWEEPS
from memlab.lab.systems import FaissExact

__all__ = [
    "SWEEPS",
    "Dataset",
    "ExperimentConfig",
    "FaissExact",
    "Question",
    "RunFolder",
    "base",
    "bench",
    "compare_runs",
    "config",
    "datasets",
    "experiment",
    "generate_synth",
    "is_relevant",
    "judging",
    "live",
    "llama",
    "load_config",
    "load_dataset",
    "load_fixture_file",
    "load_fixtures",
    "load_jsonl",
    "load_suite",
    "metrics",
    "parse_config",
    "question_hits",
    "reliability",
    "report",
    "run_experiment",
    "run_probe",
    "run_reliability",
    "runs",
    "score_folder",
    "sweeps",
    "systems",
    "write_report",
]
