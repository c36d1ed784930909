"""The memo of texts the secret scan found clean, so a text ingested again (into another layer: a chunk size, a
rendering) or quoted again (a run folder) is not scanned again. It keeps digests (`text_key`), never texts, and
never the digest of a text that held a secret; it is bounded, and every erasure empties it (`forget_scans`)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence

from memlab.safety.secrets import find_secrets
from memlab.safety.split_secrets import split_secret_events

# Digests of texts already scanned and found clean. Bounded; cleared when full.
_CLEAN: set[str] = set()
_CLEAN_LOCK = threading.Lock()
CLEAN_MEMO_SIZE = 65_536


def text_key(text: str) -> str:
    """The one key of a text, for the embedding cache and the memo of texts scanned clean (a lone surrogate is
    hashed as its code unit, so every str has a key; other texts hash exactly as plain UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def forget_scans() -> None:
    """Drop the memo of texts found clean (a benchmark that ingests the same texts again measures first scans)."""
    with _CLEAN_LOCK:
        _CLEAN.clear()


def holds_secret(text: str) -> bool:
    """Whether `text` holds a credential (`find_secrets`; a scan that fails counts as one). A text found clean
    before, in this process, is not scanned again (erasure drops that memo)."""
    key = text_key(text)
    if key in _CLEAN:
        return False
    if find_secrets(text):
        return True
    with _CLEAN_LOCK:
        if len(_CLEAN) >= CLEAN_MEMO_SIZE:
            _CLEAN.clear()
        _CLEAN.add(key)
    return False


def holds_secret_after(text: str, before: Sequence[str]) -> bool:
    """Whether `text`, said right after the turns `before` (oldest first), holds a credential: alone, or read
    together with them (a password typed as the reply to "what's the wifi password?"). The judgment ingest makes
    of a session's turn (`holds_secret`, then `split_secret_events` over the turns in order), for a text that
    arrives on its own: a query."""
    return holds_secret(text) or (bool(before) and len(before) in split_secret_events([*before, text]))
