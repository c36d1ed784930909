"""A key body's short last line can be a plain-looking word ("ksscosza"): split over events, it is still part of
the key when it completes the size the key's opening bytes declare, or sits between the key's armor lines. A word
typed after a complete body is chat and is kept. Pure: no database."""

from __future__ import annotations

import string
import textwrap

import pytest
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from memlab.safety.split_secrets import split_secret_events

CHAT = "We moved the staging cluster to Frankfurt last week, and the deploys are faster now."
KEYS = {
    "ec p256 pkcs8": (lambda: ec.generate_private_key(ec.SECP256R1()), ser.PrivateFormat.PKCS8),
    "ec p384 sec1": (lambda: ec.generate_private_key(ec.SECP384R1()), ser.PrivateFormat.TraditionalOpenSSL),
    "ec p521 pkcs8": (lambda: ec.generate_private_key(ec.SECP521R1()), ser.PrivateFormat.PKCS8),
    "rsa 1024 pkcs1": (lambda: rsa.generate_private_key(65537, 1024), ser.PrivateFormat.TraditionalOpenSSL),
    "rsa 2048 pkcs8": (lambda: rsa.generate_private_key(65537, 2048), ser.PrivateFormat.PKCS8),
    "ed25519 openssh": (ed25519.Ed25519PrivateKey.generate, ser.PrivateFormat.OpenSSH),
    "ec p256 openssh": (lambda: ec.generate_private_key(ec.SECP256R1()), ser.PrivateFormat.OpenSSH),
}


def _lines(kind: str) -> list[str]:
    """The key's PEM lines, its body wrapped at the width (40 to 76, as tools do) that leaves the shortest last line,
    that line then made of lower-case letters (its length kept), as a random key's last line sometimes is."""
    make, fmt = KEYS[kind]
    lines = make().private_bytes(ser.Encoding.PEM, fmt, ser.NoEncryption()).decode().strip().splitlines()
    body = "".join(lines[1:-1]).rstrip("=")
    width = min(range(40, 77), key=lambda w: (len(body) % w < 2, len(body) % w))
    wrapped = textwrap.wrap(body, width)
    assert len(wrapped[-1]) < 16, (kind, width, len(body))
    wrapped[-1] = (string.ascii_lowercase * 2)[: len(wrapped[-1])]
    return [lines[0], *wrapped, lines[-1]]


@pytest.mark.parametrize("kind", KEYS)
@pytest.mark.parametrize("armored", [True, False], ids=["armored", "no armor"])
def test_a_plain_word_last_line_is_part_of_the_key(kind, armored):
    lines = _lines(kind)
    key = lines if armored else lines[1:-1]
    texts = [CHAT, *key, CHAT]
    assert split_secret_events(texts) == set(range(1, len(key) + 1)), kind


@pytest.mark.parametrize("kind", KEYS)
@pytest.mark.parametrize("word", ["thanks", "done", "okay", "Received", "ok"])
def test_a_word_after_a_complete_body_is_kept(kind, word):
    body = _lines(kind)[1:-1]
    texts = [CHAT, *body, word]
    assert split_secret_events(texts) == set(range(1, len(body) + 1)), (kind, word)
    never_ended = [CHAT, _lines(kind)[0], *body, word]
    assert split_secret_events(never_ended) == set(range(1, len(body) + 2)), (kind, word)


def test_a_word_between_the_armor_lines_is_part_of_the_key():
    """A PGP block (no size in its first bytes): its lower-case last line is known by the END line after it."""
    lines = ["-----BEGIN PGP PRIVATE KEY BLOCK-----", "", "lQOYBF" + "x7Yb3kQ9" * 7, "aBc+dEf" * 9, "hsdkwe",
             "=Ab3x", "-----END PGP PRIVATE KEY BLOCK-----"]  # fmt: skip
    texts = [CHAT, *[ln for ln in lines if ln], CHAT]
    assert split_secret_events(texts) == set(range(1, len(texts) - 1))
