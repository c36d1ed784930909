"""Memlab writes only where it may. A folder it did not make is never emptied or overwritten,
two names never share one result file, and an experiment's name never steers the output out of reports/."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from memlab import ConfigError, lab
from memlab.cli import app
from memlab.lab.base.outputs import claim_folder, mark
from tests.conftest import ROOT

FIXTURE_DATA = {"name": "fx", "format": "fixtures", "path": "fixtures/events"}


def _user_folder(path: Path) -> dict[Path, bytes]:
    """A folder of someone's own files, as the issue's reproduction had it; returns their bytes."""
    files = {
        path / "holiday.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
        path / "runs" / "training-log.txt": b"epoch 1 loss 0.3\n",
        path / "labels" / "labels.csv": b"id,label\n1,cat\n",
        path / "report.md": b"# my report\n",
        path / "scores.csv": b"a,b\n1,2\n",
    }
    for file, data in files.items():
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(data)
    return files


def _unchanged(files: dict[Path, bytes], folder: Path) -> None:
    for file, data in files.items():
        assert file.read_bytes() == data, f"{file} was changed"
    assert sorted(p for p in folder.rglob("*") if p.is_file()) == sorted(files), "files were added or removed"


def _one_line_error(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.output, result.output
    return lines[0]


@pytest.mark.parametrize("manifest", [None, "{not json", '{"name": "my app", "status": "complete"}', "[1, 2]"])
def test_eval_refuses_a_folder_memlab_did_not_make(tmp_path, manifest):
    folder = tmp_path / "mine"
    files = _user_folder(folder)
    if manifest is not None:
        files[folder / "manifest.json"] = manifest.encode()
        (folder / "manifest.json").write_text(manifest)
    for extra in ([], ["--force"]):
        line = _one_line_error(CliRunner().invoke(app, ["eval", "--suite", "fixtures", "--out", str(folder), *extra]))
        assert "not a memlab run folder" in line and str(folder) in line
        _unchanged(files, folder)


def test_run_experiment_itself_refuses_a_user_folder(tmp_path):
    folder = tmp_path / "mine"
    files = _user_folder(folder)
    config = lab.parse_config({"name": "x", "datasets": [FIXTURE_DATA], "sweeps": []}, source="x.yaml",
                              base_dirs=[ROOT])  # fmt: skip
    with pytest.raises(ConfigError, match="not a memlab run folder"):
        lab.run_experiment(config, folder)
    _unchanged(files, folder)


def test_memlab_folders_and_empty_folders_may_be_replaced(tmp_path):
    new, empty, ours, old = tmp_path / "new", tmp_path / "empty", tmp_path / "ours", tmp_path / "old"
    empty.mkdir()
    ours.mkdir()
    (ours / "manifest.json").write_text(json.dumps({**mark("run"), "status": "complete"}))
    (ours / "report.md").write_text("x")
    old.mkdir()  # a run folder from before the mark
    (old / "manifest.json").write_text(json.dumps({"status": "running", "config": {"resolved": {"k": 10}}}))
    for folder in (new, empty, ours, old):
        assert claim_folder(folder) == folder
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="a file"):
        claim_folder(tmp_path / "file")


def test_the_latest_copy_never_replaces_a_user_folder(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({**mark("run"), "status": "complete"}))
    latest = tmp_path / "latest"
    files = _user_folder(latest)
    with pytest.raises(ConfigError, match="not a memlab run folder"):
        lab.experiment.publish_latest(run, latest)
    _unchanged(files, latest)
    lab.experiment.publish_latest(run, tmp_path / "fresh")
    lab.experiment.publish_latest(run, tmp_path / "fresh")  # memlab's own copy is replaced
    assert (tmp_path / "fresh" / "manifest.json").exists()


def test_other_writing_commands_refuse_user_files(tmp_path):
    runner = CliRunner()
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps({"fx/auto/recall@10": 0.5}))
    (run / "manifest.json").write_text(json.dumps({**mark("run"), "status": "complete",
                                                   "config": {"resolved": {"name": "x"}}}))  # fmt: skip
    mine = tmp_path / "mine.json"
    mine.write_text('{"my": "settings"}')
    line = _one_line_error(runner.invoke(app, ["baseline", "--run", str(run), "--out", str(mine)]))
    assert "will not overwrite" in line and mine.read_text() == '{"my": "settings"}'
    base = tmp_path / "base.json"
    assert runner.invoke(app, ["baseline", "--run", str(run), "--out", str(base)]).exit_code == 0
    assert runner.invoke(app, ["baseline", "--run", str(run), "--out", str(base)]).exit_code == 0, "its own file"
    user_run = tmp_path / "user-run"  # a metrics.json in a folder of the user's, beside their own gate.md
    user_run.mkdir()
    (user_run / "metrics.json").write_text(json.dumps({"fx/auto/recall@10": 0.5}))
    (user_run / "gate.md").write_text("my gate notes")
    line = _one_line_error(runner.invoke(app, ["report", "--baseline", str(base), "--run", str(user_run)]))
    assert "gate.md" in line and (user_run / "gate.md").read_text() == "my gate notes"
    bench = tmp_path / "bench"
    files = _user_folder(bench)
    line = _one_line_error(runner.invoke(app, ["bench", "--out", str(bench)]))
    assert "not a memlab bench folder" in line
    _unchanged(files, bench)
    (tmp_path / "a-file").write_text("keep")
    line = _one_line_error(runner.invoke(app, ["check", "reliability", "--out", str(tmp_path / "a-file")]))
    assert (tmp_path / "a-file").read_text() == "keep"


# -- two names, one file -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b"), [("d/1", "d_1"), ("sys one", "sys_one"), ("A", "a"), ("x?", "x!"),
                                      ("_x", "x"), ("d 1", "d\t1")])  # fmt: skip
def test_names_that_share_a_file_name_are_refused(a, b):
    data = [{**FIXTURE_DATA, "name": a}, {**FIXTURE_DATA, "name": b}]
    with pytest.raises(ConfigError, match="data sets") as caught:
        lab.parse_config({"name": "x", "datasets": data, "sweeps": []}, source="x.yaml")
    assert repr(a) in str(caught.value) and repr(b) in str(caught.value)
    systems = [{"name": a}, {"name": b}]
    with pytest.raises(ConfigError, match="systems") as caught:
        lab.parse_config({"name": "x", "datasets": [FIXTURE_DATA], "systems": systems, "sweeps": []}, source="x")
    assert repr(a) in str(caught.value) and repr(b) in str(caught.value)
    embedders = [{"name": a, "kind": "packaged"}, {"name": b, "kind": "packaged"}]
    with pytest.raises(ConfigError, match="embedders"):
        lab.parse_config({"name": "x", "datasets": [FIXTURE_DATA], "embedders": embedders, "sweeps": []}, source="x")


def test_a_data_set_and_a_system_cannot_spell_another_pairs_file():
    data = [{**FIXTURE_DATA, "name": "a__b"}, {**FIXTURE_DATA, "name": "a"}]
    systems = [{"name": "c"}, {"name": "b__c"}]  # runs/a__b__c.parquet twice
    with pytest.raises(ConfigError, match="a__b__c"):
        lab.parse_config({"name": "x", "datasets": data, "systems": systems, "sweeps": []}, source="x")


def test_distinct_names_are_kept_apart():
    data = [{**FIXTURE_DATA, "name": n} for n in ("d1", "d-1", "d.1", "d_1")]
    systems = [{"name": n} for n in ("sys-one", "sys_one", "sys.one")]
    config = lab.parse_config({"name": "x", "datasets": data, "systems": systems, "sweeps": []}, source="x")
    assert [d["name"] for d in config.resolved["datasets"]] == ["d1", "d-1", "d.1", "d_1"]


def test_a_run_never_overwrites_another_runs_file(tmp_path):
    nan = float("nan")
    frame = pd.DataFrame([("s", "q1", 0, None, [], nan, 0, 1.0, "", nan, nan, nan)], columns=lab.runs.RUN_COLUMNS)
    lab.runs.Run("d/1", "s", frame).save(tmp_path)
    lab.runs.Run("d/1", "s", frame).save(tmp_path)  # the same run again: fine
    with pytest.raises(ConfigError, match=r"'d/1'.*'d_1'|'d_1'.*'d/1'"):
        lab.runs.Run("d_1", "s", frame).save(tmp_path)
    assert [r.dataset for r in lab.runs.load_runs(tmp_path)] == ["d/1"]


# -- the name of an experiment is not a path ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/abs", "a/../../b", "..", "a\\..\\b", "x\x00y", "~/x"])
def test_an_experiment_name_never_leaves_reports(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["eval", "--suite", "fixtures", "--set", f"name={name}"])
    line = _one_line_error(result)
    assert "name" in line
    assert sorted(tmp_path.rglob("*")) == [], "nothing is written"


def test_the_default_folder_is_under_reports():
    config = lab.parse_config({"name": "my exp: v2", "datasets": [FIXTURE_DATA], "sweeps": []}, source="x")
    folder = lab.experiment.default_run_folder(config, "20260101T000000")
    assert folder.parent == Path("reports") and folder.name == "my_exp_v2-20260101T000000"
