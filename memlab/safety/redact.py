"""One redactor for every message memlab shows or writes: error messages, log records, the CLI's error line, and
(through `memlab.lab`) every file of a run folder.

Errors echo what they were given: a malformed DSN's parser quotes the password token, a server that refuses a key
may echo the Authorization header, a URL may carry user:password@. Each place hiding its own secret its own way
misses the others' secrets; here one function hides them all:

- secrets the caller knows (the DSN's password, the API key sent), in their raw, percent- and JSON-encoded forms;
- passwords in URLs (scheme://user:PASSWORD@host), in key=value and "key": "value" forms (password, pwd,
  token, api_key, secret ...), and in Authorization / Bearer / api-key headers;
- anything else the secret filter (`memlab.safety.secrets.find_secrets`, the same filter events pass through)
  flags: the smallest flagged part is replaced, and a text it cannot narrow down is withheld whole.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import logging
import re
import urllib.parse
from collections.abc import Iterable

import memlab.safety.secrets as secrets

HIDDEN = "***"
REDACTED = "[redacted]"
WITHHELD = "[withheld: looks like a credential]"
MIN_KNOWN = 4  # shorter "secrets" would blank ordinary letters; the patterns below still catch them in context
_MAX_NARROW_TOKENS = 400  # a flagged line with more words than this is withheld rather than narrowed word by word

# Values that are placeholders in memlab's own guidance ("postgresql://user:password@host"), not secrets.
_PLACEHOLDERS = frozenset({"", "password", "passwd", "secret", "token", "***", "xxx", "...", "<password>",
                           "<secret>", "<token>", "<key>", "key", "your-key", "[redacted]"})  # fmt: skip

_SCHEME_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^\s:/@?#\"'<>]*:)(?P<v>[^\s\"'<>]*)(?=@)", re.I)
_KEYS = (r"pgpassword|password|passwd|passphrase|pwd|secret|client[_-]?secret|(?:access|refresh|auth|id|api)[_-]?token"
         r"|token|api[_-]?key|apikey|x-api-key|private[_-]?key|sslpassword")  # fmt: skip
# key=value (libpq, query strings, env): the value up to a space, whatever it is. "key: value" also reads as
# prose ("passphrase: use four random words"), so an unquoted value there (up to the end of its clause, so a
# passphrase goes whole) is hidden when a word of it looks like a token (digits, symbols or inner capitals); a
# passphrase of plain words is the secret filter's to find.
_QUOTED = r"'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?"
_KEY_EQUALS = re.compile(rf"(?P<head>(?<![\w-])[\"']?(?:{_KEYS})[\"']?\s*=\s*)(?P<v>{_QUOTED}|[^\s\"'&,;}}\]]+)", re.I)
_KEY_COLON = re.compile(rf"(?P<head>(?<![\w-])[\"']?(?:{_KEYS})[\"']?[ \t]*:[ \t]*)"
                        rf"(?P<v>{_QUOTED}|(?P<bare>[^\s\"'&,;}}\]][^\n\"'&,;}}\]]*))", re.I)  # fmt: skip
_AUTH_HEADER = re.compile(
    r"(?P<head>(?<![\w-])[\"']?(?:proxy-)?authorization[\"']?\s*(?:=|:)\s*[\"']?(?:(?:bearer|basic|token|digest|"
    r"apikey|key|sso-key)\s+)?)(?P<v>[^\s\"',;}\]]+)", re.I)  # fmt: skip
# An id of the shapes data sets use: parts joined by - _ : / . where each part is digits, lowercase letters and
# digits (a word, hex), or capitals then digits (`D4`): `conv-47:D4:36`, `answer_4be1b6b4_2`, a uuid, `D1:3`. Mixed
# case or a symbol in the word (what makes a password strong: `root:hunter22!`) never reads as one; the id is a
# whole word, at most quoted, bracketed or followed by a full stop or comma. At most 16 characters a part and 8
# parts: a longer run is a key's shape, and the filter's own verdict on the id alone decides anyway.
_ID_PART = r"(?:[a-z0-9]{1,16}|[A-Z]{1,3}[0-9]{1,6})"
_DATASET_ID = re.compile(rf"(?<![^\s\"'`(\[{{<,;]){_ID_PART}(?:[-_:/.]{_ID_PART}){{1,7}}"
                         r"(?=[\"'`)\]}>]*[.,;:]?(?:\s|$))")  # a word of its own: quoted, bracketed or in a list
# The one kind of finding an id trips by what stands beside it: `user ... conv-47:D4:36']` reads as a login and a
# password. Every other kind names the secret in words ("recovery codes: 56109-7c823"), so an id there is one.
_BESIDE_IDS = frozenset({"Login and password"})
# An id set aside is a plain word for the filter meanwhile (letters only: no detector reads it as a password, and a
# pattern around it still sees a word there); fixed width, so one marker is never part of another.
_MARK = "memlabid"
_MARK_WIDTH = 4
_BEARER = re.compile(r"(?P<head>\b(?P<scheme>bearer|basic)\s+)(?P<v>[A-Za-z0-9._~+/=-]{8,})", re.I)


def dsn_secrets(dsn: str | None) -> list[str]:
    """The passwords a PostgreSQL DSN holds (URL userinfo, ?password=, password=...), read leniently so a DSN
    the parser refuses still gives them up: its error message may quote them."""
    if not dsn:
        return []
    found: list[str] = []
    text = str(dsn)
    scheme = re.match(r"\s*[a-z][a-z0-9+.-]*://", text, re.I)
    if scheme:
        rest = text[scheme.end():]
        authority = rest.rsplit("@", 1)[0] if "@" in rest else ""
        if ":" in authority:
            found.append(authority.split(":", 1)[1])
        found += [m.group(1) for m in re.finditer(r"[?&](?:ssl)?password=([^&#]*)", rest, re.I)]
    for m in re.finditer(r"(?<![\w-])(?:ssl)?password\s*=\s*('(?:[^'\\]|\\.)*'?|\S+)", text, re.I):
        value = m.group(1)
        found.append(value)
        if value.startswith("'"):
            found.append(value.strip("'").replace("\\'", "'").replace("\\\\", "\\"))
    return [v for v in dict.fromkeys(found) if v]


def _forms(secret: str) -> list[str]:
    """A secret as it may be echoed: raw, percent-decoded and -encoded, JSON- and repr-escaped; and each long run
    of letters and digits in it, which survives any other encoding."""
    forms = {secret, urllib.parse.unquote(secret), urllib.parse.quote(secret, safe=""), urllib.parse.quote(secret),
             urllib.parse.quote_plus(secret), json.dumps(secret)[1:-1], repr(secret)[1:-1],
             *re.findall(r"[^\W_]{6,}", secret)}  # fmt: skip
    return sorted((f for f in forms if len(f) >= MIN_KNOWN), key=len, reverse=True)


def hide_known(text: str, known: Iterable[str]) -> str:
    """`text` with the known secrets (in every form `_forms` lists) replaced; nothing else changed."""
    for secret in sorted({f for k in known if k for f in _forms(str(k))}, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text


def _credential_after_scheme(match: re.Match) -> bool:
    """`Bearer X` / `Basic X` in running text: X is a token (digits or symbols in it) or base64 of user:password,
    not a word ("Basic authentication", "Bearer tokens")."""
    value = match.group("v")
    if match.group("scheme").lower() == "basic":
        try:
            return ":" in base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return False
    return bool(re.search(r"[\d._~+/=-]", value)) or not value.isalpha() or value[1:] != value[1:].lower()


def _token_like(word: str) -> bool:
    return bool(re.search(r"\d|[^\w\s]", word)) or word[1:] != word[1:].lower() or len(word) >= 24


def _hide(match: re.Match) -> str:
    value = match.group("v")
    if match.groupdict().get("bare") and not any(_token_like(w.rstrip(".!?:")) for w in value.split()):
        return match.group(0)
    if "scheme" in match.groupdict() and match.group("scheme") and not _credential_after_scheme(match):
        return match.group(0)
    quote = value[0] if value[:1] and value[:1] in "'\"" else ""  # an empty value ("u:@host") has none
    bare = value.strip("'\"")
    if bare.lower() in _PLACEHOLDERS or bare.startswith(("<", "$", "%(")) or re.fullmatch(r"[*x•.#_-]+", bare, re.I):
        return match.group(0)
    return f"{match.group('head')}{quote}{HIDDEN}{quote if value.endswith(quote) and len(value) > 1 else ''}"


def redact_patterns(text: str, known: Iterable[str] = ()) -> str:
    """Known secrets and secrets in their usual wrappings (URL userinfo, key=value, auth headers) hidden; cheap
    (no secret filter)."""
    text = hide_known(text, known)
    for pattern in (_SCHEME_PASSWORD, _AUTH_HEADER, _BEARER, _KEY_EQUALS, _KEY_COLON):
        text = pattern.sub(_hide, text)
    return text


def _flagged(text: str) -> bool:
    return bool(secrets.find_secrets(text))


def _narrow(line: str) -> str:
    """`line` (flagged) with its credential replaced: first every word that is a credential by itself; then, for
    one that is a credential only in context ("my password is correct horse battery staple"), the shortest tail
    of the line whose removal clears it (a secret follows the word that introduces it); else WITHHELD."""
    parts = re.split(r"(\s+)", line)
    if len(parts) // 2 + 1 > _MAX_NARROW_TOKENS:
        return WITHHELD
    for i in range(0, len(parts), 2):
        if parts[i] and _flagged(parts[i]):
            parts[i] = REDACTED
    if not _flagged("".join(parts)):
        return "".join(parts)
    for i in range(len(parts) - 1 - (len(parts) - 1) % 2, 0, -2):
        head = "".join(parts[:i])
        if parts[i] and not _flagged(head):
            return f"{head}{REDACTED}"
    return WITHHELD


def _value_spans(text: str) -> list[tuple[int, int]]:
    """Where memlab's own detectors see the credential itself (their `v` group: the password after "my password
    is", the words of a passphrase), so exactly that is replaced. The detectors are the secret filter's
    internals: if their layout changes this finds nothing and word-by-word narrowing does the work."""
    try:
        folded = secrets.fold(text)
        spans = []
        for _kind, pattern, check in secrets.gated_detectors(text, folded):
            spans += [m.span("v") if "v" in pattern.groupindex else m.span()
                      for m in secrets.scan(pattern, text, folded) if check is None or check(m)]  # fmt: skip
        return spans
    except Exception:  # a changed internal layout only costs precision
        return []


def _replace_spans(text: str, spans: list[tuple[int, int]]) -> str:
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in reversed(merged):
        text = f"{text[:start]}{REDACTED}{text[end:]}"
    return text


def _ids_aside(text: str) -> tuple[str, dict[str, str]]:
    """`text` with each id of a data set's shape (`conv-47:D4:36`, `answer_abc123_2`, a uuid, `D1:3`) put aside
    as a plain marker word, and marker -> id; ({} and `text`) when that would take more from the secret filter's
    findings than a login read into an id (an id naming a secret, `private_key_id`, or named one: `recovery codes:
    56109-7c823`, `password answer_abc123_2`). An id the filter flags alone is never set aside."""
    if _MARK in text.lower():
        return text, {}
    aside: dict[str, str] = {}

    def mark(match: re.Match) -> str:
        token = match.group(0)
        if len(aside) >= 26**_MARK_WIDTH or not any(c.isdigit() for c in token) or _flagged_alone(token):
            return token
        key = _MARK + _letters(len(aside))
        aside[key] = token
        return key

    masked = _DATASET_ID.sub(mark, text)
    if not aside:
        return text, {}
    before, after = set(secrets.find_secrets(text)), set(secrets.find_secrets(masked))
    return (masked, aside) if after <= before and before - after <= _BESIDE_IDS else (text, {})


@functools.lru_cache(maxsize=65536)
def _flagged_alone(token: str) -> bool:
    return _flagged(token)


def _letters(n: int) -> str:
    """`n` in _MARK_WIDTH letters (aaaa, aaab, ...): a marker holds no digit."""
    out = ""
    for _ in range(_MARK_WIDTH):
        n, r = divmod(n, 26)
        out = chr(ord("a") + r) + out
    return out


def _put_back(text: str, aside: dict[str, str]) -> str:
    for key, token in aside.items():
        text = text.replace(key, token)
    return text


def _flagged_beyond_ids(text: str) -> bool:
    """Whether the secret filter flags `text` for more than a login read into its ids (`_ids_aside`)."""
    if not _flagged(text):
        return False
    masked, aside = _ids_aside(text)
    return not aside or _flagged(masked)


def redact_flagged(text: str) -> str:
    """`text` as the secret filter lets it pass: first the values the filter's own detectors point at are
    replaced; lines still flagged are narrowed word by word; withheld whole when even that still trips the
    filter (a secret spread over lines). Ids of a data set's shape are left as they are (`_ids_aside`)."""
    if not text or not _flagged(text):
        return text
    masked, aside = _ids_aside(text)
    if aside and not _flagged(masked):
        return text
    return _put_back(_redact_flagged(masked), aside)


def _redact_flagged(text: str) -> str:
    spans = _value_spans(text)
    if spans:
        text = _replace_spans(text, spans)
        if not _flagged(text):
            return text
    lines = [_narrow(line) if _flagged(line) else line for line in text.split("\n")]
    joined = "\n".join(lines)
    return WITHHELD if _flagged(joined) else joined


def needs_redaction(text: str) -> bool:
    """Whether `redact(text)` would change anything (cheaper: no narrowing)."""
    return redact_patterns(text) != text or _flagged_beyond_ids(text)


def plain_digest(key: str, length: int = 16, prefix: str = "") -> str:
    """`prefix` + the first `length` hex digits of the SHA-1 of `key`: an id memlab makes up (a query's, an
    event's without one) that the redactor leaves as it is. Now and then a digest reads as a credential (16
    decimal digits passing Luhn: a card number; 10 random digests in 300,000 were flagged, 4 of them as cards and
    6 as Belgian IBANs before IBANs had to hold digits where their country's do), and a redacted id in one file
    no longer joins the same id in another; such a digest is hashed again with a round
    number until it reads as plain, so the id stays one per key and every other digest is unchanged."""
    made = prefix + hashlib.sha1(key.encode("utf-8")).hexdigest()[:length]
    again = 0
    while needs_redaction(made):
        again += 1
        made = prefix + hashlib.sha1(f"{key}\x1f{again}".encode()).hexdigest()[:length]
    return made


def redact(text: object, known: Iterable[str] = ()) -> str:
    """`text` (any object, as str) fit to show, log or write: known secrets, URL/DSN passwords, auth headers and
    whatever the secret filter flags are hidden."""
    return redact_flagged(redact_patterns(str(text), known))


def redact_error(exc: BaseException, known: Iterable[str] = ()) -> str:
    """An exception's message, redacted (its type name when it has none)."""
    return redact(str(exc) or type(exc).__name__, known)


# -- logging -----------------------------------------------------------------------------------------------------


class RedactingFilter(logging.Filter):
    """Rewrites a record's message (arguments merged in) through `redact` before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to logging's own error path
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            if redact(str(exc)) != str(exc):  # the traceback would print the secret: keep the type only
                record.msg = f"{clean} ({type(exc).__name__}: {redact(str(exc))})"
                record.args, record.exc_info, record.exc_text = None, None, None
        return True


_FILTER = RedactingFilter()


def get_logger(name: str) -> logging.Logger:
    """memlab's loggers, each with the redacting filter (a logger's filters see only its own records, so the
    filter goes on every memlab logger, not only on the "memlab" parent)."""
    logger = logging.getLogger(name)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger


def install_log_redaction() -> None:
    """Redact every record of a memlab logger, including loggers a module makes later with plain
    `logging.getLogger`: the filter goes on the memlab loggers that exist now, and the log-record factory (the
    one in place, chained) runs it on any record whose logger name starts with "memlab". Idempotent."""
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and _is_memlab(name):
            get_logger(name)
    previous = logging.getLogRecordFactory()
    if getattr(previous, "memlab_redacts", False):
        return

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _is_memlab(record.name):
            _FILTER.filter(record)
        return record

    factory.memlab_redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


def _is_memlab(name: str) -> bool:
    return name == "memlab" or name.startswith("memlab.")
