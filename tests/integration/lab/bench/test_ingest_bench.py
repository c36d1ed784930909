"""measure_ingest on the real store and model: the figures the bench reports are measured, consistent and
leave nothing behind (timings are never asserted: the machine is noisy)."""

from __future__ import annotations

import math

import memlab
from memlab.lab import Dataset, load_fixtures
from memlab.lab.bench import BENCH_APP, STAGES, measure_ingest
from tests.conftest import ROOT


def test_measure_ingest_compares_rates_on_the_same_texts_and_cleans_up(store, embedder, monkeypatch):
    from memlab.safety import clean_texts

    scanned: list[str] = []
    real_scan = clean_texts.find_secrets
    monkeypatch.setattr(clean_texts, "find_secrets", lambda text: scanned.append(text) or real_scan(text))
    model = getattr(embedder, "inner", embedder)
    every = load_fixtures(ROOT / "fixtures" / "events")
    # four of the nine fixture users (~110 turns): the figures' consistency does not depend on the size, and each
    # of the eight passes over the texts (warm-up, raw encodes, two ingests, re-ingest, no-index ingest) costs less
    labelled = Dataset(every.name, every.users[:4], [q for q in every.questions if q.user_id in
                                                      {u.user_id for u in every.users[:4]}])  # fmt: skip
    bench = measure_ingest(store, model, labelled, rounds=2, threads=1)
    assert max(scanned.count(t) for t in set(scanned)) >= 2, "each round scans its texts, as a first ingest does"
    assert bench.rounds == 2 and bench.model_threads == 1 and bench.texts > 50
    assert bench.sessions == len(list(labelled.sessions()))
    assert math.isfinite(bench.ratio) and 0 < bench.ratio < 2
    assert len(bench.round_ratios) == 2 and list(bench.round_ratios) == sorted(bench.round_ratios)
    assert any(math.isclose(bench.ratio, r, rel_tol=1e-6) for r in bench.round_ratios), "the median round's"
    q1, q3 = bench.ratio_quartiles
    assert bench.round_ratios[0] <= q1 <= q3 <= bench.round_ratios[-1]
    assert bench.reingest_embedded == 0, "a re-ingest of the stored corpus embeds nothing"
    assert 0 < bench.reingest_share < 1
    assert set(bench.stages) == set(STAGES) and bench.stages["embed"] > 0 and bench.stages["write"] > 0
    # The model-free first load: the same path as the measured one, no model call (measure_ingest raises if the
    # model ran), and the figures derived from it hang together.
    assert bench.nonmodel_path == bench.path and bench.nonmodel_seconds > 0
    assert math.isclose(bench.raw_seconds * bench.raw_encode_per_s, bench.texts)
    assert 0 < bench.serial_ratio < 1
    assert math.isclose(bench.serial_ratio, bench.raw_seconds / (bench.raw_seconds + bench.nonmodel_seconds))
    assert math.isclose(bench.nonmodel_budget_seconds(0.5), bench.raw_seconds)
    row = bench.as_dict()
    assert {"ratio", "ratio_q1", "ratio_q3", "reingest_share", "index_upkeep_seconds", "embed_seconds",
            "nonmodel_seconds", "serial_ratio", "nonmodel_budget_seconds", "raw_seconds"} <= row.keys()
    with store.connection() as conn:
        left = conn.execute("SELECT count(*) FROM memory_unit WHERE app_name = %s", [BENCH_APP]).fetchone()[0]
    assert left == 0, "the bench's throw-away users are erased"
    assert memlab.EventMemory(store, model, layer="bench:ingest").count(BENCH_APP, "x") == 0


def test_model_threads_are_restored_after_a_measurement():
    import torch

    from memlab.lab.bench import model_threads

    before = torch.get_num_threads()
    with model_threads(1) as used:
        assert used == 1 == torch.get_num_threads()
    assert torch.get_num_threads() == before
    with model_threads(None) as used:
        assert used == before


def test_goal_lines_compare_the_non_model_work_with_what_the_goal_leaves_it():
    import pandas as pd

    from memlab.lab.bench.markdown import ingest_goal_lines

    common = {"nonmodel_path": "copy-first-load", "serial_ratio": 0.93}
    rows = pd.DataFrame([
        {"set": "long", "model_threads": 2, "ratio": 0.899, "nonmodel_seconds": 2.5, "nonmodel_budget_seconds": 1.7,
         "raw_seconds": 32.3, **common},
        {"set": "short", "model_threads": 1, "ratio": 0.96, "nonmodel_seconds": 0.5, "nonmodel_budget_seconds": 0.37,
         "raw_seconds": 7.1, **common},
    ])  # fmt: skip
    long, short, end = ingest_goal_lines(rows)
    assert "goal 0.95 missed (0.899)" in long and "leaves it 1.7 s" in long and "1.47 x that" in long
    assert "goal 0.95 met (0.96)" in short and "on 1 model thread(s)" in short
    assert "leaves it 0.37 s" in short and "1.35 x that" in short, "a core left free overlaps nothing: a bound too"
    assert end == ""
    assert ingest_goal_lines(rows.drop(columns=["nonmodel_seconds"])) == [], "older runs have no model-free load"
