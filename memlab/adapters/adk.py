"""memlab as a Google ADK memory service (pip extra `adk`).

`EventMemoryService` and `FactMemoryService` implement every method of ADK's `BaseMemoryService`; blocking
database and model work runs in a worker thread, so the agent's event loop never waits on it. ADK's
`PreloadMemoryTool` injects every hit it gets, so the services cap and cut off themselves.
`preload_facts_callback` puts the fact block (data, not instructions) into each model request. Stale high-impact
facts (memlab.facts.staleness) sit under memlab's `STALE_HEADING`, in the block and in `search_memory`'s entries.

Returned memory text is data inside someone else's framing (ADK wraps it in `<PAST_CONVERSATIONS>`): event
text and authors go through `neutralize_fences`, so a stored `</PAST_CONVERSATIONS>` or `SYSTEM:` line cannot
close the fence or forge a turn; fact lines are safe by construction (`render_fact`). Fact memory ids are
`fact_id`s, percent-encoded, so they round-trip for any user id. A session of the reserved user `_domain` is
refused by `FactMemoryService` (ConfigError): app-wide facts are written with `FactMemory.add_domain_*`.

Input goes through the memories' own checks (`memlab.inputs`): ids, texts, lengths and timestamps a memory
would refuse raise `InputError` here too, and an ADK timestamp Python cannot turn into a time (1e20, NaN, a
malformed ISO string) raises `InputError` naming it instead of a ValueError or OverflowError."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path

try:
    from google.adk.memory import BaseMemoryService
    from google.adk.memory.base_memory_service import SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types
except ImportError as exc:  # pragma: no cover - depends on the extra
    raise ImportError("memlab.adapters.adk needs Google ADK: pip install 'memlab[adk]' (google-adk==2.13.0)") from exc

from memlab.erasure import forget_event
from memlab.events.answerability import AnswerabilityGate
from memlab.events.memory import EventMemory
from memlab.facts.ids import parse_fact_id
from memlab.facts.memory import FactHit, FactMemory
from memlab.facts.render import STALE_HEADING, neutralize_fences
from memlab.facts.types import DOMAIN_USER
from memlab.inputs import check_ids, check_text
from memlab.safety.redact import plain_digest
from memlab.types import Event, FunctionCall, FunctionResponse, InputError, SearchSettings, Session

# A recall-leaning cut-off for preloading with all-MiniLM-L6-v2, read off the cut-off sweep on memlab-synth (the
# ci suite; its figures are in docs/results.md): it keeps most of the reachable recall@10 and leaves few answerable
# questions with nothing, at the price of a hit on many no-answer questions. The strict rule (false memory <= 20%)
# picks a tighter cut-off that loses far more recall and drops the design article's own example (distance 0.70).
# The cap keeps the prompt small; tune both on your own data with `memlab eval`.
DEFAULT_MAX_DISTANCE = 0.75
DEFAULT_PRELOAD_CAP = 5
DIRECT_SESSION = "__direct__"
STALE_AUTHOR = "memlab"  # the author of the stale heading entry: memlab's own words, never a user's
STALE_HEADING_ID = "memlab:stale-facts"
MAX_AUTHOR_CHARS = 64


# -- converters -------------------------------------------------------------------------------------------


def event_from_adk(event) -> Event:
    """An ADK Event as memlab's: text parts joined; function calls and responses kept; `partial` kept."""
    parts = list(event.content.parts or []) if event.content is not None else []
    texts = [p.text for p in parts if getattr(p, "text", None)]
    calls = tuple(FunctionCall(p.function_call.name or "", dict(p.function_call.args or {}))
                  for p in parts if getattr(p, "function_call", None))  # fmt: skip
    responses = tuple(FunctionResponse(p.function_response.name or "", dict(p.function_response.response or {}))
                      for p in parts if getattr(p, "function_response", None))  # fmt: skip
    return Event(
        id=event.id or plain_digest(f"{event.invocation_id}{event.timestamp}"),
        author=event.author or "user",
        timestamp=_posix_time(event.timestamp, event.id),
        text="\n".join(texts) if texts else None,
        function_calls=calls,
        function_responses=responses,
        partial=bool(event.partial),
    )


def _posix_time(value: object, event_id: object) -> datetime:
    """An ADK event's timestamp (seconds since the epoch) as an aware datetime, or InputError."""
    try:
        return datetime.fromtimestamp(float(value), UTC)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError) as exc:
        raise InputError(f"timestamp {value!r} of an ADK event is not a time in seconds since 1970 that Python can "
                         f"read ({exc}); fix the event's clock", event_id=event_id) from None  # fmt: skip


def _iso_time(value: str, entry_id: object) -> datetime:
    """A MemoryEntry's ISO timestamp as an aware datetime (UTC when it has no offset), or InputError."""
    try:
        when = datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"timestamp {value!r} of a MemoryEntry is not an ISO 8601 time ({exc})",
                         event_id=entry_id) from None  # fmt: skip
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def session_from_adk(session) -> Session:
    return Session(session.app_name, session.user_id, session.id, [event_from_adk(e) for e in session.events])


def _entries_session(app_name: str, user_id: str, memories: Sequence[MemoryEntry]) -> Session:
    """Direct memory writes become user-authored events of a reserved session."""
    events = []
    for entry in memories:
        text = "\n".join(p.text for p in (entry.content.parts or []) if p.text)
        when = _iso_time(entry.timestamp, entry.id) if entry.timestamp else datetime.now(UTC)
        ident = entry.id or plain_digest(f"{user_id}|{text}")
        events.append(Event(id=ident, author=entry.author or "user", timestamp=when, text=text))
    return Session(app_name, user_id, DIRECT_SESSION, events)


def safe_author(author: str | None) -> str | None:
    """An author name as ADK prints it before memory text (`author: text`): one line, no tags, capped."""
    if author is None:
        return None
    name = re.sub(r"\s+", " ", neutralize_fences(author)).strip()[:MAX_AUTHOR_CHARS]
    return name or None


def _text_entry(text: str, *, author: str | None, timestamp: datetime | None, ident: str, meta: dict) -> MemoryEntry:
    return MemoryEntry(
        content=types.Content(role="user", parts=[types.Part(text=text)]),
        author=author,
        timestamp=timestamp.isoformat() if timestamp else None,
        id=ident,
        custom_metadata=meta,
    )


# -- services ---------------------------------------------------------------------------------------------


class _IngestingService(BaseMemoryService):
    """The three ways ADK hands memory in, all turned into a memlab Session for `_ingest`."""

    def _ingest(self, session: Session) -> object:  # pragma: no cover - overridden
        raise NotImplementedError

    async def add_session_to_memory(self, session) -> None:
        await asyncio.to_thread(self._ingest, session_from_adk(session))

    async def add_events_to_memory(self, *, app_name: str, user_id: str, events: Sequence,
                                   session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:  # fmt: skip
        session = Session(app_name, user_id, session_id or DIRECT_SESSION, [event_from_adk(e) for e in events])
        await asyncio.to_thread(self._ingest, session)

    async def add_memory(self, *, app_name: str, user_id: str, memories: Sequence[MemoryEntry],
                         custom_metadata: Mapping[str, object] | None = None) -> None:  # fmt: skip
        await asyncio.to_thread(self._ingest, _entries_session(app_name, user_id, memories))


class EventMemoryService(_IngestingService):
    """ADK memory backed by a memlab `EventMemory` (events or chunks) on PostgreSQL + pgvector."""

    def __init__(self, memory: EventMemory, *, settings: SearchSettings | None = None,
                 max_results: int = DEFAULT_PRELOAD_CAP, facts: FactMemory | None = None,
                 gate: AnswerabilityGate | str | Path | None = None) -> None:  # fmt: skip
        """`facts`: the fact memory fed from the same sessions, if any; deleting an event memory then also
        forgets the facts read from that event (and re-evaluates their keys). `gate`: an answerability gate
        (or the path of the `answerability.json` a retrieval sweep wrote): a query it judges unanswerable gets
        no memories. Without explicit `settings`, a gate brings the search settings it was fitted with (mode, time
        handling, query rendering, per-session cap, preferred author) and replaces the default distance cut-off."""
        self.memory = memory
        self.facts = facts
        self.gate = AnswerabilityGate.load(gate) if isinstance(gate, (str, Path)) else gate
        if settings is None and self.gate is not None:
            fitted = {f.name: self.gate.settings[f.name] for f in fields(SearchSettings)
                      if f.name in self.gate.settings and f.name not in ("top_k", "max_distance")}  # fmt: skip
            settings = SearchSettings(top_k=max_results, **fitted)
        self.settings = settings or SearchSettings(top_k=max_results, max_distance=DEFAULT_MAX_DISTANCE)
        self.max_results = max_results

    def _ingest(self, session: Session) -> object:
        return self.memory.add_session(session)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        hits = await asyncio.to_thread(self.memory.search, app_name, user_id, query, self.settings,
                                       asked_at=datetime.now(UTC), gate=self.gate)  # fmt: skip
        return SearchMemoryResponse(memories=[
            _text_entry(neutralize_fences(h.text), author=safe_author(h.author), timestamp=h.timestamp,
                        ident=h.unit_id,
                        meta={"distance": round(h.distance, 4), "session_id": h.session_id,
                              "event_ids": list(h.event_ids), "plan": hits.plan})
            for h in hits[: self.max_results]
        ])  # fmt: skip

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        if memory_id:
            await asyncio.to_thread(forget_event, app_name, user_id, memory_id, events=self.memory, facts=self.facts)


class FactMemoryService(_IngestingService):
    """ADK memory backed by memlab `FactMemory`: sessions are distilled into facts; searches return the
    current facts as dated one-line entries, author 'memory' for facts about the user and 'app_memory' for
    app-wide facts (`custom_metadata['about']` is 'user' or 'app'). Sessions of the reserved user `_domain`
    are refused (ConfigError)."""

    def __init__(self, facts: FactMemory, *, allow: Sequence[str] = (), max_results: int = 12) -> None:
        self.facts = facts
        self.allow = tuple(allow)
        self.max_results = max_results

    def _ingest(self, session: Session) -> object:
        return self.facts.add_session(session)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """Current facts first, then, if any, memlab's `STALE_HEADING` entry (author 'memlab') and the stale
        high-impact facts under it, each with its date (`custom_metadata['stale']`); PreloadMemoryTool prints
        them in that order, so the heading stands above exactly the facts to confirm."""
        hits = await asyncio.to_thread(self.facts.search, app_name, user_id, query, allow=self.allow,
                                       limit=self.max_results)  # fmt: skip
        fresh, stale = [h for h in hits if not h.stale], [h for h in hits if h.stale]
        heading = [_text_entry(STALE_HEADING, author=STALE_AUTHOR, timestamp=None, ident=STALE_HEADING_ID,
                               meta={"heading": "stale"})] if stale else []  # fmt: skip
        return SearchMemoryResponse(memories=[*map(_fact_entry, fresh), *heading, *map(_fact_entry, stale)])

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        if not memory_id:
            return
        check_ids(app_name, user_id)
        where = {"app_name": app_name, "user_id": user_id}
        check_text(memory_id, "the memory id", **where)
        try:
            owner, subject, predicate, value = parse_fact_id(memory_id)
        except ValueError as exc:  # InputError is a ValueError too: callers catching ValueError keep working
            raise InputError(str(exc), **where) from None
        if owner == DOMAIN_USER and user_id != DOMAIN_USER:
            raise InputError(f"memory id {memory_id!r} is an app-wide fact, not one of user {user_id!r}; delete it "
                             f"with FactMemory.delete_fact(app, {DOMAIN_USER!r}, ...)", **where)  # fmt: skip
        if owner != user_id:
            raise InputError(f"memory id {memory_id!r} is not a fact id of user {user_id!r}", **where)
        await asyncio.to_thread(self.facts.delete_fact, app_name, user_id, subject, predicate, value)


def _fact_entry(h: FactHit) -> MemoryEntry:
    """One served fact as an ADK entry: its dated line (safe by construction), author 'memory' or 'app_memory'."""
    return _text_entry(h.text, author="app_memory" if h.is_domain else "memory", timestamp=h.fact.confirmed_at,
                       ident=h.unit_id,
                       meta={"distance": round(h.distance, 4), "confidence": h.confidence, "basis": h.fact.basis,
                             "source_session": h.fact.source_session, "about": "app" if h.is_domain else "user",
                             "stale": h.stale})  # fmt: skip


def _turns_before(session, query: str, turns: int = 2) -> list[str]:
    """The texts of the session's last turns before the user's message `query` (the agent's question it may
    answer): the query log judges the query with them, as ingest judges a turn (never stored)."""
    texts = []
    for event in getattr(session, "events", None) or []:
        content = getattr(event, "content", None)
        text = " ".join(p.text for p in (getattr(content, "parts", None) or []) if getattr(p, "text", None))
        if text and not getattr(event, "partial", False):
            texts.append(text)
    if texts and texts[-1] == query:  # the user's message itself, already appended to the session
        texts.pop()
    return texts[-turns:]


def preload_facts_callback(facts: FactMemory, *, allow: Sequence[str] = (), limit: int = 12):
    """A `before_model_callback` that appends the fact block (capped, dated, data-not-instructions heading) to
    the model request. Works beside ADK's LoadMemoryTool and PreloadMemoryTool."""

    async def callback(callback_context, llm_request):
        content = callback_context.user_content
        query = " ".join(p.text for p in (content.parts or []) if p.text) if content is not None else ""
        session = callback_context.session
        before = _turns_before(session, query)
        block = await asyncio.to_thread(facts.preload_block, session.app_name, session.user_id, query,
                                        allow=tuple(allow), limit=limit, context=before)  # fmt: skip
        if block:
            llm_request.append_instructions([block])
        return None  # continue to the model

    return callback
