"""Cheap gates for regexes, derived from the patterns themselves: the rule extractor's rules and the secret
filter's detectors use the same derivation.

A regex is tried on every sentence (every line of a turn); on long conversational turns most patterns cannot
match and the regex engine still walks the text. `required_words(pattern)` reads the parsed pattern and returns
words one of which every match contains (a literal run it cannot match without, or the alternatives of a group
it must pass through). A text whose case-folded form holds none of them cannot match, so the pattern is
skipped without running it. None means no such words were found: the pattern always runs. `Gates` checks the
gates of many patterns together.
"""

from __future__ import annotations

import re

try:  # Python 3.11+
    import re._constants as _C
    import re._parser as _parser
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as _C  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

Words = frozenset[str]


def fold(text: str) -> str:
    """`text` as the gates search it: every character re.IGNORECASE equates with an ASCII letter becomes that
    letter (casefold maps ſ to s and the Kelvin sign to k; only the dotless ı is left, and is mapped here), so
    a gate word is found wherever a case-insensitive pattern could match."""
    return text.casefold().replace("ı", "i")


_REPEATS = {_C.MAX_REPEAT, _C.MIN_REPEAT, getattr(_C, "POSSESSIVE_REPEAT", _C.MAX_REPEAT)}
MIN_USEFUL = 3  # a gate whose shortest word is shorter is nearly always present: not worth checking


def _better(a: Words | None, b: Words | None) -> Words | None:
    """The more selective of two gates: longer shortest word first, then fewer words."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b, key=lambda w: (min(len(x) for x in w) >= MIN_USEFUL, min(len(x) for x in w), -len(w)))


def _sequence(items) -> Words | None:
    """Words one of which a match of this sequence of pattern items contains."""
    best: Words | None = None
    run = ""
    for op, arg in items:
        if op is _C.LITERAL:
            run += fold(chr(arg))
            continue
        if run:
            best = _better(best, frozenset({run}))
            run = ""
        best = _better(best, _item(op, arg))
    if run:
        best = _better(best, frozenset({run}))
    return best


def _item(op, arg) -> Words | None:
    if op is _C.SUBPATTERN:
        return _sequence(arg[-1])
    if op is _C.BRANCH:
        found: set[str] = set()
        for branch in arg[1]:
            words = _sequence(branch)
            if words is None:
                return None  # one way through holds none of the words
            found |= words
        return frozenset(found)
    if op in _REPEATS:
        low, _high, sub = arg
        return _sequence(sub) if low >= 1 else None
    return None  # character classes, anchors, look-arounds, back-references: no word to require


def required_words(pattern: str | re.Pattern[str]) -> Words | None:
    """Case-folded words one of which every match of `pattern` contains, or None. Search `fold(text)`."""
    source, flags = (pattern.pattern, pattern.flags) if isinstance(pattern, re.Pattern) else (pattern, 0)
    words = _sequence(_parser.parse(source, flags))
    if words is None or min(len(w) for w in words) < MIN_USEFUL:
        return None
    return words


class Gates:
    """The gates of a list of patterns, checked together: `present` lists the gate words a folded text holds
    (a substring test per word, which scans in C; a regex of all the words would be tried at every character),
    and `candidates` lists the patterns that may match, in their order."""

    def __init__(self, gates: list[Words | None]) -> None:
        self._words = tuple(sorted({w for gate in gates if gate for w in gate}))
        self._ungated = frozenset(i for i, gate in enumerate(gates) if gate is None)
        self._by_word: dict[str, set[int]] = {}
        for i, gate in enumerate(gates):
            for w in gate or ():
                self._by_word.setdefault(w, set()).add(i)

    def present(self, folded: str) -> frozenset[str]:
        """The gate words a folded text holds."""
        return frozenset(w for w in self._words if w in folded)

    def candidates(self, folded: str) -> list[int]:
        """Indices of the patterns whose gate the text holds (or that have none), in order."""
        found = set(self._ungated)
        for word in self.present(folded):
            found |= self._by_word[word]
        return sorted(found)


__all__ = ["Gates", "Words", "fold", "required_words"]
