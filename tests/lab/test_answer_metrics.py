"""The answer sweep's pure parts: token F1 (LoCoMo/SQuAD normalisation), abstention detection, the reader's and the
judge's prompts, and the judge's JSON verdict."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memlab.lab import Question
from memlab.lab.answer_metrics import ABSTENTION_PHRASE, answer_tokens, is_abstention, token_f1
from memlab.lab.answering import (
    JUDGE_RULES,
    READER_SYSTEM,
    ContextItem,
    VerdictError,
    judge_messages,
    judge_rule,
    parse_verdict,
    reader_messages,
)


def test_tokens_drop_case_punctuation_and_articles() -> None:
    assert answer_tokens("The Lisbon half-marathon, an A+ run!") == ["lisbon", "half", "marathon", "run"]
    assert answer_tokens(None) == [] and answer_tokens("  the a an ") == []


@pytest.mark.parametrize(("prediction", "gold", "expected"), [
    ("Porto", "porto", 1.0),
    ("in Porto", "Porto", 2 * 0.5 * 1 / 1.5),  # precision 1/2, recall 1
    ("pottery, running", "running and pottery", 2 * 1 * (2 / 3) / (1 + 2 / 3)),  # order free; "and" is not dropped
    ("Lisbon", "Porto", 0.0),
    ("", "", 1.0),
    ("the", "a", 1.0),  # both empty once articles are dropped
    ("Porto", "", 0.0),
    ("", "Porto", 0.0),
    ("run run", "run", 2 * 0.5 * 1 / 1.5),  # a multiset: the second "run" has no partner
])  # fmt: skip
def test_token_f1(prediction, gold, expected) -> None:
    assert token_f1(prediction, gold) == pytest.approx(expected)


@pytest.mark.parametrize("reply", [ABSTENTION_PHRASE, "I don't know.", "I DO NOT KNOW", "I don\u2019t know",
                                   "No information available", "That is not mentioned in the conversation.",
                                   "Unknown", "", "   ", "The excerpts don't say; I cannot answer that."])
def test_abstentions_are_detected(reply) -> None:
    assert is_abstention(reply)


@pytest.mark.parametrize("reply", ["Porto", "She knows Porto well", "no", "The week before 8 May 2023",
                                   "Unknown Pleasures by Joy Division"])  # fmt: skip
def test_answers_are_not_abstentions(reply) -> None:
    assert not is_abstention(reply)


def _q(**kw) -> Question:
    base = dict(id="conv-1/q1", app_name="a", user_id="u", text="Where is Ana's sister moving?", relevant=("D1:3",),
                asked_at=datetime(2023, 8, 10, tzinfo=UTC), answer="Porto")  # fmt: skip
    return Question(**{**base, **kw})


def test_reader_prompt_holds_question_date_context_and_the_abstention_phrase() -> None:
    context = [ContextItem("My sister is moving to Porto.", "Ana", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
               ContextItem("Nice!\n  Congrats", "", None)]
    system, user = reader_messages(_q(), context)
    assert system["role"] == "system" and f"reply exactly: {ABSTENTION_PHRASE}" in system["content"]
    assert system["content"] == READER_SYSTEM
    body = user["content"]
    assert "[1] 2023-05-08 13:56 (Mon) Ana: My sister is moving to Porto." in body
    assert "[2] date unknown Nice! Congrats" in body
    assert "asked on 2023-08-10 (Thu)" in body and "Question: Where is Ana's sister moving?" in body
    assert "(no excerpts)" in reader_messages(_q(asked_at=None), [])[1]["content"]


@pytest.mark.parametrize(("question", "rule"), [
    (_q(), "default"),
    (_q(relevant=()), "abstention"),  # nothing in memory answers it (LoCoMo's category 5, LongMemEval's _abs)
    (_q(id="temporal-reasoning/gpt4_1_abs", qtype="abstention", relevant=()), "abstention"),
    (_q(id="temporal-reasoning/gpt4_1", qtype="temporal-reasoning"), "temporal-reasoning"),
    (_q(id="knowledge-update/x9", qtype="default"), "knowledge-update"),  # the LongMemEval loader's id prefix
    (_q(qtype="single-session-preference"), "single-session-preference"),
    (_q(qtype="multi-hop"), "default"),
])  # fmt: skip
def test_judge_rule_per_question_type(question, rule) -> None:
    assert judge_rule(question) == rule
    user = judge_messages(question, "Porto")[1]["content"]
    assert JUDGE_RULES[rule] in user and "Reply to grade: Porto" in user


def test_judge_rules_say_what_longmemeval_tolerates() -> None:
    assert "off by one" in JUDGE_RULES["temporal-reasoning"]
    assert "updated" in JUDGE_RULES["knowledge-update"]
    assert "rubric" in JUDGE_RULES["single-session-preference"].lower()
    assert "cannot be answered" in JUDGE_RULES["abstention"]
    assert "Rubric: Porto" in judge_messages(_q(qtype="single-session-preference"), "x")[1]["content"]


def test_verdicts_parse_and_malformed_ones_say_why() -> None:
    assert parse_verdict('{"correct": true, "reason": " same city "}') == parse_verdict(
        '```json\n{"correct": true, "reason": "same city"}\n```')
    assert parse_verdict('{"correct": false}').reason == ""
    for bad, why in [("yes", "not JSON"), ('{"correct": "yes"}', 'true/false "correct"'),
                     ("[true]", 'true/false "correct"'), ('{"correct": true, "reason": 3}', "not text")]:
        with pytest.raises(VerdictError, match=why):
            parse_verdict(bad)
