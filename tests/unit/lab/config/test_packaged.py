"""The data an installed memlab ships for the quick and example suites (memlab/lab/datasets/packaged/): it is
what `make packaged-data` writes from the checkout now; an extract serves the selections it holds and refuses a
larger one with where to get the whole file; a relative path found in the working folder wins over the checkout
and the packaged copy; a path found nowhere names where its file comes from."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab import ConfigError
from memlab.lab import load_dataset, load_suite
from memlab.lab.config.packaged import packaged_differences
from memlab.lab.datasets.paths import PACKAGED
from tests.conftest import ROOT

ORACLE = "datasets/longmemeval/longmemeval_oracle.json.gz"
S_KU = "datasets/longmemeval/longmemeval_s_knowledge_update.json.gz"
UPSTREAM = "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned"


def _lme(path: str | Path, **selection) -> dict:
    return {"name": "lme", "format": "longmemeval", "path": str(path), **selection}


def test_the_packaged_data_is_what_the_checkout_writes_now():
    assert packaged_differences() == [], "run `make packaged-data` and commit memlab/lab/datasets/packaged/"


@pytest.mark.parametrize(("rel", "selection"), [(ORACLE, {"per_type": 2}), (ORACLE, {"per_type": 3, "limit": 5}),
                                                (S_KU, {"limit": 1})])  # fmt: skip
def test_an_extract_serves_a_selection_it_holds_with_the_whole_files_data(rel: str, selection: dict):
    packaged = load_dataset(_lme(PACKAGED / rel, **selection))
    whole = load_dataset(_lme(ROOT / rel, **selection))
    assert packaged.checksum() == whole.checksum() and packaged.questions


@pytest.mark.parametrize(("rel", "selection"), [
    (ORACLE, {"per_type": 4}), (ORACLE, {}), (ORACLE, {"per_type": 2, "question_types": ["knowledge-update"]}),
    (S_KU, {"limit": 3}), (S_KU, {"per_type": 1}), (S_KU, {"include_abstention": False}),
])  # fmt: skip
def test_an_extract_refuses_a_selection_beyond_it_with_where_to_get_the_file(rel: str, selection: dict):
    with pytest.raises(ConfigError, match="ships only an extract") as refused:
        load_dataset(_lme(PACKAGED / rel, **selection))
    assert UPSTREAM in str(refused.value) and "--set datasets.lme.path=FILE" in str(refused.value)


def test_a_file_in_the_working_folder_wins_over_the_checkout_and_the_packaged_copy(tmp_path, monkeypatch):
    mine = tmp_path / "fixtures" / "jsonl" / "example.jsonl"
    mine.parent.mkdir(parents=True)
    lines = (ROOT / "fixtures" / "jsonl" / "example.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    mine.write_text("".join(lines[:-1]), encoding="utf-8")  # the same file, one question fewer
    monkeypatch.chdir(tmp_path)
    config = load_suite("example")
    entry = next(d for d in config.resolved["datasets"] if d["name"] == "mydata")
    got = load_dataset(entry, config.base_dirs)
    assert got.checksum() == load_dataset({**entry, "path": str(mine)}).checksum()
    assert got.checksum() != load_dataset({**entry, "path": str(PACKAGED / entry["path"])}).checksum()


@pytest.mark.parametrize(("spec", "source"), [
    ({"name": "f", "format": "fixtures", "path": "fixtures/nowhere"}, "memlab checkout's fixtures/"),
    (_lme("datasets/longmemeval/longmemeval_m.json"), UPSTREAM),
])  # fmt: skip
def test_a_path_found_nowhere_names_where_its_file_comes_from(tmp_path, spec: dict, source: str):
    with pytest.raises(ConfigError, match="not found \\(looked in") as missing:
        load_dataset(spec, [tmp_path])
    assert source in str(missing.value) and spec["path"] in str(missing.value)


def test_the_packaged_folder_holds_the_licence_beside_each_extract():
    for rel in (ORACLE, S_KU):
        licence = (PACKAGED / rel).parent / "LICENSE"
        assert licence.read_bytes() == (ROOT / rel).parent.joinpath("LICENSE").read_bytes()
