"""Lost labels: labelled events (and session labels) the live store no longer holds, counted as a figure of their
own beside recall, never hidden in it.

recall@k stays over the labels the store still holds: a lost event cannot be found by any search, so counting it
as a miss would read data loss (or an erasure) as a retrieval regression. What was lost is reported next to it,
so a question whose labels are partly gone never looks whole:

- `lost_labels`: labels of the set the store no longer holds; `lost_questions`: questions with at least one;
- `new_lost_labels`: lost labels the previous probe (`--against`) still found; without one, every lost label;
- `recall@k_all_labels`: recall over every label as given, lost ones counted as misses and questions whose every
  label is lost as 0, so the set's own view of recall is there too.

Every probe judges the alert `new_lost_labels>0` (LOST_ALERT) beside the ones given: a label lost since the
previous probe fires it (exit 3). A probe `--against` the one that saw the loss acknowledges it; an `--alert` on
`new_lost_labels` replaces the built-in one."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from memlab.lab.datasets.model import Question
from memlab.lab.live.alerts import Alert, parse_alert
from memlab.lab.runs.folder import RunFolder
from memlab.safety.redact import redact

LOST_ALERT = "new_lost_labels>0"
LOST_METRICS = ("lost_labels", "lost_questions", "new_lost_labels")
_KEY = ("question_id", "app_name", "user_id", "session_id", "event_id")


def with_lost_alert(alerts: Sequence[Alert]) -> list[Alert]:
    """The alerts given, and the built-in LOST_ALERT unless one of them already judges `new_lost_labels`."""
    if any(a.metric == "new_lost_labels" for a in alerts):
        return list(alerts)
    return [*alerts, parse_alert(LOST_ALERT)]


def _keys(rows: Iterable[dict[str, Any]]) -> set[tuple[str, ...]]:
    """A stale label's identity as the manifest holds it (each part redacted as it is written)."""
    return {tuple(redact(str(row.get(k, ""))) for k in _KEY) for row in rows}


def previous_lost(previous: RunFolder | None) -> set[tuple[str, ...]] | None:
    """The lost labels the previous probe reported (its manifest's `probe.stale`), None without one."""
    if previous is None:
        return None
    return _keys(previous.manifest.get("probe", {}).get("stale", []))


def lost_by_question(questions: Sequence[Question], stale: pd.DataFrame) -> list[dict[str, Any]]:
    """Per question with a lost label: its labels as given, how many are lost, and whether it was left out."""
    if not len(stale):
        return []
    lost = stale.groupby("question_id").size().to_dict()
    left_out = stale.groupby("question_id").question_left_out.any().to_dict()
    return [{"question_id": q.id, "labels": len(q.evidence) + len(q.relevant_sessions), "lost": int(lost[q.id]),
             "left_out": bool(left_out[q.id])} for q in questions if q.id in lost]  # fmt: skip


def recall_all_labels(labelled: Sequence[Question], asked: Sequence[Question], scores: pd.DataFrame | None
                      ) -> float:  # fmt: skip
    """Mean recall over every answerable question of the set with its labels as given: a question's recall over
    the labels the store holds scaled by the share of its event labels still held, 0 for a question left out."""
    kept = {q.id: q for q in asked}
    recall = {} if scores is None or not len(scores) else dict(zip(scores.question_id, scores.recall, strict=True))
    values = []
    for q in labelled:
        if not q.evidence and not q.relevant_sessions:
            continue  # a no-answer question has no recall
        now = kept.get(q.id)
        found = recall.get(q.id) if now is not None else 0.0
        if found is None or found != found:
            continue
        share = len(set(now.evidence)) / len(set(q.evidence)) if now is not None and q.evidence else 1.0
        values.append(float(found) * share)
    return sum(values) / len(values) if values else float("nan")


def lost_figures(labelled: Sequence[Question], asked: Sequence[Question], stale: pd.DataFrame,
                 previous: RunFolder | None, scores: pd.DataFrame | None, k: int) -> dict[str, float]:  # fmt: skip
    """The probe's lost-label metrics (see the module docstring)."""
    before = previous_lost(previous)
    now = _keys(stale.to_dict("records")) if len(stale) else set()
    return {
        "lost_labels": float(len(stale)),
        "lost_questions": float(stale.question_id.nunique()) if len(stale) else 0.0,
        "new_lost_labels": float(len(now - before) if before is not None else len(now)),
        f"recall@{k}_all_labels": recall_all_labels(labelled, asked, scores),
    }


__all__ = ["LOST_ALERT", "LOST_METRICS", "lost_by_question", "lost_figures", "previous_lost", "recall_all_labels",
           "with_lost_alert"]  # fmt: skip
