"""Scoring a reader's short answer without a model: token F1 against the gold answer, and whether the reply is an
abstention ("I don't know").

Token F1 follows the LoCoMo / SQuAD recipe: lower-case, drop punctuation and the articles a/an/the, split on
whitespace, then precision and recall over the multiset of tokens (a token counts as often as both sides hold
it). LoCoMo's own script also stems words and splits multi-hop answers at commas; we keep the plain form so the
figure means the same on every data set. Pure functions: the answer sweep (memlab.lab.sweeps.answer) calls them."""

from __future__ import annotations

import re
import string
from collections import Counter

ARTICLES = frozenset({"a", "an", "the"})
_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}\u2018\u2019\u201c\u201d\u2013\u2014]")

# The exact phrase the reader prompt asks for when the context does not hold the answer (memlab.lab.answering).
ABSTENTION_PHRASE = "I don't know"
# Replies that mean "I cannot answer" in the words readers commonly use, matched on the normalised reply (lower
# case, curly quotes straightened): the phrase the prompt asks for, its spelled-out form, and LoCoMo's own
# no-answer wordings ("no information available", "not mentioned").
ABSTENTION_MARKERS: tuple[str, ...] = (
    "i don't know", "i do not know", "i dont know", "don't know", "not mentioned", "no information",
    "not enough information", "insufficient information", "cannot answer", "can't answer", "unable to answer",
    "cannot be determined", "can't be determined", "not specified", "not stated", "no answer", "not provided",
    "does not say", "doesn't say", "not in the context", "no mention",
)  # fmt: skip


def answer_tokens(text: str | None) -> list[str]:
    """The tokens F1 compares: lower case, punctuation and articles dropped, split on whitespace."""
    cleaned = _PUNCTUATION.sub(" ", (text or "").lower())
    return [t for t in cleaned.split() if t not in ARTICLES]


def token_f1(prediction: str | None, gold: str | None) -> float:
    """F1 of the prediction's tokens against the gold answer's (multiset overlap). Both empty: 1.0 (nothing was
    asked for and nothing said); one empty: 0.0."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    if not pred and not ref:
        return 1.0
    if not pred or not ref:
        return 0.0
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def is_abstention(answer: str | None) -> bool:
    """Whether a reply declines to answer: empty, or holding one of ABSTENTION_MARKERS (the reader is asked for
    one short answer, so a marker anywhere in it is the reply's point, not an aside)."""
    text = " ".join((answer or "").lower().replace("\u2019", "'").replace("\u2018", "'").split())
    text = text.strip(" .!\"'")
    if not text:
        return True
    return text == "unknown" or any(marker in text for marker in ABSTENTION_MARKERS)


__all__ = ["ABSTENTION_MARKERS", "ABSTENTION_PHRASE", "ARTICLES", "answer_tokens", "is_abstention", "token_f1"]
