"""Which events are kept: pure checks, plus agreement with every skip label written in the fixtures."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import memlab
from memlab import find_secrets
from memlab.events import skip_reason

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


# Credential kinds a filter of simple patterns lets through, one per kind. The values are made up.
PEM_BODY = (
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7pU3KGCUwux1tEyze1iN7LtkeP3IfyxlxF0SU1kk8nVw0\n"
    "YL4xIB5p/tqg7ui5mX9cfCmZ/a/lkyU81lSvTfrXFCegrrP+6SMvivIhH57kkcWxC+y1Vjv8Hm+TQn7LyP4pVeXNjkbcj\n"
    "tS3wnZNKlpNdncG+F2GkAJK1r2jQBvpyMvMyTX2zR9hImrhUziuGjQATTO6DSRq"
)


@pytest.mark.parametrize(
    "text",
    [
        f"here is the key body without the header, paste it into the secret:\n{PEM_BODY}",
        "the cache is redis://:s3cr3tRedisPass@cache.internal:6379/0 if you want to flush it",
        "Service Bus token: SharedAccessSignature sr=https%3A%2F%2Fshop-bus.servicebus.windows.net%2Forders"
        "&sig=wEyBsbryPjv57vX3nytJNK%2BH9VILablLDZguhbtVtnI%3D&se=1767225600&skn=RootManageSharedAccessKey",
        'from the service account json: "private_key_id": "a767c76fb008f86bebb2737f6a6f0fb23c6f5da2",',
        "the wifi passphrase is purple-monkey-dishwasher, the guest network has none",
        "log into the router with admin / Tr0ub4dor&3 and reboot it",
        "the staging box is ubuntu@10.0.4.12 pw Summer2024! please don't share",
        "set DATABASE_PASSWORD=Xq7vL2mPz9Rk in the .env before starting",
        "my 2FA code is 482913, quick before it expires",
        "github recovery codes: 3f8a1-c92d4 7b0e2-91fd3 a4c67-0e2b9 d1f03-8c7a5",
        "pay with 4539 3982 5979 1903 exp 09/27 cvv 314",
        "wire it to my account DE35 3704 0044 0532 0130 99 by Friday",
        "publish with npm_Z8UzDzV8fUkkibjL5DZPjN0MEQ7wjJJibaZU from the CI",
        "the mailgun key is key-34d6608697a8d41bed440e50454f31af",
        "datadog api key 3176813e02ea68ef786e4d3cea27d269 for the agent",
        "vault token hvs.Yh5Xj8TPQxjq4i9DoV8gz4Fk works for the dev namespace",
        "shopify admin token 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",
        "curl -H 'Authorization: Basic ZGVwbG95OldpbnQzci1pcy1jMG1pbmc=' https://ci.example.org/api",
        "use Bearer ya29.a0Zt-PlJhx2jIclHkCiHp6bR1IqfEouHgxzNNAL5wIScGebcy8F5n3-YNBDRzr for the drive call",
    ],
)
def test_credentials_once_stored_are_found(text):
    assert find_secrets(text), text
    assert skip_reason(ev(text)) == "secret"


@pytest.mark.parametrize(
    "text",
    [
        "order 4539398259791904 shipped yesterday",  # fails Luhn
        "ticket 1234 5678 9012 3456 was closed",  # fails Luhn
        "the reference DE36 3704 0044 0532 0130 99 is not an IBAN",  # fails mod 97
        "commit a767c76fb008f86bebb2737f6a6f0fb23c6f5da2 fixed the flaky test",
        "request id 3176813e02ea68ef786e4d3cea27d269 in the nginx log",
        "set DATABASE_PASSWORD from the vault, never in the .env",
        "the wifi passphrase is on the fridge",
    ],
)
def test_lookalikes_are_kept(text):
    assert find_secrets(text) == [], text


def test_scanning_is_thread_safe_and_never_silently_empty():
    """detect-secrets' global settings were swapped per scan: under threads some scans raised and some found
    nothing in a known key. Every scan from every thread must give the single-threaded answer (not an empty one,
    and not a failure turned into "secret")."""
    import sys
    import threading
    import time

    texts = ("sk_live_4eC39HqLyjWDarjtT1zdp7dc is the stripe key", "here is the key AKIAIOSFODNN7EXAMPLE for backups")
    expected = {text: find_secrets(text) for text in texts}
    assert all(expected.values())
    wrong: list[object] = []  # an exception, or (text, findings) that differ from the expected ones
    scans: list[int] = []
    deadline = time.monotonic() + 8
    start = threading.Barrier(8)

    def worker(i: int) -> None:
        start.wait()
        n = 0
        while n < 400 and time.monotonic() < deadline:
            text = texts[(i + n) % 2]
            try:
                found = find_secrets(text)
                if found != expected[text]:
                    wrong.append((text, found))
            except BaseException as exc:  # any failure counts
                wrong.append(exc)
            n += 1
        scans.append(n)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not wrong, f"{len(wrong)} of {sum(scans)} scans went wrong, first: {wrong[0]!r}"
    assert sum(scans) >= 800


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
