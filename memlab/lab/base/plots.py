"""One plotting module: every figure memlab draws is made here, the same way. Each function returns its
matplotlib Figure (a notebook shows it inline) and also writes it to PNG when given a path. Every axis names
its quantity and unit, every series is in the legend, and k is spelled out wherever a metric is cut at k."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter, ScalarFormatter

PANEL_WIDTH, PANEL_HEIGHT, MAX_COLUMNS = 4.6, 3.4, 3


def _finish(fig: Figure, path: Path | str | None, *, layout: bool = True) -> Figure:
    """Lay out (unless the caller did, leaving room for a legend below the panels), write to `path` (if any) and
    return the figure (closed for pyplot, still displayable)."""
    if layout:
        fig.tight_layout()
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return fig


def _panels(count: int, *, height: float = PANEL_HEIGHT) -> tuple[Figure, list]:
    """A grid of at most MAX_COLUMNS panels per row, so many panels wrap instead of making a thin strip."""
    columns = max(1, min(count, MAX_COLUMNS))
    rows = max(1, math.ceil(count / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(PANEL_WIDTH * columns, height * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


def _legend_entries(axes: list) -> tuple[list, list[str]]:
    """Every labelled series of every panel, once (a series drawn only in a later panel is not left out)."""
    seen: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    return list(seen.values()), list(seen)


def _at_k(k: int | None) -> str:
    return f"@{k}" if k else "@k"


def granularity_bars(summary: pd.DataFrame, path: Path | str | None = None, *, k: int | None = None) -> Figure:
    """Recall and MRR per granularity, with the context size each costs on a second axis."""
    fig, ax = plt.subplots(figsize=(8, 4.2))
    x = range(len(summary))
    ax.bar([i - 0.2 for i in x], summary.recall, width=0.4, label=f"recall{_at_k(k)}")
    ax.bar([i + 0.2 for i in x], summary.mrr, width=0.4, label=f"MRR{_at_k(k)}")
    ax.set_xticks(list(x), summary.system, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"score (answerable questions, cut at k{'=' + str(k) if k else ''})")
    ax.set_xlabel("memory granularity (system)")
    ax2 = ax.twinx()
    ax2.plot(list(x), summary.context_chars, "ko-", label="context handed to the model")
    ax2.set_ylabel("characters per question")
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(handles, [h.get_label() for h in handles], loc="upper left", fontsize=8)
    ax.set_title("Granularity: what the agent finds and what it costs")
    return _finish(fig, path)


def distance_histograms(distances: pd.DataFrame, path: Path | str | None = None) -> Figure:
    """Distance of relevant vs non-relevant hits, one panel per system."""
    systems = list(dict.fromkeys(distances.system))
    fig, axes = _panels(len(systems), height=3.2)
    bins = [i / 40 for i in range(0, 61)]
    for ax, system in zip(axes, systems, strict=True):
        d = distances[distances.system == system]
        ax.hist(d[~d.relevant].distance, bins=bins, alpha=0.6, label="non-relevant hits", density=True)
        ax.hist(d[d.relevant].distance, bins=bins, alpha=0.6, label="relevant hits", density=True)
        ax.set_title(system, fontsize=9)
        ax.set_xlabel("cosine distance of the hit")
        ax.set_ylabel("density")
    axes[0].legend(fontsize=8)
    fig.suptitle("How far relevant and non-relevant hits lie: where a distance cut-off can separate them",
                 fontsize=10)  # fmt: skip
    return _finish(fig, path)


def cutoff_curves(
    grid: pd.DataFrame, path: Path | str | None = None, recommended: dict[str, float] | None = None,
    *, k: int | None = None,
) -> Figure:  # fmt: skip
    """Recall, empty rate and false-memory rate across max_distance, per system; the recommended cut-off dashed."""
    systems = list(dict.fromkeys(grid.system))
    fig, axes = _panels(len(systems), height=3.6)
    series = (("recall", f"recall{_at_k(k)} (answerable)"), ("empty_rate", "empty result (answerable)"),
              ("false_memory_rate", "false memory (no-answer questions with hits)"))  # fmt: skip
    for ax, system in zip(axes, systems, strict=True):
        g = grid[grid.system == system].sort_values("max_distance")
        for col, label in series:
            ax.plot(g.max_distance, g[col], marker=".", label=label)
        if recommended and system in recommended:
            ax.axvline(recommended[system], color="k", linestyle="--", linewidth=1, label="recommended cut-off")
        ax.set_title(system, fontsize=9)
        ax.set_xlabel("max_distance (cosine)")
        ax.set_ylabel("share of questions")
        ax.set_ylim(-0.02, 1.02)
    handles, labels = _legend_entries(axes)
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    return _finish(fig, path, layout=False)


def pareto_front(frame: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """The points no other point beats on both axes (lower x, higher y), sorted by x."""
    points = frame[[x, y]].dropna().sort_values([x, y], ascending=[True, False])
    best, keep = -math.inf, []
    for index, value in zip(points.index, points[y], strict=True):
        if value > best:
            keep.append(index)
            best = value
    return frame.loc[keep].sort_values(x)


def recall_latency(
    frame: pd.DataFrame,
    path: Path | str | None = None,
    *,
    x: str = "latency_ms_p50",
    y: str = "recall",
    series: str = "config",
    panels: str = "size_bucket",
    predicted: str | None = None,
    order: str | None = None,
    k: int | None = None,
) -> Figure:
    """Recall against latency, one panel per tenant-size bucket: one line per series (points labelled by
    `order`, e.g. ef_search), predicted recall dashed, and the Pareto front (fastest for its recall) in grey."""
    buckets = list(dict.fromkeys(frame[panels]))
    fig, axes = _panels(len(buckets), height=3.8)
    labels = {"latency_ms_p50": "median latency per search (ms, log scale)",
              "latency_ms_p95": "p95 latency per search (ms, log scale)"}  # fmt: skip
    for ax, bucket in zip(axes, buckets, strict=True):
        sub = frame[frame[panels] == bucket]
        front = pareto_front(sub, x, y)
        ax.plot(front[x], front[y], color="grey", linewidth=4, alpha=0.35, zorder=0)
        for name, g in sub.groupby(series, sort=False):
            g = g.sort_values(order or x)
            line = ax.plot(g[x], g[y], marker="o", markersize=3, label=str(name))[0]
            if predicted and predicted in g and g[predicted].notna().any():
                ax.plot(g[x], g[predicted], linestyle="--", color=line.get_color(), linewidth=0.8)
            if order and order in g and g[order].notna().any() and len(g) > 1:
                for xv, yv, label in zip(g[x], g[y], g[order], strict=True):
                    if pd.notna(label):
                        ax.annotate(f"{label:g}" if isinstance(label, float) else str(label), (xv, yv),
                                    fontsize=5, xytext=(2, 2), textcoords="offset points")  # fmt: skip
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        low, high = ax.get_xlim()
        # Within one decade the major ticks alone say little: label the minor ticks too, plainly and small.
        ax.xaxis.set_minor_formatter(FormatStrFormatter("%g") if high / max(low, 1e-9) < 10 else NullFormatter())
        ax.tick_params(axis="x", which="minor", labelsize=6)
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"tenant share {bucket}", fontsize=9)
        ax.set_xlabel(labels.get(x, x))
        ax.set_ylabel(f"recall{_at_k(k)} vs FAISS exact" if y == "recall" else y)
    handles, names = _legend_entries(axes)
    extra = [Line2D([], [], color="grey", linewidth=4, alpha=0.35)]
    extra_names = ["Pareto front (fastest for its recall)"]
    if predicted and predicted in frame and frame[predicted].notna().any():
        extra.append(Line2D([], [], color="black", linestyle="--", linewidth=0.8))
        extra_names.append("predicted recall (dashed, same colour)")
    if order:
        extra_names[0] += f"; point labels: {order}"
    fig.legend(handles + extra, names + extra_names, loc="lower center", ncol=3, fontsize=7, frameon=False)
    rows = math.ceil(len(handles + extra) / 3)
    fig.tight_layout(rect=(0, min(0.4, (0.22 * rows + 0.1) / fig.get_figheight()), 1, 1))
    return _finish(fig, path, layout=False)


def answerability_curves(curves: pd.DataFrame, path: Path | str | None = None, target: float = 0.2,
                         *, k: int | None = None) -> Figure:  # fmt: skip
    """False memories on no-answer questions against the share of recall kept, per method (the gate at every
    threshold, one distance cut-off at every max_distance), one panel per data set."""
    datasets = list(dict.fromkeys(curves.dataset))
    fig, axes = _panels(len(datasets), height=3.9)
    for ax, dataset in zip(axes, datasets, strict=True):
        sub = curves[curves.dataset == dataset]
        for method, g in sub.groupby("method", sort=False):
            g = g.dropna().sort_values("false_memory_rate")
            ax.plot(g.false_memory_rate, g.recall_kept, "o-", ms=3, label=method)
        ax.axvline(target, color="grey", ls="--", lw=1, label=f"false-memory target {target:.0%}")
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("false-memory rate (no-answer questions with hits)")
        ax.set_ylabel(f"share of no-cut-off recall{_at_k(k)} kept")
        ax.set_title(dataset)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("When to return nothing: answerability gate vs one distance cut-off\n"
                 "(gate fitted on the train data set; in-sample there)", fontsize=9)  # fmt: skip
    return _finish(fig, path)
