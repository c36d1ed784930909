"""What a system is (main, exact reference, cut-off of a parent, a sweep's) is recorded beside its runs and scores,
and every reader decides by that record: a user's main system may be named like anything memlab makes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

import memlab
from memlab import lab
from memlab.lab.runs.folder import save_labels  # the writer a run uses for its labels

APP = "roles"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
# main systems named as memlab names a cut, the exact reference, the filtered sweep's figures and a sweep's system
ODD_NAMES = ("my@cut0.5", "faiss-exact-ish", "filtered:x", "event[mine]", "answerability:mine")


def _folder(root: Path, *, recorded: bool) -> Path:
    """A run folder of one data set whose main systems carry ODD_NAMES, plus one true cut of the first of them.
    `recorded`: written by this memlab (roles saved); else as a folder written before roles were recorded,
    whose manifest lists the configured systems."""
    users, questions = [], []
    for i in range(6):
        user = f"u{i}"
        events = [memlab.Event(id=f"{user}-e{j}", author="user", timestamp=T0, text=f"note {j}") for j in range(4)]
        users.append(lab.datasets.UserHistory(APP, user, [memlab.Session(APP, user, f"{user}-s", tuple(events))]))
        questions.append(lab.Question(id=f"{user}-q", app_name=APP, user_id=user, text=f"question {i}",
                                      relevant=(f"{user}-e0",) if i < 4 else ()))  # fmt: skip
    out = root / ("recorded" if recorded else "old")
    out.mkdir()
    dataset = lab.Dataset("d", users, questions)
    save_labels(out, dataset)

    def search(q: lab.Question, _vector: np.ndarray) -> list[memlab.Hit]:
        return [memlab.Hit(unit_id=f"{q.user_id}-{r}", text="x" * 10, distance=0.2 * r, session_id=f"{q.user_id}-s",
                           event_ids=(f"{q.user_id}-e{r - 1}",)) for r in (1, 2, 3)]  # fmt: skip

    vectors = {q.id: np.zeros(1) for q in questions}
    for name in ODD_NAMES:
        frame = lab.runs.collect(name, search, questions, vectors)
        lab.runs.Run("d", name, frame, role=lab.systems.SystemRole("main")).save(out)
    frame = lab.runs.collect("cut-of-mine", search, questions, vectors)
    frame = frame[frame["rank"] <= 1]
    role = lab.systems.SystemRole("cut", "cutoff", ODD_NAMES[0])
    lab.runs.Run("d", "my@cut0.5@cut0.3", frame.assign(system="my@cut0.5@cut0.3"), role=role).save(out)
    manifest = {"status": "complete", "datasets": [{"name": "d", "checksum": dataset.checksum(), **dataset.summary()}],
                "config": {"resolved": {"name": "roles", "k": 10, "plots": False,
                                        "systems": [{"name": n} for n in ODD_NAMES]}}}  # fmt: skip
    if recorded:
        manifest["format_version"] = lab.runs.FORMAT_VERSION
    else:  # the runs as saved before roles were recorded
        for path in (out / "runs").glob("*.parquet"):
            pd.read_parquet(path).drop(columns=["role", "sweep", "parent"]).to_parquet(path)
    (out / "manifest.json").write_text(json.dumps(manifest))
    lab.score_folder(out)
    return out


def _check_readers(out: Path) -> None:
    folder = lab.RunFolder(out)
    roles = folder.scores.drop_duplicates("system").set_index("system").role
    assert all(roles[n] == "main" for n in ODD_NAMES), roles.to_dict()
    assert roles["my@cut0.5@cut0.3"] == "cut"
    assert set(lab.experiment.headline(out).system) == set(ODD_NAMES), "every main system is in the CLI's headline"
    assert set(lab.report.viewer_systems(folder, "d")) == set(ODD_NAMES), "the viewer shows main systems, not cuts"
    lab.write_report(out)
    section = (out / "report.md").read_text().split("\n## d\n", 1)[1]
    for name in ODD_NAMES:
        assert f"| {name} " in section, (name, section[:600])
    metrics = json.loads((out / "metrics.json").read_text())
    assert all(f"d/{n}/recall@10" in metrics for n in ODD_NAMES), "metric keys keep the system names"


def test_systems_named_like_memlab_made_ones_are_main_when_recorded_so(tmp_path):
    out = _folder(tmp_path, recorded=True)
    assert (out / "systems.parquet").exists()
    assert list(pd.read_csv(out / "scores.csv").columns) == ["dataset", "system", "metric", "group", "group_value",
                                                              "value", "questions"]  # fmt: skip
    _check_readers(out)


def test_an_old_folder_gets_its_roles_from_its_configured_systems_once(tmp_path):
    out = _folder(tmp_path, recorded=False)
    (out / "systems.parquet").unlink()  # as written before roles were recorded
    runs = {r.system: r.role for r in lab.runs.load_runs(out)}
    assert runs["my@cut0.5@cut0.3"] == lab.systems.SystemRole("cut", "cutoff", "my@cut0.5")
    assert all(runs[n] == lab.systems.SystemRole("main") for n in ODD_NAMES)
    _check_readers(out)


def test_gate_and_compare_keep_a_main_system_named_like_a_cut(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first, second = _folder(tmp_path / "a", recorded=True), _folder(tmp_path / "b", recorded=True)
    comparison = lab.compare_runs(first, second)
    compared = set(comparison.table.system) if "system" in comparison.table else set(comparison.coverage.system)
    assert "my@cut0.5" in compared and "my@cut0.5@cut0.3" not in compared, compared


def test_the_gate_judges_a_main_system_named_like_a_cut_and_leaves_out_the_real_cut(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first, second = _folder(tmp_path / "a", recorded=True), _folder(tmp_path / "b", recorded=True)
    baseline = tmp_path / "baseline.json"
    lab.report.write_baseline(first, baseline)
    judged = set(lab.report.gate_table(baseline, second).metric)
    assert {f"d/{n}/recall@10" for n in ODD_NAMES} <= judged, sorted(judged)[:20]
    assert "d/my@cut0.5@cut0.3/recall@10" not in judged, "a cut-off grid point is not gated"
