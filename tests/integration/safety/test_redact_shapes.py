"""The redactor on the shapes it meets every day: DSNs with empty or odd user and password parts never crash it
(the embedded server's own DSN has an empty password), and the ids data sets use survive it even where a word
beside them reads like a login, while a password of the same neighbourhood is still hidden."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memlab
from tests.conftest import examples

DSN_CHARS = string.ascii_letters + string.digits + ":@/%?#&=;'\" .!+-_~$*()[]{}\\"
PASSWORD_CHARS = string.ascii_letters + string.digits + "!#$%^&*()_+=~.-"

odd_part = st.text(alphabet=DSN_CHARS, max_size=12)
dsns = st.one_of(
    st.builds("postgresql://{}:{}@localhost/db".format, odd_part, odd_part),
    st.builds("postgres://{}:{}@db.internal:5432/memlab?sslmode=disable".format, odd_part, odd_part),
    st.builds("postgresql://{}@localhost/db".format, odd_part),
    st.builds("host=localhost user={} password={} dbname=db".format, odd_part, odd_part),
    st.builds("postgresql://localhost/db?user={}&password={}".format, odd_part, odd_part),
)


@settings(max_examples=examples(200))
@given(dsn=dsns, where=st.sampled_from(["{}", "cannot reach PostgreSQL at {}: timeout", "dsn: {}", "'{}'"]))
def test_a_dsn_of_any_user_and_password_never_crashes_the_redactor(dsn, where):
    text = where.format(dsn)
    out = memlab.redact_secrets(text)
    assert isinstance(out, str)
    assert memlab.redact_secrets(text, [dsn]) is not None


@pytest.mark.parametrize("dsn", ["postgresql://u:@localhost/db", "postgresql://:@localhost/db",
                                 "postgresql://u:@/db?host=/tmp/pg", "host=/tmp user=u password='' dbname=db",
                                 "postgresql://postgres:@localhost:5432/postgres"])  # fmt: skip
def test_an_empty_password_leaves_the_dsn_as_it_is(dsn):
    assert memlab.redact_secrets(dsn) == dsn
    assert memlab.redact_secrets(f"cannot reach {dsn}: refused") == f"cannot reach {dsn}: refused"


@settings(max_examples=examples(100))
@given(user=st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=10),
       password=st.text(alphabet=PASSWORD_CHARS, min_size=10, max_size=24).filter(
           lambda p: p[0].isalnum() and any(c.isdigit() for c in p) and any(c.isalpha() for c in p)))
def test_a_dsn_password_is_still_hidden(user, password):
    """(A value starting with $ or < reads as a placeholder, `$PGPASSWORD`: the redactor leaves those.)"""
    out = memlab.redact_secrets(f"cannot reach postgresql://{user}:{password}@db.internal/memlab: refused")
    assert f":{password}@" not in out and f"{user}:***@" in out


ID_PARTS = st.one_of(st.integers(0, 999).map(str), st.text(string.ascii_lowercase + string.digits, min_size=1,
                                                            max_size=10), st.builds("{}{}".format,
                                                                                    st.sampled_from("DSQ"),
                                                                                    st.integers(0, 99)))  # fmt: skip
dataset_ids = st.one_of(
    st.builds("conv-{}:D{}:{}".format, st.integers(1, 99), st.integers(1, 40), st.integers(1, 400)),
    st.builds("D{}:{}".format, st.integers(1, 40), st.integers(1, 400)),
    st.builds("answer_{}_{}".format, st.text("abcdef0123456789", min_size=6, max_size=8), st.integers(0, 9)),
    st.uuids().map(str),
    st.builds("conv-{}:session_{}".format, st.integers(1, 99), st.integers(1, 40)),
    st.lists(ID_PARTS, min_size=2, max_size=4).flatmap(
        lambda parts: st.sampled_from("-_:").map(lambda sep: sep.join(parts))),
)
CONTEXTS = [
    "user conv-47: evidence ['{}']",
    "user {} at line 3",
    "check-dataset: question of user conv-47 names {}, which no session holds",
    "account {}: no such session ({})",
    "the user's labels [{}] are stale",
    "login history of user alice: {{{}}}",
    "user x: ({}, {}).",
]


@settings(max_examples=examples(300))
@given(ident=dataset_ids, context=st.sampled_from(CONTEXTS))
def test_ids_of_data_set_shapes_survive(ident, context):
    text = context.format(ident, ident)
    assert memlab.redact_secrets(text) == text


@pytest.mark.parametrize("text", [
    "user conv-47: evidence ['conv-47:D4:36']", "user conv-47 evidence conv-47:D4:36]",
    "error: user conv-47 has no event conv-47:D4:36>", "user x: conv-47:D4:36; answer_abc123_2, D1:3.",
    "account sess 3f2a9c1e-5b7d-4e8a-9c0b-1d2e3f4a5b6c: {answer_4be1b6b4_2}",
])  # fmt: skip
def test_a_check_dataset_error_keeps_its_ids(text):
    assert memlab.redact_secrets(text) == text


@pytest.mark.parametrize(("text", "secret"), [
    ("ssh root:hunter22!x", "hunter22!x"), ("user bob:Passw0rd!", "Passw0rd!"),
    ("login alice:Tr0ub4dor&3", "Tr0ub4dor"), ("github recovery codes: 56109-7c823 c9025-bed4b", "56109-7c823"),
    ("my password is answer_abc123_2", "answer_abc123_2"), ("password conv-47:D4:36", "D4:36"),
    ("user conv-47 token: ab12cd34-ef56", "ab12cd34-ef56"), ("ssh root:hunter22!", "hunter22!"),
    ("user 3f2a9c1e: sk-proj-abc123def456ghi789jkl012mno345", "abc123def456ghi789jkl012mno345"),
])  # fmt: skip
def test_a_secret_beside_an_id_is_still_hidden(text, secret):
    assert secret not in memlab.redact_secrets(text)
