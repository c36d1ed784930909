"""memlab: a research and evaluation workbench for the long-term memory of AI agents.

The public API lives here; the CLI, the notebooks and the tests call exactly these names.
"""

from memlab.config import configured_dsn, memlab_home
from memlab.embedding import (
    DEFAULT_MODEL_ID,
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    OpenAICompatibleEmbedder,
    SentenceTransformerEmbedder,
    default_embedder,
    embed_queries,
    make_embedder,
    packaged_minilm_path,
    shared_cache,
)
from memlab.embedding.models import prepare_mpnet
from memlab.erasure import ErasureReport, forget_event, forget_session
from memlab.errors import (
    ConfigError,
    DatabaseUnavailableError,
    DimensionError,
    EmbeddingEndpointError,
    ExtensionError,
    FixtureError,
    MemlabError,
)
from memlab.events.answerability import AnswerabilityGate
from memlab.events.filters import SKIP_REASONS, skip_reason
from memlab.events.memory import EventMemory, Explain, MigrationReport, migrate_embeddings
from memlab.events.query_log import LoggedQuery, QueryLog, logged_queries, purge_query_log, query_log_users
from memlab.events.renderings import RENDERINGS
from memlab.events.stored_sessions import read_stored_sessions, stored_layers
from memlab.events.timewords import EventAnchor, TimeWindow, event_anchor, resolve_time
from memlab.facts.decide import decide
from memlab.facts.extractors.base import Extractor, ExtractorKeys
from memlab.facts.extractors.labelled import LabelledExtractor
from memlab.facts.extractors.llm import ExtractionError, LlmExtractor
from memlab.facts.extractors.rules import RuleExtractor
from memlab.facts.ids import fact_id, parse_fact_id
from memlab.facts.memory import (
    FactForgetReport,
    FactHit,
    FactIngestReport,
    FactMemory,
    state_of,
)
from memlab.facts.registry import PredicateRegistry, UnknownPredicateError, default_registry
from memlab.facts.render import (
    DOMAIN_HEADING,
    PRELOAD_CLOSE,
    PRELOAD_HEADING,
    PRELOAD_OPEN,
    STALE_HEADING,
    neutralize_fences,
    render_fact,
)
from memlab.facts.types import DOMAIN_USER, Candidate, Decision, Fact
from memlab.inputs import InputLimits
from memlab.safety.redact import install_log_redaction as _install_log_redaction
from memlab.safety.redact import redact as redact_secrets
from memlab.safety.secrets import find_secrets
from memlab.storage import Store, open_server, open_store
from memlab.storage.store import scratch_store
from memlab.types import (
    SEARCH_MODES,
    AutoPolicy,
    DeletionReport,
    Event,
    FactKeys,
    FunctionCall,
    FunctionResponse,
    Hit,
    Hits,
    IngestReport,
    InputError,
    SearchSettings,
    Session,
    SessionFailure,
    TimestampWindow,
)

__version__ = "0.1.0"

_install_log_redaction()  # every memlab log record passes the redactor (memlab.safety.redact), lazily made loggers too

__all__ = [
    "DEFAULT_MODEL_ID",
    "DOMAIN_HEADING",
    "DOMAIN_USER",
    "PRELOAD_CLOSE",
    "PRELOAD_HEADING",
    "PRELOAD_OPEN",
    "RENDERINGS",
    "SEARCH_MODES",
    "SKIP_REASONS",
    "STALE_HEADING",
    "AnswerabilityGate",
    "AutoPolicy",
    "CachedEmbedder",
    "Candidate",
    "ConfigError",
    "DatabaseUnavailableError",
    "Decision",
    "DeletionReport",
    "DimensionError",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingEndpointError",
    "ErasureReport",
    "Event",
    "EventAnchor",
    "EventMemory",
    "Explain",
    "ExtensionError",
    "ExtractionError",
    "Extractor",
    "ExtractorKeys",
    "Fact",
    "FactForgetReport",
    "FactHit",
    "FactIngestReport",
    "FactKeys",
    "FactMemory",
    "FixtureError",
    "FunctionCall",
    "FunctionResponse",
    "Hit",
    "Hits",
    "IngestReport",
    "InputError",
    "InputLimits",
    "LabelledExtractor",
    "LlmExtractor",
    "LoggedQuery",
    "MemlabError",
    "MigrationReport",
    "OpenAICompatibleEmbedder",
    "PredicateRegistry",
    "QueryLog",
    "RuleExtractor",
    "SearchSettings",
    "SentenceTransformerEmbedder",
    "Session",
    "SessionFailure",
    "Store",
    "TimeWindow",
    "TimestampWindow",
    "UnknownPredicateError",
    "configured_dsn",
    "decide",
    "default_embedder",
    "default_registry",
    "embed_queries",
    "event_anchor",
    "fact_id",
    "find_secrets",
    "forget_event",
    "forget_session",
    "logged_queries",
    "make_embedder",
    "memlab_home",
    "migrate_embeddings",
    "neutralize_fences",
    "open_server",
    "open_store",
    "packaged_minilm_path",
    "parse_fact_id",
    "prepare_mpnet",
    "purge_query_log",
    "query_log_users",
    "read_stored_sessions",
    "redact_secrets",
    "render_fact",
    "resolve_time",
    "scratch_store",
    "shared_cache",
    "skip_reason",
    "state_of",
    "stored_layers",
]
