"""How far assessors agree: Cohen's kappa over the events two judgments files both judged. A judged set reports
it beside its labels; the model assessor is one such assessor."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sklearn.metrics import cohen_kappa_score

from memlab.lab.datasets.judged.queries import json_lines

_EARLIEST = datetime.min.replace(tzinfo=UTC)


def _when(value: Any) -> datetime:
    """A judgment's `time` (read_judgments has checked it; anything unreadable sorts first)."""
    try:
        at = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        at = None
    return at if at is not None and at.tzinfo is not None else _EARLIEST


def agreement(*paths: str | Path) -> list[dict[str, Any]]:
    """Cohen's kappa for every pair of assessors in the judgments files, over the events both judged (each
    assessor's latest verdict per event by `time`, whatever the order of the lines). Kappa is NaN where both gave
    one same label throughout (no variation to agree beyond chance on); `agreement` is then the plain share of
    equal verdicts."""
    latest: dict[str, dict[tuple, tuple[datetime, int]]] = {}
    for path in paths:
        for _, raw in json_lines(Path(path)):
            if isinstance(raw, dict) and {"assessor", "query", "event_id", "relevance"} <= set(raw):
                key = (raw["query"], raw.get("session"), raw["event_id"])
                mine = latest.setdefault(str(raw["assessor"]), {})
                mine[key] = max(mine.get(key, (_EARLIEST, 0)), (_when(raw.get("time")), int(raw["relevance"])))
    verdicts = {who: {key: relevance for key, (_, relevance) in mine.items()} for who, mine in latest.items()}
    out = []
    names = sorted(verdicts)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = sorted(set(verdicts[a]) & set(verdicts[b]))
            if not both:
                continue
            x, y = [verdicts[a][k] for k in both], [verdicts[b][k] for k in both]
            kappa = float(cohen_kappa_score(x, y)) if len(set(x) | set(y)) > 1 else math.nan
            out.append({"assessors": [a, b], "items": len(both), "kappa": kappa,
                        "agreement": sum(p == q for p, q in zip(x, y, strict=True)) / len(both)})  # fmt: skip
    return out
