"""The probe's Prometheus file for node_exporter's textfile collector: read back with the Prometheus client's own
text parser (prometheus_client, the reference implementation of the format), label values escaped, NaN kept, and
written atomically (no temp file left behind, an old file replaced whole)."""

from __future__ import annotations

import math
import os
from datetime import UTC, datetime

import pytest
from prometheus_client.parser import text_string_to_metric_families

import memlab
from memlab.lab.live.alerts import evaluate_alerts, parse_alert
from memlab.lab.live.textfile import write_failed_textfile, write_textfile

RUN_TIME = datetime(2026, 12, 3, 4, 0, tzinfo=UTC)


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value, through the reference parser (it raises on malformed lines)."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}  # fmt: skip


def _families(text: str) -> dict[str, tuple[str, str]]:
    return {f.name: (f.type, f.documentation) for f in text_string_to_metric_families(text)}


def test_the_textfile_holds_every_metric_the_run_and_the_alerts(tmp_path):
    alerts = evaluate_alerts([parse_alert("recall@10<0.9"), parse_alert("empty_rate>0.5")],
                             {"recall@10": 0.8, "empty_rate": 0.1})  # fmt: skip
    rows = [("support", "recall@10", 0.8), ("support", "empty_rate", 0.1), ("support", "recall@10[size=<=50]", 1.0),
            ("support", "recall@10[size=>2000]", math.nan)]  # fmt: skip
    path = write_textfile(tmp_path / "memlab.prom", rows, run_time=RUN_TIME, questions=40, stale_labels=2,
                          alerts=alerts)  # fmt: skip
    assert path == tmp_path / "memlab.prom"
    text = path.read_text()
    samples = _samples(text)
    metric = "memlab_probe_metric"
    assert samples[(metric, (("app", "support"), ("metric", "recall@10")))] == 0.8
    assert samples[(metric, (("app", "support"), ("metric", "empty_rate")))] == 0.1
    assert samples[(metric, (("app", "support"), ("metric", "recall@10[size=<=50]")))] == 1.0
    assert math.isnan(samples[(metric, (("app", "support"), ("metric", "recall@10[size=>2000]")))])
    assert samples[("memlab_probe_run_timestamp_seconds", ())] == RUN_TIME.timestamp()
    assert samples[("memlab_probe_questions", ())] == 40
    assert samples[("memlab_probe_stale_labels", ())] == 2
    assert samples[("memlab_probe_alert_firing", (("alert", "recall@10<0.9"),))] == 1
    assert samples[("memlab_probe_alert_firing", (("alert", "empty_rate>0.5"),))] == 0
    families = _families(text)
    assert {name: kind for name, (kind, _) in families.items()} == {
        "memlab_probe_metric": "gauge", "memlab_probe_run_timestamp_seconds": "gauge",
        "memlab_probe_questions": "gauge", "memlab_probe_stale_labels": "gauge", "memlab_probe_alert_firing": "gauge",
        "memlab_probe_success": "gauge", "memlab_probe_new_lost_labels": "gauge",
    }  # fmt: skip
    assert samples[("memlab_probe_success", ())] == 1 and samples[("memlab_probe_new_lost_labels", ())] == 0
    assert all(doc for _, doc in families.values())  # each has a HELP line
    assert text.endswith("\n") and "NaN" in text


def test_label_values_are_escaped(tmp_path):
    app = 'we"ird\\app\nname'
    rows = [(app, 'recall@10[qtype=say "hi"]', 0.5)]
    path = write_textfile(tmp_path / "m.prom", rows, run_time=RUN_TIME, questions=1, stale_labels=0)
    text = path.read_text()
    assert len([line for line in text.splitlines() if line.startswith("memlab_probe_metric{")]) == 1
    assert _samples(text)[("memlab_probe_metric", (("app", app), ("metric", 'recall@10[qtype=say "hi"]')))] == 0.5


def test_the_write_is_atomic_and_replaces_the_old_file(tmp_path):
    path = tmp_path / "memlab.prom"
    path.write_text("old content that is not a metric\n")
    os.chmod(path, 0o644)
    before = path.stat().st_ino
    write_textfile(path, [("a", "recall@10", 0.9)], run_time=RUN_TIME, questions=3, stale_labels=0)
    assert os.listdir(tmp_path) == ["memlab.prom"]  # no temp file left beside it
    assert path.stat().st_ino != before  # a new file renamed over the old one, never rewritten in place
    assert "old content" not in path.read_text()
    assert path.stat().st_mode & 0o777 == 0o644  # node_exporter (another user) can still read it


def test_a_new_file_is_readable_by_the_collector(tmp_path):
    path = write_textfile(tmp_path / "new.prom", [], run_time=RUN_TIME, questions=0, stale_labels=0)
    assert path.stat().st_mode & 0o044 == 0o044  # not the private 0600 of a temp file
    assert _samples(path.read_text())[("memlab_probe_questions", ())] == 0


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    path = tmp_path / "memlab.prom"
    path.write_text("memlab_probe_questions 7\n")

    def rows():
        yield ("a", "recall@10", 0.9)
        raise RuntimeError("the probe broke half way")

    with pytest.raises(RuntimeError, match="half way"):
        write_textfile(path, rows(), run_time=RUN_TIME, questions=3, stale_labels=0)
    assert os.listdir(tmp_path) == ["memlab.prom"]
    assert path.read_text() == "memlab_probe_questions 7\n"


def test_the_same_alert_given_twice_is_one_series(tmp_path):
    alerts = evaluate_alerts([parse_alert("recall@10<0.9"), parse_alert("recall@10<0.9")], {"recall@10": 0.8})
    text = write_textfile(tmp_path / "m.prom", [], run_time=RUN_TIME, questions=1, stale_labels=0,
                          alerts=alerts).read_text()  # fmt: skip
    assert [line for line in text.splitlines() if line.startswith("memlab_probe_alert_firing{")] == [
        'memlab_probe_alert_firing{alert="recall@10<0.9"} 1'
    ]


def test_a_folder_that_does_not_exist_is_a_config_error(tmp_path):
    with pytest.raises(memlab.ConfigError, match="does not exist"):
        write_textfile(tmp_path / "missing" / "m.prom", [], run_time=RUN_TIME, questions=1, stale_labels=0)


def test_a_failed_probe_replaces_the_old_figures_with_its_failure(tmp_path):
    path = write_textfile(tmp_path / "memlab.prom", [("a", "recall@10", 1.0)], run_time=RUN_TIME, questions=3,
                          stale_labels=0)  # fmt: skip
    write_failed_textfile(path, run_time=RUN_TIME)
    samples = _samples(path.read_text())
    assert samples == {("memlab_probe_success", ()): 0,
                       ("memlab_probe_run_timestamp_seconds", ()): RUN_TIME.timestamp()}
    assert os.listdir(tmp_path) == ["memlab.prom"]
