"""Scoring and the cut-off sweep on hand-built runs with hand-computed numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from memlab import lab
from memlab.lab import Question
from memlab.lab.base.sizes import size_bucket
from memlab.lab.metrics import cutoff_grid, drift, labelled_distances, recommend, score, summarize
from memlab.lab.metrics.cutoffs import cut
from memlab.lab.runs import RUN_COLUMNS

Q = [
    Question("q1", "a", "u", "where do I live?", ("e1", "e2")),
    Question("q2", "a", "u", "what do I eat?", ("e5",)),
    Question("q3", "a", "u", "blood type?", ()),
]


def run_of(rows):
    return pd.DataFrame([(*r, 10, 1.0, "") for r in rows], columns=[*RUN_COLUMNS[:6], "chars", "latency_ms", "plan"])


RUN = run_of(
    [
        ("s", "q1", 1, "u1", ["e9"], 0.2),
        ("s", "q1", 2, "u2", ["e1", "e2"], 0.4),  # a chunk holding both relevant events
        ("s", "q2", 1, "u3", ["e7"], 0.3),
        ("s", "q3", 1, "u4", ["e8"], 0.7),
    ]
)


def test_score_by_hand():
    s = score(RUN, Q, k=10).set_index("question_id")
    assert s.loc["q1", "recall"] == 1.0 and s.loc["q1", "mrr"] == pytest.approx(0.5)
    assert s.loc["q1", "precision"] == pytest.approx(2 / 10)
    assert s.loc["q2", "recall"] == 0.0 and s.loc["q2", "hit"] == 0.0
    assert np.isnan(s.loc["q3", "recall"]) and s.loc["q3", "correct_empty_rate"] == 0.0
    assert s.loc["q1", "context_chars"] == 20


def test_cutoff_changes_empties_and_recall():
    s = score(cut(RUN, 0.35, k=10), Q, k=10).set_index("question_id")
    assert s.loc["q1", "recall"] == 0.0 and s.loc["q1", "returned"] == 1
    assert s.loc["q3", "empty"] and s.loc["q3", "correct_empty_rate"] == 1.0
    summary = summarize(score(cut(RUN, 0.35, k=10), Q, k=10)).iloc[0]
    assert summary.correct_empty_rate == 1.0 and summary.empty_rate == 0.0 and summary.recall == 0.0


def test_recall_vs_exact_reads_the_run_it_is_given():
    exact = run_of([("x", "q1", 1, "u2", ["e1", "e2"], 0.1), ("x", "q1", 2, "u1", ["e9"], 0.2)])
    s = score(RUN, Q[:1], k=2, exact=exact).set_index("question_id")
    assert s.loc["q1", "recall_vs_exact"] == 1.0
    s = score(cut(RUN, 0.3, k=2), Q[:1], k=2, exact=exact).set_index("question_id")
    assert s.loc["q1", "recall_vs_exact"] == 0.5, "a cut run keeps one of the exact top 2"


def test_size_buckets():
    assert [size_bucket(n) for n in (5, 50, 51, 2000, 2001)] == ["<=50", "<=50", "51-500", "501-2000", ">2000"]


def test_cutoff_grid_and_recommendation():
    grid = cutoff_grid(RUN, Q, k=10, grid=[0.25, 0.5, 0.8])
    by = grid.set_index("max_distance")
    assert by.loc[0.5, "recall"] == 0.5 and by.loc[0.5, "false_memory_rate"] == 0.0
    assert by.loc[0.8, "false_memory_rate"] == 1.0
    d = labelled_distances(RUN, Q)
    assert d.relevant.tolist() == [False, True, False, False]
    (rec,) = recommend(RUN, Q, k=10, target=0.2, grid=[0.25, 0.5, 0.8])
    assert rec.max_distance == 0.5 and rec.recall == 0.5 and rec.false_memory_rate == 0.0
    assert rec.question_auc == 1.0, "the no-answer question's nearest hit is the farthest"


def test_drift_flags_a_shifted_distribution():
    rng = np.random.default_rng(0)
    a = pd.DataFrame({"system": "s", "distance": rng.normal(0.5, 0.05, 400), "relevant": True})
    b = a.assign(distance=a.distance + 0.1)
    shifted, same = drift(a, b), drift(a, a)
    assert shifted.p_value.min() < 1e-6 and same.p_value.min() == 1.0


def test_run_roundtrip(tmp_path):
    path = lab.runs.Run("d", "s", RUN).save(tmp_path)
    back = lab.runs.Run.load(path).frame
    assert back.event_ids.tolist() == RUN.event_ids.tolist() and back.distance.tolist() == RUN.distance.tolist()


def test_size_buckets_match_pandas_cut_at_every_boundary():
    from memlab.lab.metrics.scoring import SIZE_BINS, SIZE_LABELS, size_bucket

    for n in [0, 1, 49, 50, 51, 499, 500, 501, 1999, 2000, 2001, 10**6, 50.5, -1, float("nan")]:
        expected = str(pd.cut([n], SIZE_BINS, labels=SIZE_LABELS, include_lowest=True)[0])
        assert size_bucket(n) == expected, n
    assert size_bucket(np.int64(600)) == "501-2000"


def _random_run(seed: int) -> tuple[pd.DataFrame, list[Question]]:
    """Two systems, answerable and no-answer questions, hits past k, tied and NaN distances, a question with no
    hit at all and one a system never asked: the cases a shortcut over the cut-off grid could get wrong."""
    rng = np.random.default_rng(seed)
    questions = [Question(f"q{i}", "a", "u", f"question {i}", (f"e{i}",) if i % 3 else ()) for i in range(12)]
    rows = []
    for system in ("s1", "s2"):
        for q in questions[: 11 if system == "s2" else 12]:
            n = int(rng.integers(0, 14))
            if n == 0:
                rows.append((system, q.id, 0, None, [], np.nan))
            for rank, d in enumerate(np.sort(np.round(rng.uniform(0.1, 1.4, n), 1)), start=1):
                distance = np.nan if rng.random() < 0.05 else float(d)
                event = f"e{int(q.id[1:])}" if rng.random() < 0.3 else f"x{rank}"
                rows.append((system, q.id, rank, f"{system}-{q.id}-{rank}", [event], distance))
    return run_of(rows), questions


@pytest.mark.parametrize("seed", range(2))
def test_the_cutoff_shortcuts_score_like_every_cutoff_scored_alone(seed):
    """`cutoff_grid`, `distance_cut` and the answerability curve score once per distinct set of kept hits: their
    rows equal scoring every cut-off of the grid on its own. The distances are multiples of 0.1, so a grid of
    0.05 steps holds every distance and a point between each two."""
    from memlab.lab.metrics.answerability import TARGET, cut_rates, distance_cut
    from memlab.lab.metrics.distances import kept_hits

    run, questions = _random_run(seed)
    grid = [round(float(c), 3) for c in np.arange(0.05, 1.51, 0.05)]
    plain = pd.concat([summarize(score(cut(run, c, k=10), questions, k=10)).assign(max_distance=c) for c in grid],
                      ignore_index=True).assign(false_memory_rate=lambda f: 1.0 - f.correct_empty_rate)  # fmt: skip
    pd.testing.assert_frame_equal(cutoff_grid(run, questions, k=10, grid=grid), plain)
    fine = cutoff_grid(run, questions, k=10, grid=[float(c) for c in np.arange(0.05, 1.51, 0.025)])  # distance_cut's
    ok = fine[fine.false_memory_rate <= TARGET]
    assert distance_cut(run, questions, 10) == (round(ok.max_distance.max(), 3) if len(ok) else None)
    # the answerability curve's distance-cut rows (one system's run): cut_rates once per count of kept hits
    run = run[run.system == "s1"]
    full = score(run, questions, k=10)
    cuts = [float(c) for c in np.arange(0.2, 1.31, 0.05)]
    by_kept: dict[int, dict] = {}
    reused = 0
    for c, n in zip(cuts, kept_hits(run, questions, cuts), strict=True):
        if n not in by_kept:
            by_kept[n] = cut_rates(run, questions, 10, c, full=full)
            continue
        reused += 1  # the shortcut served this cut-off: scored alone, it must read the same
        alone = cut_rates(run, questions, 10, c, full=full)
        assert by_kept[n]["false_memory_rate"] == pytest.approx(alone["false_memory_rate"], nan_ok=True), c
        assert by_kept[n]["recall_kept"] == pytest.approx(alone["recall_kept"], nan_ok=True), c
    assert reused >= len(cuts) // 3, "the distances are coarser than the grid: most cut-offs share their hits"


def test_summarize_gives_each_groups_95th_latency_as_numpy_does_and_nan_for_a_nan_latency():
    rng = np.random.default_rng(3)
    scores = score(RUN, Q, k=10)
    many = pd.concat([scores.assign(system=f"s{i}", latency_ms=rng.gamma(2.0, 3.0, len(scores))) for i in range(4)],
                     ignore_index=True)  # fmt: skip
    many.loc[many.index[-1], "latency_ms"] = np.nan  # s3 has a question without a latency
    got = summarize(many).set_index("system").latency_ms_p95
    for system, group in many.groupby("system"):
        assert got[system] == pytest.approx(float(np.percentile(group.latency_ms, 95)), rel=1e-12, nan_ok=True)
    assert np.isnan(got["s3"]) and not got[["s0", "s1", "s2"]].isna().any()
