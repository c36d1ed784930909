"""The answerability gate: features, fitting with a threshold under the false-memory rule, the JSON artefact,
and the gate applied by EventMemory.search on the real store."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import memlab
from memlab import lab
from memlab.events import AnswerabilityGate
from tests.conftest import make_session

FEATURE_NAMES = ("first_distance", "gap_second", "gap_last", "mean_distance", "lexical_best", "lexical_share",
                 "coverage_best", "log_memory")  # fmt: skip
N = len(FEATURE_NAMES)


def _table(n: int, seed: int, shift: float = 0.0) -> pd.DataFrame:
    """Questions whose answerable ones have nearer first hits and full-text matches, as real ones do."""
    rng = np.random.default_rng(seed)
    answerable = rng.random(n) < 0.7
    first = np.where(answerable, rng.normal(0.35, 0.08, n), rng.normal(0.6, 0.08, n)) + shift
    lexical = np.where(answerable, rng.random(n) * 1.5, rng.random(n) * 0.3)
    return pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)], "qtype": "t", "answerable": answerable,
        "recall": np.where(answerable, rng.random(n), np.nan),
        "first_distance": first, "gap_second": rng.random(n) * 0.05, "gap_last": rng.random(n) * 0.2,
        "mean_distance": first + 0.1, "lexical_best": lexical, "lexical_share": rng.random(n),
        "coverage_best": np.where(answerable, rng.uniform(0.4, 1.0, n), rng.uniform(0.0, 0.6, n)),
        "log_memory": np.log1p(rng.integers(10, 500, n)),
    })  # fmt: skip


def test_features_of_an_empty_and_a_full_result():
    empty = memlab.events.AnswerabilityGate.__module__  # the library module holds the feature definitions
    assert empty == "memlab.events.answerability"
    hits = [memlab.Hit("a", "x", 0.3, lexical=1.2), memlab.Hit("b", "y", 0.5), memlab.Hit("c", "z", 0.7, lexical=0.1)]
    gate = AnswerabilityGate(coef=(0.0,) * N, intercept=0.0, mean=(0.0,) * N, scale=(1.0,) * N, threshold=0.5)
    assert gate.probability(hits, 10) == pytest.approx(0.5) and gate.answerable(hits, 10)
    assert not gate.answerable([], 10), "nothing found is never answerable"


def test_fit_picks_a_threshold_under_the_false_memory_rule_and_transfers(tmp_path):
    train, test = _table(300, 0), _table(200, 1, shift=0.02)
    fitted = lab.metrics.fit_answerability(train, source="train")
    assert fitted.cv["roc_auc"] > 0.9 and fitted.cv["false_memory_rate"] <= 0.2
    assert fitted.gate.features == FEATURE_NAMES
    found = lab.metrics.evaluate_answerability(fitted, test)
    assert found["roc_auc"] > 0.9 and found["recall_kept"] > 0.5
    path = fitted.gate.save(tmp_path / "answerability.json")
    again = memlab.events.AnswerabilityGate.load(path)
    assert again == fitted.gate and again.fitted["data_set"] == "train"
    hits = [memlab.Hit("a", "x", 0.3, lexical=1.0), memlab.Hit("b", "y", 0.4)]
    far = [memlab.Hit("a", "x", 0.8), memlab.Hit("b", "y", 0.85)]
    assert again.probability(hits, 100) > again.probability(far, 100)


def test_calibration_reads_probabilities_against_outcomes():
    rng = np.random.default_rng(0)
    p = rng.random(20_000)
    honest = rng.random(20_000) < p  # p(answerable) = p exactly
    assert lab.metrics.answerability_calibration(honest, p)["calibration_error"] < 0.02
    overconfident = rng.random(20_000) < 0.5  # a coin, however sure the model says it is
    worse = lab.metrics.answerability_calibration(overconfident, p)
    assert worse["calibration_error"] == pytest.approx(0.25, abs=0.02) and worse["brier"] > 0.3
    fitted = lab.metrics.fit_answerability(_table(300, 0), source="train")
    assert 0.0 <= fitted.cv["calibration_error"] < 0.2 and 0.0 <= fitted.cv["brier"] < 0.25


def test_a_bad_artefact_is_refused_with_the_fix(tmp_path):
    with pytest.raises(memlab.ConfigError, match="does not exist; run `memlab eval`"):
        memlab.events.AnswerabilityGate.load(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text(json.dumps({"kind": "something/1"}))
    with pytest.raises(memlab.ConfigError, match="not a memlab answerability gate"):
        memlab.events.AnswerabilityGate.load(tmp_path / "other.json")
    with pytest.raises(memlab.ConfigError, match="refit it"):
        AnswerabilityGate(coef=(0.0,), intercept=0.0, mean=(0.0,), scale=(1.0,), threshold=0.5, features=("x",))


def test_coverage_tells_an_unheard_of_name_from_a_known_one(store, embedder, app_name):
    """Full-text coverage: the share of the question's IDF mass a hit holds."""
    mem = memlab.EventMemory(store, embedder)
    mem.add_session(make_session(app_name, "u", "s1", ["My hamster Biscuit sleeps all day in his cage.",
                                                       "We walk the dog along the canal every evening."]))  # fmt: skip
    lexical = memlab.SearchSettings(mode="lexical")
    known = mem.search(app_name, "u", "What is my hamster called?", lexical)[0].coverage
    unknown = mem.search(app_name, "u", "What does my iguana Zephyr eat each day?", lexical)
    assert unknown, "the shared word 'day' still finds a unit"
    assert known >= 0.5 and 0 < unknown[0].coverage < known


def test_search_applies_the_gate(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    mem.add_session(make_session(app_name, "u", "s1", ["I keep my bike in the basement storage room."]))
    strict = memlab.events.AnswerabilityGate(coef=(-5.0,) + (0.0,) * (N - 1), intercept=2.0, mean=(0.0,) * N,
                                             scale=(1.0,) * N, threshold=0.5)  # answerable when first distance < 0.4
    near = mem.search(app_name, "u", "Where do I keep my bike?", gate=strict)
    far = mem.search(app_name, "u", "What is the capital of Australia?", gate=strict)
    assert [h.text for h in near] == ["I keep my bike in the basement storage room."]
    assert far == [] and far.dropped_by_cutoff == 1
