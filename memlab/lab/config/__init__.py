"""Experiment configs: one YAML file (or a built-in suite) naming data sets, embedders, systems, sweeps and k,
checked before anything runs. Modules here are internal; use the names below."""

from memlab.lab.config.parse import ExperimentConfig, load_config, load_suite, parse_config, suite_names

__all__ = ["ExperimentConfig", "load_config", "load_suite", "parse_config", "suite_names"]
