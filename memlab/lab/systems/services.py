"""Black-box systems: other memories, written to through their own API and asked questions through it, in the same
experiment as memlab's own systems.

    systems:
      - {name: adk-keyword, kind: adk, service: "google.adk.memory:InMemoryMemoryService"}
      - {name: memlab-adk, kind: adk, service: "memlab.lab.systems.services:memlab_event_service"}
      - {name: mem0, kind: mem0}

`kind: adk` takes any ADK `BaseMemoryService` from `service: "module:factory"`: the factory is called with no
argument, or with a ServiceContext when it takes one (memlab's own services need its store and embedder), plus
`options:` as keyword arguments. Each data set session goes in through `add_session_to_memory` as an ADK session
of the data set's events; a question is `search_memory(app_name, user_id, query)`.

`kind: mem0` is mem0's `Memory` with its pgvector store in the run's database and the embedder the run uses
(the packaged MiniLM by default) behind mem0's local `huggingface` embedder; each event is added as one raw
message (`infer=False`: no LLM step) with its ids and time in the metadata, and a question is mem0's own `search`
scoped by the user's id (`threshold`: mem0's minimum score, its own default unless given).

A black box gives no distances and no index: every hit's distance is NaN, there is no exact reference (no
recall_vs_exact) and no cut-off sweep. Each returned entry is matched back to a labelled event (matching.py's
MATCH_RULE); entries matching none are counted (`unmatched_hits`). Every system is cut to the experiment's k; what
it returned before the cut is recorded (`service_returned`)."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import math
import os
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.progress import track

from memlab.embedding.base import Embedder
from memlab.errors import ConfigError
from memlab.lab.base.suggest import unknown_keys
from memlab.lab.datasets.model import Dataset, Question
from memlab.lab.systems.matching import MATCH_RULE, EventMatcher, Returned
from memlab.storage.store import Store
from memlab.types import Hit, Hits, SearchSettings

SERVICE_KINDS = ("adk", "mem0")
ADK_KEYS = {"name", "kind", "service", "options", "embedder"}
MEM0_KEYS = {"name", "kind", "embedder", "threshold"}


class ServiceHits(Hits):
    """A black box's hits within k, with how many entries it returned before the cut and how many of those within
    k matched no labelled event."""

    def __init__(self, hits: list[Hit], *, returned: int, unmatched: int) -> None:
        super().__init__(hits, plan="service")
        self.returned = returned
        self.unmatched = unmatched


@dataclass(frozen=True)
class ServiceContext:
    """What a factory of `kind: adk` may take: the run's store (memlab's own memory, in the run's database), the
    system's embedder, the experiment's k and the system's name (a layer or collection of its own)."""

    store: Store
    embedder: Embedder
    k: int
    name: str


def _sessions(dataset: Dataset, progress: bool, name: str) -> Iterable:
    """The data set's sessions, with a progress bar when the run shows progress (a black box writes one call at a
    time)."""
    sessions = list(dataset.sessions())
    return track(sessions, description=f"{name}: writing", transient=True) if progress else sessions


def _hits(matcher: EventMatcher, question: Question, returned: list[Returned], k: int) -> ServiceHits:
    hits, missing = [], 0
    for rank, entry in enumerate(returned[:k], start=1):
        refs = matcher.match(question.app_name, question.user_id, entry)
        missing += not refs
        hits.append(Hit(unit_id=entry.entry_id or f"rank-{rank}", text=entry.text, distance=math.nan,
                        timestamp=entry.timestamp, session_id=refs[0][0] if refs else entry.session_id,
                        event_ids=tuple(e for _, e in refs), event_sessions=tuple(s for s, _ in refs)))  # fmt: skip
    return ServiceHits(hits, returned=len(returned), unmatched=missing)


# -- ADK memory services ----------------------------------------------------------------------------------------


def resolve_factory(spec: str, system: str) -> Any:
    """The callable `module:attr` names (attr may be dotted), or ConfigError naming what is missing."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"system {system!r}: service {spec!r} is not `module:factory` (e.g. "
                          "`google.adk.memory:InMemoryMemoryService`)")  # fmt: skip
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"system {system!r}: cannot import {module_name!r} for service {spec!r} ({exc}); install "
                          "it in memlab's environment (`pip install 'memlab[adk]'` for ADK)") from None  # fmt: skip
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"system {system!r}: {module_name!r} has no {attr!r} (service {spec!r})")
        target = getattr(target, part)
    if not callable(target):
        raise ConfigError(f"system {system!r}: service {spec!r} is not callable")
    return target


def make_service(spec: str, context: ServiceContext, options: Mapping[str, Any]) -> Any:
    """The memory service `spec` makes: with the context when its factory takes a first argument, and `options`."""
    try:
        from google.adk.memory import BaseMemoryService
    except ImportError as exc:
        raise ConfigError(f"a `kind: adk` system needs google-adk ({exc}): pip install 'memlab[systems]'") from None

    factory = resolve_factory(spec, context.name)
    try:
        params = [p for p in inspect.signature(factory).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in options]  # fmt: skip
    except (TypeError, ValueError):
        params = []
    service = factory(context, **options) if params and params[0].default is inspect.Parameter.empty \
        else factory(**options)  # fmt: skip
    if not isinstance(service, BaseMemoryService):
        raise ConfigError(f"system {context.name!r}: service {spec!r} made a {type(service).__name__}, not an ADK "
                          "BaseMemoryService")  # fmt: skip
    return service


def adk_session(session) -> Any:
    """A data set session as ADK's Session: every event with its id, author, time, text, tool calls and answers,
    and whether it was a partial (streamed) event, as an ADK agent's session holds them."""
    from google.adk.events import Event as AdkEvent
    from google.adk.sessions import Session as AdkSession
    from google.genai import types

    def parts(e) -> list:
        return [*([types.Part(text=e.text)] if e.text else []),
                *[types.Part(function_call=types.FunctionCall(name=c.name, args=c.args)) for c in e.function_calls],
                *[types.Part(function_response=types.FunctionResponse(name=r.name, response=r.response))
                  for r in e.function_responses]]  # fmt: skip

    events = [AdkEvent(id=e.id, author=e.author, timestamp=e.timestamp.timestamp(), invocation_id=session.id,
                       partial=e.partial or None,
                       content=types.Content(role="user" if e.author == "user" else "model", parts=parts(e)))
              for e in session.events if parts(e)]  # fmt: skip
    return AdkSession(id=session.id, app_name=session.app_name, user_id=session.user_id, events=events)


def _entry_time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def returned_entry(entry: Any) -> Returned:
    """An ADK MemoryEntry as what matching reads: memlab's services keep `event_ids` and `session_id` in
    custom_metadata; ADK's own keep the event id as the entry id."""
    parts = (entry.content.parts or []) if entry.content is not None else []
    meta = entry.custom_metadata or {}
    ids = meta.get("event_ids") or ([meta["event_id"]] if meta.get("event_id") else [])
    return Returned(text="\n".join(p.text for p in parts if getattr(p, "text", None)), entry_id=entry.id,
                    event_ids=tuple(str(i) for i in ids), session_id=meta.get("session_id"),
                    timestamp=_entry_time(entry.timestamp))  # fmt: skip


@dataclass
class _Service:
    """A built black box: the service (or mem0 Memory), the matcher of its data set, one event loop for an async
    service (one caller at a time)."""

    service: Any
    matcher: EventMatcher
    loop: asyncio.AbstractEventLoop | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, coroutine) -> Any:
        with self.lock:
            assert self.loop is not None
            return self.loop.run_until_complete(coroutine)


@dataclass(frozen=True)
class AdkSystem:
    name: str
    service: str
    options: tuple[tuple[str, Any], ...] = ()
    embedder: str = "default"

    def build_key(self) -> tuple:
        return ("adk", self.name, self.service, self.options, self.embedder)

    def build(self, env, dataset: Dataset) -> _Service:
        context = ServiceContext(env.store, env.embedder(self.embedder), env.k, self.name)
        built = _Service(make_service(self.service, context, dict(self.options)), EventMatcher.of(dataset),
                         asyncio.new_event_loop())  # fmt: skip
        for session in _sessions(dataset, env.progress, self.name):
            built.run(built.service.add_session_to_memory(adk_session(session)))
        return built

    def search(self, handle: _Service, question: Question, vector: np.ndarray, k: int) -> ServiceHits:
        found = handle.run(handle.service.search_memory(app_name=question.app_name, user_id=question.user_id,
                                                        query=question.text))  # fmt: skip
        return _hits(handle.matcher, question, [returned_entry(m) for m in found.memories], k)

    def reference(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"kind": "adk", "service": self.service, "options": dict(self.options), "embedder": self.embedder,
                "matching": MATCH_RULE}  # fmt: skip


def memlab_event_service(context: ServiceContext):
    """memlab's own event memory behind ADK's interface (memlab.adapters.adk.EventMemoryService), in a layer of
    the system's own, searched as an event system with default settings at the experiment's k, no cut-off."""
    from memlab.adapters.adk import EventMemoryService
    from memlab.events.memory import EventMemory

    memory = EventMemory(context.store, context.embedder, layer=f"adk:{context.name}")
    return EventMemoryService(memory, settings=SearchSettings(top_k=context.k), max_results=context.k)


# -- mem0 -----------------------------------------------------------------------------------------------------


def mem0_memory(dsn: str, collection: str, model_path: str, dimension: int, state: Path):
    """mem0's Memory on its pgvector store, embedding with the model folder through mem0's local embedder, its
    telemetry off, its LLM pointed at a closed loopback port (never called: raw messages only)."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(state))
    try:
        from mem0 import Memory
    except ImportError as exc:
        raise ConfigError(f"a `kind: mem0` system needs mem0 ({exc}): pip install 'memlab[systems]'") from None

    config = {
        "vector_store": {"provider": "pgvector", "config": {
            "connection_string": dsn, "collection_name": collection, "embedding_model_dims": dimension}},
        "embedder": {"provider": "huggingface", "config": {
            "model": model_path, "embedding_dims": dimension,
            "model_kwargs": {"local_files_only": True, "device": "cpu"}}},
        "llm": {"provider": "openai", "config": {"api_key": "no-llm", "openai_base_url": "http://127.0.0.1:9/v1"}},
        "history_db_path": str(state / "history.db"),
    }  # fmt: skip
    return Memory.from_config(config)


def _model_folder(embedder: Embedder) -> str:
    """The local folder of a sentence-transformers embedder's model, which mem0's huggingface embedder loads."""
    inner = embedder
    while hasattr(inner, "inner"):
        inner = inner.inner
    path = getattr(inner, "path", None)
    if path is None or not Path(path).is_dir():
        raise ConfigError(f"a mem0 system needs a local sentence-transformers model folder; embedder "
                          f"{getattr(embedder, 'model_id', embedder)!r} has none (use the default embedder)")
    return str(path)


@dataclass(frozen=True)
class Mem0System:
    name: str
    embedder: str = "default"
    threshold: float | None = None

    def build_key(self) -> tuple:
        return ("mem0", self.name, self.embedder)

    def build(self, env, dataset: Dataset) -> _Service:
        if env.store is None:
            raise ConfigError(f"system {self.name!r}: mem0 keeps its vectors in the run's database; this run has none")
        embedder = env.embedder(self.embedder)
        state = Path(tempfile.mkdtemp(prefix="memlab-mem0-"))  # its history database: nothing memlab reads
        collection = "mem0_" + "".join(c if c.isalnum() else "_" for c in f"{self.name}_{dataset.name}").lower()
        memory = mem0_memory(env.store.dsn, collection[:60], _model_folder(embedder), embedder.dimension, state)
        for session in _sessions(dataset, env.progress, self.name):
            for event in session.events:
                if not event.text:
                    continue
                memory.add([{"role": "user" if event.author == "user" else "assistant", "content": event.text}],
                           user_id=session.user_id, agent_id=session.app_name, run_id=session.id, infer=False,
                           metadata={"event_id": event.id, "session_id": session.id,
                                     "created_at": event.timestamp.isoformat()})  # fmt: skip
        return _Service(memory, EventMatcher.of(dataset))

    def search(self, handle: _Service, question: Question, vector: np.ndarray, k: int) -> ServiceHits:
        extra = {} if self.threshold is None else {"threshold": self.threshold}
        with handle.lock:
            found = handle.service.search(question.text, top_k=k,
                                          filters={"user_id": question.user_id, "agent_id": question.app_name},
                                          **extra)  # fmt: skip
        returned = []
        for item in found.get("results", []):
            meta = {**item, **(item.get("metadata") or {})}
            returned.append(Returned(text=str(item.get("memory", "")), entry_id=meta.get("event_id") or item.get("id"),
                                     session_id=meta.get("session_id") or item.get("run_id"),
                                     timestamp=_entry_time(meta.get("created_at"))))  # fmt: skip
        return _hits(handle.matcher, question, returned, k)

    def reference(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"kind": "mem0", "embedder": self.embedder, "add": "one raw message per event, infer=False",
                "search": "Memory.search(query, top_k=k, filters={user_id, agent_id})",
                "threshold": "mem0's default" if self.threshold is None else self.threshold,
                "matching": MATCH_RULE}  # fmt: skip


# -- config -----------------------------------------------------------------------------------------------------


def is_service_entry(raw: Mapping[str, Any]) -> bool:
    return raw.get("kind") in SERVICE_KINDS


def service_system_from_config(raw: Mapping[str, Any]) -> AdkSystem | Mem0System:
    """A black-box system from its config entry (`kind: adk` or `kind: mem0`), its keys checked."""
    name, kind = str(raw["name"]), raw["kind"]
    allowed = ADK_KEYS if kind == "adk" else MEM0_KEYS
    extra = set(raw) - allowed
    if extra:
        raise ConfigError(f"system {name!r}: {unknown_keys(extra, allowed)} for a {kind} system; allowed: "
                          f"{sorted(allowed)}")  # fmt: skip
    embedder = raw.get("embedder", "default")
    if not isinstance(embedder, str):
        raise ConfigError(f"system {name!r}: embedder must be the name of a configured embedder")
    if kind == "adk":
        service, options = raw.get("service"), raw.get("options") or {}
        module, _, factory = service.partition(":") if isinstance(service, str) else ("", "", "")
        if not isinstance(service, str) or not module or not factory:
            raise ConfigError(f"system {name!r}: a `kind: adk` system needs `service: \"module:factory\"` (e.g. "
                              f"`google.adk.memory:InMemoryMemoryService`), got {service!r}")  # fmt: skip
        if not isinstance(options, Mapping):
            raise ConfigError(f"system {name!r}: options must be a mapping of the factory's keyword arguments")
        return AdkSystem(name, service, tuple(sorted(options.items())), embedder)
    threshold = raw.get("threshold")
    if threshold is not None and (not isinstance(threshold, int | float) or not 0.0 <= float(threshold) <= 1.0):
        raise ConfigError(f"system {name!r}: threshold must be mem0's minimum score, a number from 0 to 1")
    return Mem0System(name, embedder, None if threshold is None else float(threshold))


__all__ = ["ADK_KEYS", "MEM0_KEYS", "SERVICE_KINDS", "AdkSystem", "Mem0System", "ServiceContext", "ServiceHits",
           "is_service_entry", "mem0_memory", "memlab_event_service", "service_system_from_config"]  # fmt: skip
