"""What a probe adds to its run folder's report.md (stale labels, alerts, drift, index health) and the per-app
rows of its Prometheus textfile. The rest of report.md is the workbench's own report of the run folder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from memlab.lab.dataset import Question
from memlab.lab.folder import RunFolder
from memlab.lab.live.alerts import AlertResult
from memlab.lab.live.index_health import IndexHealth, health_markdown
from memlab.lab.redacted import write_text
from memlab.lab.scoring import long_scores
from memlab.lab.tables import markdown_table

STALE_SHOWN = 50  # stale labels listed in report.md (all of them are in manifest.json)


@dataclass
class ProbeResult:
    """What one probe found: its run folder, the probed (data set, system), their flat metrics (keys without the
    data set and system), the stale labels, the alerts judged, the drift p-value (with a previous probe) and the
    index health."""

    folder: Path
    dataset: str
    system: str
    metrics: dict[str, float]
    questions: int
    stale: pd.DataFrame
    alerts: list[AlertResult] = field(default_factory=list)
    drift_p: float | None = None
    health: IndexHealth | None = None
    seconds_per_question: float = float("nan")

    @property
    def firing(self) -> list[AlertResult]:
        return [a for a in self.alerts if a.fired]


def _fmt(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.4g}"


def probe_lines(result: ProbeResult, manifest: dict, drift: pd.DataFrame | None) -> list[str]:
    """The "## Probe of the live store" section: what was asked, the stale labels, the alerts and the drift."""
    probe = manifest.get("probe", {})
    stale = result.stale
    left_out = int(probe.get("left_out", 0))
    lines = ["## Probe of the live store", "",
             f"Read-only probe of layer `{probe.get('layer')}` with model `{probe.get('model_id')}`, system "
             f"`{result.system}`: {result.questions} questions asked of {probe.get('labelled_questions')} labelled, "
             f"{_fmt(result.seconds_per_question)} s per question (search only), {manifest.get('seconds', '?')} s "
             "in all. Nothing was written to the store.", "",
             "### Stale labels", ""]  # fmt: skip
    if len(stale):
        lines += [f"{len(stale)} labelled event(s) no longer exist in the store (erased or purged): each is taken "
                  f"out of its question's relevant set, never counted as a miss; {left_out} question(s) whose every "
                  f"label was stale left the denominator. stale_rate = {_fmt(result.metrics.get('stale_rate'))}.", "",
                  markdown_table(stale.head(STALE_SHOWN)), ""]  # fmt: skip
        if len(stale) > STALE_SHOWN:
            lines += [f"({len(stale) - STALE_SHOWN} more in manifest.json, `probe.stale`.)", ""]
    else:
        lines += ["None: every labelled event is still in the store.", ""]
    lines += ["### Alerts", ""]
    if result.alerts:
        table = pd.DataFrame([{"alert": a.alert.text, "value": _fmt(a.value), "fired": "FIRING" if a.fired else "no",
                               "reason": a.reason} for a in result.alerts])  # fmt: skip
        lines += [f"{len(result.firing)} of {len(result.alerts)} alert(s) fired.", "", markdown_table(table), ""]
    else:
        lines += ["No alert was given (`--alert 'recall@10<0.80'`).", ""]
    lines += ["### Drift against the previous probe", ""]
    if drift is None:
        lines += ["Not measured: no previous probe given (`--against PREVIOUS_RUN`).", ""]
    else:
        lines += [f"drift_p = {_fmt(result.drift_p)}: two-sample KS test of the top hits' distances against "
                  f"`{manifest.get('previous')}` (a small p: the distances moved, as after a silent model or index "
                  "change).", "", markdown_table(drift), ""]  # fmt: skip
    return lines


def add_probe_section(out: Path, result: ProbeResult, drift: pd.DataFrame | None) -> Path:
    """report.md with the probe's section (and index health) before the report's first section."""
    folder = RunFolder(out)
    path = Path(out) / "report.md"
    text = path.read_text(encoding="utf-8")
    extra = "\n".join(probe_lines(result, folder.manifest, drift))
    if result.health is not None:
        extra += "\n" + health_markdown(result.health) + "\n"
    head, sep, rest = text.partition("\n## ")
    body = f"{head}\n{extra}\n## {rest}" if sep else f"{text}\n{extra}"
    return write_text(path, body)


def textfile_rows(folder: RunFolder, result: ProbeResult, questions: Sequence[Question]
                  ) -> list[tuple[str, str, float]]:  # fmt: skip
    """(app, metric, value) per app: the main metrics of its questions (no breakdowns: they would multiply the
    series), its stale_rate and the probe's drift_p."""
    qs = folder.question_scores
    qs = qs[(qs.dataset == result.dataset) & (qs.system == result.system)] if len(qs) else qs
    app_of = {q.id: q.app_name for q in questions}
    rows: list[tuple[str, str, float]] = []
    for app in sorted(set(app_of.values())):
        mine = qs[qs.question_id.map(app_of) == app] if len(qs) else qs
        if len(mine):
            scores = long_scores(mine, result.dataset, folder.k, groups=())
            rows += [(app, str(m), float(v)) for m, v in zip(scores.metric, scores.value, strict=True)]
        labelled = sum(len(q.evidence) + len(q.relevant_sessions) for q in questions if q.app_name == app)
        stale = int((result.stale.app_name == app).sum()) if len(result.stale) else 0
        rows.append((app, "stale_rate", stale / labelled if labelled else 0.0))
        if result.drift_p is not None:
            rows.append((app, "drift_p", result.drift_p))
    return rows


__all__ = ["ProbeResult", "add_probe_section", "probe_lines", "textfile_rows"]
