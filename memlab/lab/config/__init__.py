"""Experiment configs: one YAML file (or a built-in suite) naming data sets, embedders, systems, sweeps and k,
checked before anything runs. Modules here are internal; use the names below."""

from memlab.lab.config.parse import ExperimentConfig, load_config, load_suite, parse_config, suite_names
from memlab.lab.config.stores import only_store, store_sessions

__all__ = [
    "ExperimentConfig",
    "load_config",
    "load_suite",
    "only_store",
    "parse_config",
    "store_sessions",
    "suite_names",
]
