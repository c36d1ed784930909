"""Credential kinds easy to miss, by kind and language, and their ordinary look-alikes. The examples here are
written apart from fixtures/secrets (whose held-out split scores the filter)."""

from __future__ import annotations

import base64
import random
import uuid

import pytest
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa

from memlab import find_secrets
from memlab.safety import secret_shapes

_RNG = random.Random(2203)


def _uuid4() -> uuid.UUID:
    """A random-looking version-4 UUID, the same on every collection: test ids hold it, and pytest-xdist's workers
    must collect identical ids."""
    return uuid.UUID(int=_RNG.getrandbits(128), version=4)


def _body(key, fmt=ser.PrivateFormat.PKCS8, encryption=None) -> str:
    pem = key.private_bytes(ser.Encoding.PEM, fmt, encryption or ser.NoEncryption()).decode()
    return "".join(line for line in pem.splitlines() if not line.startswith("-----"))


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


PROSE_PASSWORDS = [
    "unser Kennwort ist Hafenkran#19, bitte nicht weitergeben",
    "das Passwort vom Drucker lautet Toner2023!",
    "le mot de passe de la base est Bouquet_4711",
    "mon mdp: Chaussette#88",
    "mi contraseña para el portal es Naranja_2026",
    "la clave del router es Guitarra44!",
    "la password del server è Polenta_2021",
    "a minha senha é Saudade#2020",
    "mijn wachtwoord voor de bank is Molen1987!",
    "Brezel#2024 ist mein Passwort",
    "moje hasło: Kielbasa#2022",
    "salasana on Sauna2024!",
]
PASSPHRASES = [
    "my password is lemon rocket velvet canyon",
    "the new passphrase: copper whale autumn bridge",
    "mein Passwort ist Anker Tulpe Geige Wolke",
    "le mot de passe est lapin orange fusée montagne",
    "mi contraseña es barco nube pájaro limón.",
]
ORDINARY = [
    f"the request {_uuid4()} was retried with idempotency key {_uuid4()}",
    f"TRACE_ID={_uuid4()} CACHE_KEY={_uuid4()}",
    "ich habe mein Passwort vergessen",
    "le mot de passe doit contenir 12 caractères",
    "la contraseña es demasiado corta",
    "il mio password è scaduto ieri",
    "het wachtwoord is verlopen, vraag een nieuwe aan",
    "my password is too short for the new policy",
    "the password is written on a sticky note somewhere",
    "the passphrase for the disk is in the team vault",
    "base64 of hello world is aGVsbG8gd29ybGQ=, of test dGVzdA==",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAgAAAAIAQMAAAD+wSzIAAAABlBMVEX///+/v7+jQ3Y5AAAADklEQVQI12P4AIX8EAgALgAD/aNpbtEAAAAASUVORK5CYII",
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "git 1f7a3c9e2b8d4f6a0c5e7b9d1f3a5c7e9b0d2f4a fixed it",
    "v2.31.0-rc.2 ships Friday; span 00f067aa0ba902b7 of trace 4bf92f3577b34da6a3ce929d0e0e4736",
]


@pytest.mark.parametrize("text", PROSE_PASSWORDS)
def test_a_password_stated_in_another_language_is_found(text):
    assert find_secrets(text), text


@pytest.mark.parametrize("text", PASSPHRASES)
def test_a_passphrase_of_plain_words_is_found(text):
    assert find_secrets(text), text


@pytest.mark.parametrize(
    "text",
    [
        f"Authorization: BASIC {_basic('backup', 'Giraffe#88')}",
        f"the header value is Basic {_basic('ops', 'x9Lk2mQ')}",
        f"creds={_basic('svc_deploy', 'Otter-2025')}",
        _basic("admin", "Marmelade77"),
    ],
)
def test_basic_credentials_in_base64_are_found(text):
    assert find_secrets(text), text


@pytest.mark.parametrize(
    "text",
    [
        f"HEROKU_API_KEY={_uuid4()}",
        f"export MYAPP_SECRET_TOKEN='{_uuid4()}'",
        f'{{"licenseKey": "{_uuid4()}"}}'.replace("licenseKey", "api_key"),
        f"the pagerduty api key is {_uuid4()}",
        f"ROLLBAR_ACCESS_TOKEN: {_uuid4()}",
    ],
)
def test_a_uuid_named_a_key_or_token_is_found(text):
    assert find_secrets(text), text


@pytest.fixture(scope="module")
def key_bodies() -> dict[str, str]:
    return {
        "ec sec1": _body(ec.generate_private_key(ec.SECP256R1()), ser.PrivateFormat.TraditionalOpenSSL),
        "ec pkcs8": _body(ec.generate_private_key(ec.SECP521R1())),
        "rsa pkcs1": _body(rsa.generate_private_key(65537, 1024), ser.PrivateFormat.TraditionalOpenSSL),
        "dsa pkcs8": _body(dsa.generate_private_key(1024)),
        "ed25519 pkcs8": _body(ed25519.Ed25519PrivateKey.generate()),
        "ed25519 openssh": _body(ed25519.Ed25519PrivateKey.generate(), ser.PrivateFormat.OpenSSH),
        "encrypted pkcs8": _body(ec.generate_private_key(ec.SECP256R1()), ser.PrivateFormat.PKCS8,
                                 ser.BestAvailableEncryption(b"correct horse")),
    }  # fmt: skip


@pytest.mark.parametrize("shape", ["{b}", "key: {b}", "-----BEGIN PRIVATE KEY {b}", "BEGIN EC PRIVATE KEY{b}END"])
def test_a_one_line_private_key_body_is_found_with_or_without_armor(key_bodies, shape):
    for name, body in key_bodies.items():
        assert find_secrets(shape.format(b=body)), (name, shape)
        assert find_secrets(shape.format(b=body[:64])), ("first line only", name, shape)


def test_public_keys_and_certificates_are_not_private_keys():
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    der = key.public_bytes(ser.Encoding.DER, ser.PublicFormat.SubjectPublicKeyInfo)
    assert not secret_shapes.private_key_der(der)
    assert not find_secrets(f"the public key is {base64.b64encode(der).decode()}")
    ssh = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH)
    assert not find_secrets(f"add {ssh.decode()} to authorized_keys")


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_look_alikes_are_kept(text):
    assert find_secrets(text) == [], text


def test_hex_digests_and_short_shas_are_never_basic_credentials():
    """Hex is the alphabet of digests and ids; some hex strings happen to decode as base64 to `user:pass`
    (d3c604dfd2 decodes to 'ww:Ӈ_w'). No run of hex digits is a Basic credential, whatever it decodes to."""
    assert find_secrets("reverted d3c604dfd2 on main") == []
    assert not secret_shapes.basic_credential("d3c604dfd2")
    flagged = [h for h in (f"{n:010x}" for n in range(0xD3C6040000, 0xD3C6040000 + 20_000))
               if secret_shapes.basic_credential(h)]
    assert flagged == []
