"""What one probe found (`ProbeResult`) and the per-app rows of its Prometheus textfile. Its report section is
rendered from the run folder (memlab.lab.report.probe_section), as the rest of report.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from memlab.lab.datasets.model import Question
from memlab.lab.live.alerts import AlertResult
from memlab.lab.live.index_health import IndexHealth
from memlab.lab.live.table_health import TableHealth
from memlab.lab.metrics.keys import label_key
from memlab.lab.metrics.scoring import long_scores
from memlab.lab.runs.folder import RunFolder


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
    health: IndexHealth | TableHealth | None = None
    seconds_per_question: float = float("nan")

    @property
    def firing(self) -> list[AlertResult]:
        return [a for a in self.alerts if a.fired]

    @property
    def overall_metrics(self) -> dict[str, float]:
        """The metrics over all the questions (breakdowns left out)."""
        keys = {name: label_key(name, self.dataset, self.system) for name in self.metrics}
        return {name: v for name, v in self.metrics.items() if keys[name] is None or not keys[name].group}


def textfile_rows(folder: RunFolder, result: ProbeResult, questions: Sequence[Question]
                  ) -> list[tuple[str, str, float]]:  # fmt: skip
    """(app, metric, value) per app: the main metrics of its questions (none when no question of the app was left
    to ask; no breakdowns: they would multiply the series), its stale_rate and lost labels, and the probe's
    drift_p."""
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
        rows.append((app, "lost_labels", float(stale)))
        if result.drift_p is not None:
            rows.append((app, "drift_p", result.drift_p))
    return rows


__all__ = ["ProbeResult", "textfile_rows"]
