"""Event memory: which events are kept, how they become units, and the memory that stores and searches them.
Modules here are internal; use the names below (EventMemory is also on `memlab` itself)."""

from memlab.events.answerability import AnswerabilityGate
from memlab.events.filters import SKIP_REASONS, skip_reason
from memlab.events.memory import EventMemory, Explain, MigrationReport, migrate_embeddings
from memlab.events.query_log import LoggedQuery, QueryLog, logged_queries, purge_query_log, query_log_users
from memlab.events.renderings import RENDERINGS
from memlab.events.stored_sessions import read_stored_sessions, stored_layers
from memlab.events.timewords import EventAnchor, TimeWindow, event_anchor, resolve_time

__all__ = [
    "RENDERINGS",
    "SKIP_REASONS",
    "AnswerabilityGate",
    "EventAnchor",
    "EventMemory",
    "Explain",
    "LoggedQuery",
    "MigrationReport",
    "QueryLog",
    "TimeWindow",
    "event_anchor",
    "logged_queries",
    "migrate_embeddings",
    "purge_query_log",
    "query_log_users",
    "read_stored_sessions",
    "resolve_time",
    "skip_reason",
    "stored_layers",
]
