"""Config safety: every invalid config value is one ConfigError line (exit 2), and a YAML
config cannot grow past its bounds through aliases, nesting or sheer size."""

from __future__ import annotations

import tracemalloc

import pytest
import yaml
from typer.testing import CliRunner

from memlab import ConfigError, lab
from memlab.cli import app
from memlab.lab.config.parse import SUITES_DIR

CI = yaml.safe_load((SUITES_DIR / "ci.yaml").read_text())


def _one_line_error(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.output, result.output
    return lines[0]


def test_a_wrong_type_on_the_command_line_is_one_line(tmp_path):
    line = _one_line_error(CliRunner().invoke(app, ["eval", "--suite", "ci", "--set", "systems.0.ef_search=1e9",
                                                    "--out", str(tmp_path / "o")]))  # fmt: skip
    assert "ef_search" in line and "1e9" in line
    assert not (tmp_path / "o").exists()


KEYS = ["systems.0.ef_search", "systems.1.max_distance", "systems.0.chunk_size", "systems.0.chunk_overlap",
        "systems.0.candidates", "systems.0.rrf_k", "systems.0.vector_weight", "systems.0.per_session",
        "systems.0.exact_below", "systems.0.max_scan_tuples", "systems.0.author_margin", "systems.0.time_weight",
        "systems.0.mode", "systems.0.strategy", "datasets.2.users", "datasets.2.seed", "datasets.3.per_type",
        "datasets.4.limit", "datasets.0.name", "options.filtered.total_rows", "options.filtered.ef_search",
        "options.filtered.queries", "options.cutoff.target", "options.retrieval.modes", "options.ingest.repeat",
        "name", "description"]  # fmt: skip
VALUES = ["1e9", "abc", "-1", "[]", "{a: 1}", ".nan", ".inf", "99999999999999999999999", "[1, 2]"]


ACCEPTED = {("name", "abc"), ("name", "1e9"), ("name", "-1"), ("name", "99999999999999999999999"),
            ("description", "abc"), ("description", "1e9"), ("datasets.0.name", "abc"), ("datasets.0.name", "1e9"),
            ("options.retrieval.modes", "[]"), ("options.filtered.ef_search", "[]"),
            ("options.filtered.ef_search", "[1, 2]")}  # fmt: skip


@pytest.mark.parametrize("key", KEYS)
def test_every_invalid_value_is_a_config_error(key):
    wrong = []
    for value in VALUES:
        try:
            lab.parse_config(CI, source="ci.yaml", overrides=[f"{key}={value}"])
        except ConfigError as exc:
            if (key, value) in ACCEPTED:
                wrong.append(f"{key}={value}: refused ({exc})")
        except Exception as exc:  # what this test looks for
            wrong.append(f"{key}={value}: {type(exc).__name__}: {exc}")
        else:
            if (key, value) not in ACCEPTED:
                wrong.append(f"{key}={value}: accepted")
    assert not wrong, wrong


def test_good_values_still_pass():
    config = lab.parse_config(CI, source="ci.yaml", overrides=["systems.0.ef_search=100", "systems.1.max_distance=0.5",
                                                                "datasets.2.users=8", "options.cutoff.target=0.1"])
    assert config.resolved["systems"][0]["ef_search"] == 100
    for suite in lab.config.suite_names():
        lab.load_suite(suite)


BOMB = """name: bomb
description: &a9 [&a8 [&a7 [&a6 [&a5 [&a4 [&a3 [&a2 [&a1 [lol, lol, lol, lol, lol, lol, lol, lol, lol],
  *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1], *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2], *a3, *a3, *a3, *a3, *a3, *a3,
  *a3, *a3], *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4], *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5], *a6, *a6, *a6, *a6,
  *a6, *a6, *a6, *a6], *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7], *a8, *a8, *a8, *a8, *a8, *a8, *a8, *a8]
datasets: [{name: fx, format: fixtures, path: fixtures/events}]
"""


@pytest.mark.parametrize("text", [
    BOMB,
    BOMB.replace("[lol, lol, lol, lol, lol, lol, lol, lol, lol]", "[" + ", ".join(["x" * 2000] * 9) + "]"),
    "name: m\nx: &a {k: &b {a: 1, b: 2, c: 3, d: 4}, l: *b, m: *b}\n" + "".join(
        f"y{i}: &a{i} [*{'a' if i == 0 else f'a{i - 1}'}, *{'a' if i == 0 else f'a{i - 1}'}, "
        f"*{'a' if i == 0 else f'a{i - 1}'}, *{'a' if i == 0 else f'a{i - 1}'}]\n" for i in range(14)),
    "name: r\ndescription: &r [1, *r]\n",
    "name: deep\ndescription: " + "[" * 5000 + "]" * 5000 + "\n",
    "name: big\ndescription: '" + "x" * 2_000_000 + "'\n",
])  # fmt: skip
def test_yaml_bombs_are_refused_quickly_and_small(tmp_path, text):
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match=r"bomb.yaml: (refused|larger than)"):
            lab.load_config(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20, f"{peak / 2**20:.0f} MB to refuse a config"


@pytest.mark.parametrize("opener,closer", [("[", "]"), ("{a: ", "}"), ("[{a: ", "}]")])
def test_deep_flow_nesting_is_refused_at_the_depth_limit_while_scanning(tmp_path, opener, closer):
    """PyYAML's scanner is quadratic in the flow depth (thousands of brackets take seconds, minutes under
    tracemalloc), so the depth limit is applied as each bracket is scanned, not after the scanner has read them all."""
    path = tmp_path / "deep.yaml"
    path.write_text("name: deep\ndescription: " + opener * 5000 + "x" + closer * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"deep.yaml: refused: nested deeper than 100 levels"):
        lab.load_config(path)
    path.write_text("name: ok\ndatasets: [{name: fx, format: fixtures, path: fixtures/events}]\n"
                    "description: " + "[" * 90 + "x" + "]" * 90 + "\n")
    with pytest.raises(ConfigError, match="description must be text"):  # within the limit: read, then checked
        lab.load_config(path)


def test_a_bomb_in_a_set_value_is_refused_on_the_command_line(tmp_path):
    value = "[&a [x, x, x, x, x, x, x, x, x, x], " + ", ".join(
        f"&a{i} [" + ", ".join([f"*{'a' if i == 0 else f'a{i - 1}'}"] * 10) + "]" for i in range(8)) + "]"
    line = _one_line_error(CliRunner().invoke(app, ["eval", "--suite", "ci", "--set", f"description={value}",
                                                    "--out", str(tmp_path / "o")]))  # fmt: skip
    assert "refused" in line and not (tmp_path / "o").exists()


def test_an_ordinary_anchor_still_works(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("name: ok\nsweeps: []\ndatasets: [{name: fx, format: fixtures, path: fixtures/events}]\n"
                    "systems:\n  - &base {name: a, strategy: hnsw, ef_search: 40}\n  - {<<: *base, name: b}\n")
    config = lab.load_config(path)
    assert [s["ef_search"] for s in config.resolved["systems"]] == [40, 40]
