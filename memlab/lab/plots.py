"""One plotting module: every figure memlab writes is drawn here, the same way, to PNG."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def granularity_bars(summary: pd.DataFrame, path: Path) -> Path:
    """Recall and MRR per granularity, with the context size each costs on a second axis."""
    fig, ax = plt.subplots(figsize=(8, 4))
    x = range(len(summary))
    ax.bar([i - 0.2 for i in x], summary.recall, width=0.4, label="recall@k")
    ax.bar([i + 0.2 for i in x], summary.mrr, width=0.4, label="MRR")
    ax.set_xticks(list(x), summary.system, rotation=20)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score")
    ax2 = ax.twinx()
    ax2.plot(list(x), summary.context_chars, "ko-", label="context chars / query")
    ax2.set_ylabel("context characters per query")
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(handles, [h.get_label() for h in handles], loc="upper left", fontsize=8)
    ax.set_title("Granularity: what the agent finds and what it costs")
    return _save(fig, path)


def distance_histograms(distances: pd.DataFrame, path: Path) -> Path:
    """Distance of relevant vs non-relevant hits, one panel per system."""
    systems = list(dict.fromkeys(distances.system))
    fig, axes = plt.subplots(1, len(systems), figsize=(4 * len(systems), 3.2), squeeze=False)
    for ax, system in zip(axes[0], systems, strict=True):
        d = distances[distances.system == system]
        bins = [i / 40 for i in range(0, 61)]
        ax.hist(d[~d.relevant].distance, bins=bins, alpha=0.6, label="non-relevant", density=True)
        ax.hist(d[d.relevant].distance, bins=bins, alpha=0.6, label="relevant", density=True)
        ax.set_title(system, fontsize=9)
        ax.set_xlabel("cosine distance")
    axes[0][0].legend(fontsize=8)
    return _save(fig, path)


def cutoff_curves(grid: pd.DataFrame, path: Path, recommended: dict[str, float] | None = None) -> Path:
    """Recall, empty rate and false-memory rate across max_distance, per system."""
    systems = list(dict.fromkeys(grid.system))
    fig, axes = plt.subplots(1, len(systems), figsize=(4 * len(systems), 3.2), squeeze=False)
    for ax, system in zip(axes[0], systems, strict=True):
        g = grid[grid.system == system].sort_values("max_distance")
        for col, label in (("recall", "recall@k"), ("empty_rate", "empty (answerable)"),
                           ("false_memory_rate", "false memory (no-answer)")):  # fmt: skip
            ax.plot(g.max_distance, g[col], marker=".", label=label)
        if recommended and system in recommended:
            ax.axvline(recommended[system], color="k", linestyle="--", linewidth=1)
        ax.set_title(system, fontsize=9)
        ax.set_xlabel("max_distance")
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].legend(fontsize=7)
    return _save(fig, path)


def recall_latency(
    frame: pd.DataFrame,
    path: Path,
    *,
    x: str = "latency_ms_p50",
    y: str = "recall",
    series: str = "config",
    panels: str = "size_bucket",
    predicted: str | None = None,
    order: str | None = None,
) -> Path:
    """Recall vs latency curves, one panel per tenant-size bucket; optional predicted recall as dashed lines."""
    buckets = list(dict.fromkeys(frame[panels]))
    fig, axes = plt.subplots(1, len(buckets), figsize=(4 * len(buckets), 3.4), squeeze=False)
    for ax, bucket in zip(axes[0], buckets, strict=True):
        sub = frame[frame[panels] == bucket]
        for name, g in sub.groupby(series, sort=False):
            g = g.sort_values(order or x)
            line = ax.plot(g[x], g[y], marker="o", markersize=3, label=str(name))[0]
            if predicted and predicted in g and g[predicted].notna().any():
                ax.plot(g[x], g[predicted], linestyle="--", color=line.get_color(), linewidth=0.8)
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"tenant share {bucket}", fontsize=9)
        ax.set_xlabel(x)
    axes[0][0].set_ylabel(y)
    axes[0][0].legend(fontsize=6)
    return _save(fig, path)


def answerability_curves(curves: pd.DataFrame, path: Path, target: float = 0.2) -> Path:
    """False memories on no-answer questions against the share of recall kept, per method (the gate at every
    threshold, one distance cut-off at every max_distance), one panel per data set."""
    datasets = list(dict.fromkeys(curves.dataset))
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.8), squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        sub = curves[curves.dataset == dataset]
        for method, g in sub.groupby("method", sort=False):
            g = g.dropna().sort_values("false_memory_rate")
            ax.plot(g.false_memory_rate, g.recall_kept, "o-", ms=3, label=method)
        ax.axvline(target, color="grey", ls="--", lw=1, label=f"false-memory target {target:.0%}")
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("false-memory rate (no-answer questions with hits)")
        ax.set_ylabel("share of no-cut-off recall@k kept")
        ax.set_title(dataset)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("When to return nothing: answerability gate vs one distance cut-off\n"
                 "(gate fitted on the train data set; in-sample there)", fontsize=9)  # fmt: skip
    return _save(fig, path)
