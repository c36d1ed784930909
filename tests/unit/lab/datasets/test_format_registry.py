"""The data set formats are one registry (reader, typed options, description per format): a config's `datasets:`
entry is checked against its format's options when the config is read, before anything is loaded; a new format is
one entry; the options read back as rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import pytest

from memlab import ConfigError, lab
from memlab.lab.base.options import PATH_CHARS, option
from memlab.lab.datasets.formats import registry
from memlab.lab.datasets.formats.registry import DATA_FORMATS, Format, format_options
from memlab.lab.datasets.model import Dataset
from memlab.lab.datasets.paths import resolve_path
from tests.conftest import ROOT

EXAMPLE = ROOT / "fixtures" / "jsonl" / "example.jsonl"
MISSING = "/nowhere/at/all.jsonl"  # a path that is never read: every check here comes before loading


def parse(*entries: dict) -> lab.ExperimentConfig:
    return lab.parse_config({"name": "x", "datasets": list(entries), "sweeps": []}, source="c.yaml")


def test_every_format_named_by_the_issue_is_one_entry_with_a_reader_options_and_a_description():
    assert list(DATA_FORMATS) == ["memlab", "longmemeval", "locomo", "beir", "fixtures", "synth", "judged"]
    assert DATA_FORMATS["memlab"].aliases == ("jsonl",)
    for fmt in DATA_FORMATS.values():
        assert callable(fmt.read) and fmt.description and fmt.options.__dataclass_fields__ is not None
    assert lab.load_dataset({"name": "d", "format": "jsonl", "path": str(EXAMPLE)}).name == "d"


def test_the_options_read_back_as_rows_with_type_default_and_description():
    rows = {(r.owner, r.name): r for r in format_options()}
    assert {owner for owner, _ in rows} == set(DATA_FORMATS)
    assert all(r.type and r.default and r.description for r in rows.values())
    limit = rows["longmemeval", "limit"]
    assert (limit.type, limit.default) == ("a whole number in 1..1000000 or null", "none")
    assert rows["beir", "split"].default == "test" and rows["synth", "users"].default == "64"
    assert rows["memlab", "path"].default == "required" and rows["judged", "pool"].default == "required"
    assert rows["longmemeval", "include_abstention"].type == "true or false"


@pytest.mark.parametrize(("entry", "message"), [
    ({"format": "longmemeval", "path": MISSING, "limt": 3},
     r"c.yaml: datasets\[0\] \('d'\): unknown key\(s\) \['limt'\] \(did you mean 'limit'\?\) for format longmemeval"),
    ({"format": "locomo", "path": MISSING, "limit": 3},
     r"datasets\[0\] \('d'\): unknown key\(s\) \['limit'\] for format locomo; .*'limit' is read by format\(s\) "
     r"longmemeval, beir, not locomo"),
    ({"format": "longmemeval", "path": MISSING, "per_type": "two"},
     r"datasets\[0\] \('d'\).per_type must be a whole number in 1..1000000 or null, got 'two'; or leave `per_type` "
     r"out"),
    ({"format": "longmemeval", "path": MISSING, "include_abstention": "no"},
     r"include_abstention must be true or false, got 'no'; write e.g. `include_abstention: true` \(the default\)"),
    ({"format": "beir", "path": MISSING, "split": 3}, r"split must be text \(at most 200 characters\), got 3"),
    ({"format": "synth", "users": 1}, r"users must be a whole number in 2..10000, got 1"),
    ({"format": "synth", "users": 10_000, "max_events": 1000}, r"users x max_events = 10,000 x 1,000"),
    ({"format": "judged", "queries": "q", "pool": "p", "judgments": ["j", 3]}, r"judgments\[1\] must be text"),
    ({"format": "judged", "queries": "q", "judgments": "j"}, r"format judged needs `pool`"),
    ({"format": "fixtures"}, r"datasets\[0\] \('d'\): format fixtures needs `path`"),
    ({"format": "memlab", "path": MISSING, "optional": "yes"}, r"optional must be true or false"),
    ({"format": "csv", "path": MISSING}, r"format 'csv' is unknown; use one of memlab, longmemeval"),
])  # fmt: skip
def test_a_bad_entry_is_refused_when_the_config_is_read_naming_the_entry_key_and_fix(entry, message):
    with pytest.raises(ConfigError, match=message):
        parse({"name": "d", **entry})


def test_an_optional_entry_without_its_path_is_left_out_but_its_values_are_still_checked():
    config = parse({"name": "d", "format": "memlab", "path": str(EXAMPLE)},
                   {"name": "mine", "format": "locomo", "optional": True, "per_category": 2})  # fmt: skip
    assert config.skipped == ["mine"]
    with pytest.raises(ConfigError, match=r"datasets\[1\] \('mine'\).per_category must be a whole number"):
        parse({"name": "d", "format": "memlab", "path": str(EXAMPLE)},
              {"name": "mine", "format": "locomo", "optional": True, "per_category": 0})  # fmt: skip


@dataclass(frozen=True)
class FirstOptions:
    path: str = option(doc="a memlab JSON Lines file", chars=PATH_CHARS)
    first: int = option(2, "keep the first N questions", low=1, high=100)


def _first(name: str, options: FirstOptions, base_dirs: list[Path]) -> Dataset:
    data = lab.load_jsonl(resolve_path(options.path, base_dirs, f"data set {name!r}"), name)
    return Dataset(name, data.users, data.questions[: options.first])


def test_a_new_format_is_one_entry_and_its_options_are_checked_and_listed(monkeypatch):
    entry = Format("first", FirstOptions, _first, "the first questions of a memlab JSON Lines file")
    monkeypatch.setattr(registry, "DATA_FORMATS", MappingProxyType({**DATA_FORMATS, "first": entry}))
    data = lab.load_dataset({"name": "f", "format": "first", "path": str(EXAMPLE), "first": 3})
    assert len(data.questions) == 3 and data.name == "f"
    assert len(lab.load_dataset({"name": "f", "format": "first", "path": str(EXAMPLE)}).questions) == 2
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['frist'\] \(did you mean 'first'\?\) for format first"):
        parse({"name": "f", "format": "first", "path": MISSING, "frist": 3})
    with pytest.raises(ConfigError, match=r"\('f'\).first must be a whole number in 1..100, got 0; write e.g. "
                                          r"`first: 2` \(the default\)"):
        parse({"name": "f", "format": "first", "path": MISSING, "first": 0})
    assert [(r.name, r.default) for r in format_options() if r.owner == "first"] == [("path", "required"),
                                                                                    ("first", "2")]
