"""Reliability family `split_secrets`: a secret split across consecutive events of one session.

A private key pasted as its BEGIN line, its body on one line, and its END line, in three events, looks harmless
event by event: only a scan of the session sees the key. Here every key type (RSA PKCS#1 and PKCS#8, EC SEC1
and PKCS#8, Ed25519 PKCS#8 and OpenSSH, encrypted PKCS#8, PGP) is split in every shape a user pastes one in
(the body on one line, a line per event, the armor glued to chat, a chat turn in the middle, no END, no armor at
all), plus passwords given as the answer to a question, with chat before and after. Each session goes into event
memory, chunk memory and fact memory (with an extractor that quotes every event it is given, so anything that
reaches extraction is stored); then the stored units and fact rows are searched for 24-character pieces of each
body (`secret_fragments_stored`, must be 0), the reports must count the key's events as `secret`
(`split_events_not_counted`, must be 0), and sessions of ordinary chat must lose nothing (`ordinary_events_dropped`).

The keys are synthetic: random bytes in the real DER / OpenSSH structures, built here (never a real key)."""

from __future__ import annotations

import base64
import os
import textwrap
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import memlab
from memlab.lab.reliability.probes.family import Family
from memlab.storage import unit_housekeeping as housekeeping

T0 = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
BEFORE = "We moved the staging cluster to Frankfurt last week and the deploys got faster."
AFTER = "Thanks, the pipeline picked the new key up and the nightly job is green again."
ORDINARY = [
    ["what's the password policy for the new VPN?", "12 characters, a digit and a symbol, rotated yearly",
     "which key do I press to open the palette?", "Control Shift P, or F1 on Linux"],
    ["the release is v2.14.0-rc.1, commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
     "sha256 of the tarball is 3b4c8f0e5a1d2c6b7e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5",
     f"trace {uuid.uuid4().hex} for request {uuid.uuid4()} took 812 ms",
     "the logo is data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"
     "60e6kgAAAABJRU5ErkJggg=="],
    ["ich habe mein Passwort vergessen", "kein Problem, der Link zum Zurücksetzen kommt per Mail",
     "le mot de passe doit contenir 12 caractères", "d'accord, je le change ce soir"],
]  # fmt: skip


# ------------------------------------------------------------------------------------------ synthetic key bodies


def _der(tag: int, content: bytes) -> bytes:
    n = len(content)
    if n < 0x80:
        return bytes([tag, n]) + content
    size = (n.bit_length() + 7) // 8
    return bytes([tag, 0x80 | size]) + n.to_bytes(size, "big") + content


def _int(n_bytes: int) -> bytes:
    return _der(0x02, b"\x00" + bytes([0x80 | os.urandom(1)[0]]) + os.urandom(n_bytes - 1))


def _seq(*parts: bytes) -> bytes:
    return _der(0x30, b"".join(parts))


_V0, _V1 = _der(0x02, b"\x00"), _der(0x02, b"\x01")
_RSA_OID = _seq(_der(0x06, bytes.fromhex("2a864886f70d010101")), b"\x05\x00")
_EC_OID = _seq(_der(0x06, bytes.fromhex("2a8648ce3d0201")), _der(0x06, bytes.fromhex("2a8648ce3d030107")))
_ED_OID = _seq(_der(0x06, bytes.fromhex("2b6570")))
_PBES2 = _der(0x06, bytes.fromhex("2a864886f70d01050d"))


def _rsa_pkcs1() -> bytes:
    return _seq(_V0, _int(257), _der(0x02, b"\x01\x00\x01"), _int(256), *(_int(129) for _ in range(5)))


def _ec_sec1() -> bytes:
    return _seq(_V1, _der(0x04, os.urandom(32)), _der(0xA0, _der(0x06, bytes.fromhex("2a8648ce3d030107"))),
                _der(0xA1, _der(0x03, b"\x00\x04" + os.urandom(64))))  # fmt: skip


def _openssh() -> bytes:
    def s(b: bytes) -> bytes:
        return len(b).to_bytes(4, "big") + b

    pub = s(b"ssh-ed25519") + s(os.urandom(32))
    private = os.urandom(8) + pub + s(os.urandom(64)) + s(b"probe@memlab") + b"\x01\x02\x03"
    return b"openssh-key-v1\x00" + s(b"none") + s(b"none") + s(b"") + (1).to_bytes(4, "big") + s(pub) + s(private)


KEYS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "rsa pkcs1": ("RSA PRIVATE KEY", _rsa_pkcs1),
    "rsa pkcs8": ("PRIVATE KEY", lambda: _seq(_V0, _RSA_OID, _der(0x04, _rsa_pkcs1()))),
    "ec sec1": ("EC PRIVATE KEY", _ec_sec1),
    "ec pkcs8": ("PRIVATE KEY", lambda: _seq(_V0, _EC_OID, _der(0x04, _ec_sec1()))),
    "ed25519 pkcs8": ("PRIVATE KEY", lambda: _seq(_V0, _ED_OID, _der(0x04, _der(0x04, os.urandom(32))))),
    "ed25519 openssh": ("OPENSSH PRIVATE KEY", _openssh),
    "encrypted pkcs8": ("ENCRYPTED PRIVATE KEY",
                        lambda: _seq(_seq(_PBES2, _seq(os.urandom(60))), _der(0x04, os.urandom(1200)))),
    "pgp": ("PGP PRIVATE KEY BLOCK", lambda: bytes([0x95, 0x01, 0xD8, 0x04]) + os.urandom(470)),
}  # fmt: skip


def pem_lines(kind: str) -> list[str]:
    """A fresh synthetic key of `kind` as PEM lines (BEGIN, body lines of 64, END)."""
    label, make = KEYS[kind]
    body = textwrap.wrap(base64.b64encode(make()).decode(), 64)
    if kind == "pgp":
        body = ["Version: memlab probe", "", *body, "=" + base64.b64encode(os.urandom(3)).decode()]
    return [f"-----BEGIN {label}-----", *body, f"-----END {label}-----"]


def split_shapes(lines: list[str]) -> dict[str, list[str]]:
    """Ways one key is pasted over several turns: the key's texts, and which of them are chat (kept)."""
    begin, body, end = lines[0], lines[1:-1], lines[-1]
    bare = [line for line in body if line and ":" not in line]  # no armor: no armor headers either
    shapes = {
        "begin | body on one line | end": [begin, "".join(body), end],
        "begin | a line per event | end": [begin, *(line for line in body if line), end],
        "begin and first line | rest on one line | end": [f"{begin}\n{body[0]}", "".join(body[1:]), end],
        "chat and begin | rest | end and chat": [f"here it is:\n{begin}", "\n".join(body), f"{end}\nthat's all"],
        "begin | chat | rest | end": [begin, "hang on, sending the rest of it now", "".join(body), end],
        "begin | body, never ended": [begin, "\n".join(body)],
        "body | end": ["".join(body), end],
        "a line per event, no armor": bare,
    }
    return {name: texts for name, texts in shapes.items() if all(t.strip() for t in texts)}


ANSWERS = [
    ("what's the wifi password at the office?", "Tr0ub4dor&3x"),
    ("Wie lautet das Kennwort für den Drucker?", "Sommer2024!"),
    ("¿cuál es la contraseña del router?", "Girasol_77x"),
    ("what's the api key for the staging tenant?", "q8Xv2LmN4pR7sT1uW9yZ3bC6dF0gH5jK"),
]


def _fragments(body: Sequence[str]) -> list[str]:
    """24-character pieces of a key's body (base64 characters only), to search stored rows for."""
    text = "".join(line for line in body if line and ":" not in line)
    return [text[i : i + 24] for i in range(0, len(text) - 23, 24)]


class _Quoting:
    """A fact extractor that turns every event it is given into a candidate quoting the event: whatever reaches
    extraction is stored, so the byte search of fact rows sees any event the filter let through."""

    name = "probe-quoting"

    def extract(self, events, *, session_id, registry, current_keys=()):
        return [memlab.facts.Candidate("user", "owned_product", (e.text or "")[:48].strip() or "x",
                                       (e.text or "")[:400], event_id=e.id, event_time=e.timestamp,
                                       session_id=session_id)
                for e in events]  # fmt: skip


def _session(app: str, user: str, texts: Sequence[str]) -> memlab.Session:
    authors = ("user", "model")
    events = [memlab.Event(f"e{i}", authors[i % 2], T0 + timedelta(minutes=i), t) for i, t in enumerate(texts)]
    return memlab.Session(app, user, "s1", events)


def _stored(store: memlab.Store, app: str, user: str) -> str:
    with store.connection() as conn:
        rows = [(body + "\n" + (rendered or ""),) for body, rendered, _ in housekeeping.user_rows(conn, app, user)]
        for table in ("semantic_fact", "semantic_fact_observation"):
            rows += conn.execute(f"SELECT t::text FROM {table} t WHERE app_name = %s AND user_id = %s",
                                 [app, user]).fetchall()  # fmt: skip
    return "\n".join(r[0] for r in rows)


def split_secrets_family(
    store: memlab.Store, embedder: memlab.Embedder, workdir: Path, *, every: bool = False, limit: int | None = None
) -> Family:
    """Ingest every key type in half the split shapes (all of them with `every`), and passwords given as
    answers, into event, chunk and fact memory; search what was stored for the secrets; check ordinary chat
    loses nothing. `limit`: only the first that many split keys (a quick look, for a check that must see a hole)."""
    zero = ["secret_fragments_stored", "split_events_not_counted", "ordinary_events_dropped"]
    figures = {"key_types": len(KEYS), "shapes": 0, "sessions": 0, "ingests": 0, "fragments_searched": 0}
    family = Family("split_secrets", {**figures, **dict.fromkeys(zero, 0)}, must_be_zero=zero)
    app = f"split-secrets-{uuid.uuid4().hex[:8]}"
    memories: dict[str, Callable[[memlab.Session], object]] = {
        "event": memlab.EventMemory(store, embedder).add_session,
        "chunk": memlab.EventMemory(store, embedder, "chunk", chunk_size=3, chunk_overlap=1).add_session,
        "facts": memlab.FactMemory(store, embedder, extractor=_Quoting()).add_session,
    }
    cases: list[tuple[str, list[str], list[str], int]] = []  # (name, texts, fragments, secret events)
    shape_names: set[str] = set()
    for k, kind in enumerate(KEYS):
        lines = pem_lines(kind)
        for s, (shape, texts) in enumerate(split_shapes(lines).items()):
            if (k + s) % 2 and not every:
                continue  # half the pairs, so each shape meets half the key types (all of them with every=True)
            shape_names.add(shape)
            chat = sum(t.startswith("hang on") for t in texts)
            cases.append((f"{kind}: {shape}", [BEFORE, *texts, AFTER], _fragments(lines[1:-1]), len(texts) - chat))
    cases = cases[:limit]
    family.figures["shapes"] = len(shape_names)
    for question, answer in ANSWERS:
        cases.append((f"answer to {question!r}", [BEFORE, question, answer, AFTER], [answer], 1))
    for n, (name, texts, fragments, secret_events) in enumerate(cases):
        user = f"u{n}"
        family.add("sessions")
        for memory, add in memories.items():
            report = add(_session(app, user, texts))
            family.add("ingests")
            skipped = report.skipped  # type: ignore[attr-defined]
            counted = skipped.get("secret", 0) + skipped.get("too_short", 0)  # a body's last line may be short
            if counted < secret_events:
                family.problem("split_events_not_counted", f"{memory} / {name}: {counted} of {secret_events}")
        stored = _stored(store, app, user)
        family.add("fragments_searched", len(fragments))
        leaked = [f for f in fragments if f in stored]
        if leaked:
            family.problem("secret_fragments_stored", f"{name}: {len(leaked)} of {len(fragments)}, e.g. {leaked[0]}")
    for n, texts in enumerate(ORDINARY):
        for memory, add in memories.items():
            report = add(_session(app, f"ordinary{n}", texts))
            family.add("ingests")
            if report.skipped.get("secret", 0):  # type: ignore[attr-defined]
                family.problem("ordinary_events_dropped", f"{memory} / ordinary session {n}: {report.skipped}")  # type: ignore[attr-defined]
    return family
