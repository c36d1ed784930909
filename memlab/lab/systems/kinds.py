"""Systems: everything the workbench can ask a question of, behind one interface (as ann-benchmarks' BaseANN).

A system keeps its build arguments (what is stored: granularity, chunk shape, embedder, extractor) apart from
its query arguments (how it is searched: strategy, ef_search, iterative scan, max_distance). Systems with the same
`build_key` share one ingest, so a grid of search settings costs one ingest and many cheap queries.

- `EventSystem`: event memory (events, chunks or whole sessions) in PostgreSQL + pgvector, any SearchSettings.
- `FaissExactSystem`: FAISS exact over the very rows an EventSystem stored: the ground truth of recall_vs_exact.
- `FactSystem`: fact memory with an extractor (rules, labelled gold candidates, or an LLM endpoint).

A run derived from another system's saved run without asking again (a cut-off) is no System: see
memlab.lab.systems.derived.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from rich.progress import track

from memlab.embedding.base import Embedder
from memlab.errors import ConfigError
from memlab.events.memory import EventMemory
from memlab.events.renderings import RENDERINGS
from memlab.facts.extractors.base import ExtractorKeys
from memlab.facts.extractors.labelled import LabelledExtractor
from memlab.facts.extractors.llm import LlmExtractor
from memlab.facts.extractors.rules import RuleExtractor
from memlab.facts.memory import FactMemory
from memlab.facts.types import DOMAIN_USER
from memlab.lab.base.suggest import unknown_keys
from memlab.lab.datasets.model import Dataset, Question
from memlab.lab.systems.faiss_exact import FaissExact
from memlab.lab.systems.rerank import Reranking, RerankSpec, parse_rerank, rerank_search, reranking
from memlab.lab.systems.services import (
    SERVICE_KINDS,
    AdkSystem,
    Mem0System,
    is_service_entry,
    service_system_from_config,
)
from memlab.lab.systems.table import TableStores, TableSystem, is_table_entry, table_system_from_config
from memlab.models import ChatClient, ModelSpec, Reranker, open_chat, open_reranker
from memlab.storage.store import Store
from memlab.types import Hit, Hits, SearchSettings

SESSION_CHUNK = 10_000  # "session" granularity: one chunk holds a whole session
GRANULARITIES = ("event", "chunk", "session")


@dataclass
class Env:
    """What systems are built in: the store, the configured embedders by name, k, the configured models by name
    (one client each per run, replies cached in `model_cache`, default model_cache_dir()), and a cache of built
    handles (one ingest per build key and data set)."""

    store: Store | None  # None: table systems only (memlab.lab.systems.table), which need no memory of memlab's
    embedders: dict[str, Embedder]
    k: int = 10
    progress: bool = False
    extractor_options: dict[str, Any] = field(default_factory=dict)
    models: dict[str, ModelSpec] = field(default_factory=dict)
    model_cache: Path | None = None
    tables: TableStores | None = None  # the config's table stores (memlab.lab.systems.table), opened by the run
    _built: dict[tuple, Any] = field(default_factory=dict)
    _clients: dict[str, Any] = field(default_factory=dict)
    _clients_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def embedder(self, name: str) -> Embedder:
        try:
            return self.embedders[name]
        except KeyError:
            raise ConfigError(f"no embedder named {name!r}; configured: {sorted(self.embedders)}") from None

    def chat(self, name: str) -> ChatClient:
        """The chat client of the configured model `name` (kind openai-chat), the same one for the whole run."""
        return self._client(name, ("openai-chat",), open_chat)

    def reranker(self, name: str) -> Reranker:
        """The re-ranker of the configured model `name` (kind openai-rerank or cross-encoder), one per run."""
        return self._client(name, ("openai-rerank", "cross-encoder"), open_reranker)

    def _client(self, name: str, kinds: tuple[str, ...], make: Any) -> Any:
        spec = self.models.get(name)
        if spec is None:
            raise ConfigError(f"no model named {name!r} in the config's models: section; configured: "
                              f"{sorted(self.models) or 'none'}")  # fmt: skip
        if spec.kind not in kinds:
            raise ConfigError(f"model {name!r} is of kind {spec.kind}; this needs {' or '.join(kinds)}; "
                              f"configured: {', '.join(f'{n} ({s.kind})' for n, s in sorted(self.models.items()))}")
        with self._clients_lock:  # one client per model even when sweeps ask from several threads
            if name not in self._clients:
                self._clients[name] = make(spec, self.model_cache)
            return self._clients[name]

    def handle(self, system: System, dataset: Dataset) -> Any:
        key = (dataset.name, *system.build_key())
        if key not in self._built:
            self._built[key] = system.build(self, dataset)
        return self._built[key]


@runtime_checkable
class System(Protocol):
    """One search interface: build (ingest) once, then answer questions with their embedded vectors."""

    name: str

    def build_key(self) -> tuple: ...

    def build(self, env: Env, dataset: Dataset) -> Any: ...

    def search(self, handle: Any, question: Question, vector: np.ndarray, k: int) -> Hits: ...

    def reference(self) -> System | None:
        """The exact system over the same units (for recall_vs_exact), or None."""
        ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class EventSystem:
    name: str
    granularity: str = "event"
    chunk_size: int = 4
    chunk_overlap: int = 1
    settings: SearchSettings = field(default_factory=SearchSettings)
    embedder: str = "default"
    rendering: str = "text"  # what is embedded (memlab.events.renderings)
    fact_keys: str | None = None  # an extractor whose facts are added to each unit's rendered text
    rerank: RerankSpec | None = None  # a query argument: the build (and build_key) is the un-reranked twin's

    def __post_init__(self) -> None:
        if self.granularity not in GRANULARITIES:
            raise ConfigError(f"system {self.name!r}: granularity {self.granularity!r} is unknown; use one of "
                              f"{GRANULARITIES} (or a fact system with `extractor:`)")  # fmt: skip
        if self.rendering not in RENDERINGS:
            raise ConfigError(f"system {self.name!r}: rendering {self.rendering!r} is unknown; use one of "
                              f"{RENDERINGS}")  # fmt: skip
        if self.fact_keys is not None and self.fact_keys not in EXTRACTORS:
            raise ConfigError(f"system {self.name!r}: fact_keys {self.fact_keys!r} is unknown; use one of "
                              f"{EXTRACTORS}")  # fmt: skip

    def memory_args(self) -> dict[str, Any]:
        shape: dict[str, Any] = {"granularity": "chunk", "chunk_size": self.chunk_size,
                                 "chunk_overlap": self.chunk_overlap}  # fmt: skip
        if self.granularity == "event":
            shape = {"granularity": "event"}
        elif self.granularity == "session":
            shape = {"granularity": "chunk", "chunk_size": SESSION_CHUNK, "chunk_overlap": 0}
        return shape if self.rendering == "text" else {**shape, "rendering": self.rendering}

    def build_key(self) -> tuple:
        return ("event", tuple(sorted(self.memory_args().items())), self.embedder, self.fact_keys)

    def build(self, env: Env, dataset: Dataset) -> EventMemory:
        fact_keys = (
            ExtractorKeys(make_extractor(self.fact_keys, dataset, env.extractor_options)) if self.fact_keys else None
        )
        memory = EventMemory(env.store, env.embedder(self.embedder), **self.memory_args(), fact_keys=fact_keys)
        memory.add_sessions(dataset.sessions(), progress=env.progress)
        # Systems sharing this build may walk the layer's HNSW index (a fixed `hnsw` strategy, an ef_search sweep):
        # built now, not inside the first such search's latency (a small layer gets it only when asked).
        memory.build_index()
        return memory

    def search(self, handle: Any, question: Question, vector: np.ndarray, k: int) -> Hits:
        """The top k; with `rerank`, `handle` is a Reranking (search_handle) and the re-ranker orders the top
        `rerank.depth` of the embedding search."""
        if self.rerank is None:
            return self._search(handle, question, vector, k)
        found = reranking(handle, self.name, self.rerank)
        return rerank_search(lambda depth: self._search(found.memory, question, vector, depth), found.reranker,
                             self.rerank, question.text, k, (question.app_name, question.user_id))  # fmt: skip

    def _search(self, handle: EventMemory, question: Question, vector: np.ndarray, k: int) -> Hits:
        settings = replace(self.settings, top_k=k)
        if settings.query_rendering != "as_is":  # the question is re-rendered, so embedded again
            return handle.search(question.app_name, question.user_id, question.text, settings,
                                 asked_at=question.asked_at)  # fmt: skip
        if not settings.fused(question.asked_at is not None):
            return handle.search_vector(question.app_name, question.user_id, vector, settings)
        return handle.search_fused(question.app_name, question.user_id, question.text, vector, settings,
                                   asked_at=question.asked_at)  # fmt: skip

    def reference(self) -> FaissExactSystem:
        return FaissExactSystem(reference_name(self), replace(self, rerank=None))  # the same units, unreranked

    def describe(self) -> dict[str, Any]:
        return {"kind": "event", "granularity": self.granularity, **self.memory_args(), "embedder": self.embedder,
                "rendering": self.rendering, "fact_keys": self.fact_keys, "settings": self.settings.__dict__,
                **_described(self.rerank)}  # fmt: skip


def _described(spec: RerankSpec | None) -> dict[str, Any]:
    return {} if spec is None else {"rerank": {"model": spec.model, "depth": spec.depth}}


def search_handle(env: Env, system: System, dataset: Dataset) -> Any:
    """What `system.search` takes: its built memory (Env's cache: one ingest per build key), and for a system
    with `rerank:` the run's re-ranker beside it (Env.reranker), so search itself reads no global state."""
    handle = env.handle(system, dataset)
    spec = getattr(system, "rerank", None)
    return handle if spec is None else Reranking(handle, env.reranker(spec.model))


def reference_name(system: EventSystem) -> str:
    shape = system.granularity if system.granularity != "chunk" else f"chunk{system.chunk_size}o{system.chunk_overlap}"
    suffix = "" if system.embedder == "default" else f"[{system.embedder}]"
    if system.rendering != "text":
        shape += f"+{system.rendering}"
    if system.fact_keys:
        shape += f"+facts:{system.fact_keys}"
    return f"faiss-exact-{shape}{suffix}"


@dataclass(frozen=True)
class FaissExactSystem:
    name: str
    over: EventSystem

    def build_key(self) -> tuple:
        return ("faiss", *self.over.build_key())

    def build(self, env: Env, dataset: Dataset) -> FaissExact:
        return FaissExact.from_memory(env.handle(self.over, dataset))

    def search(self, handle: FaissExact, question: Question, vector: np.ndarray, k: int) -> Hits:
        return handle.search_vector(question.app_name, question.user_id, vector, k)

    def reference(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"kind": "faiss-exact", "over": self.over.describe()}


EXTRACTORS = ("rules", "labelled", "llm")


def make_extractor(name: str, dataset: Dataset, options: dict[str, Any]):
    """An extractor by name; `labelled` replays the data set's own gold candidates."""
    if name == "rules":
        return RuleExtractor()
    if name == "labelled":
        return LabelledExtractor.from_set(dataset)
    if name == "llm":
        llm = options.get("llm") or {}
        models = options.get("models") or {}
        if llm.get("model_ref") in models:  # a models: entry: its timeout, retries, key variable and cache
            return LlmExtractor.from_spec(models[llm["model_ref"]], options.get("model_cache"))
        if not llm.get("base_url") or not llm.get("model"):
            raise ConfigError("extractor llm needs `llm: {model_ref: NAME}` (an openai-chat entry of models:) or "
                              "`llm: {base_url: ..., model: ...}` in the config")  # fmt: skip
        return LlmExtractor(llm["base_url"], llm["model"])
    raise ConfigError(f"unknown extractor {name!r}; use one of {EXTRACTORS}")


def _fact_hits(facts: FactMemory, q: Question, k: int) -> Hits:
    """Facts served as the agent would get them (threshold, decay at the time asked), all sensitivities.
    A fact that answers the question's labelled key covers the question's relevant events."""
    found = facts.search(q.app_name, q.user_id, q.text, allow=("personal", "health"), limit=k, now=q.asked_at)
    hits = []
    for h in found:
        events = list(zip(h.event_sessions, h.event_ids, strict=True))  # (session, event): ids repeat across sessions
        if q.fact_key and q.fact_key == f"{h.fact.subject}/{h.fact.predicate}":
            events = list(dict.fromkeys((*events, *q.evidence)))
        hits.append(Hit(unit_id=h.unit_id, text=h.text, distance=h.distance, event_ids=tuple(e for _, e in events),
                        event_sessions=tuple(s for s, _ in events)))  # fmt: skip
    return Hits(hits, plan="facts")


@dataclass(frozen=True)
class FactSystem:
    name: str
    extractor: str = "rules"
    embedder: str = "default"
    rerank: RerankSpec | None = None  # a query argument, as on EventSystem

    def __post_init__(self) -> None:
        if self.extractor not in EXTRACTORS:
            raise ConfigError(f"system {self.name!r}: extractor {self.extractor!r} is unknown; use one of {EXTRACTORS}")

    def build_key(self) -> tuple:
        return ("facts", self.extractor, self.embedder)

    def build(self, env: Env, dataset: Dataset) -> FactMemory:
        extractor = make_extractor(self.extractor, dataset, env.extractor_options)
        facts = FactMemory(env.store, env.embedder(self.embedder), extractor=extractor)
        sessions = list(dataset.namespaced(self.namespace).sessions())
        if env.progress:
            sessions = track(sessions, description=f"facts ({self.extractor})")
        for session in sessions:
            if session.user_id == DOMAIN_USER:
                facts.add_domain_session(session)
            else:
                facts.add_session(session)
        return facts

    @property
    def namespace(self) -> str:
        """Each fact system keeps its facts under its own app names: two extractors on one data set must not
        share fact rows and session watermarks (the second would see every session as already read)."""
        return f"facts-{self.extractor}-{self.embedder}"

    def search(self, handle: Any, question: Question, vector: np.ndarray, k: int) -> Hits:
        asked = replace(question, app_name=f"{self.namespace}/{question.app_name}")
        if self.rerank is None:
            return _fact_hits(handle, asked, k)
        found = reranking(handle, self.name, self.rerank)
        return rerank_search(lambda depth: _fact_hits(found.memory, asked, depth), found.reranker, self.rerank,
                             question.text, k, (asked.app_name, asked.user_id))  # fmt: skip

    def reference(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"kind": "facts", "extractor": self.extractor, "embedder": self.embedder, **_described(self.rerank)}


SETTINGS_KEYS = {f for f in SearchSettings.__dataclass_fields__ if f != "top_k"}
EVENT_KEYS = {"name", "granularity", "chunk_size", "chunk_overlap", "embedder", "rendering", "fact_keys", "rerank"}
FACT_KEYS = {"name", "extractor", "embedder", "rerank"}


def system_from_config(
    raw: dict[str, Any], *, k: int | None = None
) -> EventSystem | FactSystem | TableSystem | AdkSystem | Mem0System:
    """A system from its config entry: build keys (granularity, chunk_size, chunk_overlap, embedder) and query
    keys (any SearchSettings field: strategy, ef_search, iterative_scan, max_scan_tuples, exact_below,
    max_distance; `rerank: {model, depth}`, at least the experiment's `k` deep); or a fact system
    (`extractor: rules|labelled|llm`); or a table-store system (`store: NAME`, memlab.lab.systems.table); or a
    black box (`kind: adk|mem0`, memlab.lab.systems.services)."""
    if not isinstance(raw, dict) or not raw.get("name"):
        raise ConfigError(f"every system needs a `name`; got {raw!r}")
    if "kind" in raw and not is_service_entry(raw):
        raise ConfigError(f"system {raw['name']!r}: kind {raw['kind']!r} is unknown; use one of "
                          f"{list(SERVICE_KINDS)}, or leave `kind` out for memlab's own memory")  # fmt: skip
    if is_service_entry(raw):
        return service_system_from_config(raw)
    if is_table_entry(raw):
        return table_system_from_config(raw)
    name = str(raw["name"])
    rerank = parse_rerank(raw["rerank"], name, k=k) if raw.get("rerank") is not None else None
    if "extractor" in raw or raw.get("granularity") == "facts":
        extra = set(raw) - FACT_KEYS - {"granularity"}
        if extra:
            raise ConfigError(f"system {name!r}: {unknown_keys(extra, FACT_KEYS)} for a fact system; "
                              f"allowed: {sorted(FACT_KEYS)}")  # fmt: skip
        return FactSystem(name, extractor=str(raw.get("extractor", "rules")),
                          embedder=str(raw.get("embedder", "default")), rerank=rerank)  # fmt: skip
    extra = set(raw) - EVENT_KEYS - SETTINGS_KEYS
    if extra:
        raise ConfigError(f"system {name!r}: {unknown_keys(extra, EVENT_KEYS | SETTINGS_KEYS)}; build keys "
                          f"{sorted(EVENT_KEYS)}, "
                          f"query keys {sorted(SETTINGS_KEYS)}")  # fmt: skip
    settings = SearchSettings(**{k: v for k, v in raw.items() if k in SETTINGS_KEYS})
    return EventSystem(
        name,
        granularity=str(raw.get("granularity", "event")),
        chunk_size=int(raw.get("chunk_size", 4)),
        chunk_overlap=int(raw.get("chunk_overlap", 1)),
        settings=settings,
        embedder=str(raw.get("embedder", "default")),
        rendering=str(raw.get("rendering", "text")),
        fact_keys=str(raw["fact_keys"]) if raw.get("fact_keys") else None,
        rerank=rerank,
    )


__all__ = [
    "EVENT_KEYS",
    "FACT_KEYS",
    "SETTINGS_KEYS",
    "Env",
    "EventSystem",
    "FactSystem",
    "FaissExactSystem",
    "System",
    "make_extractor",
    "search_handle",
    "system_from_config",
]
