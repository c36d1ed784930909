"""Which events become memory. A vector store is a copy of user data, so filter before anything is embedded:
streaming fragments, tool plumbing, chatter too short to mean anything, and credentials never get in."""

from __future__ import annotations

import re
from functools import lru_cache

from memlab.types import Event

PARTIAL = "partial"
FUNCTION_CALL = "function_call"
NO_TEXT = "no_text"
TOO_SHORT = "too_short"
SECRET = "secret"
DELETED = "deleted"  # deleted on purpose earlier (a tombstone): never ingested again
SKIP_REASONS = (PARTIAL, FUNCTION_CALL, NO_TEXT, TOO_SHORT, SECRET, DELETED)
DEFAULT_MIN_CHARS = 15

# detect-secrets plugins that look for credentials by their shape. The entropy plugins are left out on
# purpose: on free conversational text they flag almost every sentence.
_SECRET_PLUGINS = [
    "ArtifactoryDetector",
    "AWSKeyDetector",
    "AzureStorageKeyDetector",
    "BasicAuthDetector",
    "CloudantDetector",
    "DiscordBotTokenDetector",
    "GitHubTokenDetector",
    "GitLabTokenDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "JwtTokenDetector",
    "KeywordDetector",
    "MailchimpDetector",
    "NpmDetector",
    "OpenAIDetector",
    "PrivateKeyDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SlackDetector",
    "SoftlayerDetector",
    "SquareOAuthDetector",
    "StripeDetector",
    "TelegramBotTokenDetector",
    "TwilioKeyDetector",
]


# What detect-secrets does not cover: credentials typed as prose ("my password is hunter2") and newer
# API-key formats. A value counts only if it has a digit or a symbol, so "my password is terrible" passes.
_PROSE_CREDENTIAL = re.compile(
    r"\b(?:password|passwd|passcode|pwd|passphrase|api[ _-]?key|secret[ _-]?key|access[ _-]?token)\b"
    r"\s*(?:is|was|:|=)\s*[\"'`]?(?=\S*[\d!@#$%^&*+=?~])(\S{6,})",
    re.IGNORECASE,
)
_KEY_FORMATS = {
    "API key (sk-...)": re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"),
    "Google API key": re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),
}


@lru_cache(maxsize=1)
def _secret_settings() -> dict:
    return {"plugins_used": [{"name": name} for name in _SECRET_PLUGINS]}


def find_secrets(text: str) -> list[str]:
    """The kinds of credential detect-secrets finds in `text` (empty when it holds none)."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    kinds: list[str] = []
    if _PROSE_CREDENTIAL.search(text):
        kinds.append("Credential in prose")
    kinds.extend(kind for kind, pattern in _KEY_FORMATS.items() if pattern.search(text))
    with transient_settings(_secret_settings()):
        for line in text.splitlines() or [text]:
            kinds.extend(secret.type for secret in scan_line(line))
    return sorted(set(kinds))


def skip_reason(event: Event, *, min_chars: int = DEFAULT_MIN_CHARS, scan_secrets: bool = True) -> str | None:
    """Why `event` must not be stored, or None to keep it. Checks run cheapest first."""
    if event.partial:
        return PARTIAL
    text = (event.text or "").strip()
    if not text:
        return FUNCTION_CALL if (event.function_calls or event.function_responses) else NO_TEXT
    if len(text) < min_chars:
        return TOO_SHORT
    if scan_secrets and find_secrets(text):
        return SECRET
    return None
