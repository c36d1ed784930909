"""The filtered sweep's measurement on a tiny grid: it searches through EventMemory (the partial-index cells with
`SearchSettings(literal_scope=True)`) in a database of its own, so the planner's statistics hold its rows only."""

from __future__ import annotations

import memlab
from memlab.lab.sweeps.filtered import APP, LAYER, FilteredGrid, filtered_sweep

GRID = FilteredGrid(total_rows=400, shares=(0.1,), relations=("on_topic",), ef_search=(40,), iterative=("off",),
                    queries=2, background_tenants=5, remedy_min_share=0.1)  # fmt: skip


def test_filtered_sweep_measures_in_a_database_of_its_own(store, embedder, fixture_set):
    questions = [q.text for q in fixture_set.questions if q.answerable]
    frame = filtered_sweep(store, embedder, fixture_set.texts()[:80], questions, GRID)
    tenant = "t0.1-on_topic"
    assert set(frame.tenant) == {tenant} and len(frame) == 2 * 4, "hnsw, exact, planner and the partial index"
    first = frame[frame["query"] == 0].set_index("config")
    assert first.loc["partial index ef=40 off", "plan"].startswith("index:memlab_tenant_"), "the tenant's own index"
    assert first.loc["partial index ef=40 off", "rows_removed_by_filter"] == 0
    assert first.loc["hnsw ef=40 off mst=20000", "plan"] == "hnsw"
    assert (frame[frame.config == "exact"].recall == 1.0).all()
    # Nothing was written to the caller's database: the sweep's table held its own rows only, and is gone.
    assert memlab.EventMemory(store, embedder, layer=LAYER).count(APP, tenant) == 0
