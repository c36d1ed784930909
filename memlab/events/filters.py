"""Which events become memory. A vector store is a copy of user data, so filter before anything is embedded:
streaming fragments, tool plumbing, chatter too short to mean anything, and credentials never get in
(memlab.events.secrets finds them; a scan that fails counts as a secret, so nothing is stored silently)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from memlab.embedding.cache import text_key
from memlab.events.secrets import find_secrets
from memlab.events.split_secrets import split_secret_events
from memlab.types import Event

PARTIAL = "partial"
FUNCTION_CALL = "function_call"
NO_TEXT = "no_text"
TOO_SHORT = "too_short"
SECRET = "secret"
DELETED = "deleted"  # deleted on purpose earlier (a tombstone): never ingested again
SKIP_REASONS = (PARTIAL, FUNCTION_CALL, NO_TEXT, TOO_SHORT, SECRET, DELETED)
DEFAULT_MIN_CHARS = 15

# Texts already scanned and found clean, by `text_key` (the embedding cache's one hash of a text; never the text,
# and never a text that held a secret): the same turn ingested into another layer (a chunk size, a rendering) is
# not scanned again. Bounded; cleared when full.
_CLEAN: set[str] = set()
_CLEAN_LOCK = threading.Lock()
CLEAN_MEMO_SIZE = 65_536


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


def skip_reason(event: Event, *, min_chars: int = DEFAULT_MIN_CHARS, scan_secrets: bool = True) -> str | None:
    """Why `event` must not be stored, or None to keep it. Checks run cheapest first."""
    if event.partial:
        return PARTIAL
    text = (event.text or "").strip()
    if not text:
        return FUNCTION_CALL if (event.function_calls or event.function_responses) else NO_TEXT
    if len(text) < min_chars:
        return TOO_SHORT
    if scan_secrets and holds_secret(text):
        return SECRET
    return None
