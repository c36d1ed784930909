"""The formats a user can name and the mistakes a user makes, as the command line shows them:
`format: jsonl`, a JSON file given as JSON Lines, many bad references in one file, a bad `--set` value and a
misspelt config key."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from memlab.lab.datasets.formats.registry import aliases
from tests.conftest import ROOT
from tests.integration.lab.experiment.test_experiment import write_longmemeval_file

EXAMPLE_JSONL = ROOT / "fixtures" / "jsonl" / "example.jsonl"


def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


def _config(tmp_path, **extra) -> str:
    config = {"name": "mistakes", "datasets": [{"name": "d", "format": "memlab", "path": str(EXAMPLE_JSONL)}],
              "sweeps": [], **extra}  # fmt: skip
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_format_jsonl_reads_memlab_json_lines_as_another_name_of_memlab(tmp_path):
    data = lab.load_dataset({"name": "x", "format": "jsonl", "path": str(EXAMPLE_JSONL)})
    assert data.summary() == lab.load_jsonl(EXAMPLE_JSONL).summary()
    res = _cli("check-dataset", str(EXAMPLE_JSONL), "--format", "jsonl")
    assert res.exit_code == 0 and "'questions': 8" in res.output
    assert aliases()["jsonl"] == "memlab", "an alias of the registry: the generated formats page lists it"


def test_a_json_file_read_as_json_lines_names_the_format_that_reads_it(tmp_path):
    lme = tmp_path / "my_longmemeval.json"
    write_longmemeval_file(lme)
    res = _cli("check-dataset", str(lme))
    assert res.exit_code == 2
    assert "not valid JSON" not in res.output
    assert "JSON, not JSON Lines" in res.output and "--format longmemeval" in res.output
    assert _cli("check-dataset", str(lme), "--format", "longmemeval").exit_code == 0
    fixture = tmp_path / "one_user.json"  # a fixture file written as JSON (one user per file)
    fixture.write_text(json.dumps({"app": "a", "user": "u", "sessions": [{"id": "s1", "events": [
        {"id": "e1", "author": "user", "at": "2026-01-01T10:00:00Z", "text": "I live in Lyon these days."}]}],
        "queries": [{"id": "q1", "text": "Where do I live?", "relevant": ["e1"]}]}, indent=2))  # fmt: skip
    res = _cli("check-dataset", str(fixture))
    assert res.exit_code == 2 and "JSON, not JSON Lines" in res.output and "--format fixtures" in res.output
    assert _cli("check-dataset", str(fixture), "--format", "fixtures").exit_code == 0
    pretty = tmp_path / "pretty.jsonl"  # one memlab record spread over several lines
    pretty.write_text(json.dumps(json.loads(EXAMPLE_JSONL.read_text().splitlines()[0]), indent=2))
    res = _cli("check-dataset", str(pretty))
    assert res.exit_code == 2 and "one record per line" in res.output


def test_check_dataset_lists_every_bad_reference_with_a_count(tmp_path):
    events = [{"id": f"e{i}", "author": "user", "at": "2026-01-01T10:00:00Z", "text": f"fact number {i}"}
              for i in range(3)]  # fmt: skip
    lines = [{"type": "session", "user": "u", "id": "s1", "events": events}]
    lines += [{"type": "question", "id": f"q{i}", "user": "u", "text": "which?", "relevant": [f"gone{i}"]}
              for i in range(23)]  # fmt: skip
    lines += [{"type": "question", "id": "qs", "user": "u", "text": "which?", "relevant": ["e1"],
               "relevant_sessions": ["nosuch"]},
              {"type": "question", "id": "qu", "user": "nobody", "text": "which?", "relevant": []}]  # fmt: skip
    bad = tmp_path / "refs.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in lines))
    res = _cli("check-dataset", str(bad))
    assert res.exit_code == 2
    assert "25 bad references" in res.output, res.output
    assert "'gone0'" in res.output and "'gone19'" in res.output and "and 5 more" in res.output
    assert "line 2: question 'q0'" in res.output, "each names its line"


def test_a_bad_set_value_names_the_override_not_the_file(tmp_path):
    path = _config(tmp_path)
    res = _cli("eval", "--config", path, "--set", "k=abc", "--out", str(tmp_path / "o"))
    assert res.exit_code == 2
    assert "--set k=abc:" in res.output and "k must be a whole number" in res.output
    assert "mine.yaml:" not in res.output, "the file is fine: the override is not"
    res = _cli("eval", "--config", path, "--set", "datasets.0.limit=abc", "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "--set datasets.0.limit=abc:" in res.output
    fixed = tmp_path / "fixed.yaml"  # a file value an override replaces is not blamed either
    fixed.write_text(yaml.safe_dump({**yaml.safe_load(Path(path).read_text()), "k": 0}))
    assert lab.load_config(fixed, ["k=5"]).k == 5
    res = _cli("eval", "--config", str(fixed), "--set", "name=other", "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "fixed.yaml: k must be" in res.output and "--set" not in res.output
    res = _cli("eval", "--config", path, "--set", "sweeps=[granularty]", "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "--set sweeps=[granularty]:" in res.output, "brackets are shown, not markup"
    assert "did you mean 'granularity'?" in res.output
    assert not (tmp_path / "o").exists()


def test_an_unknown_key_gets_the_nearest_valid_one(tmp_path):
    cases = [
        ({"sweps": []}, "did you mean 'sweeps'?"),
        ({"systems": [{"name": "s", "strategi": "exact"}]}, "did you mean 'strategy'?"),
        ({"systems": [{"name": "f", "extractor": "rules", "embeder": "default"}]}, "did you mean 'embedder'?"),
        ({"datasets": [{"name": "d", "format": "memlab", "pth": str(EXAMPLE_JSONL)}]}, "did you mean 'path'?"),
        ({"datasets": [{"name": "d", "format": "memlab", "path": str(EXAMPLE_JSONL), "limit": 3}]},
         "'limit' is read by format(s) longmemeval, beir, not memlab"),
        ({"datasets": [{"name": "d", "format": "jsnol", "path": str(EXAMPLE_JSONL)}]}, "did you mean 'jsonl'?"),
        ({"sweeps": ["cutoff"], "options": {"cutoff": {"targte": 0.1}}}, "did you mean 'target'?"),
        ({"sweeps": ["filtered"], "options": {"filtered": {"ef_serch": [10]}}}, "did you mean 'ef_search'?"),
        ({"sweeps": ["retrieval"], "options": {"retrieval": {"author": ["user"]}}}, "did you mean 'authors'?"),
    ]  # fmt: skip
    for extra, hint in cases:
        res = _cli("eval", "--config", _config(tmp_path, **extra), "--out", str(tmp_path / "o"))
        assert res.exit_code == 2 and hint in res.output, (extra, res.output)
    res = _cli("eval", "--config", _config(tmp_path), "--set", "sweps=[]", "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "did you mean 'sweeps'?" in res.output
    assert not (tmp_path / "o").exists()


def test_every_option_a_sweep_reads_is_a_known_key(tmp_path):
    """Refusing unknown option keys must not refuse a key a sweep reads: each sweep's documented settings parse,
    and so does every shipped suite."""
    settings = {
        "filtered": {"total_rows": 400, "shares": [0.1], "relations": ["random"], "ef_search": [10],
                     "iterative": ["off"], "max_scan_tuples": [20000], "queries": 2, "k": 10, "background_tenants": 5,
                     "remedy_min_share": 0.01, "seed": 0, "texts": 100},
        "retrieval": {"renderings": ["text"], "modes": ["vector"], "fact_keys": ["rules"], "fact_rendering": "text",
                      "time": ["boost"], "time_rendering": "text", "query_renderings": ["as_is"], "per_session": [2],
                      "authors": ["user"], "granularity": "event", "strategy": "exact",
                      "answerability": {"train": "d", "system": "text/vector"}},
        "cutoff": {"systems": ["event"], "apply_from": "d", "target": 0.1, "grid": [0.5]},
        "granularity": {"extractors": ["rules"], "session": True, "strategy": "exact", "chunks": [[4, 1]]},
        "facts": {"extractors": ["rules"]}, "ingest": {"repeat": 1}, "models": {"embedders": ["default"],
                                                                              "granularity": "event"},
        "labels": {"systems": ["event", "chunk4o1"], "depths": [5], "pool_sizes": [2], "loo_depth": 5,
                   "generated": False},
        "answer": {"reader": "m", "judge": "m", "systems": ["event"], "k": 5},
        "table": {"systems": ["t"], "ef_search": [40], "iterative_scan": ["off"], "explain": True},
    }  # fmt: skip
    assert set(settings) == set(lab.SWEEPS)
    for sweep, options in settings.items():
        lab.parse_config({"name": "x", "datasets": [{"name": "d", "format": "memlab", "path": str(EXAMPLE_JSONL)}],
                          "sweeps": [sweep], "options": {sweep: {**options, "datasets": ["d"]}},
                          "models": [{"name": "m", "kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1",
                                      "model": "m"}]})  # fmt: skip
    for name in lab.config.suite_names():
        lab.load_suite(name)


def test_a_fixture_file_lists_every_bad_reference_too(tmp_path):
    queries = [{"id": f"q{i}", "text": "which?", "relevant": [f"gone{i}"]} for i in range(22)]
    fixture = tmp_path / "refs.json"
    fixture.write_text(json.dumps({"app": "a", "user": "u", "sessions": [{"id": "s1", "events": [
        {"id": "e1", "author": "user", "at": "2026-01-01T10:00:00Z", "text": "I live in Lyon these days."}]}],
        "queries": queries}, indent=2))  # fmt: skip
    res = _cli("check-dataset", str(fixture), "--format", "fixtures")
    assert res.exit_code == 2
    assert "22 bad references" in res.output and "'gone0'" in res.output and "and 2 more" in res.output


def test_a_misspelt_key_in_a_data_file_gets_the_nearest_valid_one(tmp_path):
    record = json.loads(EXAMPLE_JSONL.read_text().splitlines()[0])
    record["events"][0]["auther"] = record["events"][0].pop("author")
    bad = tmp_path / "typo.jsonl"
    bad.write_text(json.dumps(record) + "\n")
    res = _cli("check-dataset", str(bad))
    assert res.exit_code == 2 and "did you mean 'author'?" in res.output
    question = {"type": "question", "id": "q", "user": "nadia", "app": "travel-agent", "text": "x?", "relevent": []}
    bad.write_text(EXAMPLE_JSONL.read_text().splitlines()[0] + "\n" + json.dumps(question) + "\n")
    res = _cli("check-dataset", str(bad))
    assert res.exit_code == 2 and "did you mean 'relevant'?" in res.output
    fixture = tmp_path / "one.yaml"
    fixture.write_text("app: a\nuser: u\nsessions:\n  - id: s1\n    evnets: []\n")
    res = _cli("check-dataset", str(fixture), "--format", "fixtures")
    assert res.exit_code == 2 and "did you mean 'events'?" in res.output
