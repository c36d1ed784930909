""""Did you mean": a misspelt key or name gets the nearest valid one, so a typo costs one look instead of a
read through the list of every allowed key."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches


def nearest(word: object, choices: Iterable[str]) -> str | None:
    """The valid name closest to `word`, if one is close enough to be a likely typo."""
    found = get_close_matches(str(word), sorted(set(map(str, choices))), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)`, or nothing when no valid name is close."""
    match = nearest(word, choices)
    return f" (did you mean {match!r}?)" if match else ""


def unknown_keys(extra: Iterable[object], allowed: Iterable[str]) -> str:
    """`unknown key(s) ['strategi'] (did you mean 'strategy'?)`: the keys, each with its nearest valid key."""
    names = sorted(map(str, extra))
    allowed = sorted(set(map(str, allowed)))
    pairs = [(n, m) for n in names if (m := nearest(n, allowed))]
    text = f"unknown key(s) {names}"
    if len(names) == 1 and pairs:
        return text + f" (did you mean {pairs[0][1]!r}?)"
    if pairs:
        return text + " (did you mean " + ", ".join(f"{m!r} for {n!r}" for n, m in pairs) + "?)"
    return text
