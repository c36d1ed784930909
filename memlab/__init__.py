"""memlab: a research and evaluation workbench for the long-term memory of AI agents.

The memory library's few entry points live here: the two memories, the store, the embedder, the types a session
is made of and the main errors. The rest is reachable from its library package, each with a small `__all__` of
its own: memlab.events, memlab.facts, memlab.storage, memlab.embedding, memlab.models, memlab.table_store. The
workbench is memlab.lab (never imported from here).
"""

from memlab.config import configured_dsn, memlab_home
from memlab.embedding import Embedder, default_embedder, make_embedder
from memlab.erasure import ErasureReport, forget_event, forget_session
from memlab.errors import (
    ConfigError,
    DatabaseUnavailableError,
    DimensionError,
    EmbeddingEndpointError,
    MemlabError,
)
from memlab.events import EventMemory, QueryLog
from memlab.facts import FactMemory, LlmExtractor, RuleExtractor
from memlab.inputs import InputLimits
from memlab.safety.redact import install_log_redaction as _install_log_redaction
from memlab.safety.redact import redact as redact_secrets
from memlab.safety.secrets import find_secrets
from memlab.storage import Store, open_server, open_store, scratch_store
from memlab.types import (
    AutoPolicy,
    Event,
    FunctionCall,
    FunctionResponse,
    Hit,
    Hits,
    IngestReport,
    InputError,
    SearchSettings,
    Session,
    TimestampWindow,
)

__version__ = "0.1.0"

_install_log_redaction()  # every memlab log record passes the redactor (memlab.safety.redact), lazily made loggers too

__all__ = [
    "AutoPolicy",
    "ConfigError",
    "DatabaseUnavailableError",
    "DimensionError",
    "Embedder",
    "EmbeddingEndpointError",
    "ErasureReport",
    "Event",
    "EventMemory",
    "FactMemory",
    "FunctionCall",
    "FunctionResponse",
    "Hit",
    "Hits",
    "IngestReport",
    "InputError",
    "InputLimits",
    "LlmExtractor",
    "MemlabError",
    "QueryLog",
    "RuleExtractor",
    "SearchSettings",
    "Session",
    "Store",
    "TimestampWindow",
    "configured_dsn",
    "default_embedder",
    "find_secrets",
    "forget_event",
    "forget_session",
    "make_embedder",
    "memlab_home",
    "open_server",
    "open_store",
    "redact_secrets",
    "scratch_store",
]
