"""A private key (or a password) split across consecutive events of one session is not stored by either memory:
the events forming it are skipped as `secret` and counted, the chat around them is kept."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import yaml
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

import memlab
from tests.conftest import ROOT, make_session

BEFORE = "We moved the staging cluster to Frankfurt last week, and the deploys are faster now."
AFTER = "Thanks, the pipeline picked the new key up and the nightly job is green again."


def _pem(kind: str) -> list[str]:
    key = {
        "rsa": lambda: rsa.generate_private_key(65537, 1024),
        "ec": lambda: ec.generate_private_key(ec.SECP256R1()),
        "ed25519": ed25519.Ed25519PrivateKey.generate,
    }[kind]()
    fmt = ser.PrivateFormat.OpenSSH if kind == "ed25519" else ser.PrivateFormat.TraditionalOpenSSL
    return key.private_bytes(ser.Encoding.PEM, fmt, ser.NoEncryption()).decode().strip().splitlines()


def _shapes(lines: list[str]) -> dict[str, list[str]]:
    """Ways a user pastes one key over several turns; the key's texts only (the chat goes around them)."""
    begin, body, end = lines[0], lines[1:-1], lines[-1]
    return {
        "begin | body on one line | end": [begin, "".join(body), end],
        "begin and first line | rest on one line | end": [f"{begin}\n{body[0]}", "".join(body[1:]), end],
        "begin | chat | rest | end": [begin, "hang on, sending the rest of it now", "".join(body[1:]), end],
        "one body line per event, no armor": body,
        "begin | body, never ended": [begin, "\n".join(body[1:])],
        "body | end": ["".join(body[1:]), end],
    }


def _fragments(lines: list[str]) -> list[str]:
    """Every 24-character piece of the key's body after its first line (its start is found in one event alone)."""
    rest = "".join(lines[2:-1])
    return [rest[i : i + 24] for i in range(0, len(rest) - 24, 24)]


CASES = [(kind, shape) for kind in ("rsa", "ec", "ed25519") for shape in _shapes(["b", "x", "y", "z", "e"])]


@pytest.mark.parametrize(("kind", "shape"), CASES, ids=[f"{k}: {s}" for k, s in CASES])
def test_a_key_split_across_events_is_not_stored_by_event_memory(store, embedder, app_name, kind, shape):
    lines = _pem(kind)
    texts = _shapes(lines)[shape]
    if len(_fragments(lines)) == 0 or len(texts) < 2:
        pytest.skip("a key too short to split this way")
    chat = [t for t in texts if "hang on" in t]
    mem = memlab.EventMemory(store, embedder)
    chunks = memlab.EventMemory(store, embedder, granularity="chunk", chunk_size=3, chunk_overlap=1)
    session = make_session(app_name, "u1", "s1", [BEFORE, *texts, AFTER])
    for memory in (mem, chunks):
        report = memory.add_session(session)
        assert report.skipped["secret"] == len(texts) - len(chat), (shape, report.skipped)
    with store.connection() as conn:
        bodies = [r[0] for r in conn.execute("SELECT body FROM memory_unit WHERE app_name = %s", [app_name])]
    stored = "\n".join(bodies)
    assert BEFORE in stored and AFTER in stored
    leaked = [f for f in _fragments(lines) if f in stored]
    assert not leaked, (shape, leaked[:3])


class _Recording:
    """A real RuleExtractor that also keeps the texts it was given."""

    name = "recording"

    def __init__(self) -> None:

        self.inner = memlab.RuleExtractor()
        self.seen: list[str] = []

    def extract(self, events: Sequence[memlab.Event], **kwargs) -> list:
        self.seen += [e.text or "" for e in events]
        return self.inner.extract(events, **kwargs)


def test_a_key_split_across_events_never_reaches_the_fact_extractor(store, embedder, app_name):
    lines = _pem("rsa")
    extractor = _Recording()
    facts = memlab.FactMemory(store, embedder, extractor=extractor)
    texts = _shapes(lines)["begin | chat | rest | end"]
    report = facts.add_session(make_session(app_name, "u1", "s1", ["I live in Lisbon and work at Acme.", *texts]))
    seen = "\n".join(extractor.seen)
    assert "Lisbon" in seen and "hang on" in seen
    assert not [f for f in _fragments(lines) if f in seen]
    assert report.skipped["secret"] == 3


def test_a_password_given_as_the_answer_to_a_question_is_not_stored(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder, min_chars=1)
    texts = ["what's the wifi password at the office?", "Tr0ub4dor&3x", "Wie lautet das Kennwort für den Drucker?",
             "Sommer2024!"]  # fmt: skip
    session = make_session(app_name, "u1", "s1", texts)
    report = mem.add_session(session)
    assert report.skipped["secret"] == 2
    with store.connection() as conn:
        stored = [r[0] for r in conn.execute("SELECT body FROM memory_unit WHERE app_name = %s", [app_name])]
    assert not any("Tr0ub4dor" in b or "Sommer2024" in b for b in stored)


def test_ordinary_sessions_lose_nothing_to_the_split_scan(store, embedder, app_name):
    """The ordinary corpus of fixtures/secrets as one session of consecutive events: every event is kept."""
    ordinary = [o["text"] for o in yaml.safe_load((ROOT / "fixtures/secrets/ordinary.yaml").read_text())["ordinary"]]
    chat = ["what's the password policy?", "12 characters at least", "which key do I press?", "Escape",
            "sha256 of the tarball?", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"]  # fmt: skip
    report = memlab.EventMemory(store, embedder, min_chars=1).add_session(
        make_session(app_name, "u1", "s1", [*ordinary, *chat])
    )
    assert report.skipped.get("secret", 0) == 0, report.skipped
