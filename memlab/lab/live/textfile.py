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
                    stale_labels: int, alerts: Sequence[AlertResult] = (),
                    new_lost_labels: int = 0) -> str:  # fmt: skip
    """The text exposition format of a probe: its metrics per app, when it ran and that it finished, its questions,
    lost labels (all, and those lost since the previous probe), and each alert's state. A naive `run_time` is
    taken as UTC (memlab stamps its runs in UTC)."""
    lines = [
        *_family("memlab_probe_metric", "A metric of the last memlab probe of a labelled set, per app (recall@10, "
                 "empty_rate, lost_labels, drift_p, breakdowns such as recall@10[size=501-2000]).",
                 _metric_samples(rows)),
        *_run_families(run_time, success=True),
        *_family("memlab_probe_questions", "Questions the last memlab probe asked (stale labels left out).",
                 [({}, questions)]),
        *_family("memlab_probe_stale_labels", "Labelled events of the last memlab probe that no longer exist in "
                 "the store (erased or purged), left out of every denominator.", [({}, stale_labels)]),
        *_family("memlab_probe_new_lost_labels", "Labelled events the last memlab probe found lost that the "
                 "previous probe still found (all lost ones when there was no previous probe).",
                 [({}, new_lost_labels)]),
        *_family("memlab_probe_alert_firing", "1 when a --alert of the last memlab probe fired, else 0.",
                 _alert_samples(alerts)),
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def _run_families(run_time: datetime, *, success: bool) -> list[str]:
    stamp = run_time if run_time.tzinfo is not None else run_time.replace(tzinfo=UTC)
    return [*_family("memlab_probe_success", "1 when the last memlab probe finished, 0 when it failed (its other "
                     "figures are then absent, never the previous probe's).", [({}, 1.0 if success else 0.0)]),
            *_family("memlab_probe_run_timestamp_seconds", "When the last memlab probe ran, in Unix seconds.",
                     [({}, stamp.timestamp())])]  # fmt: skip


def render_failed_textfile(*, run_time: datetime) -> str:
    """The textfile of a probe that failed: success 0 and when, nothing else, so no dashboard keeps showing the
    previous probe's recall as if it were current."""
    return "\n".join(_run_families(run_time, success=False)) + "\n"


def check_textfile(path: Path) -> Path:
    """`path` as a textfile target, refused before the probe runs when its folder does not exist (a probe that
    then fails can still say so in it)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ConfigError(f"{path}: the folder {path.parent} does not exist; give a file in node_exporter's "
                          "--collector.textfile.directory")  # fmt: skip
    return path


def write_textfile(path: Path, rows: Iterable[tuple[str, str, float]], *, run_time: datetime, questions: int,
                   stale_labels: int, alerts: Sequence[AlertResult] = (),
                   new_lost_labels: int = 0) -> Path:  # fmt: skip
    """Write the probe's textfile atomically (a temporary file in the same folder, then `os.replace`), readable
    by the collector's user; the old file stays whole when anything fails. Name it `*.prom` in node_exporter's
    `--collector.textfile.directory`."""
    text = render_textfile(rows, run_time=run_time, questions=questions, stale_labels=stale_labels, alerts=alerts,
                           new_lost_labels=new_lost_labels)  # fmt: skip
    return _replace(check_textfile(path), text)


def write_failed_textfile(path: Path, *, run_time: datetime) -> Path:
    """Replace the probe's textfile with a failed probe's (`render_failed_textfile`), atomically."""
    return _replace(check_textfile(path), render_failed_textfile(run_time=run_time))


def _replace(path: Path, text: str) -> Path:
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


__all__ = ["check_textfile", "render_failed_textfile", "render_textfile", "write_failed_textfile", "write_textfile"]
