"""The layout of a user's table: memlab's fields as columns, JSON paths or constants, parsed strictly (nothing but
these shapes ever reaches a statement), presets by name with single columns overridden."""

from __future__ import annotations

import re

import pytest

import memlab
from memlab.table_store import PRESETS, AppNames, Columns, Layout, TableCatalog
from memlab.table_store.catalog import ISO_TIME, AppTable, bind

MINIMAL = {"user": "user_id", "event_id": "id", "text": "body", "embedding": "embedding"}


def test_the_agent_memory_preset_maps_the_design_table():
    layout = Layout.preset("agent-memory")
    assert layout.table == "agent_memory"
    assert layout.columns.as_dict() == {"app": "app_name", "user": "user_id", "session": "session_id",
                                        "event_id": "event_id", "author": "author", "time": "occurred_at",
                                        "text": "body", "embedding": "embedding", "model": "embed_model"}  # fmt: skip
    assert PRESETS["agent-memory"] == layout


def test_a_preset_takes_single_overrides_and_another_table():
    layout = Layout.preset("agent-memory", table='memory."Agent Memory"', session=None, user="metadata->>'uid'")
    assert layout.table == 'memory."Agent Memory"'
    assert layout.columns.session is None and layout.columns.user == "metadata->>'uid'"
    assert layout.columns.text == "body"  # the rest stays the preset's
    assert PRESETS["agent-memory"].columns.session == "session_id"  # the registry is not changed


@pytest.mark.parametrize(("expression", "column", "path", "constant"), [
    ("user_id", "user_id", (), None),
    ('"User Id"', "User Id", (), None),
    ("metadata->>'user_id'", "metadata", ("user_id",), None),
    ("cmetadata -> 'a' ->> 'b'", "cmetadata", ("a", "b"), None),
    ("doc->'turns'->>0", "doc", ("turns", 0), None),
    ("meta->>'it''s'", "meta", ("it's",), None),
    ("'my-app'", None, (), "my-app"),
    ("'O''Brien'", None, (), "O'Brien"),
])  # fmt: skip
def test_each_accepted_shape_parses(expression, column, path, constant):
    source = Columns(**{**MINIMAL, "app": expression}).source("app")
    assert (source.column, source.path, source.constant) == (column, path, constant)


@pytest.mark.parametrize("expression", [
    "user_id; DROP TABLE agent_memory",
    "lower(user_id)",
    "user_id) OR (1=1",
    "metadata->>'a' || 'b'",
    "metadata->>user_id",
    "metadata->'a'",  # ends with -> (json, not text)
    "metadata->>'a'->>'b'",  # ->> in the middle
    "metadata#>>'{a,b}'",
    "user_id::text",
    "'unterminated",
    "",
])  # fmt: skip
def test_anything_else_is_refused_with_the_accepted_shapes(expression):
    with pytest.raises(memlab.ConfigError) as err:
        Columns(**{**MINIMAL, "session": expression})
    message = str(err.value)
    assert "columns.session" in message and "JSON path" in message


def test_unknown_field_names_are_refused_with_the_nearest():
    with pytest.raises(memlab.ConfigError, match=r"'usr' \(did you mean 'user'\?\)"):
        Columns.from_mapping({**MINIMAL, "usr": "x"})
    with pytest.raises(memlab.ConfigError, match=r"'sesion' \(did you mean 'session'\?\)"):
        Layout.preset("agent-memory", sesion="s")
    with pytest.raises(memlab.ConfigError, match=r"unknown preset 'agent_memory' \(did you mean 'agent-memory'\?\)"):
        Layout.preset("agent_memory")


def test_required_fields_and_per_row_fields():
    with pytest.raises(memlab.ConfigError, match="columns user, embedding are required"):
        Columns(event_id="id", text="body")
    with pytest.raises(memlab.ConfigError, match=r"columns\.event_id = \"'e1'\" is a constant"):
        Columns(**{**MINIMAL, "event_id": "'e1'"})
    with pytest.raises(memlab.ConfigError, match=r"columns\.embedding .* must be a plain column"):
        Columns(**{**MINIMAL, "embedding": "meta->>'vec'"})
    with pytest.raises(memlab.ConfigError, match=r"columns\.user = 5 is of type int, not text"):
        Columns(**{**MINIMAL, "user": 5})


@pytest.mark.parametrize("table", ["a.b.c", "agent_memory; DROP TABLE x", "", "memory.", 'x."unterminated'])
def test_a_table_is_one_or_two_identifiers(table):
    with pytest.raises(memlab.ConfigError, match="is not a table name"):
        Layout(table, Columns(**MINIMAL))


def test_a_source_prints_back_as_given():
    columns = Columns(**{**MINIMAL, "session": "cmetadata->'s'->>'id'", "app": "'it''s'", "author": '"The Author"'})
    assert [str(columns.source(f)) for f in ("session", "app", "author", "model")] == [
        "cmetadata->'s'->>'id'", "'it''s'", '"The Author"', "None"]


# Each library preset: its default table, its columns, and whether the app is looked up by name.
LIBRARY_PRESETS = {
    "langchain-postgres": ("langchain_pg_embedding", {
        "app": "collection_id", "user": "cmetadata->>'user_id'", "session": "cmetadata->>'session_id'",
        "event_id": "id", "author": "cmetadata->>'role'", "time": "cmetadata->>'created_at'", "text": "document",
        "embedding": "embedding", "model": None}),
    "langchain-pgvectorstore": ("vectorstore", {
        "app": None, "user": "langchain_metadata->>'user_id'", "session": "langchain_metadata->>'session_id'",
        "event_id": "langchain_id", "author": "langchain_metadata->>'role'",
        "time": "langchain_metadata->>'created_at'", "text": "content", "embedding": "embedding", "model": None}),
    "llamaindex": ("data_llamaindex", {
        "app": None, "user": "metadata_->>'user_id'", "session": "metadata_->>'session_id'", "event_id": "node_id",
        "author": "metadata_->>'role'", "time": "metadata_->>'created_at'", "text": "text", "embedding": "embedding",
        "model": None}),
    "mem0": ("mem0", {
        "app": None, "user": "payload->>'user_id'", "session": "payload->>'run_id'", "event_id": "id",
        "author": "payload->>'role'", "time": "payload->>'created_at'", "text": "payload->>'data'",
        "embedding": "vector", "model": None}),
}  # fmt: skip


@pytest.mark.parametrize("name", LIBRARY_PRESETS)
def test_each_library_preset_maps_where_the_library_keeps_each_field(name):
    table, columns = LIBRARY_PRESETS[name]
    layout = Layout.preset(name)
    assert (layout.table, layout.columns.as_dict()) == (table, columns)
    assert PRESETS[name] == layout
    assert (layout.app_names is not None) == (name == "langchain-postgres")


def test_the_presets_are_the_registry():
    assert sorted(PRESETS) == sorted(["agent-memory", *LIBRARY_PRESETS])


def test_langchain_collections_are_named_in_langchain_pg_collection():
    names = Layout.preset("langchain-postgres").app_names
    assert names == AppNames(table="langchain_pg_collection", name="name", key="uuid")
    assert Layout.preset("langchain-postgres", table="lc.langchain_pg_embedding").app_names == names


@pytest.mark.parametrize("name", LIBRARY_PRESETS)
def test_a_conventional_metadata_key_is_overridden_alone(name):
    base = Layout.preset(name)
    column = base.columns.source("user").column
    layout = Layout.preset(name, user=f"{column}->>'customer'", time=f"{column}->'meta'->>'ts'")
    assert layout.columns.user == f"{column}->>'customer'" and layout.columns.source("time").path == ("meta", "ts")
    others = {k: v for k, v in layout.columns.as_dict().items() if k not in ("user", "time")}
    assert others == {k: v for k, v in base.columns.as_dict().items() if k not in ("user", "time")}
    assert layout.app_names == base.app_names  # only a new app drops the app names


def test_a_new_app_drops_the_app_names_and_the_names_need_a_plain_app_column():
    assert Layout.preset("langchain-postgres", app="collection_id").app_names is None
    assert Layout.preset("langchain-postgres").with_columns(app=None).app_names is None
    names = AppNames("langchain_pg_collection", "name", "uuid")
    with pytest.raises(memlab.ConfigError, match=r"app_names needs columns\.app to be a plain column"):
        Layout("t", Columns(**{**MINIMAL, "app": "meta->>'app'"}), names)
    with pytest.raises(memlab.ConfigError, match=r"app_names\.key = 'uuid; DROP' is not a column name"):
        AppNames("langchain_pg_collection", "name", "uuid; DROP")
    with pytest.raises(memlab.ConfigError, match="is not a table name"):
        AppNames("a.b.c", "name", "uuid")
    assert AppNames("c", '"Name"', "uuid").column("name") == "Name"


def _catalog(column_types: dict[str, str], server_version: int = 180000, app_names: AppTable | None = None):
    return TableCatalog(schema="public", table="t", kind="r", vector_version="0.8.1", embedding_type="vector",
                        declared_dimension=3, dimension=3, indexes=[], estimated_rows=None,
                        column_types=column_types, server_version=server_version, app_names=app_names)  # fmt: skip


@pytest.mark.parametrize(("time", "column_type", "cast"), [
    ("meta->>'created_at'", "jsonb", True),
    ("created_at", "text", True),
    ("created_at", "character varying(64)", True),
    ("created_at", "timestamp with time zone", False),
    ("created_at", "date", False),
    (None, None, False),
])  # fmt: skip
def test_a_time_kept_as_text_is_read_as_timestamptz_through_a_guard(time, column_type, cast):
    types = {"user_id": "text", "id": "text", "body": "text", "embedding": "vector(3)"}
    column = time.split("-")[0] if time else None
    layout = Layout("t", Columns(**MINIMAL, time=time))
    for version, guard in ((180000, "pg_input_is_valid("), (150000, " ~ ")):
        bound = bind(layout, _catalog({**types, **({column: column_type} if column else {})}, version))
        text = bound.expr("time").as_string(None)
        assert ("::timestamptz" in text) == cast and (guard in text) == cast, text
        if cast:
            assert text.startswith("(CASE WHEN ") and text.endswith("::timestamptz END)")


@pytest.mark.parametrize(("value", "iso"), [
    ("2025-11-03T08:30:00+01:00", True), ("2025-11-03 08:30", True), ("2025-11-03T08:30:00.25Z", True),
    ("2025-11-03", True), ("1730622600", False), ("", False), ("next tuesday", False), ("03/11/2025", False),
])  # fmt: skip
def test_the_iso_guard_of_older_servers(value, iso):
    assert bool(re.search(ISO_TIME, value)) == iso


def test_apps_named_in_another_table_match_through_it():
    layout = Layout.preset("langchain-postgres")
    types = {"collection_id": "uuid", "cmetadata": "jsonb", "id": "character varying", "document": "character varying",
             "embedding": "vector(3)"}  # fmt: skip
    bound = bind(layout, _catalog(types, app_names=AppTable("public", "langchain_pg_collection", "name", "uuid")))
    assert bound.app_match.as_string(None) == (
        '"collection_id" IN (SELECT "uuid" FROM "public"."langchain_pg_collection" WHERE ("name")::text = %(app)s '
        'OR ("uuid")::text = %(app)s)')
    plain = bind(layout.with_columns(app="collection_id"), _catalog(types))
    assert plain.app_match.as_string(None) == '"collection_id" = %(app)s'
    assert bind(Layout.preset("mem0"), _catalog({"payload": "jsonb", "id": "uuid", "vector": "vector(3)"})).app_match \
        is None  # fmt: skip
