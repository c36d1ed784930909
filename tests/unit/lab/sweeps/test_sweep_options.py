"""Every sweep declares its options as a dataclass (Sweep.options_type) and one function checks them all when the
config is read: unknown keys get the nearest valid one, each value its type and bounds, the answer sweep's too; a
new option is one line of a dataclass; the options read back as rows."""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass
from typing import get_type_hints

import pytest

from memlab import ConfigError, lab
from memlab.lab.base.options import option
from memlab.lab.sweeps import SWEEPS
from memlab.lab.sweeps.base import Sweep
from memlab.lab.sweeps.ingest import IngestOptions
from memlab.lab.sweeps.options import sweep_option_rows
from tests.conftest import ROOT

EXAMPLE = str(ROOT / "fixtures" / "jsonl" / "example.jsonl")
MODELS = [{"name": "m", "kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "m"}]


def parse(sweep: str, settings: object) -> lab.ExperimentConfig:
    return lab.parse_config({"name": "x", "datasets": [{"name": "d", "format": "memlab", "path": EXAMPLE}],
                             "sweeps": [sweep], "options": {sweep: settings}, "models": MODELS},
                            source="c.yaml")  # fmt: skip


def test_every_sweep_declares_its_options_and_every_option_reads_back_as_a_row():
    assert "answer" in SWEEPS
    rows = sweep_option_rows()
    for name, sweep in SWEEPS.items():
        assert is_dataclass(sweep.options_type), name
        declared = [f.name for f in fields(sweep.options_type)]
        assert [r.name for r in rows if r.owner == name] == [*declared, "datasets"], name
    assert all(r.type and r.default and r.description for r in rows)
    by = {(r.owner, r.name): r for r in rows}
    assert (by["answer", "reader"].default, by["answer", "k"].type, by["answer", "k"].default) == (
        "required", "a whole number in 1..100", "5")
    assert by["cutoff", "target"].type == "a number in 0.0..1.0" and by["cutoff", "target"].default == "0.2"
    assert by["labels", "depths"].default == "[5, 10, 20]" and by["ingest", "repeat"].default == "1"
    assert by["retrieval", "answerability"].default == "{train: synth, system: null}"


@pytest.mark.parametrize("name", list(SWEEPS))
def test_a_misspelt_option_of_any_sweep_gets_the_nearest_valid_one(name):
    key = fields(SWEEPS[name].options_type)[0].name
    with pytest.raises(ConfigError, match=rf"c.yaml: options.{name}: unknown key\(s\) \['{key}x'\] \(did you mean "
                                          rf"'{key}'\?\) for the {name} sweep; known: .*'datasets'"):
        parse(name, {"reader": "m", f"{key}x": 1} if name == "answer" else {f"{key}x": 1})


def _wrong_kind(annotation: object) -> object:
    """A value of the wrong shape for any option type: a mapping for a value or list, a list for a mapping."""
    return [1, 2] if is_dataclass(annotation) else {"a": 1}


@pytest.mark.parametrize(("name", "key"), [(r.owner, r.name) for r in sweep_option_rows()])
def test_a_wrong_type_of_any_sweep_option_names_the_key_the_type_and_the_fix(name, key):
    annotation = get_type_hints(SWEEPS[name].options_type).get(key, list[str])  # `datasets`: a list of names
    settings = {"reader": "m"} if name == "answer" else {}
    with pytest.raises(ConfigError) as caught:
        parse(name, {**settings, key: _wrong_kind(annotation)})
    text = str(caught.value)
    assert text.startswith(f"c.yaml: options.{name}.{key} must be "), text
    assert ("leave it out" in text or f"leave `{key}` out" in text or "is required" in text), text


@pytest.mark.parametrize(("settings", "message"), [
    ({}, r"options.answer: the answer sweep needs `reader` \(the name of an openai-chat model"),
    ({"reader": "m", "k": 101}, r"options.answer.k must be a whole number in 1..100, got 101"),
    ({"reader": "m", "judge": ""}, r"options.answer.judge must be non-empty text or null, got ''"),
    ({"reader": "m", "systems": []}, r"options.answer.systems must be a non-empty list of non-empty text"),
    ({"reader": "m", "systems": ["a", 2]}, r"options.answer.systems\[1\] must be non-empty text, got 2"),
    ({"reader": "m", "datasets": "d"}, r"options.answer.datasets must be a list of text or null, got 'd'"),
    ({"reader": "nobody"}, r"options.answer.reader 'nobody' is not an openai-chat model of the models: section"),
])  # fmt: skip
def test_the_answer_sweeps_options_are_checked_like_every_other(settings, message):
    with pytest.raises(ConfigError, match=message):
        parse("answer", settings)
    typed = SWEEPS["answer"].typed({"reader": "m", "systems": ["e"]})
    assert (typed.reader, typed.judge, typed.systems, typed.k) == ("m", None, ["e"], 5)


def test_a_sweep_named_without_options_is_checked_with_none_given():
    with pytest.raises(ConfigError, match="the answer sweep needs `reader`"):
        lab.parse_config({"name": "x", "datasets": [{"name": "d", "format": "memlab", "path": EXAMPLE}],
                          "sweeps": ["answer"], "models": MODELS})  # fmt: skip
    assert parse("ingest", None).resolved["options"]["ingest"] == {}, "`ingest:` alone: its defaults"


@dataclass(frozen=True)
class WarmIngestOptions(IngestOptions):
    warmup: int = option(0, "sessions ingested first and not timed", low=0, high=10)


def test_a_new_sweep_option_is_one_line_and_is_checked_and_listed(monkeypatch):
    monkeypatch.setattr(SWEEPS["ingest"], "options_type", WarmIngestOptions)
    assert parse("ingest", {"warmup": 3, "repeat": 2}).resolved["options"]["ingest"] == {"warmup": 3, "repeat": 2}
    assert SWEEPS["ingest"].typed({"repeat": 2}) == WarmIngestOptions(repeat=2, warmup=0)
    with pytest.raises(ConfigError, match=r"options.ingest.warmup must be a whole number in 0..10, got 11; write "
                                          r"e.g. `warmup: 0` \(the default\)"):
        parse("ingest", {"warmup": 11})
    with pytest.raises(ConfigError, match=r"\['wramup'\] \(did you mean 'warmup'\?\)"):
        parse("ingest", {"wramup": 1})
    assert [r.name for r in sweep_option_rows() if r.owner == "ingest"] == ["repeat", "warmup", "datasets"]


def test_a_new_sweep_is_listed_from_its_own_declaration():
    @dataclass(frozen=True)
    class EchoOptions:
        times: int = option(1, "how often", low=1, high=3)

    class Echo(Sweep):
        name = "echo"
        options_type = EchoOptions

    rows = sweep_option_rows({"echo": Echo()})
    assert [(r.owner, r.name, r.default) for r in rows] == [("echo", "times", "1"), ("echo", "datasets", "none")]
    with pytest.raises(ConfigError, match=r"options.echo.times must be a whole number in 1..3, got 4"):
        Echo().parse_options({"times": 4}, "c.yaml: options.echo")
