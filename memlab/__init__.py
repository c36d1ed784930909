"""memlab: a research and evaluation workbench for the long-term memory of AI agents.

The public API lives here; the CLI and notebooks call exactly these names.
"""

from memlab.embedding import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
    default_embedder,
)
from memlab.errors import (
    ConfigError,
    DatabaseUnavailableError,
    DimensionError,
    ExtensionError,
    FixtureError,
    MemlabError,
)
from memlab.evaluation.faiss_exact import FaissExact
from memlab.events.memory import EventMemory, Explain, MigrationReport, migrate_embeddings
from memlab.storage import Store, open_store
from memlab.types import (
    Event,
    FunctionCall,
    FunctionResponse,
    Hit,
    Hits,
    IngestReport,
    SearchSettings,
    Session,
)

__version__ = "0.1.0"

__all__ = [
    "CachedEmbedder",
    "ConfigError",
    "DatabaseUnavailableError",
    "DimensionError",
    "Embedder",
    "EmbeddingCache",
    "Event",
    "EventMemory",
    "Explain",
    "ExtensionError",
    "FaissExact",
    "FixtureError",
    "FunctionCall",
    "FunctionResponse",
    "Hit",
    "Hits",
    "IngestReport",
    "MemlabError",
    "MigrationReport",
    "SearchSettings",
    "SentenceTransformerEmbedder",
    "Session",
    "Store",
    "default_embedder",
    "migrate_embeddings",
    "open_store",
]
