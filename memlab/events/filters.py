"""Which events become memory. A vector store is a copy of user data, so filter before anything is embedded:
streaming fragments, tool plumbing, chatter too short to mean anything, and credentials never get in
(memlab.safety.secrets finds them; a scan that fails counts as a secret, so nothing is stored silently; a text
found clean once is not scanned again: memlab.safety.clean_texts)."""

from __future__ import annotations

from memlab.safety.clean_texts import holds_secret
from memlab.types import Event

PARTIAL = "partial"
FUNCTION_CALL = "function_call"
NO_TEXT = "no_text"
TOO_SHORT = "too_short"
SECRET = "secret"
DELETED = "deleted"  # deleted on purpose earlier (a tombstone): never ingested again
SKIP_REASONS = (PARTIAL, FUNCTION_CALL, NO_TEXT, TOO_SHORT, SECRET, DELETED)
DEFAULT_MIN_CHARS = 15


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
