"""Where memlab's fields live in someone else's table: a column, a JSON path into a json/jsonb column, or a constant.

An expression is parsed here, never pasted into SQL: the only shapes accepted are a column name (`user_id`,
`"User Id"`), a JSON path ending in `->>` (`metadata->>'user_id'`, `cmetadata->'a'->>'b'`, `doc->'turns'->>0`),
a constant string (`'my-app'`: the table holds one app) and None (the table has no such field). `bind` (in
`catalog`) later checks each column against the catalog and composes identifiers and keys with psycopg.sql.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from memlab.errors import ConfigError

FIELDS = ("app", "user", "session", "event_id", "author", "time", "text", "embedding", "model")
REQUIRED = ("user", "event_id", "text", "embedding")  # a search is scoped by user and returns ids and texts
NOT_CONSTANT = ("event_id", "text", "embedding")  # a value per row: a constant cannot stand for them

_IDENT = r'(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"]|"")+")'
_KEY = r"(?:'(?:[^']|'')*'|\d+)"
_STEP = re.compile(rf"\s*(->>|->)\s*({_KEY})")
_IDENT_ONLY = re.compile(rf"\s*({_IDENT})")
_CONSTANT = re.compile(r"\s*'((?:[^']|'')*)'\s*")
_GRAMMAR = ("a column name (user_id, \"User Id\"), a JSON path ending in ->> (metadata->>'user_id', "
            "cmetadata->'a'->>'b'), a constant in single quotes ('my-app') or None (the table has no such field)")


@dataclass(frozen=True)
class Source:
    """A parsed field: `column` with JSON `path` keys (str keys, int array positions), or a `constant`. A
    field given as None is a constant None."""

    column: str | None = None
    path: tuple[str | int, ...] = ()
    constant: str | None = None

    @property
    def is_column(self) -> bool:
        return self.column is not None

    @property
    def is_plain_column(self) -> bool:
        return self.column is not None and not self.path

    def __str__(self) -> str:
        if self.column is None:
            return "None" if self.constant is None else _quote(self.constant)
        steps = [f"{'->>' if i == len(self.path) - 1 else '->'}{k if isinstance(k, int) else _quote(k)}"
                 for i, k in enumerate(self.path)]  # fmt: skip
        return _ident_text(self.column) + "".join(steps)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident_text(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name) else '"' + name.replace('"', '""') + '"'


def _unident(token: str) -> str:
    return token[1:-1].replace('""', '"') if token.startswith('"') else token


def parse_source(name: str, expression: object) -> Source:
    """`expression` (what `Columns` holds for the field `name`) as a Source; ConfigError naming the field, the
    expression and the accepted shapes otherwise."""
    if expression is None:
        return Source()
    if not isinstance(expression, str):
        raise ConfigError(f"columns.{name} = {expression!r} is of type {type(expression).__name__}, not text; "
                          f"give {_GRAMMAR}.")
    if "\x00" in expression:
        raise ConfigError(f"columns.{name} holds a NUL character; give {_GRAMMAR}.")
    constant = _CONSTANT.fullmatch(expression)
    if constant:
        return Source(constant=constant.group(1).replace("''", "'"))
    head = _IDENT_ONLY.match(expression)
    if head:
        pos, path, ops = head.end(), [], []
        while (step := _STEP.match(expression, pos)) is not None:
            key = step.group(2)
            path.append(int(key) if key.isdigit() else key[1:-1].replace("''", "'"))
            ops.append(step.group(1))
            pos = step.end()
        if not expression[pos:].strip():
            if ops and (ops[-1] != "->>" or "->>" in ops[:-1]):
                raise ConfigError(
                    f"columns.{name} = {expression!r}: a JSON path must step with -> and end with one ->> (which "
                    f"reads the value as text), e.g. metadata->'a'->>'b'.")  # fmt: skip
            return Source(column=_unident(head.group(1)), path=tuple(path))
    raise ConfigError(f"columns.{name} = {expression!r} is not a column, a JSON path or a constant: give {_GRAMMAR}. "
                      "memlab composes only these shapes and never runs an SQL expression given here.")  # fmt: skip


def unknown_names(given: list[str], known: tuple[str, ...] | list[str], what: str) -> ConfigError:
    """A ConfigError for names not in `known`, each with its nearest known name."""
    parts = []
    for name in given:
        near = difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
        parts.append(f"{name!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    return ConfigError(f"unknown {what} {', '.join(parts)}; the {what}s are {', '.join(known)}.")


@dataclass(frozen=True)
class Columns:
    """memlab's fields mapped to a table: each a column name, a JSON path, a constant in single quotes or None
    (see the module docstring). `user`, `event_id`, `text` and `embedding` are required; `embedding` must be a
    plain column (of type vector or halfvec); `event_id` and `text` cannot be constants. `app` None means the
    table holds one app (the app asked for is then a label, not a filter); a constant app returns rows only for
    that app. `model` names the embedding model of each row (a column where the table keeps several)."""

    app: str | None = None
    user: str | None = None
    session: str | None = None
    event_id: str | None = None
    author: str | None = None
    time: str | None = None
    text: str | None = None
    embedding: str | None = None
    model: str | None = None
    _parsed: dict[str, Source] = field(init=False, repr=False, compare=False, default_factory=dict)

    def __post_init__(self) -> None:
        parsed = {name: parse_source(name, getattr(self, name)) for name in FIELDS}
        missing = [name for name in REQUIRED if parsed[name].column is None and parsed[name].constant is None]
        if missing:
            raise ConfigError(f"columns {', '.join(missing)} are required (memlab scopes every read by user and "
                              "returns ids, texts and vectors); map each to a column of the table.")  # fmt: skip
        for name in NOT_CONSTANT:
            if not parsed[name].is_column:
                raise ConfigError(f"columns.{name} = {getattr(self, name)!r} is a constant: {name} differs from "
                                  "row to row, so map it to a column or a JSON path.")  # fmt: skip
        if not parsed["embedding"].is_plain_column:
            raise ConfigError(f"columns.embedding = {self.embedding!r} must be a plain column of type vector or "
                              "halfvec (a vector in JSON cannot be searched with an index).")  # fmt: skip
        self._parsed.update(parsed)

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, str | None]) -> Columns:
        """Columns from a mapping (a config file's `columns:`); an unknown field is refused with the nearest."""
        bad = [k for k in mapping if k not in FIELDS]
        if bad:
            raise unknown_names([str(k) for k in bad], FIELDS, "column field")
        return cls(**dict(mapping))

    def replace(self, **overrides: str | None) -> Columns:
        """These columns with some fields mapped elsewhere (a preset with one column renamed)."""
        bad = [k for k in overrides if k not in FIELDS]
        if bad:
            raise unknown_names(bad, FIELDS, "column field")
        return replace(self, **overrides)

    def source(self, name: str) -> Source:
        return self._parsed[name]

    def as_dict(self) -> dict[str, str | None]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in FIELDS}


@dataclass(frozen=True)
class Layout:
    """A table (`name` or `schema.name`, each part a plain or double-quoted identifier) and its `columns`."""

    table: str
    columns: Columns

    def __post_init__(self) -> None:
        table_parts(self.table)

    @classmethod
    def preset(cls, name: str, *, table: str | None = None, **overrides: str | None) -> Layout:
        """The preset `name` of `PRESETS` (its default table unless `table` is given), with single columns
        overridden: `Layout.preset("agent-memory", table="memory.agent_memory", session=None)`."""
        if name not in PRESETS:
            raise unknown_names([name], sorted(PRESETS), "preset")
        base = PRESETS[name]
        return cls(table=table or base.table, columns=base.columns.replace(**overrides))

    def with_columns(self, **overrides: str | None) -> Layout:
        return Layout(self.table, self.columns.replace(**overrides))


def table_parts(table: object) -> tuple[str | None, str]:
    """(schema or None, name) of a table reference; ConfigError unless it is one or two identifiers."""
    if isinstance(table, str):
        match = re.fullmatch(rf"\s*({_IDENT})(?:\s*\.\s*({_IDENT}))?\s*", table)
        if match:
            first, second = match.group(1), match.group(2)
            return (_unident(first), _unident(second)) if second else (None, _unident(first))
    raise ConfigError(f"table {table!r} is not a table name: give name or schema.name (each a plain identifier or "
                      "one in double quotes), e.g. agent_memory or memory.\"Agent Memory\".")  # fmt: skip


# Presets: one entry per known table layout (its columns and the table name it is created under by default). A new
# preset is one entry here.
PRESETS: dict[str, Layout] = {
    # The agent_memory table of the pgvector memory-service design (its DDL: a vector(N) NOT NULL embedding with an
    # HNSW vector_cosine_ops index, UNIQUE (app_name, user_id, event_id, embed_model), a scope index).
    "agent-memory": Layout(
        table="agent_memory",
        columns=Columns(app="app_name", user="user_id", session="session_id", event_id="event_id", author="author",
                        time="occurred_at", text="body", embedding="embedding", model="embed_model"),
    ),
}
