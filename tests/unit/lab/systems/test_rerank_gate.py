"""The answerability gate reads a re-ranker's score when the run has one: hand-made runs of a re-ranked system
(the top hit's score tells answerable from no-answer questions where the distances cannot), fitted and applied."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import memlab
from memlab import lab

FEATURES = ("first_distance", "gap_second", "gap_last", "mean_distance", "lexical_best", "lexical_share",
            "coverage_best", "log_memory")  # fmt: skip


def _run(n: int, seed: int, *, reranked: bool) -> tuple[pd.DataFrame, list[lab.Question]]:
    """n questions, 3 hits each, at the same distances whether answerable or not; a re-ranker that scores the
    answerable questions' top hit high. One question of each kind got nothing back."""
    rng = np.random.default_rng(seed)
    rows, questions = [], []
    for i in range(n):
        answerable = i % 3 != 0
        qid = f"q{i}"
        questions.append(lab.Question(qid, "app", "u", f"question {i}", (f"e{i}",) if answerable else ()))
        if i in (0, 1):
            rows.append({"system": "s", "question_id": qid, "rank": 0, "unit_id": None, "event_ids": [],
                         "distance": np.nan, "chars": 0, "latency_ms": 1.0, "plan": "", "rerank": np.nan})  # fmt: skip
            continue
        top = rng.normal(4.0, 1.0) if answerable else rng.normal(-4.0, 1.0)
        for rank in (1, 2, 3):
            event = f"e{i}" if answerable and rank == 1 else f"x{i}-{rank}"
            rows.append({"system": "s", "question_id": qid, "rank": rank, "unit_id": f"u{i}-{rank}",
                         "event_ids": [event], "distance": 0.4 + 0.05 * rank + rng.normal(0, 0.01), "chars": 10,
                         "latency_ms": 1.0, "plan": "", "rerank": top - rank})  # fmt: skip
    frame = pd.DataFrame(rows)
    return (frame if reranked else frame.drop(columns=["rerank"])), questions


def test_a_reranked_run_gives_the_gate_the_top_hit_score_and_the_gate_names_it():
    run, questions = _run(90, 0, reranked=True)
    table = lab.metrics.answerability_table(run, questions, {("app", "u"): 100}, 3)
    assert "rerank_top" in table.columns
    by_id = table.set_index("question_id").rerank_top
    assert by_id["q0"] == 0.0 and by_id["q1"] == 0.0, "a question given nothing reads 0.0"
    assert by_id["q2"] == pytest.approx(run[(run.question_id == "q2")].rerank.max())
    fitted = lab.metrics.fit_answerability(table, source="train")
    assert fitted.gate.features == (*FEATURES, "rerank_top")
    assert fitted.cv["roc_auc"] > 0.95, "the re-ranker's score separates what the distances do not"
    test_table = lab.metrics.answerability_table(*_run(60, 1, reranked=True), {("app", "u"): 100}, 3)
    assert lab.metrics.evaluate_answerability(fitted, test_table)["roc_auc"] > 0.95
    sure = [memlab.Hit("a", "x", 0.45, rerank=5.0), memlab.Hit("b", "y", 0.5, rerank=1.0)]
    unsure = [memlab.Hit("a", "x", 0.45, rerank=-5.0), memlab.Hit("b", "y", 0.5, rerank=-6.0)]
    assert fitted.gate.probability(sure, 100) > 0.5 > fitted.gate.probability(unsure, 100)


def test_without_a_reranker_the_gate_keeps_its_features_and_a_reranked_gate_refuses_unscored_hits(tmp_path):
    run, questions = _run(90, 0, reranked=False)
    table = lab.metrics.answerability_table(run, questions, {("app", "u"): 100}, 3)
    assert "rerank_top" not in table.columns
    assert lab.metrics.fit_answerability(table, source="plain").gate.features == FEATURES
    scored = lab.metrics.answerability_table(*_run(90, 0, reranked=True), {("app", "u"): 100}, 3)
    fitted = lab.metrics.fit_answerability(scored, source="train")
    again = memlab.events.AnswerabilityGate.load(fitted.gate.save(tmp_path / "answerability.json"))
    assert again == fitted.gate and again.features[-1] == "rerank_top"
    with pytest.raises(memlab.ConfigError, match="re-ranker's score"):
        again.probability([memlab.Hit("a", "x", 0.45)], 100)
    with pytest.raises(memlab.ConfigError, match="rerank_top"):
        lab.metrics.evaluate_answerability(fitted, table)
