"""Cheap gates for regexes, derived from the patterns themselves: the rule extractor's rules and the secret
filter's detectors use the same derivation.

A regex is tried on every sentence (every line of a turn); on long conversational turns most patterns cannot
match and the regex engine still walks the text. `required_words(pattern)` reads the parsed pattern and returns
words one of which every match contains (a literal run it cannot match without, or the alternatives of a group
it must pass through). A text whose case-folded form holds none of them cannot match, so the pattern is
skipped without running it. None means no such words were found: the pattern always runs. `Gates` checks the
gates of many patterns together; `WordGate` is the secret filter's form of a gate, and `TurnGates` checks all of
its gates on one turn with each shared word looked up once.

Where a pattern runs, `scan` tries it only near the words every match holds near its start (`leading_words`),
instead of at every character, with the same matches as finditer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache

import ahocorasick

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
MIN_LEAD = 2  # a shorter leading word starts too many places to try the pattern at each
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


_ZERO_WIDTH = {_C.AT, _C.ASSERT, _C.ASSERT_NOT}


_MAX_PREFIXES = 256


def _literal_strings(items) -> set[str] | None:
    """Every string this sequence can match, folded, when it only holds literals, sets of literals and groups
    or alternatives of them (`l(?:ö|o)senord`), or None."""
    out = {""}
    for op, arg in items:
        if op is _C.LITERAL:
            out = {s + fold(chr(arg)) for s in out}
            continue
        if op is _C.SUBPATTERN:
            inner = _literal_strings(arg[-1])
        elif op is _C.IN and all(o is _C.LITERAL for o, _ in arg):  # (?:ö|o) parses as the class [öo]
            inner = {fold(chr(a)) for _, a in arg}
        elif op is _C.BRANCH:
            branches = [_literal_strings(b) for b in arg[1]]
            inner = None if None in branches else set().union(*branches)  # type: ignore[arg-type]
        else:
            return None
        if inner is None or len(out) * len(inner) > _MAX_PREFIXES:
            return None
        out = {s + t for s in out for t in inner}
    return out


MAX_LEAD_IN = 64  # characters a match may hold before its word; more, and the pattern is tried everywhere

Lead = tuple[Words, int]  # words, and how many characters at most a match holds before the one it holds


def _lead(items, state) -> Lead | None:
    """Words one of which the text of every match of this sequence holds, starting at most the returned
    number of characters into the match, or None."""
    items = list(items)
    at, lead_in = 0, 0
    while at < len(items):
        op, arg = items[at]
        if op in _ZERO_WIDTH:  # \b, look-arounds: no text of the match
            at += 1
            continue
        prefixes, j = {""}, at
        while j < len(items):
            strings = _literal_strings([items[j]])
            if strings is None or len(prefixes) * len(strings) > _MAX_PREFIXES:
                break
            prefixes = {p + s for p in prefixes for s in strings}
            j += 1
        if "" not in prefixes:
            return frozenset(prefixes), lead_in
        found: Lead | None = None
        if op is _C.SUBPATTERN:
            found = _lead(arg[-1], state)
        elif op is _C.BRANCH:
            branches = [_lead(b, state) for b in arg[1]]
            if None not in branches:
                found = (frozenset().union(*(b[0] for b in branches)), max(b[1] for b in branches))  # type: ignore[index]
        elif op in _REPEATS and arg[0] >= 1:
            found = _lead(arg[2], state)
        if found is not None:
            return found[0], lead_in + found[1]
        widest = _parser.SubPattern(state, [items[at]]).getwidth()[1]  # a class, an optional group: skip it
        lead_in += widest
        if lead_in > MAX_LEAD_IN:
            return None
        at += 1
    return None


@cache
def leading_words(pattern: re.Pattern[str]) -> Lead | None:
    r"""Case-folded words one of which every match of `pattern` holds, and how far at most into the match it
    starts (0: every match starts with one; `[\w.]{0,30}?sid`: 30), or None. `scan` then tries the pattern
    only at and just before the places where the folded text holds one of them."""
    parsed = _parser.parse(pattern.pattern, pattern.flags)
    lead = _lead(parsed, parsed.state)
    if lead is None or min(len(w) for w in lead[0]) < MIN_LEAD:
        return None  # a letter is found in too many places: a match call per place costs more than finditer
    return lead


def _starts(folded: str, lead: Lead) -> list[int]:
    words, lead_in = lead
    found: set[int] = set()
    for word in words:
        at = folded.find(word)
        while at >= 0:
            found.update(range(max(0, at - lead_in), at + 1))
            at = folded.find(word, at + 1)
    return sorted(found)


def scan(pattern: re.Pattern[str], text: str, folded: str | None = None) -> Iterator[re.Match[str]]:
    """The matches `pattern.finditer(text)` gives, found faster when every match holds one of
    `leading_words(pattern)` near its start: the pattern is tried only there (a regex of many alternatives is
    otherwise tried at every character of a long turn). Non-overlapping and left to right, as finditer: a
    start inside an earlier match is skipped. Folding must keep the text's length (it does unless the text
    holds a character such as ß that folds to two); otherwise this is finditer."""
    lead = leading_words(pattern)
    folded = fold(text) if folded is None else folded
    if lead is None or len(folded) != len(text):
        yield from pattern.finditer(text)
        return
    cursor = 0
    for start in _starts(folded, lead):
        if start < cursor:
            continue
        match = pattern.match(text, start)
        if match is not None:
            yield match
            cursor = max(match.end(), start + 1)  # an empty match: finditer moves on a character too


@dataclass(frozen=True)
class WordGate:
    """A gate of plain words (substring tests are several times cheaper than a regex of alternatives), searched
    in fold(text), or in the text as written when the patterns it guards are case-sensitive."""

    words: tuple[str, ...]
    as_written: bool = False

    def search(self, text: str) -> bool:
        return any(word in text for word in self.words)


def exact_words(*words: str) -> WordGate:
    """A gate of words a match holds as written (for case-sensitive patterns)."""
    return WordGate(words, as_written=True)


Gate = re.Pattern | WordGate | None  # a word gate, a regex searched in the folded text, or none


class Gates:
    """The gates of a list of patterns, checked together: `present` lists the gate words a folded text holds
    (one Aho-Corasick pass over the text for all the words, where a substring test per word would scan a long
    turn once per word, and the secret filter has nearly two hundred of them), and
    `candidates` lists the patterns that may match, in their order."""

    def __init__(self, gates: list[Words | None]) -> None:
        self._words = tuple(sorted({w for gate in gates if gate for w in gate}))
        self._ungated = frozenset(i for i, gate in enumerate(gates) if gate is None)
        self._by_word: dict[str, set[int]] = {}
        for i, gate in enumerate(gates):
            for w in gate or ():
                self._by_word.setdefault(w, set()).add(i)
        self._automaton: ahocorasick.Automaton | None = None
        if self._words:
            self._automaton = ahocorasick.Automaton()
            for w in self._words:
                self._automaton.add_word(w, w)
            self._automaton.make_automaton()

    def present(self, folded: str) -> frozenset[str]:
        """The gate words a folded text holds (anywhere, overlapping ones included)."""
        if self._automaton is None or not folded:
            return frozenset()
        return frozenset(w for _, w in self._automaton.iter(folded))

    def candidates(self, folded: str) -> list[int]:
        """Indices of the patterns whose gate the text holds (or that have none), in order."""
        found = set(self._ungated)
        for word in self.present(folded):
            found |= self._by_word[word]
        return sorted(found)


class TurnGates:
    """Every gate checked on one turn at once: each distinct gate word (many gates share "key", "pass",
    "token") and each distinct gate regex is looked up once per turn, where gating detector by detector looked
    a word up again for every gate holding it. `open(text, folded)` gives the positions of the gates that let the
    turn through, found from the words it holds (a short turn holds few, so most of 80 gates are never visited);
    `holding(text, folded)(gate)` answers as `secrets.gate_holds(gate, text, folded)`."""

    def __init__(self, gates: list[Gate]) -> None:
        # One `Gates` per way words are searched, over every position (a gate of the other kind holds no word
        # there), so its candidates are the positions themselves.
        def words(as_written: bool) -> list[Words | None]:
            return [frozenset(g.words) if isinstance(g, WordGate) and g.as_written == as_written else frozenset()
                    for g in gates]  # fmt: skip

        self._folded, self._written = Gates(words(False)), Gates(words(True))
        self._always = frozenset(i for i, g in enumerate(gates) if g is None)
        self._by_regex: dict[str, tuple[re.Pattern[str], set[int]]] = {}
        for i, gate in enumerate(gates):
            if gate is not None and not isinstance(gate, WordGate):
                self._by_regex.setdefault(gate.pattern, (gate, set()))[1].add(i)

    def open(self, text: str, folded: str) -> frozenset[int]:
        """Positions (in the list given) of the gates that hold on this turn."""
        found = set(self._always)
        found.update(self._folded.candidates(folded), self._written.candidates(text))
        for regex, positions in self._by_regex.values():
            if regex.search(folded):
                found |= positions
        return frozenset(found)

    def holding(self, text: str, folded: str) -> Callable[[Gate], bool]:
        found, written = self._folded.present(folded), self._written.present(text)
        regexes: dict[str, bool] = {}

        def holds(gate: Gate) -> bool:
            if gate is None:
                return True
            if isinstance(gate, WordGate):
                return not (written if gate.as_written else found).isdisjoint(gate.words)
            hit = regexes.get(gate.pattern)
            if hit is None:
                hit = regexes[gate.pattern] = bool(gate.search(folded))
            return hit

        return holds


__all__ = [
    "Gate", "Gates", "TurnGates", "WordGate", "Words", "exact_words", "fold", "leading_words", "required_words", "scan",
]
