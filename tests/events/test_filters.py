"""Which events are kept: pure checks, plus agreement with every skip label written in the fixtures."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import memlab
from memlab import find_secrets, skip_reason

T = datetime(2026, 1, 1, tzinfo=UTC)


def ev(text=None, **kw) -> memlab.Event:
    return memlab.Event("e", "user", T, text, **kw)


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (ev("We deploy the payments service with Argo CD.", partial=True), "partial"),
        (ev(function_calls=(memlab.FunctionCall("search_flights", {"to": "LIS"}),)), "function_call"),
        (ev(function_responses=(memlab.FunctionResponse("search_flights", {"price": 142}),)), "function_call"),
        (ev("   "), "no_text"),
        (ev("ok thanks!"), "too_short"),
        (ev("here is the key AKIAIOSFODNN7EXAMPLE for the bucket"), "secret"),
        (ev("We deploy the payments service with Argo CD."), None),
    ],
)
def test_skip_reasons(event, reason):
    assert skip_reason(event) == reason


@pytest.mark.parametrize(
    "text",
    [
        "staging db is postgres://admin:S0mePass@db.internal:5432/app can you check it",
        "token ghp_1234567890abcdefghijABCDEFGHIJ123456 for the CI",
        "-----BEGIN RSA PRIVATE KEY-----",
        "slack bot xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc is the stripe key",
        "password: Tr0ub4dor&3",
        "my password is hunter2 if you need it",
        "openai key sk-proj-abcdefghijklmnopqrstuvwxyzABCDEFGH1234567890",
    ],
)
def test_credentials_are_found(text):
    assert find_secrets(text)


@pytest.mark.parametrize(
    "text",
    [
        "I forgot my password again, can you reset it?",
        "Please rotate that password and revoke the token you pasted.",
        "The token expires on Friday, renew it before the release.",
        "We deploy the payments service with Argo CD in eu-west-1.",
        "My password is terrible, I know.",
    ],
)
def test_ordinary_talk_about_credentials_is_kept(text):
    assert find_secrets(text) == []


def test_filter_agrees_with_every_fixture_label(fixture_set):
    """Each fixture event says how it must be treated (`skip:`); the filter must agree on all of them."""
    checked = 0
    for user in fixture_set.users:
        for session in user.sessions:
            for event in session.events:
                assert skip_reason(event) == user.expected_skips.get(event.id), (user.source, event.id, event.text)
                checked += 1
    assert checked == sum(u.event_count for u in fixture_set.users) > 200
