"""A config's expanded size (data sets x systems and sweep grid points) is counted from the lengths of its lists
before anything is expanded, and a config past the bound is refused with the count, the limit and how to split
it; every number that sizes work (concurrency, retries, timeouts, depths, grids, rows) has an upper bound."""

from __future__ import annotations

import time
import tracemalloc

import pytest
import yaml
from typer.testing import CliRunner

from memlab import ConfigError, lab
from memlab.cli import app
from memlab.lab.config.expansion import MAX_RUNS, planned_runs
from memlab.lab.config.parse import SUITES_DIR
from memlab.lab.experiment.run import systems_for

CI = yaml.safe_load((SUITES_DIR / "ci.yaml").read_text())
SYNTH = {"name": "s", "format": "synth", "users": 4, "max_events": 40}


def big_config() -> dict:
    """About 10 KB of YAML: 1,000 caps x 1,000 authors x the renderings and modes is 8 million systems."""
    return {"name": "big", "datasets": [SYNTH], "sweeps": ["retrieval"],
            "options": {"retrieval": {"per_session": list(range(1, 1001)),
                                      "authors": [f"a{i}" for i in range(1000)]}}}  # fmt: skip


def test_a_config_that_expands_to_millions_of_systems_is_refused_before_expanding(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(big_config(), default_flow_style=True, width=10**6))
    tracemalloc.start()
    started = time.perf_counter()
    try:
        result = CliRunner().invoke(app, ["eval", "--config", str(path), "--out", str(tmp_path / "o")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 30 and peak < 100 * 2**20, "counted, not built"
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and "Traceback" not in result.output, result.output
    line = " ".join(result.output.split())
    assert "expands to 8,016,024 runs" in line and f"limit of {MAX_RUNS:,}" in line and "Split it" in line, line
    assert "options.retrieval.per_session (1,000 items)" in line and "options.retrieval.authors (1,000 items)" in line
    assert not (tmp_path / "o").exists()


def test_the_count_multiplies_data_sets_and_is_checked_on_set_overrides():
    config = {"name": "many", "datasets": [{**SYNTH, "name": f"s{i}"} for i in range(100)],
              "systems": [{"name": f"e{i}", "strategy": "exact"} for i in range(40)], "sweeps": ["cutoff"],
              "options": {"cutoff": {"grid": [round(0.01 * i, 2) for i in range(1, 11)]}}}  # fmt: skip
    runs = planned_runs(lab.parse_config(config).resolved)
    assert sum(sum(p.values()) for p in runs.values()) == 100 * (40 + 42 * 10)  # systems + (systems + 2) x grid
    with pytest.raises(ConfigError, match=r"expands to 1,679,800 runs \(100 data set\(s\)"):
        lab.parse_config(config, overrides=["options.cutoff.grid=" + str([round(0.001 * i, 3) for i in range(1, 400)])])


def test_the_count_bounds_what_the_sweeps_build():
    config = lab.parse_config({"name": "small", "datasets": [SYNTH], "systems": [{"name": "event-x"}],
                               "sweeps": ["granularity", "retrieval", "cutoff", "models"],
                               "options": {"retrieval": {"per_session": [2, 3], "authors": ["user", "model"]},
                                           "granularity": {"chunks": [[2, 0], [3, 1]]}}})  # fmt: skip
    data = lab.load_dataset(SYNTH)
    built = systems_for(data, config, {"default": None})
    planned = sum(planned_runs(config.resolved)["s"].values())
    assert len(built) <= planned <= 1.2 * len(built), (len(built), planned)  # a bound, and a close one


def test_every_suite_is_within_the_bound():
    for name in lab.config.suite_names():
        runs = planned_runs(lab.load_suite(name).resolved)
        assert 0 < sum(sum(p.values()) for p in runs.values()) < MAX_RUNS / 5, name


MODEL = "{name: m, kind: openai-chat, base_url: 'http://127.0.0.1:9/v1', model: x, %s}"


@pytest.mark.parametrize(("override", "message"), [
    (f"models=[{MODEL % 'concurrency: 1000000'}]", r"concurrency must be at most 64"),
    (f"models=[{MODEL % 'retries: 1000000'}]", r"retries must be at most 10"),
    (f"models=[{MODEL % 'timeout: 1000000000'}]", r"timeout must be at most 3,600 seconds"),
    (f"models=[{MODEL % 'backoff: 100000'}]", r"backoff must be at most 60 seconds"),
    (f"models=[{MODEL % 'max_tokens: 100000000'}]", r"max_tokens must be at most 100,000"),
    ("systems.0.candidates=100000000", r"candidates must be a whole number in 1..10000"),
    ("systems.0.max_scan_tuples=2000000000", r"max_scan_tuples must be a whole number in 1..1000000"),
    ("options.filtered.k=100000000", r"options.filtered.k must be a whole number in 1..1000"),
    ("options.filtered.background_tenants=100000000", r"background_tenants must be a whole number"),
    ("options.filtered.max_scan_tuples=[2000000000]", r"max_scan_tuples\[0\] must be a whole number"),
    ("options.filtered.shares=[0.5, 0.9]", r"sum\(shares\) x relations"),
    ("options.filtered.iterative=[sideways]", r"iterative\[0\] must be one of"),
    ("options.filtered.queries=100000", r"expands to [\d,]+ runs .*filtered sweep"),
    ("options.labels.depths=[100000]", r"depths\[0\] must be a whole number in 1..1000"),
    ("options.ingest.repeat=100000", r"repeat must be a whole number in 1..100"),
    ("datasets.2.users=10000", r"users x max_events = 10,000 x 300"),
    ("embedders=[{name: default, kind: packaged, batch_size: 100000000}]", r"batch_size must be a whole number"),
    ("embedders=[{name: default, kind: packaged, retries: 100000000}]", r"retries must be a whole number in 0..10"),
])  # fmt: skip
def test_every_number_that_sizes_work_is_bounded(override, message):
    with pytest.raises(ConfigError, match=message):
        lab.parse_config(CI, source="ci.yaml", overrides=[override])
    lab.parse_config(CI, source="ci.yaml")  # the suite itself passes


def test_the_labels_sweeps_pool_subsets_count_too():
    """Capture is averaged over every subset of each pool size: 60 systems in pools of 30 is 10^17 pools."""
    config = {"name": "l", "datasets": [SYNTH], "sweeps": ["labels"],
              "options": {"labels": {"systems": [f"s{i}" for i in range(60)], "pool_sizes": [30]}}}  # fmt: skip
    with pytest.raises(ConfigError, match=r"labels sweep 354,793,744,694,584,392.*options.labels.systems \(60 items\)"):
        lab.parse_config(config)


def test_a_long_list_of_chunk_sizes_over_many_data_sets_is_refused():
    config = {**CI, "datasets": [{**SYNTH, "name": f"s{i}"} for i in range(120)], "sweeps": ["granularity"],
              "options": {"granularity": {"chunks": [[i, 0] for i in range(1, 1001)]}}}  # fmt: skip
    with pytest.raises(ConfigError, match=r"granularity sweep 120,360.*options.granularity.chunks \(1,000 items\)"):
        lab.parse_config(config, source="ci.yaml")


@pytest.mark.parametrize("depth", [0, 10**8, True])
def test_the_pool_depth_is_bounded_before_anything_runs(depth):
    config = lab.parse_config({"name": "p", "datasets": [SYNTH]})
    with pytest.raises(ConfigError, match=r"--depth must be a whole number in 1..1000"):
        lab.judging.pool_queries(config, "queries.jsonl", depth, None)  # no store needed: refused first
