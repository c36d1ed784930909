"""Probing a live memory store: a labelled set run read-only against the production database, with
alerts, drift against the previous probe, and index health. Nothing here writes to the probed store.
Modules here are internal; use the names below."""

from memlab.lab.live.alerts import Alert, AlertResult, evaluate_alerts, parse_alert
from memlab.lab.live.drift import distance_drift
from memlab.lab.live.index_health import IndexHealth, health_markdown, index_health
from memlab.lab.live.probe import ProbeResult, is_probe_folder, run_probe, write_probe_report
from memlab.lab.live.probe_set import ProbeSet, load_probe_set
from memlab.lab.live.textfile import write_textfile

__all__ = [
    "Alert",
    "AlertResult",
    "IndexHealth",
    "ProbeResult",
    "ProbeSet",
    "distance_drift",
    "evaluate_alerts",
    "health_markdown",
    "index_health",
    "is_probe_folder",
    "load_probe_set",
    "parse_alert",
    "run_probe",
    "write_probe_report",
    "write_textfile",
]
