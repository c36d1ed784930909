"""The probe's figures as a Prometheus text file for node_exporter's textfile collector, so the monitoring that
already watches the database graphs recall and pages on it like any other gauge.

The collector reads every `*.prom` file of its folder at each scrape: the file is written beside itself under a
temporary name and renamed over the old one, so a scrape never sees half a file."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from memlab.errors import ConfigError
from memlab.lab.live.alerts import AlertResult

READABLE = 0o644  # node_exporter runs as its own user: a new file must be readable by others


def _escape_label(value: str) -> str:
    """A label value in the text format: backslash, double quote and line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def _family(name: str, help_text: str, samples: Iterable[tuple[dict[str, str], float]]) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
    for labels, value in samples:
        inner = ",".join(f'{key}="{_escape_label(text)}"' for key, text in labels.items())
        lines.append(f"{name}{{{inner}}} {_number(value)}" if inner else f"{name} {_number(value)}")
    return lines


def _metric_samples(rows: Iterable[tuple[str, str, float]]) -> list[tuple[dict[str, str], float]]:
    """One sample per (app, metric): the collector refuses a file that repeats a series."""
    seen: dict[tuple[str, str], float] = {}
    for app, metric, value in rows:
        if (app, metric) in seen:
            raise ValueError(f"metric {metric!r} of app {app!r} given twice for the textfile")
        seen[(app, metric)] = value
    return [({"app": app, "metric": metric}, value) for (app, metric), value in seen.items()]


def _alert_samples(alerts: Sequence[AlertResult]) -> list[tuple[dict[str, str], float]]:
    """One sample per alert text (the same `--alert` given twice is one series), 1 when it fires."""
    firing: dict[str, bool] = {}
    for result in alerts:
        firing[result.alert.text] = firing.get(result.alert.text, False) or result.fired
    return [({"alert": text}, 1.0 if fired else 0.0) for text, fired in firing.items()]


def render_textfile(rows: Iterable[tuple[str, str, float]], *, run_time: datetime, questions: int,
                    stale_labels: int, alerts: Sequence[AlertResult] = ()) -> str:  # fmt: skip
    """The text exposition format of a probe: its metrics per app, when it ran, its questions and stale labels,
    and each alert's state. A naive `run_time` is taken as UTC (memlab stamps its runs in UTC)."""
    stamp = run_time if run_time.tzinfo is not None else run_time.replace(tzinfo=UTC)
    lines = [
        *_family("memlab_probe_metric", "A metric of the last memlab probe of a labelled set, per app (recall@10, "
                 "empty_rate, drift_p, breakdowns such as recall@10[size=501-2000]).", _metric_samples(rows)),
        *_family("memlab_probe_run_timestamp_seconds", "When the last memlab probe ran, in Unix seconds.",
                 [({}, stamp.timestamp())]),
        *_family("memlab_probe_questions", "Questions the last memlab probe asked (stale labels left out).",
                 [({}, questions)]),
        *_family("memlab_probe_stale_labels", "Labelled events of the last memlab probe that no longer exist in "
                 "the store (erased or purged), left out of every denominator.", [({}, stale_labels)]),
        *_family("memlab_probe_alert_firing", "1 when a --alert of the last memlab probe fired, else 0.",
                 _alert_samples(alerts)),
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def write_textfile(path: Path, rows: Iterable[tuple[str, str, float]], *, run_time: datetime, questions: int,
                   stale_labels: int, alerts: Sequence[AlertResult] = ()) -> Path:  # fmt: skip
    """Write the probe's textfile atomically (a temporary file in the same folder, then `os.replace`), readable
    by the collector's user; the old file stays whole when anything fails. Name it `*.prom` in node_exporter's
    `--collector.textfile.directory`."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ConfigError(f"{path}: the folder {path.parent} does not exist; give a file in node_exporter's "
                          "--collector.textfile.directory")  # fmt: skip
    text = render_textfile(rows, run_time=run_time, questions=questions, stale_labels=stale_labels, alerts=alerts)
    mode = path.stat().st_mode & 0o777 if path.exists() else READABLE
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


__all__ = ["render_textfile", "write_textfile"]
