"""Fact memory ids: `user/subject/predicate=value`, each part percent-encoded so any text round-trips."""

from __future__ import annotations

from urllib.parse import quote as percent_encode
from urllib.parse import unquote

_ID_SAFE = ":@+,;!$&'()*"  # kept readable in fact ids; '/', '=', '%' and anything unusual are percent-encoded


def fact_id(user_id: str, subject: str, predicate: str, value: str) -> str:
    """The id of one fact value: `user/subject/predicate=value`, each part percent-encoded so that any
    characters round-trip through `parse_fact_id` ('/', '=', '%', whitespace, unicode)."""
    user, subj, pred, val = (percent_encode(part, safe=_ID_SAFE) for part in (user_id, subject, predicate, value))
    return f"{user}/{subj}/{pred}={val}"


def parse_fact_id(memory_id: str) -> tuple[str, str, str, str]:
    """(user_id, subject, predicate, value) of an id made by `fact_id`; ValueError when it is not one."""
    parts = memory_id.split("/")
    if len(parts) != 3 or "=" not in parts[2]:
        raise ValueError(f"{memory_id!r} is not a fact id (user/subject/predicate=value, parts percent-encoded)")
    predicate, _, value = parts[2].partition("=")
    user, subject, predicate, value = (unquote(p, errors="strict") for p in (parts[0], parts[1], predicate, value))
    if not (subject and predicate):
        raise ValueError(f"{memory_id!r} is not a fact id: subject and predicate must not be empty")
    return user, subject, predicate, value
