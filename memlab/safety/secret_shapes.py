"""What a credential looks like inside a value, and how it is named in languages other than English: the parts
of memlab's secret detectors (memlab.safety.secrets) that decode or read words rather than match a format.

- A base64 run is decoded and read: a DER private key (PKCS#1 RSA, SEC1 EC, PKCS#8 plain or encrypted, DSA) or an
  OpenSSH private key is recognised by its structure, whatever its armor lines say or lack; `user:password` in
  base64 is an HTTP Basic credential. Public keys, certificates and ordinary base64 have another structure.
- Password words, copulas and prepositions of the common European languages (and a few others), so "das Passwort
  lautet ...", "mi contraseña es ...", "X est mon mot de passe" are read like their English forms.
- A passphrase of plain words ("correct horse battery staple") is told from a sentence about a password by its
  lack of grammar: no function word, no participle or adverb, and nothing after it but the end of the clause.

Nothing here imports the rest of memlab."""

from __future__ import annotations

import base64
import binascii
import re

I = re.IGNORECASE  # noqa: E741

# ----------------------------------------------------------------------------------------- decoded base64 values

_OPENSSH_MAGIC = b"openssh-key-v1\x00"
_PBE_OIDS = (b"\x2a\x86\x48\x86\xf7\x0d\x01\x05", b"\x2a\x86\x48\x86\xf7\x0d\x01\x0c")  # PKCS#5 and PKCS#12 PBE


def _der(data: bytes, at: int) -> tuple[int, int, int] | None:
    """(tag, content start, content length) of the DER element at `at`; None when the header is not DER."""
    if at + 2 > len(data):
        return None
    tag, first = data[at], data[at + 1]
    if first < 0x80:
        return tag, at + 2, first
    n = first & 0x7F
    if not 1 <= n <= 3 or at + 2 + n > len(data):
        return None
    length = int.from_bytes(data[at + 2 : at + 2 + n], "big")
    if length < 0x80 or (n > 1 and length < 1 << (8 * (n - 1))):
        return None  # not the shortest form: DER would have used fewer bytes
    return tag, at + 2 + n, length


def private_key_der(data: bytes) -> bool:
    """Whether `data` starts like a private key: its opening bytes are enough (a first line of a PEM body holds
    them), so a truncated body counts. Public keys (SEQUENCE {algorithm, BIT STRING}) and certificates
    (SEQUENCE {SEQUENCE {[0] version ...}}) do not match."""
    if data.startswith(_OPENSSH_MAGIC):
        return True
    outer = _der(data, 0)
    if outer is None or outer[0] != 0x30 or outer[2] < 32:
        return False
    first = _der(data, outer[1])
    if first is None:
        return False
    tag, start, length = first
    if tag == 0x02 and length == 1 and start + 1 < len(data):  # version 0 or 1, then the key's fields
        version, after = data[start], data[start + 1]
        if version == 0:
            return after in (0x02, 0x30)  # RSA/DSA integers (PKCS#1), or PKCS#8's algorithm SEQUENCE
        return version == 1 and after in (0x04, 0x30)  # SEC1 EC private key OCTET STRING, or PKCS#8 v2
    if tag == 0x30:  # EncryptedPrivateKeyInfo: SEQUENCE {SEQUENCE {OID of a password-based scheme, ...}, ...}
        oid = _der(data, start)
        return oid is not None and oid[0] == 0x06 and data[oid[1] : oid[1] + 8] in _PBE_OIDS
    return False


def b64_bytes(run: str, limit: int | None = None) -> bytes | None:
    """The bytes of a base64 run (padding optional; standard or url-safe alphabet), of its first `limit` chars
    rounded down to a whole quantum; None when it does not decode."""
    run = run.rstrip("=")
    if limit is not None:
        run = run[:limit]
    run = run[: len(run) - len(run) % 4] if limit is not None else run + "=" * (-len(run) % 4)
    if len(run) % 4 == 1 or not run:
        return None
    try:
        return base64.b64decode(run.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return None


def declared_size(data: bytes) -> int | None:
    """How many bytes a private key's encoding says it has, from its opening bytes (a DER key's outer length, an
    OpenSSH key's length-prefixed fields); None when `data` is neither or too short to tell. It tells a body's
    short last line ("ksscosza") from a word typed after the body: only the first completes the declared size."""
    if data.startswith(_OPENSSH_MAGIC):
        at = len(_OPENSSH_MAGIC)
        for field in range(6):  # cipher, kdf, kdf options, key count, public key, private part
            if at + 4 > len(data):
                return None
            size = int.from_bytes(data[at : at + 4], "big")
            at += 4 if field == 3 else 4 + size
            if field == 3 and size != 1:
                return None  # files with several keys are not read here
        return at
    outer = _der(data, 0)
    if outer is None or outer[0] != 0x30 or not private_key_der(data):
        return None
    return outer[1] + outer[2]


def key_body(run: str) -> bool:
    """A base64 run that starts (at one of its first few characters: a broken armor line may be glued to it)
    with a private key's encoding."""
    for at in range(min(9, max(len(run) - 39, 1))):
        data = b64_bytes(run[at:], 64)
        if data and private_key_der(data):
            return True
    return False


_USER = re.compile(r"[\w.@+~-]{1,64}")
_HEX = re.compile(r"[0-9a-fA-F]+")


def basic_credential(run: str) -> bool:
    """A base64 run that decodes to `user:password` (printable, one line, not a URL): an HTTP Basic credential."""
    if len(run) > 400 or _HEX.fullmatch(run.rstrip("=")):
        return False  # hex is the alphabet of digests and ids (git SHAs, trace ids), not of encoded credentials
    data = b64_bytes(run)
    if data is None:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    user, colon, password = text.partition(":")
    return (
        bool(colon) and text.isprintable() and not any(c.isspace() for c in text)
        and _USER.fullmatch(user) is not None and len(password) >= 3 and not password.startswith("//")
    )  # fmt: skip


# ------------------------------------------------------------------------------------------- words of languages

# Words for "password" (and "passphrase", "PIN code") in languages other than English; every alternative holds
# one of FOREIGN_PW_NEEDS once case-folded (the gate of the detectors that use it).
FOREIGN_PW_WORD = (
    r"(?:passwort|kennwort|zugangspasswort|mot[ \t]+de[ \t]+passe|mdp|contrase(?:ñ|n)a|clave(?:[ \t]+de[ \t]+acceso)?"
    r"|senha|palavra-passe|wachtwoord|l(?:ö|o)senord|adgangskode|kodeord|passord|salasana|has(?:ł|l)[oa]|hesl[oa]"
    r"|parol(?:a|ă|e)|jelsz(?:ó|o|ava)|пароль|пароля|κωδικ(?:ός|όσ|ος|οσ)|パスワード|密码|密碼|비밀번호)"
)
FOREIGN_PW_NEEDS = ("pass", "kennwort", "mdp", "contrase", "clave", "senha", "wachtwoord", "senord", "adgangskode",
                    "kodeord", "salasana", "has", "hesl", "parol", "jelsz", "пароль", "пароля", "κωδικ", "パスワード",
                    "密码", "密碼", "비밀번호")  # fmt: skip
# "is" in those languages (and a colon or equals sign).
FOREIGN_IS = r"(?:ist|lautet|est|es|era|sería|è|e|é|is|är|er|on|jest|to|je|была?|был|είναι)"
FOREIGN_IS_STRICT = r"(?:ist|lautet|est|es|era|è|é|är|er|jest|je|είναι)"  # none of them an English word
# "for / of / to" and articles, for "das Passwort für den Server ist ...", "le mot de passe du routeur est ...".
FOREIGN_FOR = (
    r"(?:für|fürs|zum|zur|von|vom|des|du|de|del|della|dello|dei|degli|do|da|dos|das|voor|van|till|för|på|til|for"
    r"|dla|do|para|per|pour|pro|na|к|для|от)"
)
FOREIGN_THE = r"(?:den|dem|der|die|das|le|la|les|l'|el|los|las|il|lo|o|a|os|as|de|het|min|mitt|mein|meine|mon|ma|mi)"

# Words a passphrase of plain words does not hold: the function words, and the words sentences about passwords
# use (short, wrong, expired, stored, same ...), in the languages above.
_GRAMMAR_WORDS = """
    a an the is are be been being was were am to too for of on in at by with from into onto and or but nor not no
    so as it its this that these those there here my your our their his her me you we they he she i us them
    same still now just very really also only always never ever again already yet more most less least much many
    some any all every each other another such than then when where which who whom whose what why how if else
    set reset stored saved written required needed wrong invalid incorrect expired weak strong short long
    secure safe unsafe same different new old easy hard simple complex temporary default case sensitive blank empty
    see ask use check find look try type enter change rotate share send give know remember forget forgot lost
    something nothing anything everything someone somewhere anywhere nowhere like about over under before after
    one two three four five six seven eight nine ten twelve characters character letters digits numbers symbols
    fine okay ok good bad same working broken does doesn don didn won isn wasn can could should would will must
    der die das den dem des ein eine einen einem einer nicht ist sind und oder aber zu zum zur mit für von vom im
    am auf noch schon sehr jetzt immer wieder falsch abgelaufen kurz lang sicher schwach stark gleiche neu alt
    le la les un une des du de et ou mais pas ne est sont trop très toujours encore pour avec dans sur faux court
    sûr faible fort expiré expirée même nouveau vieux incorrecte
    el los las unos unas del y o pero es son muy demasiado con en por ya todavía incorrecta débil corta larga
    segura caducada mismo misma nueva viejo
    il lo gli i una di della e ma non è sono troppo molto per su ancora sbagliata scaduta corta debole stessa
    os um uma do da ou mas não é são muito em ainda errada fraca expirou curta mesma nova
    het een van en maar niet zijn te erg voor met op nog al fout kort zwak sterk verlopen zelfde nieuw oud
"""
_GRAMMAR = frozenset(_GRAMMAR_WORDS.split())


def word_passphrase(phrase: str) -> bool:
    """3 to 8 plain words with no grammar in them: not a clause about a password ("too short for the new
    policy", "stored in the vault"), but a diceware-style passphrase."""
    words = phrase.split()
    if not 3 <= len(words) <= 8 or len({w.lower() for w in words}) < len(words) - 1:
        return False
    for word in words:
        low = word.lower()
        if low in _GRAMMAR or len(low) < 3:
            return False
        if len(low) > 4 and low.endswith(("ed", "ing", "ly")):  # participles and adverbs: English grammar
            return False
    return True
