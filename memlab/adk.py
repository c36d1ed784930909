"""`memlab.adk`: the Google ADK memory services (implemented in memlab.adapters.adk; needs the `adk` extra)."""

from memlab.adapters.adk import (
    DEFAULT_MAX_DISTANCE,
    EventMemoryService,
    FactMemoryService,
    event_from_adk,
    preload_facts_callback,
    safe_author,
    session_from_adk,
)

__all__ = [
    "DEFAULT_MAX_DISTANCE",
    "EventMemoryService",
    "FactMemoryService",
    "event_from_adk",
    "preload_facts_callback",
    "safe_author",
    "session_from_adk",
]
