"""Alerts and drift on run folders built the way a run writes them (labels, one saved run per system, scored by
`lab.score_folder`); only the hit lists are made up. Drift: the KS test of two probes' top-hit distances is small
when the distances moved and large when they did not. Alerts: the per-question table a scored folder holds feeds
the noise rule as it is (the probe passes it filtered to one data set and system)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import memlab
from memlab import lab
from memlab.lab.live.alerts import evaluate_alerts, parse_alert
from memlab.lab.live.drift import distance_drift
from memlab.lab.runs.folder import save_labels  # the writer a run uses for its labels

APP = "live"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
QUESTIONS = 30


def _folder(path: Path, *, shift: float = 0.0, lost: int = 0, system: str = "prod", seed: int = 0) -> Path:
    """A probe-like run folder of QUESTIONS questions (one user each): question i's relevant event at rank 1
    unless i < `lost`; the distances of its hits drawn around 0.3 + `shift`."""
    rng = np.random.default_rng(seed)
    users, questions = [], []
    for i in range(QUESTIONS):
        user = f"u{i:03d}"
        events = tuple(memlab.Event(id=f"{user}-e{j}", author="user", timestamp=T0, text=f"note {j} of {user}")
                       for j in range(12))  # fmt: skip
        users.append(lab.datasets.UserHistory(APP, user, [memlab.Session(APP, user, f"{user}-s", events)]))
        questions.append(lab.Question(id=f"{user}-q", app_name=APP, user_id=user, text=f"question {i}",
                                      relevant=(f"{user}-e0",)))  # fmt: skip
    path.mkdir()
    dataset = lab.Dataset("labels", users, questions)
    save_labels(path, dataset)
    number = {q.id: i for i, q in enumerate(questions)}

    def search(q: lab.Question, _vector: np.ndarray) -> list[memlab.Hit]:
        found = number[q.id] >= lost
        distances = np.sort(rng.normal(0.3 + shift, 0.05, size=10))
        return [memlab.Hit(unit_id=f"{q.user_id}-{rank}", text="x" * 20, distance=float(d), session_id=f"{q.user_id}-s",
                           event_ids=(f"{q.user_id}-e{0 if found and rank == 1 else rank + 1}",))
                for rank, d in enumerate(distances, start=1)]  # fmt: skip

    frame = lab.runs.collect(system, search, questions, {q.id: np.zeros(1) for q in questions})
    lab.runs.Run("labels", system, frame).save(path)
    manifest = {"status": "complete", "datasets": [{"name": "labels", "checksum": dataset.checksum()}],
                "config": {"resolved": {"name": "probe", "k": 10}}}  # fmt: skip
    (path / "manifest.json").write_text(json.dumps(manifest))
    lab.score_folder(path)
    return path


def test_distances_that_moved_are_drift_and_the_same_are_not(tmp_path):
    previous = _folder(tmp_path / "previous", seed=1)
    same = _folder(tmp_path / "same", seed=2)
    moved = _folder(tmp_path / "moved", shift=0.05, seed=3)
    quiet, loud = distance_drift(same, previous), distance_drift(str(moved), str(previous))
    for table in (quiet, loud):
        assert {"dataset", "system", "hits", "ks_statistic", "p_value", "n_previous", "n_current"} <= set(table)
        assert set(table.hits) == {"all", "relevant"} and set(table.system) == {"prod"}
        assert table[table.hits == "all"].n_current.item() == QUESTIONS * 10  # the top 10 hits of each question
    assert quiet[quiet.hits == "all"].p_value.item() > 0.05
    assert loud[loud.hits == "all"].p_value.item() < 1e-6


def test_drift_pairs_a_renamed_system_but_not_unrelated_ones(tmp_path):
    """A probe runs one system: renamed between two probes it is still compared. Folders of several systems
    pair by name only, and sharing none is an error naming them."""
    previous = _folder(tmp_path / "previous", system="old", seed=1)
    current = _folder(tmp_path / "current", system="new", shift=0.05, seed=2)
    renamed = distance_drift(current, previous)
    assert set(renamed.system) == {"new"} and renamed[renamed.hits == "all"].p_value.item() < 1e-6
    for folder, system in ((previous, "old"), (current, "new")):  # a second system in each, still none shared
        frame = lab.RunFolder(folder).runs("labels")[system].frame
        lab.runs.Run("labels", f"{system}-2", frame.assign(system=f"{system}-2")).save(folder)
    with pytest.raises(memlab.ConfigError, match=r"no system in common.*old.*new"):
        distance_drift(current, previous)
    (tmp_path / "empty").mkdir()
    with pytest.raises(memlab.ConfigError, match="no saved runs"):
        distance_drift(current, tmp_path / "empty")


def _probe_inputs(folder: Path) -> tuple[dict[str, float], pd.DataFrame]:
    """What the probe hands evaluate_alerts: the flat metrics of its one (data set, system) without the prefix,
    and the question table filtered to them."""
    metrics = json.loads((folder / "metrics.json").read_text())
    flat = {key.split("/", 2)[2]: value for key, value in metrics.items() if key.startswith("labels/prod/")}
    questions = pd.read_parquet(folder / "question_scores.parquet")
    return flat, questions[(questions.dataset == "labels") & (questions.system == "prod")]


def test_the_noise_rule_reads_a_scored_folders_question_table(tmp_path):
    previous, previous_questions = _probe_inputs(_folder(tmp_path / "previous"))
    noisy, noisy_questions = _probe_inputs(_folder(tmp_path / "noisy", lost=1))
    broken, broken_questions = _probe_inputs(_folder(tmp_path / "broken", lost=15))
    alert = parse_alert("recall@10<0.99")
    assert previous["recall@10"] == 1.0 and noisy["recall@10"] < 0.99
    [noise] = evaluate_alerts([alert], noisy, question_scores=noisy_questions,
                              previous_question_scores=previous_questions, previous_metrics=previous)  # fmt: skip
    [drop] = evaluate_alerts([alert], broken, question_scores=broken_questions,
                             previous_question_scores=previous_questions, previous_metrics=previous)  # fmt: skip
    assert not noise.fired and "within noise" in noise.reason
    assert drop.fired and drop.p_value < 0.01
    size_key = next(key for key in noisy if key.startswith("recall@10[size="))  # a breakdown key as the folder has it
    [bucket] = evaluate_alerts([parse_alert(f"{size_key}<0.99")], noisy, question_scores=noisy_questions,
                               previous_question_scores=previous_questions)  # fmt: skip
    assert not bucket.fired and bucket.p_value is not None
