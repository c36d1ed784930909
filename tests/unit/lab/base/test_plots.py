"""Every plot returns its figure (a notebook shows it inline), writes a PNG only when asked, labels its axes
and lists every series in a legend."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from memlab.lab.base import plots


def _labelled(fig: Figure) -> None:
    for ax in [a for a in fig.axes if a.get_visible()]:
        if ax.has_data():
            assert ax.get_xlabel() or ax.get_ylabel(), "an axis without a label"


def _legend_texts(fig: Figure) -> set[str]:
    legends = [*fig.legends, *[ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]]
    return {t.get_text() for legend in legends for t in legend.get_texts()}


def test_recall_latency_marks_every_series_the_front_and_the_predicted_lines(tmp_path):
    frame = pd.DataFrame([
        {"size_bucket": b, "series": s, "latency_ms_p50": lat, "recall": r, "ef_search": ef, "predicted_recall": r}
        for b in ("0.1%", "10%") for s, lat, r, ef in (("hnsw off", 1.0, 0.2, 10), ("hnsw off", 2.0, 0.5, 40),
                                                       ("exact", 5.0, 1.0, None))
    ] + [{"size_bucket": "10%", "series": "partial index", "latency_ms_p50": 1.5, "recall": 0.99}])  # fmt: skip
    fig = plots.recall_latency(frame, tmp_path / "f.png", series="series", predicted="predicted_recall",
                               order="ef_search", k=10)  # fmt: skip
    assert isinstance(fig, Figure) and (tmp_path / "f.png").exists()
    texts = _legend_texts(fig)
    assert {"hnsw off", "exact", "partial index"} <= texts, "a series drawn only in the second panel is listed"
    assert any("Pareto" in t for t in texts) and any("predicted" in t for t in texts)
    assert any("recall@10" in ax.get_ylabel() for ax in fig.axes)
    _labelled(fig)
    front = plots.pareto_front(frame[frame.size_bucket == "10%"], "latency_ms_p50", "recall")
    assert list(front.recall) == [0.2, 0.99, 1.0]


def test_other_plots_return_labelled_figures_and_write_only_when_asked(tmp_path):
    grid = pd.DataFrame([{"system": "event", "max_distance": d, "recall": d / 2, "empty_rate": 1 - d,
                          "false_memory_rate": d} for d in (0.2, 0.5, 0.8)])  # fmt: skip
    cut = plots.cutoff_curves(grid, None, {"event": 0.5}, k=5)
    assert isinstance(cut, Figure) and not list(tmp_path.iterdir())
    assert {"recall@5 (answerable)", "recommended cut-off"} <= _legend_texts(cut)
    dist = pd.DataFrame({"system": "event", "distance": [0.2, 0.4, 0.6, 0.8], "relevant": [True, True, False, False]})
    hist = plots.distance_histograms(dist)
    assert hist._suptitle is not None and hist.axes[0].get_ylabel() == "density"
    summary = pd.DataFrame({"system": ["event", "chunk4o1"], "recall": [0.8, 0.6], "mrr": [0.5, 0.4],
                            "context_chars": [900, 2400]})  # fmt: skip
    bars = plots.granularity_bars(summary, tmp_path / "g.png", k=10)
    assert (tmp_path / "g.png").exists() and "recall@10" in _legend_texts(bars)
    for fig in (cut, hist, bars):
        _labelled(fig)
