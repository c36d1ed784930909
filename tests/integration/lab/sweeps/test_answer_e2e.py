"""The answer path end to end: `memlab eval --config` with a cross-encoder re-ranker (the packaged MiniLM as an
untrained CrossEncoder: it tests the path, not quality) and an openai-chat reader and judge on the fake server;
the answers, verdicts and F1 reach the scores, report.md and the viewer's page data; a second run sends one
request per model client (the models' disk cache serves the rest); a malformed, slow or unreachable server leaves
per-question errors, not a failed run. Also: the answer sweep's options are refused at config load."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from sentence_transformers import CrossEncoder
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app
from memlab.lab.reliability.probes.leaks import page_data
from tests.conftest import ROOT
from tests.support.scores import labelled

LOCOMO = ROOT / "fixtures" / "locomo" / "example.json"
DATASET = "locomo-tiny"
SYSTEMS = ("event-exact", "reranked")
QUESTIONS = 10  # the example file as loaded: 8 with a gold answer + 2 no-answer (LoCoMo category 5)


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory) -> Path:
    """A CrossEncoder folder made once from the packaged MiniLM (a fresh, seeded scoring head)."""
    folder = tmp_path_factory.mktemp("cross-encoder")
    torch.manual_seed(0)
    CrossEncoder(str(memlab.embedding.packaged_minilm_path()), num_labels=1).save(str(folder))
    return folder


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower())) - {"a", "an", "the"}


def fake_model(body: dict) -> str:
    """Reader: the first excerpt's last capitalised word after the speaker (else the abstention phrase). Judge
    (asked for JSON): correct when the reply shares a word with the gold answer, or says "know" on a no-answer
    question."""
    content = body["messages"][-1]["content"]
    if "response_format" in body:
        reply = re.search(r"Reply to grade: (.*)", content).group(1)
        if "Explanation:" in content:
            return json.dumps({"correct": "know" in reply.lower(), "reason": "abstention rule"})
        gold = re.search(r"(?:Gold answer|Rubric): (.*)", content).group(1)
        return json.dumps({"correct": bool(_words(reply) & _words(gold)), "reason": f"gold was {gold}"})
    first = re.search(r"^\[1\] .*?\) \w+: \w+ (.*)$", content, re.MULTILINE)
    names = re.findall(r"\b[A-Z][a-z]+", first.group(1)) if first else []
    return names[-1] if names else "I don't know"


MINI = [  # one user, one session; a question with a gold answer and one without (skipped, counted)
    {"type": "session", "app": "a", "user": "u", "id": "s1", "events": [
        {"id": "e1", "author": "user", "at": "2026-03-02T09:00:00Z", "text": "My bike is a blue Brompton."},
        {"id": "e2", "author": "user", "at": "2026-03-02T09:01:00Z", "text": "I ride it to work in Lyon."}]},
    {"type": "question", "id": "q-bike", "app": "a", "user": "u", "text": "What bike do I have?",
     "asked_at": "2026-03-05T09:00:00Z", "relevant": ["e1"], "answer": "a blue Brompton"},
    {"type": "question", "id": "q-city", "app": "a", "user": "u", "text": "Where do I ride?",
     "asked_at": "2026-03-05T09:00:00Z", "relevant": ["e2"]},
]  # fmt: skip


def _config(tmp_path: Path, server, folder: Path, *, cache: bool = True, timeout: float = 10.0,
            mini: bool = False) -> Path:  # fmt: skip
    chat = {"kind": "openai-chat", "base_url": server.base_url, "timeout": timeout, "retries": 0, "cache": cache}
    config = {
        "name": "answer-e2e", "k": 5,
        "datasets": [{"name": DATASET, "format": "locomo", "path": str(LOCOMO)}],
        "models": [{"name": "ce", "kind": "cross-encoder", "path": str(folder)},
                   {"name": "reader", "model": "fake-reader", **chat},
                   {"name": "judge", "model": "fake-judge", **chat}],
        "systems": [{"name": "event-exact", "granularity": "event", "strategy": "exact"},
                    {"name": "reranked", "granularity": "event", "strategy": "exact",
                     "rerank": {"model": "ce", "depth": 8}}],
        "sweeps": ["answer"],
        "options": {"answer": {"reader": "reader", "judge": "judge", "k": 3}},
    }  # fmt: skip
    if mini:
        (tmp_path / "mini.jsonl").write_text("".join(json.dumps(line) + "\n" for line in MINI))
        config["datasets"].append({"name": "mini", "format": "memlab", "path": str(tmp_path / "mini.jsonl")})
    path = tmp_path / f"experiment-{len(list(tmp_path.glob('experiment-*')))}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _eval(config: Path, out: Path) -> pd.DataFrame:
    result = CliRunner().invoke(app, ["eval", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return pd.read_parquet(out / "tables" / f"answers__{DATASET}.parquet")


def test_answers_verdicts_and_f1_reach_scores_report_and_viewer_then_the_cache_serves_a_rerun(
        tmp_path, memlab_home, store, model_server, cross_encoder) -> None:  # fmt: skip
    model_server.chat_reply = fake_model
    config = _config(tmp_path, model_server, cross_encoder, mini=True)
    answers = _eval(config, tmp_path / "run")
    assert len(answers) == len(SYSTEMS) * QUESTIONS and set(answers.system) == set(SYSTEMS)
    assert (answers.error == "").all() and answers.verdict.notna().all(), answers[answers.error != ""].error.tolist()
    assert answers.verdict.any() and not answers.verdict.all(), "the fake judge finds some right and some wrong"
    assert not answers.cached.any() and (answers.reader_tokens > 0).all()
    no_answer = answers[~answers.answerable]
    assert len(no_answer) == 2 * len(SYSTEMS) and set(no_answer.rule) == {"abstention"}
    mini = pd.read_parquet(tmp_path / "run" / "tables" / "answers__mini.parquet")
    assert list(mini.question_id) == ["q-bike"] * len(SYSTEMS), "a question without a gold answer text is skipped"
    sent = len(model_server.requests)
    bodies = [json.dumps(body, sort_keys=True) for _, body in model_server.requests]
    assert len(set(bodies)) == sent, "each distinct request is sent once (two systems may retrieve the same hits)"
    graded = {(r.question_id, r.answer) for t in (answers, mini) for r in t.itertuples() if not r.abstained}
    assert sum("response_format" in body for _, body in model_server.requests) == len(graded), "the judge is asked " \
        "once per distinct reply to grade; an abstention is graded without it"
    assert sent - len(graded) >= QUESTIONS + 1, "the reader answers every question with a gold answer or none"

    scores = labelled(pd.read_parquet(tmp_path / "run" / "scores.parquet"))
    for system in SYSTEMS:
        mine = scores[(scores.dataset == DATASET) & (scores.system == system)].set_index("metric").value
        rows = answers[answers.system == system]
        assert mine["answer_accuracy"] == pytest.approx(rows.verdict.astype(float).mean())
        assert mine["answer_f1"] == pytest.approx(rows.f1.mean())
        assert mine["answer_errors"] == 0 and mine["answer_tokens_per_question"] > 0
        assert mine["answer_accuracy_ci_low"] <= mine["answer_accuracy"] <= mine["answer_accuracy_ci_high"]
        assert "answer_accuracy[qtype=adversarial]" in mine and "answer_f1[qtype=single-hop]" in mine
    report = (tmp_path / "run" / "report.md").read_text()
    assert f"### answer ({DATASET})" in report and "Reader `reader` (model `fake-reader`)" in report
    assert "judge `judge` (model `fake-judge`)" in report and "95% CI" in report
    assert "1 answerable question(s) without a gold answer text were skipped" in report

    shown = page_data((tmp_path / "run" / "report.html").read_text())["answers"][DATASET]
    row = answers.iloc[0]
    got = shown[row.system][row.question_id]
    assert got["answer"] == row.answer and got["verdict"] == bool(row.verdict)
    assert got["reason"] == row.judge_reason and got["abstained"] == bool(row.abstained)
    assert got["read"] == row.hits_read == 3, "the reader saw options.answer.k hits"

    again = _eval(config, tmp_path / "again")
    assert len(model_server.requests) == sent + 2, "a second run is served from the cache, but for each client's " \
        "first call (the reader's, the judge's): it learns which model answers now"
    assert (~again.cached).sum() <= 2
    pd.testing.assert_series_equal(again.verdict, answers.verdict)


def test_a_verdict_that_does_not_parse_is_not_cached_and_a_rerun_asks_the_judge_again(
        tmp_path, memlab_home, store, model_server, cross_encoder) -> None:  # fmt: skip
    """JSON, but not a verdict ("correct" must be true or false): no use to the sweep, so not for the cache."""
    model_server.chat_reply = lambda body: (json.dumps({"correct": "yes", "reason": "r"}) if "response_format" in body
                                            else fake_model(body))  # fmt: skip
    config = _config(tmp_path, model_server, cross_encoder)
    first = _eval(config, tmp_path / "run")
    judged = first[~first.abstained]
    assert len(judged) and judged.error.str.startswith("judge (malformed)").all()
    asked = sum("response_format" in body for _, body in model_server.requests)
    model_server.chat_reply = fake_model
    again = _eval(config, tmp_path / "again")
    assert sum("response_format" in body for _, body in model_server.requests) == 2 * asked, "every judge request " \
        "was sent again: none of the unusable verdicts was served from the cache"
    assert (again.error == "").all() and again.verdict.notna().all()


@pytest.mark.parametrize("failure", ["malformed", "slow", "unreachable"])
def test_a_failing_model_server_leaves_per_question_errors_not_a_failed_run(
        tmp_path, memlab_home, store, model_server, cross_encoder, failure) -> None:  # fmt: skip
    model_server.chat_reply = fake_model
    model_server.mode = failure if failure != "unreachable" else "ok"
    model_server.slow_seconds = 1.0
    config = _config(tmp_path, model_server, cross_encoder, cache=False, timeout=0.2)
    if failure == "unreachable":
        model_server.close()
    answers = _eval(config, tmp_path / "run")
    assert len(answers) == len(SYSTEMS) * QUESTIONS
    kind = {"malformed": "malformed", "slow": "timeout", "unreachable": "unreachable"}[failure]
    assert answers.error.str.startswith(f"reader ({kind}): ").all(), answers.error.iloc[0]
    assert answers.verdict.isna().all() and answers.f1.isna().all()
    scores = labelled(pd.read_parquet(tmp_path / "run" / "scores.parquet")).set_index(["system", "metric"]).value
    assert scores[("reranked", "answer_errors")] == QUESTIONS and ("reranked", "answer_accuracy") not in scores
    assert f"{len(answers)} question(s) failed" in (tmp_path / "run" / "report.md").read_text()


def test_the_judges_malformed_verdict_is_that_questions_error(tmp_path, memlab_home, store, model_server,
                                                               cross_encoder) -> None:  # fmt: skip
    model_server.chat_reply = lambda body: "sure, looks right" if "response_format" in body else fake_model(body)
    answers = _eval(_config(tmp_path, model_server, cross_encoder, cache=False), tmp_path / "run")
    judged = answers[~answers.abstained]
    assert len(judged) and judged.error.str.startswith("judge (malformed): judge reply is not JSON").all()
    assert judged.verdict.isna().all() and judged.answer.str.len().gt(0).all(), "the reply is kept"
    assert (answers[answers.abstained].error == "").all(), "abstentions are graded without the judge"


@pytest.mark.parametrize(("reply", "outcome"), [
    ("", "error"),  # an empty reply is the reader's failure, not an abstention
    ("Your dog is called Rex; the breed is not mentioned", "judge"),  # an answer beside an abstention phrase
    ("I don't know.", "abstained"),  # an abstention as a whole: graded without the judge
])  # fmt: skip
def test_only_a_whole_abstention_skips_the_judge_and_an_empty_reply_is_a_reader_error(
        tmp_path, memlab_home, store, model_server, cross_encoder, reply, outcome) -> None:  # fmt: skip
    model_server.chat_reply = lambda body: json.dumps({"correct": False, "reason": "judged"}) \
        if "response_format" in body else reply  # fmt: skip
    answers = _eval(_config(tmp_path, model_server, cross_encoder, cache=False), tmp_path / "run")
    judge_calls = sum("response_format" in body for _, body in model_server.requests)
    assert answers.abstained.sum() == (len(answers) if outcome == "abstained" else 0)
    assert (judge_calls > 0) == (outcome == "judge")
    assert (answers.judge_reason == "judged").all() == (outcome == "judge")
    scores = labelled(pd.read_parquet(tmp_path / "run" / "scores.parquet")).set_index(["system", "metric"]).value
    if outcome == "error":
        assert answers.error.str.startswith("reader (empty): ").all() and answers.verdict.isna().all()
        assert scores[("reranked", "answer_errors")] == QUESTIONS and ("reranked", "answer_accuracy") not in scores
    else:
        assert (answers.error == "").all() and answers.verdict.notna().all()
        assert scores[("reranked", "answer_errors")] == 0
    if outcome == "abstained":
        assert list(answers.verdict) == list(~answers.answerable), "right exactly on the no-answer questions"


def test_answer_systems_that_did_not_run_are_one_clear_error(tmp_path, memlab_home, store, model_server,
                                                             cross_encoder) -> None:  # fmt: skip
    config = yaml.safe_load(_config(tmp_path, model_server, cross_encoder).read_text())
    config["options"]["answer"]["systems"] = ["event-exact", "nope"]
    path = tmp_path / "wrong-system.yaml"
    path.write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(app, ["eval", "--config", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "options.answer.systems: ['nope'] did not run on 'locomo-tiny'" in result.output
    assert not model_server.requests, "refused before any model call"


BASE = {"name": "x", "datasets": [{"name": "d", "format": "locomo", "path": str(LOCOMO)}], "sweeps": ["answer"],
        "models": [{"name": "reader", "kind": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "model": "m"}]}


@pytest.mark.parametrize(("options", "message"), [
    ({}, "options.answer: the answer sweep needs `reader`"),
    ({"reader": "reader", "judges": "reader"}, r"unknown key\(s\) \['judges'\] \(did you mean 'judge'\?\)"),
    ({"reader": "reader", "k": 0}, "options.answer.k must be a whole number"),
    ({"reader": "reader", "systems": "event"}, "options.answer.systems must be a non-empty list"),
    ({"reader": 3}, "options.answer.reader must be non-empty text, got 3; .*name of an openai-chat model"),
    ({"reader": "nobody"}, "nobody"),  # not under `models:`
    ({"reader": "reader", "judge": "nobody"}, "nobody"),
])  # fmt: skip
def test_bad_answer_options_are_refused_at_config_load(options, message) -> None:
    with pytest.raises(memlab.ConfigError, match=message):
        lab.parse_config({**BASE, "options": {"answer": options}})
    lab.parse_config({**BASE, "options": {"answer": {"reader": "reader", "k": 3, "systems": ["e"]}}})
