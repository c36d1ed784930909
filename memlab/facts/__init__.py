"""Fact memory: candidates extracted from sessions, decided against what is stored (insert, reinforce,
supersede, dispute, retract), and served as current facts. Modules here are internal; use the names below."""

from memlab.facts.decide import decide
from memlab.facts.extractors.base import Extractor, ExtractorKeys
from memlab.facts.extractors.labelled import LabelledExtractor
from memlab.facts.extractors.llm import ExtractionError, LlmExtractor
from memlab.facts.extractors.rules import RuleExtractor
from memlab.facts.ids import fact_id, parse_fact_id
from memlab.facts.memory import FactMemory, state_of
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
from memlab.facts.results import FactForgetReport, FactHit, FactIngestReport, Provenance
from memlab.facts.types import DOMAIN_USER, Candidate, Decision, Fact

__all__ = [
    "DOMAIN_HEADING",
    "DOMAIN_USER",
    "PRELOAD_CLOSE",
    "PRELOAD_HEADING",
    "PRELOAD_OPEN",
    "STALE_HEADING",
    "Candidate",
    "Decision",
    "ExtractionError",
    "Extractor",
    "ExtractorKeys",
    "Fact",
    "FactForgetReport",
    "FactHit",
    "FactIngestReport",
    "FactMemory",
    "LabelledExtractor",
    "LlmExtractor",
    "PredicateRegistry",
    "Provenance",
    "RuleExtractor",
    "UnknownPredicateError",
    "decide",
    "default_registry",
    "fact_id",
    "neutralize_fences",
    "parse_fact_id",
    "render_fact",
    "state_of",
]
