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
class AppNames:
    """Apps named in another table: the table's app column holds `key` values of `table`, and the caller names an
    app by that row's `name` (or by its key as text). LangChain's PGVector keeps each row's collection as
    `collection_id`, the uuid of a row of langchain_pg_collection, whose `name` is the collection_name the
    application gave. `table` without a schema is looked up in the schema of the layout's table."""

    table: str
    name: str
    key: str

    def __post_init__(self) -> None:
        table_parts(self.table)
        for part in ("name", "key"):
            value = getattr(self, part)
            if not isinstance(value, str) or not re.fullmatch(rf"\s*{_IDENT}\s*", value):
                raise ConfigError(f"app_names.{part} = {value!r} is not a column name: give a plain identifier or "
                                  f"one in double quotes, a column of {self.table}.")  # fmt: skip

    def column(self, part: str) -> str:
        """The `name` or `key` column as the catalog spells it (quotes removed)."""
        return _unident(getattr(self, part).strip())


@dataclass(frozen=True)
class Layout:
    """A table (`name` or `schema.name`, each part a plain or double-quoted identifier) and its `columns`;
    `app_names` when the app column holds a key to another table's names (see AppNames), else None."""

    table: str
    columns: Columns
    app_names: AppNames | None = None

    def __post_init__(self) -> None:
        table_parts(self.table)
        if self.app_names is not None and not self.columns.source("app").is_plain_column:
            raise ConfigError(f"app_names needs columns.app to be a plain column (the key into "
                              f"{self.app_names.table}); it is {self.columns.app!r}.")  # fmt: skip

    @classmethod
    def preset(cls, name: str, *, table: str | None = None, **overrides: str | None) -> Layout:
        """The preset `name` of `PRESETS` (its default table unless `table` is given), with single columns
        overridden: `Layout.preset("agent-memory", table="memory.agent_memory", session=None)`. Overriding `app`
        drops the preset's `app_names` (the app is then what the new expression reads)."""
        if name not in PRESETS:
            raise unknown_names([name], sorted(PRESETS), "preset")
        return PRESETS[name].with_table(table).with_columns(**overrides)

    def with_columns(self, **overrides: str | None) -> Layout:
        """This layout with some fields mapped elsewhere; a new `app` drops `app_names`."""
        names = None if "app" in overrides else self.app_names
        return Layout(self.table, self.columns.replace(**overrides), names)

    def with_table(self, table: str | None) -> Layout:
        """This layout on another table (None: the same one)."""
        return self if table is None else Layout(table, self.columns, self.app_names)


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
# preset is one entry here. Where a library has no user, session, author or time of its own, the preset reads the
# metadata keys most applications use (user_id, session_id, role, created_at): a convention, so each is overridden
# on its own (`open_table(dsn, "llamaindex", user="metadata_->>'customer'")`). None of these libraries records the
# embedding model in its rows: their `model` is None. JSON times are ISO text, read as timestamptz (catalog.bind).
PRESETS: dict[str, Layout] = {
    # The agent_memory table of the pgvector memory-service design (its DDL: a vector(N) NOT NULL embedding with an
    # HNSW vector_cosine_ops index, UNIQUE (app_name, user_id, event_id, embed_model), a scope index).
    "agent-memory": Layout(
        table="agent_memory",
        columns=Columns(app="app_name", user="user_id", session="session_id", event_id="event_id", author="author",
                        time="occurred_at", text="body", embedding="embedding", model="embed_model"),
    ),
    # LangChain's PGVector (langchain_postgres.vectorstores): every collection's rows in langchain_pg_embedding, the
    # metadata in jsonb `cmetadata`. The app is the collection, named as the application named it (collection_name,
    # LangChain's default 'langchain') or by its uuid; the name is read from langchain_pg_collection, so the role
    # needs SELECT there too. `app="collection_id"` instead takes the uuid alone and needs no second table.
    "langchain-postgres": Layout(
        table="langchain_pg_embedding",
        columns=Columns(app="collection_id", user="cmetadata->>'user_id'", session="cmetadata->>'session_id'",
                        event_id="id", author="cmetadata->>'role'", time="cmetadata->>'created_at'", text="document",
                        embedding="embedding"),
        app_names=AppNames(table="langchain_pg_collection", name="name", key="uuid"),
    ),
    # LangChain's PGVectorStore (langchain_postgres.v2): the table the application named in
    # PGEngine.init_vectorstore_table (give it as table=; 'vectorstore' is the name LangChain's documentation uses),
    # one store per table (no app), metadata in json `langchain_metadata`. Keys given as metadata_columns are
    # columns of their own: map them so (`user="user_id", time="created_at"`).
    "langchain-pgvectorstore": Layout(
        table="vectorstore",
        columns=Columns(user="langchain_metadata->>'user_id'", session="langchain_metadata->>'session_id'",
                        event_id="langchain_id", author="langchain_metadata->>'role'",
                        time="langchain_metadata->>'created_at'", text="content", embedding="embedding"),
    ),
    # LlamaIndex's PGVectorStore (llama_index.vector_stores.postgres): table "data_" + the lowercased table_name
    # (default llamaindex), one store per table (no app), node metadata at the top level of json `metadata_`.
    "llamaindex": Layout(
        table="data_llamaindex",
        columns=Columns(user="metadata_->>'user_id'", session="metadata_->>'session_id'", event_id="node_id",
                        author="metadata_->>'role'", time="metadata_->>'created_at'", text="text",
                        embedding="embedding"),
    ),
    # mem0's pgvector store: the table is the collection_name (default mem0), everything but the vector in jsonb
    # `payload` under mem0's own keys; a run is memlab's session. mem0's agent_id is optional, so the preset reads
    # every agent's memories of a user; `app="payload->>'agent_id'"` scopes each read to one agent.
    "mem0": Layout(
        table="mem0",
        columns=Columns(user="payload->>'user_id'", session="payload->>'run_id'", event_id="id",
                        author="payload->>'role'", time="payload->>'created_at'", text="payload->>'data'",
                        embedding="vector"),
    ),
}
