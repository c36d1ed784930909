"""Typed options: one check for any options dataclass (unknown keys with the nearest valid one, types, bounds,
required keys, a cross-key check) and the same declaration read back as rows."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from memlab import ConfigError
from memlab.lab.base.options import OptionRow, check_options, option, option_rows


@dataclass(frozen=True)
class Inner:
    train: str = option("synth", "the data set it is fitted on")


@dataclass(frozen=True)
class Example:
    model: str = option(doc="the model that answers", blank=False)
    depth: int = option(10, "how deep", low=1, high=100)
    weights: list[float] = option([0.5], "the weights", low=0.0, high=1.0, min_items=1)
    mode: str = option("fast", "how", choices=("fast", "slow"))
    limit: int | None = option(None, "keep the first N", low=1)
    files: str | list[str] = option("a.json", "one file or several")
    inner: Inner = option(Inner(), "a nested block")

    def check(self, where: str) -> None:
        if self.mode == "slow" and self.depth > 50:
            raise ConfigError(f"{where}: a slow mode goes at most 50 deep")


def check(values: dict) -> Example:
    return check_options(Example, values, "c.yaml: options.x", owner="the x sweep", also=("datasets",))


def test_a_valid_mapping_becomes_the_typed_instance_with_defaults():
    got = check({"model": "m", "weights": [1, 0.25], "files": ["a", "b"], "inner": {"train": "d"}})
    assert got == Example("m", 10, [1.0, 0.25], "fast", None, ["a", "b"], Inner("d"))
    assert isinstance(got.weights[0], float), "an int given for a float option reads as a float"


@pytest.mark.parametrize(("values", "message"), [
    ({"model": "m", "dept": 3}, r"c.yaml: options.x: unknown key\(s\) \['dept'\] \(did you mean 'depth'\?\) for the x "
                                r"sweep; known: \['datasets', 'depth', "),
    ({"model": "m", "depth": "3"}, r"options.x.depth must be a whole number in 1..100, got '3'; write e.g. `depth: "
                                   r"10` \(the default\) or leave it out"),
    ({"model": "m", "depth": 0}, r"depth must be a whole number in 1..100, got 0"),
    ({"model": "m", "depth": True}, r"depth must be a whole number in 1..100, got True"),
    ({"model": "m", "weights": []}, r"weights must be a non-empty list of numbers in 0.0..1.0, got \[\]"),
    ({"model": "m", "weights": [0.5, float("nan")]}, r"weights\[1\] must be a number in 0.0..1.0, got nan"),
    ({"model": "m", "mode": "fsat"}, r"mode must be one of \['fast', 'slow'\], got 'fsat' \(did you mean 'fast'\?\)"),
    ({"model": "m", "limit": "all"}, r"limit must be a whole number >= 1 or null, got 'all'; or leave `limit` out"),
    ({"model": "m", "files": 3}, r"files must be text or a list of text, got 3"),
    ({"model": "m", "files": ["a", 3]}, r"files\[1\] must be text, got 3"),
    ({"model": "m", "inner": {"trian": "d"}}, r"options.x.inner: unknown key\(s\) \['trian'\] \(did you mean "
                                              r"'train'\?\)"),
    ({"model": "m", "inner": "d"}, r"inner must be a mapping of train, got 'd'"),
    ({"depth": 3}, r"options.x: the x sweep needs `model` \(the model that answers\)"),
    ({"model": " "}, r"model must be non-empty text, got ' '; `model` is required: the model that answers"),
    ({"model": "m", "mode": "slow", "depth": 60}, r"options.x: a slow mode goes at most 50 deep"),
    ("depth: 3", r"options.x must be a mapping of settings, got 'depth: 3'"),
])  # fmt: skip
def test_a_bad_value_names_the_key_the_expected_type_and_the_fix(values, message):
    with pytest.raises(ConfigError, match=message):
        check(values)


def test_a_required_key_may_be_missing_from_an_entry_that_is_never_loaded():
    got = check_options(Example, {"depth": 3}, "w", owner="o", missing_ok=True)
    assert got.model is None and got.depth == 3
    with pytest.raises(ConfigError, match="depth must be"):  # the values it has are still checked
        check_options(Example, {"depth": -1}, "w", owner="o", missing_ok=True)


def test_a_secret_value_is_never_shown():
    @dataclass(frozen=True)
    class Secret:
        dsn: str | None = option(None, "where", secret=True)

    with pytest.raises(ConfigError) as caught:
        check_options(Secret, {"dsn": ["postgresql://me:hunter2@db/x"]}, "w", owner="o")
    assert "hunter2" not in str(caught.value) and "dsn must be text or null" in str(caught.value)


def test_the_declaration_reads_back_as_rows():
    rows = {r.name: r for r in option_rows(Example, "x")}
    assert list(rows) == ["model", "depth", "weights", "mode", "limit", "files", "inner"]
    assert rows["model"] == OptionRow("x", "model", "non-empty text", "required", "the model that answers")
    assert rows["depth"] == OptionRow("x", "depth", "a whole number in 1..100", "10", "how deep")
    assert rows["weights"].type == "a non-empty list of numbers in 0.0..1.0" and rows["weights"].default == "[0.5]"
    assert rows["mode"].type == "one of ['fast', 'slow']" and rows["limit"].default == "none"
    assert rows["inner"].type == "a mapping of train" and rows["inner"].default == "{train: synth}"
