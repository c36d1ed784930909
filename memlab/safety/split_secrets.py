"""Secrets split across the consecutive events of one session: a private key pasted as its BEGIN line, then its
body, then its END line, each in an event of its own (or a body spread over several events with no armor at
all), and a credential given as the answer to a question about it ("what's the wifi password?" / "Tr0ub4dor&3").
Each event alone may look harmless; `split_secret_events` reads the session's events together and names every
event that forms such a secret, so both memories drop them as they drop a single-event secret.

What is read together (the session's texts joined line by line, in order):
- from a private key's BEGIN armor line on, the base64 lines of the next `WINDOW` events up to its END line, and
  from an END line back, the base64 lines of the `WINDOW` events before it up to a BEGIN line: a chat turn
  in between ("go on") does not break the key;
- a run of base64 lines over two or more events that decodes to a private key, or has the shape of a PEM body
  (two or more lines of 40 to 120 characters, with digits and both cases);
- a text that is one opaque word, right after a text that ends by asking for or announcing a password, key or
  token: scanned as "<password|key|token word>: <word>"."""

from __future__ import annotations

import re
from collections.abc import Sequence

import memlab.safety.secret_shapes as shapes
from memlab.safety.secrets import find_secrets

WINDOW = 8  # how many events after a BEGIN line (or before an END line) may still hold the key's body
_MAX_LINES = 2_000  # lines followed from one armor line: a long RSA key is about 30 lines

_ARMOR = re.compile(r"-{3,}\s*(?P<end>BEGIN|END)\s+(?:[A-Z0-9]+\s+)*PRIVATE\s+KEY(?:\s+BLOCK)?", re.I)
_PUTTY = re.compile(r"^\s*Private-Lines:\s*\d+", re.I | re.M)
_B64_LINE = re.compile(r"\s*[A-Za-z0-9+/]{16,}={0,2}\s*")
_B64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")
_B64_TAIL = re.compile(r"\s*=?[A-Za-z0-9+/]{2,}={0,2}\s*")  # a body's short last line, or PGP's =checksum
_ARMOR_HEADER = re.compile(r"\s*(?:Version|Comment|Proc-Type|DEK-Info|Hash|Charset|MessageID):\s.*", re.I)
_CUE = re.compile(
    rf"(?P<w>\b(?:pass(?:word|wd|phrase|code)?|pwd|pw|pin|api[ _-]?key|key|token|secret)|{shapes.FOREIGN_PW_WORD})"
    rf"\w{{0,3}}(?:[ \t]+(?:for|of|to|on|at|in|{shapes.FOREIGN_FOR})(?:[ \t]+[\w.@-]+){{1,3}})?"
    rf"[ \t]*(?:[:=?]|\bis|\b{shapes.FOREIGN_IS})?[ \t]*$",
    re.I,
)


def _b64_line(line: str) -> bool:
    """A line of a key body: base64 only (16+ characters with a digit, + or /), or holding a run of 40+."""
    if _B64_LINE.fullmatch(line):
        return any(c.isdigit() or c in "+/" for c in line)
    run = _B64_RUN.search(line)
    return run is not None and any(c.isdigit() for c in run.group(0)) and not run.group(0).isdigit()


def _tail_line(line: str) -> bool:
    """A short base64 line as a key body ends (at least a digit, + / = or both cases: not a plain word)."""
    if not _B64_TAIL.fullmatch(line):
        return False
    core = line.strip()
    if any(c.isdigit() or c in "+/=" for c in core):
        return True
    return any(c.isupper() for c in core[1:]) and any(c.islower() for c in core)  # "gEdZq", not "Thanks" or "OK"


def _completes(body: list[str], line: str) -> bool:
    """Whether `line` (one base64 word) is the rest of the key whose body so far is `body`: the two together have
    exactly the length the key's opening bytes declare. A body's last line may be a plain-looking word."""
    if not _B64_TAIL.fullmatch(line):
        return False
    so_far = "".join(ln.strip() for ln in body)
    size = shapes.declared_size(shapes.b64_bytes(so_far, 256) or b"")
    if size is None or "=" in so_far:
        return False
    return len(so_far) + len(line.strip().rstrip("=")) == -(-size * 4 // 3)


def _pem_shape(lines: list[str]) -> bool:
    """Two or more full lines of 40..120 base64 characters, with digits and both cases: a PEM body's shape."""
    full = [ln.strip() for ln in lines if 40 <= len(ln.strip()) <= 120 and _B64_LINE.fullmatch(ln)]
    body = "".join(full)
    return len(full) >= 2 and sum(c.isdigit() for c in body) >= 3 and body.lower() != body and body.upper() != body


def split_secret_events(texts: Sequence[str]) -> set[int]:
    """Indices of the texts (a session's events in order; "" for an event with no text) that form a secret
    spread over two or more of them. A secret inside one text is left to `find_secrets`."""
    lines: list[tuple[int, str]] = [(i, line) for i, text in enumerate(texts) for line in (text or "").splitlines()]
    found: set[int] = set()
    armored = any("private" in (text or "").casefold() for text in texts)  # every armor line says PRIVATE
    for n, (event, line) in enumerate(lines if armored else ()):
        match = _ARMOR.search(line)
        if match is None and not _PUTTY.search(line):
            continue
        found.add(event)
        if match is not None and _ARMOR.search(line[match.end() :]):
            continue  # BEGIN and END on one line: the whole key is in this event
        step = 1 if match is None or match.group("end").upper() == "BEGIN" else -1  # PuTTY's lines follow its count
        body: list[str] = [line[match.end() :].lstrip("- ")] if match is not None and step == 1 else []
        words: set[int] = set()
        for m in range(n + step, n + step * _MAX_LINES, step):
            if not 0 <= m < len(lines) or abs(lines[m][0] - event) > WINDOW:
                break
            text = lines[m][1]
            if _ARMOR.search(text):
                found.add(lines[m][0])  # the matching END (or BEGIN)
                found.update(words)  # a base64 word between the armor lines is part of the key
                break
            if _b64_line(text) or _tail_line(text) or (step == 1 and _completes(body, text)):
                found.add(lines[m][0])
                body.append(text)
            elif _ARMOR_HEADER.fullmatch(text):
                found.add(lines[m][0])
            elif _B64_TAIL.fullmatch(text):
                words.add(lines[m][0])
    return found | _body_runs(lines) | _answers(texts)


def _body_runs(lines: list[tuple[int, str]]) -> set[int]:
    """Events of each run of base64 lines spread over 2+ events that is a private key (by its decoded start, or
    by its PEM shape). Blank lines do not break a run."""
    found: set[int] = set()
    run: list[tuple[int, str]] = []
    for event, line in [*lines, (-1, "end")]:
        if not line.strip() and event >= 0:
            continue
        full = bool(run) and len(run[-1][1].strip()) >= 40
        tail = full and (_tail_line(line) or _completes([ln for _, ln in run], line))
        if event >= 0 and (_B64_LINE.fullmatch(line) or tail):
            run.append((event, line))
            continue
        events = {e for e, _ in run}
        if len(events) > 1:
            body = [ln for _, ln in run]
            if shapes.key_body("".join(ln.strip() for ln in body)) or _pem_shape(body):
                found |= events
        run = []
    return found


def _answers(texts: Sequence[str]) -> set[int]:
    """Texts that are one opaque word given right after a question about (or an announcement of) a password or
    key, when the two read together hold a credential and the word alone does not."""
    found: set[int] = set()
    for i in range(1, len(texts)):
        word = (texts[i] or "").strip().strip("\"'`")
        if not 4 <= len(word) <= 200 or any(c.isspace() for c in word):
            continue
        before = (texts[i - 1] or "").rstrip()[-120:]
        cue = _CUE.search(before)
        if cue is None:
            continue
        if find_secrets(f"{cue.group('w')}: {word}") and not find_secrets(word):
            found.add(i)
    return found
