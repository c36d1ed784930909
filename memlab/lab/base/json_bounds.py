"""JSON read with a nesting bound. Python's JSON decoder recurses once per bracket, so a line of 100,000 `[` ends
in a RecursionError (a traceback, exit 1) instead of an error naming the file; and a value nested a few hundred
levels deep that does decode can still exhaust the stack later, in a copy, a repr or a message. No data set,
judgments file, query log, pool or metrics file memlab reads is more than a handful of levels deep, so anything
nested deeper than MAX_DEPTH (the YAML configs' bound) is refused where it is read, as the reader's own error
(FixtureError for data, ConfigError for settings and baselines), naming the file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from memlab.errors import FixtureError, MemlabError
from memlab.lab.base.yaml_bounds import MAX_DEPTH


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests lists/objects deeper than `limit` (iterative: never itself recursion-bound)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def nested_error(where: str, error: type[MemlabError] = FixtureError) -> MemlabError:
    return error(f"{where}: refused: nested deeper than {MAX_DEPTH} levels; no memlab file nests that deep (check "
                 "that this is the right file, and write the values out flat)")  # fmt: skip


def bounded(value: Any, where: str, error: type[MemlabError] = FixtureError) -> Any:
    """`value` itself, or `error` when it nests deeper than MAX_DEPTH."""
    if too_deep(value):
        raise nested_error(where, error)
    return value


def loads(text: str | bytes, where: str, error: type[MemlabError] = FixtureError) -> Any:
    """json.loads within the nesting bound; json.JSONDecodeError passes through (each reader words its own),
    too deep a value is `error` naming `where` (a file, or file:line)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise nested_error(where, error) from None
    return bounded(value, where, error)


def load(handle: IO[str], where: str | Path, error: type[MemlabError] = FixtureError) -> Any:
    """json.load of an open file within the nesting bound (see `loads`)."""
    return loads(handle.read(), str(where), error)
