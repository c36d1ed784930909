"""The checks a secret detector's match must pass before it counts (memlab.safety.secrets): checksums (Luhn,
IBAN mod 97), the shape of a typed password, passphrase or opaque key, placeholders and ids that are not
credentials, and the BIP39 words of a wallet's recovery phrase. Each takes the detector's match and answers
whether it is a credential; the detectors themselves, their gates and `find_secrets` are in secrets.py."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import memlab.safety.secret_shapes as shapes

I = re.IGNORECASE  # noqa: E741


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum of a card number (digits only)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card_network_ok(d: str) -> bool:
    """Issuer prefix and length of the common card networks (Visa, Mastercard, Amex, Discover, JCB, Diners,
    UnionPay, Maestro), so a Luhn-valid order number of another shape is not taken for a card."""
    n = len(d)
    if d[0] == "4":
        return n in (13, 16, 19)
    if 51 <= int(d[:2]) <= 55 or 2221 <= int(d[:4]) <= 2720:
        return n == 16
    if d[:2] in ("34", "37"):
        return n == 15
    if d[:4] == "6011" or d[:2] == "65" or 644 <= int(d[:3]) <= 649 or d[:2] == "62":
        return 16 <= n <= 19
    if 3528 <= int(d[:4]) <= 3589:
        return 16 <= n <= 19
    if d[:2] in ("36", "38", "39") or 300 <= int(d[:3]) <= 305:
        return 14 <= n <= 19
    if d[:2] in ("50", "56", "57", "58", "67", "63"):
        return 12 <= n <= 19
    return False


def card_match(match: re.Match) -> bool:
    """Some run of the matched digit groups is a card number ("4556380274755558 08" holds one, then an expiry)."""
    groups = re.split(r"[ -]", match.group(0))
    for i in range(len(groups)):
        for j in range(len(groups), i, -1):
            d = "".join(groups[i:j])
            if 13 <= len(d) <= 19 and len(set(d)) > 2 and _card_network_ok(d) and luhn_ok(d):
                return True
    return False


# IBAN length by country (ISO 13616 registry).
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "BY": 28,
    "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15,
    "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19,
    "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip


# Countries whose account number (BBAN) is digits only (ISO 13616 registry). Without this, one 16-character
# hex string in 25,000 starting with "be" (a commit, a digest) passed as a Belgian IBAN: mod 97 holds by chance
# one time in 97, and letters count as numbers in it.
_DIGIT_BBAN = frozenset({"AE", "AT", "BA", "BE", "CZ", "DE", "DK", "EE", "ES", "FI", "FO", "GL", "HR", "HU", "IL",
                         "IS", "LT", "ME", "NO", "PL", "PT", "RS", "SE", "SI", "SK", "TL", "TN", "XK"})  # fmt: skip


def iban_ok(iban: str) -> bool:
    """An IBAN (no spaces) of its country's length, digits where its country's account numbers have only
    digits, whose mod-97 check holds."""
    iban = iban.upper()
    if _IBAN_LENGTHS.get(iban[:2]) != len(iban) or not iban[2:4].isdigit() or not iban.isalnum():
        return False
    if iban[:2] in _DIGIT_BBAN and not iban[4:].isdigit():
        return False
    return int("".join(str(int(ch, 36)) for ch in iban[4:] + iban[:4])) % 97 == 1


def iban_match(match: re.Match) -> bool:
    compact = re.sub(r"\s", "", match.group(0)).upper()
    length = _IBAN_LENGTHS.get(compact[:2])
    return bool(length) and len(compact) >= length and iban_ok(compact[:length])


_SYMBOLS = set("!@#$%^&*+=?~;|<>(){}[]\\")
PLACEHOLDER = re.compile(
    r"^(?:[$<{%\[(]|\*+$|x{3,}$|\.{3}|(?:none|null|nil|true|false|undefined|required|optional|redacted|hidden"
    r"|password|passwd|pass|secret|token|api_?key|!(?:Ref|Sub|GetAtt|ImportValue|Join|Select|If))$)"
    r"|your[_-]?|example|placeholder",
    re.IGNORECASE,
)


def match_value(match: re.Match) -> str:
    return (match.groupdict().get("v") or match.group(0)).strip("\"'`,;.)*").removesuffix(":")


def _password_like(value: str) -> bool:
    """A typed password: 6 to 64 characters with a letter and a digit or symbol."""
    if not 6 <= len(value) <= 64 or PLACEHOLDER.search(value) or "://" in value or value.startswith("/"):
        return False
    has_alpha = any(c.isalpha() for c in value)
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(c in _SYMBOLS for c in value)
    return has_alpha and (has_digit or has_symbol) and not re.fullmatch(r"v?\d+(?:\.\d+)+[\w.-]*", value)


def _strong_password(value: str) -> bool:
    """A password with no keyword next to it: letters and digits, plus a symbol or mixed case."""
    if not _password_like(value) or not any(c.isdigit() for c in value):
        return False
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return mixed or any(c in _SYMBOLS for c in value)


def _passphrase(value: str) -> bool:
    """Three or more words joined by - _ . (purple-monkey-dishwasher), or a password-like value."""
    return bool(re.fullmatch(r"[A-Za-z]{3,}(?:[-_.][A-Za-z0-9]{2,}){2,}", value)) or _password_like(value)


def prose_password(match: re.Match) -> bool:
    """After "password is" / "pw:" any password-like value or passphrase; after a bare "password" or before
    "is my password", a value with letters and digits."""
    value = match_value(match)
    if (match.groupdict().get("sep") or "").strip():
        return _passphrase(value)
    return _password_like(value) and any(c.isdigit() for c in value)


def _token_like(value: str) -> bool:
    """An opaque key: 16+ characters of letters and digits (optionally _ - . + / = ~), not an id-shaped value."""
    if len(value) < 16 or PLACEHOLDER.search(value) or "://" in value or value.startswith("/"):
        return False
    if not (any(c.isalpha() for c in value) and any(c.isdigit() for c in value)):
        return False
    if re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", value):
        return False
    return not re.search(r"\.(?:com|org|net|io|internal|local|json|yaml|yml|py|txt|csv|parquet)\b", value)


def config_value(match: re.Match) -> bool:
    """The value of a PASSWORD= / SECRET= / TOKEN= / KEY= assignment, unless a placeholder or a reference."""
    value = match_value(match)
    if not value or PLACEHOLDER.search(value) or re.match(r"[\w.]+[(\[]", value):
        return False
    name = match.group("name")
    if not re.search(r"[_.A-Z]|=", name + match.group("op")) and not _password_like(value):
        return False  # "authentication: Requiring" is prose; "password: hunter2", DB_PASSWORD=postgres are not
    if re.search(r"PASS|PWD|SECRET|CREDENTIAL|AUTH", name.upper()):
        return len(value) >= 4 and (len(value) >= 8 or any(not c.isalpha() for c in value))
    if _UUID.fullmatch(value):  # a uuid is an id, unless the name says key or token (HEROKU_API_KEY=<uuid>)
        return _NOT_SECRET_NAME.search(name) is None
    return _token_like(value)


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Names holding KEY or TOKEN whose values are ids, not credentials.
_NOT_SECRET_NAME = re.compile(
    r"idempoten|cache|partition|sort_?key|primary|foreign|routing|object_?key|dedup|public|publishable|key_?ids?\b"
    r"|row_?key|shard|hash_?key|lookup|site_?key|key_?name|key_?path|key_?file|s3_?key|bucket|request|trace",
    I,
)
_ID_WORDS = re.compile(
    r"\b(?:ids?|uuid|identifier|idempoten\w*|request|trace|correlation|span|tenant|project|org(?:anization)?|account"
    r"|user|customer|order|device|instance|public|publishable|name)\b",
    I,
)


def env_secret(match: re.Match) -> bool:
    """NAME_KEY / NAME_TOKEN / NAME_SECRET = an opaque value or a uuid, unless the name is an id's."""
    value = match_value(match)
    if PLACEHOLDER.search(value) or _NOT_SECRET_NAME.search(match.group("name")):
        return False
    return bool(_UUID.fullmatch(value)) or _token_like(value)


def url_password(match: re.Match) -> bool:
    value = match.group("v")
    return bool(value) and not PLACEHOLDER.search(value) and value.lower() not in ("password", "pass", "pwd", "secret")


_LOGIN_WORDS = re.compile(
    r"\b(?:log ?in(?:to)?|logon|sign ?in|creds?|credentials|user(?:name)?|account|admin|root|console|portal|ssh"
    r"|identifiant|utilisateur|compte|connexion|(?:be)?nutzer(?:name)?|konto|anmeld\w*|zugang\w*|usuario|cuenta"
    r"|acceso|utente|accesso|credenziali|utilizador|usuário|conta|gebruiker(?:snaam)?|inloggen|inlog)\b",
    I,
)


def login_pair(match: re.Match) -> bool:
    """user / password or user:password, in a sentence about logging in."""
    near = match.string[max(0, match.start() - 80) : match.end()]
    if _DIGEST_NAME.match(match.group(0)):
        return False  # SHA256:<base64> is a key's fingerprint, public by design
    return _strong_password(match_value(match)) and bool(_LOGIN_WORDS.search(near))


_DIGEST_NAME = re.compile(r"(?:sha-?\d*|md5|blake2\w*|sm3)[ \t]*[:/]", I)


def context_token(match: re.Match) -> bool:
    """An opaque value next to a word naming a key; a uuid only when named a key or token directly ("my heroku api
    key is <uuid>"), not an id of something ("api key id: <uuid>", "the request token for trace <uuid>")."""
    value = match_value(match)
    if _PUBLIC.search(match.string[max(0, match.start() - 12) : match.start("v")]):
        return False  # a public key is shared on purpose
    if _UUID.fullmatch(value):
        return _ID_WORDS.search(match.string[match.start() : match.start("v")]) is None
    return _token_like(value)


_PUBLIC = re.compile(r"\b(?:public|pub|publishable)\b", I)


def key_body(match: re.Match) -> bool:
    return shapes.key_body(match.group(0))


def basic_base64(match: re.Match) -> bool:
    return shapes.basic_credential(match.group("v"))


def words_passphrase(match: re.Match) -> bool:
    return shapes.word_passphrase(match.group("v"))


def pem_body(match: re.Match) -> bool:
    body = match.group(0)
    return sum(c.isdigit() for c in body) >= 3 and any(c.isupper() for c in body) and any(c.islower() for c in body)


def not_placeholder(match: re.Match) -> bool:
    return not PLACEHOLDER.search(match_value(match))


@lru_cache(maxsize=1)
def _bip39_words() -> frozenset[str]:
    """The BIP39 English word list, from which wallet seed phrases are drawn (bip39_english.txt, from the
    MIT-licensed python-mnemonic 0.21, sha256 2f5eed53...dbda)."""
    return frozenset(Path(__file__).with_name("bip39_english.txt").read_text().split())


def seed_words(match: re.Match) -> bool:
    """12 or more BIP39 words in a row (most of them different) after a seed-phrase word: a wallet's recovery
    phrase, not a sentence about one."""
    words = _bip39_words()
    run: list[str] = []
    for word in re.findall(r"[A-Za-z]+", match.string[match.end() : match.end() + 300]):
        run = [*run, word] if word.lower() in words else []
        if len(run) >= 12 and len(set(run)) >= 10:
            return True
    return False
