"""Scoring a reader's short answer without a model: token F1 against the gold answer, whether the reply is an
abstention as a whole ("I don't know", and nothing else: anything more is for the judge), and whether it is empty
(a reader error).

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

# The exact phrase the reader prompt asks for when the context does not hold the answer (memlab.lab.sweeps.answering).
ABSTENTION_PHRASE = "I don't know"
# Replies that mean "I cannot answer" in the words readers commonly use (LoCoMo's own no-answer wordings among
# them): each, alone, is an abstention. is_abstention finds their kind in a reply (_CORES) and asks that nothing
# else be said.
ABSTENTION_MARKERS: tuple[str, ...] = (
    "i don't know", "i do not know", "i dont know", "don't know", "not mentioned", "no information",
    "not enough information", "insufficient information", "cannot answer", "can't answer", "unable to answer",
    "cannot be determined", "can't be determined", "not specified", "not stated", "no answer", "not provided",
    "does not say", "doesn't say", "not in the context", "no mention", "unknown", "not sure", "no idea",
)  # fmt: skip
_NEG = r"(?:not|never|isn't|wasn't|aren't|weren't|hasn't|haven't|hadn't|n't)"
_CANT = (r"(?:don't|do not|dont|doesn't|does not|didn't|did not|can't|cannot|can not|cant|couldn't|could not|"
         r"am unable to|'m unable to|am not able to|'m not able to|unable to|not able to|have no way to|no way to)")
_SOURCE_VERB = r"(?:say|says|said|mention|mentions|contain|contains|include|includes|specify|specifies|state|" \
               r"states|tell|tells|indicate|indicates|provide|provides|show|shows|give|gives|cover|covers|" \
               r"reveal|reveals|describe|describes|answer|discuss|discusses|record|records)"  # fmt: skip
_PARTICIPLE = (r"(?:mentioned|specified|stated|provided|given|included|recorded|discussed|shared|available|known|"
               r"clear|found|indicated|disclosed|said|told|covered|noted|answered|determined|described|"
               r"answerable|determinable|addressed)")  # fmt: skip
# (pattern, may the subject before it name what was asked): "the breed is not mentioned" names it; "I don't
# know" has its own subject.
_CORES: tuple[tuple[re.Pattern[str], bool], ...] = tuple((re.compile(p), subject) for p, subject in (
    (rf"\b{_NEG}\s+(?:been\s+|be\s+)?{_PARTICIPLE}\b", True),
    (r"\b(?:is|was|are|were|remains?)\s+(?:unknown|unclear|unspecified|unmentioned|unanswerable)\b", True),
    (r"^(?:unknown|unclear|unspecified|unmentioned|unanswerable|not known)\b", False),
    (rf"\b{_CANT}\s+(?:really\s+)?(?:know|tell|say|recall|remember|answer|determine|find|see|be sure|confirm|"
     r"infer|work out)\b", False),
    (r"\b(?:not|un)\s?(?:sure|certain)\b|\bidk\b", False),
    (rf"\b(?:cannot|can't|can not|could not|couldn't)\s+be\s+{_PARTICIPLE}\b", True),
    (rf"\b{_CANT}\s+{_SOURCE_VERB}\b", False),
    (r"\b(?:no|not any|not enough|insufficient|not sufficient|nothing)\s+(?:relevant\s+|specific\s+)?"
     r"(?:information|info|details?|data|record|records|mention|indication|evidence|context|idea|answer)\b", False),
    (rf"\bnothing\s+(?:is\s+|was\s+|has been\s+)?{_PARTICIPLE}\b", False),
    (rf"\b{_NEG}\s+(?:in|found in|part of|covered by|within)\s+(?:the|my|our|your|these|those|any)\b", True),
    (rf"\b{_CANT}\s+have\s+(?:any\s+|that\s+|this\s+|enough\s+|the\s+|such\s+)?(?:information|info|details?|data|"
     r"record|records|knowledge|idea|access)\b", False),
))  # fmt: skip
# Words that carry no answer: pronouns, auxiliaries, prepositions, and the vocabulary of declining to answer.
GENERIC_WORDS = frozenset("""
i i'm i've i'd me my mine we we're us our ours you you're your yours he she him her his they they're them their it
it's its this that that's these those there there's here the a an any anything some something such other another
all both each every nothing none no not never n't also only just even really honestly unfortunately sorry afraid
apologies apologize apologise however currently still yet actually specifically explicitly directly clearly
exact exactly specific particular precise precisely enough sufficient insufficient much more further additional
relevant related regarding about on in at of for from to with within into by as based according among across
anywhere or and nor so than then is was are were be been being am 's do does did don't doesn't didn't dont doesnt
didnt has have had hasn't haven't hadn't can can't cannot cant could couldn't would wouldn't will won't should
able unable way possible impossible know known knowing knowledge sure certain unsure uncertain unknown unclear
unspecified unmentioned unanswerable idea mention mentioned mentions information info detail details data record
records recorded evidence indication indicated indicate indicates provided provide provides given give gives
available specified specify specifies stated state states say says said tell tells told contain contains
contained include includes included discuss discussed discusses shared share disclosed covered cover covers noted
show shows reveal reveals describe describes described found find see recall remember determine determined
answer answers answered question questions excerpt excerpts memory memories context conversation conversations
chat chats history text texts session sessions past previous earlier source sources transcript logs notes
confirm confirmed infer inferred addressed
""".split())  # noqa: SIM905  (a word list reads best as words)
# What a clause without a refusal may hold and still add nothing ("Sorry", "Based on the excerpts"): no noun that
# could be an answer ("history", "data").
FILLER_WORDS = frozenset("""
i i'm me my we us our you your it it's this that there here the a an any all no not so also only just really
honestly unfortunately sorry afraid apologies apologize apologise however based according on in from of to
about regarding given provided available excerpt excerpts memory memories context conversation conversations chat
chats information what's said
""".split())  # noqa: SIM905  (a word list reads best as words)
INTERROGATIVES = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "whether", "if"})
_COPULAS = frozenset({"is", "was", "are", "were", "be", "been", "am", "it's", "that's", "there's", "he's", "she's",
                      "they're", "i'm", "you're", "we're"})  # fmt: skip
_CLAUSES = re.compile(r"[.;:!?()\[\]\n,\u2013\u2014]+|\s-+\s|\b(?:but|though|although|however|except|instead)\b")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)


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


def visible_reply(answer: str | None) -> str:
    """The reply's text without a reasoning model's `<think>` block (closed, or cut off by the token limit)."""
    return _THINK.sub(" ", answer or "").strip()


def is_empty_reply(answer: str | None) -> bool:
    """Whether a reply says nothing at all: empty, blank, punctuation only, or a `<think>` block the token limit
    cut before any answer. A reader error, not an abstention: the reader never said it could not answer."""
    return not re.search(r"\w", visible_reply(answer))


def _normal(text: str) -> str:
    text = text.lower().translate(_STRAIGHT)
    return " ".join(re.sub(r"[*_`\"\u00ab\u00bb]", " ", text).split())


_STRAIGHT = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"'})


def _stem(word: str) -> str:
    word = word.removesuffix("'s")
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _only(words: list[str], allowed: frozenset[str], asked: frozenset[str]) -> bool:
    """Whether every word is generic, or (when `asked` is given) a word of the question."""
    return all(w in allowed or _stem(w) in asked for w in words)


def _abstaining_clause(clause: str, asked: frozenset[str], ignore: str) -> bool | None:
    """True: the clause declines to answer and holds nothing else; None: it holds no core but only generic words
    ("sorry"); False: it says something (a name, a hedge, a guess)."""
    if ignore and f" {' '.join(_WORD.findall(clause))} " in f" {' '.join(_WORD.findall(ignore))} ":
        return False  # a piece of the gold answer ("Don't Know Why"), not a refusal
    for pattern, subject in _CORES:
        for match in pattern.finditer(clause):
            before, after = _WORD.findall(clause[: match.start()]), _WORD.findall(clause[match.end():])
            if not _only(before, GENERIC_WORDS, asked if subject else frozenset()):
                return False
            lead = bool(after) and after[0] in INTERROGATIVES and len(after) > 1  # "... what breed it is"
            rest = after[1:] if lead else after
            if not lead and any(w in _COPULAS for w in rest) and not _only(rest, GENERIC_WORDS, frozenset()):
                return False  # "I'm not sure it was Paris": a hedged answer, not a refusal
            return _only(rest, GENERIC_WORDS, asked)
    words = _WORD.findall(clause)
    return None if _only(words, FILLER_WORDS, frozenset()) else False


def is_abstention(answer: str | None, *, question: str = "", gold: str | None = None) -> bool:
    """Whether a reply, as a whole, declines to answer: each of its clauses either says the answer is not known
    (a core of ABSTENTION_MARKERS' kind: "I don't know", "the breed is not mentioned", "no information about
    that") or only apologises, and nothing else is said: no name, number, guess or hedge. Words of the
    `question` may name what is not known ("I don't know what breed your dog is"); any other word sends the
    reply to the judge ("Your dog is called Rex; the breed is not mentioned" attempts an answer). An empty reply
    is not an abstention (is_empty_reply: a reader error). With a `gold` answer, a reply stating it is an answer
    whatever its words ("Don't Know Why by Norah Jones"), and so is a clause that is a piece of it ("don't know
    why")."""
    text = _normal(visible_reply(answer))
    if not re.search(r"\w", text):
        return False
    ignore = _normal(gold or "")
    gold_words = set(answer_tokens(ignore))
    if gold_words and gold_words <= set(answer_tokens(text)):
        return False
    asked = frozenset(_stem(w) for w in _WORD.findall(_normal(question)) if w not in GENERIC_WORDS)
    verdicts = [_abstaining_clause(c.strip(), asked, ignore) for c in _CLAUSES.split(text) if c and c.strip()]
    return any(v is True for v in verdicts) and all(v is not False for v in verdicts)


__all__ = ["ABSTENTION_MARKERS", "ABSTENTION_PHRASE", "ARTICLES", "GENERIC_WORDS", "answer_tokens", "is_abstention",
           "is_empty_reply", "token_f1", "visible_reply"]  # fmt: skip
