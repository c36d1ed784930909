"""Write a run folder: the per-question table, the summary, a manifest, and report.md that a person reads first."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

import memlab

COLUMN_NOTES = (
    "`recall`, `precision`, `mrr`, `ndcg`, `hit_rate` (at k): against the labelled event ids (ir-measures). "
    "`recall_vs_exact`: share of FAISS exact's "
    "top k that the configuration also returned (a short result counts as misses). `context_chars`: characters "
    "handed to the model per question. `correct_empty_rate`: no-answer questions that got no hit (needs a "
    "cut-off). Latencies are per search in ms on a noisy 2-core machine: compare them as ratios."
)


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5)
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".3f") -> str:
    """A pipe table without extra dependencies (pandas' to_markdown needs tabulate)."""
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in frame.iterrows():
        cells = []
        for col in cols:
            value = row[col]
            if isinstance(value, float):
                cells.append("" if pd.isna(value) else format(value, floatfmt))
            else:
                cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_run(
    out: Path,
    *,
    questions: pd.DataFrame,
    summary: pd.DataFrame,
    config: dict,
    extra_sections: dict[str, str],
    metrics: dict,
) -> Path:
    """Create `out/` with questions.csv, summary.csv, metrics.json, manifest.json and report.md."""
    out.mkdir(parents=True, exist_ok=True)
    questions.to_csv(out / "questions.csv", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    manifest = {
        "memlab_version": memlab.__version__,
        "git_commit": git_commit(),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": config,
        "status": "complete",
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n")
    parts = [
        f"# memlab run: {config.get('dataset', '')}",
        "",
        f"commit `{manifest['git_commit']}`, finished {manifest['finished_at']}",
        "",
        f"## Summary (answerable questions; k = {config.get('k')})",
        "",
        markdown_table(summary),
        "",
        COLUMN_NOTES,
        "",
    ]
    for title, body in extra_sections.items():
        parts += [f"## {title}", "", body, ""]
    (out / "report.md").write_text("\n".join(parts))
    return out
