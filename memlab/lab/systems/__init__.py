"""Systems: what a question is asked of (event memory at a granularity, fact memory, FAISS exact, a cut-off
variant, a user's own pgvector table), its re-rank stage, and its role in a run.
Modules here are internal; use the names below."""

from memlab.lab.systems.facts import run_fact_eval, summarize_facts
from memlab.lab.systems.faiss_exact import FaissExact
from memlab.lab.systems.kinds import (
    Env,
    EventSystem,
    FactSystem,
    FaissExactSystem,
    System,
    system_from_config,
)
from memlab.lab.systems.rerank import RerankSpec
from memlab.lab.systems.roles import SystemRole
from memlab.lab.systems.table import TableExactSystem, TableSystem

__all__ = [
    "Env",
    "EventSystem",
    "FactSystem",
    "FaissExact",
    "FaissExactSystem",
    "RerankSpec",
    "System",
    "SystemRole",
    "TableExactSystem",
    "TableSystem",
    "run_fact_eval",
    "summarize_facts",
    "system_from_config",
]
