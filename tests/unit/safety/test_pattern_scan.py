"""`scan`: a detector's regex tried only near the words every match holds, instead of at every character of
a long turn. It must give exactly the matches `finditer` gives (same spans, same order), on drawn texts and on
real ones; it only changes how fast."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlab import lab
from memlab.safety import secrets
from memlab.safety.pattern_gates import fold, leading_words, scan
from tests.conftest import examples, long_turns_and_secret_fixtures


@pytest.mark.parametrize(
    ("pattern", "lead"),
    [
        (r"\bpass(?:word|wd)\b", ({"password", "passwd"}, 0)),  # literal alternatives extend the word
        (r"l(?:ö|o)senord", ({"lösenord", "losenord"}, 0)),  # (?:ö|o) parses as a class of two letters
        (r"[\w.]{0,30}?sid=", ({"sid="}, 30)),  # a bounded lead-in before the word
        (r"\b(?:auth|api)?[ _-]?token", ({"token"}, 5)),  # an optional group and class: 4 + 1 characters at most
        (r"(?:cookie|[\w.]{0,3}sess)=", ({"cookie", "sess"}, 3)),  # each way through has a word
        (r"[A-Z]\w+", None),  # no word at all
        (r"\w*pass", None),  # an unbounded lead-in: the match may start anywhere
        (r"a+b", None),  # one letter is found everywhere
        (r"(?:secret|)key", ({"secretkey", "key"}, 0)),  # an empty alternative: each way through is a word
        (r"(?:secret)?\d{4}", None),  # an optional word, then digits: a match may hold no word
        (r"MOVED to", ({"moved to"}, 0)),  # words are case-folded
    ],
)
def test_leading_words_of_small_patterns(pattern, lead):
    found = leading_words(re.compile(pattern, re.IGNORECASE))
    assert (None if found is None else (set(found[0]), found[1])) == lead


def spans(matches) -> list[tuple[int, int]]:
    return [m.span() for m in matches]


_LED = [(kind, pattern) for kind, pattern, _, _ in secrets._DETECTORS if leading_words(pattern) is not None]


def test_most_costly_detectors_are_led():
    """The detectors that cost most on long turns (a keyword with up to 40 characters of name before it, prose
    around a password) have a lead; without one scan is finditer."""
    kinds = {kind for kind, _ in _LED}
    assert {"Config secret", "Passphrase in prose", "Credential in prose", "Session cookie"} <= kinds
    assert len(_LED) >= 0.6 * len(secrets._DETECTORS)


_FILLER = st.sampled_from(["", " ", "\n", "x", "my password is ", "token=", "Straße ", "..", "session", "ab"])


# 300 texts drawn from the led detectors' own patterns, with filler around them (so matches sit mid-text, next
# to each other, after a character that folds to two). Run once at 3,000: every scan equalled finditer.
@settings(max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.sampled_from(_LED).flatmap(lambda led: st.tuples(
    st.just(led), st.lists(st.one_of(_FILLER, st.from_regex(led[1])), min_size=1, max_size=4))))  # fmt: skip
def test_scan_gives_the_matches_finditer_gives_on_drawn_texts(drawn):
    (kind, pattern), parts = drawn
    text = "".join(parts)
    assert spans(scan(pattern, text, fold(text))) == spans(pattern.finditer(text)), (kind, text)


def test_scan_gives_the_matches_finditer_gives_on_real_texts():
    """Long real turns, generated sessions and every secret fixture (whole files and lines), every detector."""
    synth = lab.load_dataset({"name": "s", "format": "synth", "users": 3, "max_events": 100, "seed": 5})
    texts = long_turns_and_secret_fixtures() + [e.text for s in synth.sessions() for e in s.events]
    assert len(texts) > 1000
    led = 0
    for text in texts:
        folded = fold(text)
        for kind, pattern, _, _ in secrets._DETECTORS:
            found = spans(scan(pattern, text, folded))
            assert found == spans(pattern.finditer(text)), (kind, text[:200])
            led += bool(found) and leading_words(pattern) is not None
    assert led > 0, "some led detector matched, so equal lists are not all empty"


def test_a_text_whose_folding_changes_its_length_is_scanned_whole():
    pattern = re.compile(r"\bpassword\s*:\s*(?P<v>\S+)", re.IGNORECASE)
    text = "Straße 5. PASSWORD: hunter22 and password: s3cret!"
    assert len(fold(text)) != len(text)
    assert spans(scan(pattern, text)) == spans(pattern.finditer(text)) and len(spans(pattern.finditer(text))) == 2
