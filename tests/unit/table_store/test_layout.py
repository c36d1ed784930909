"""The layout of a user's table: memlab's fields as columns, JSON paths or constants, parsed strictly (nothing but
these shapes ever reaches a statement), presets by name with single columns overridden."""

from __future__ import annotations

import pytest

import memlab
from memlab.table_store import PRESETS, Columns, Layout

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
