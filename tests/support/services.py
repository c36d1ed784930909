"""ADK memory services for the black-box system tests: a paraphrasing one, which stores each turn reworded (as a
memory that rewrites what it is given), so none of its hits can be matched back to a labelled event."""

from __future__ import annotations

from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types


def reworded(text: str) -> str:
    return "They mentioned that " + " ".join(reversed(text.split()))


class ParaphrasingMemoryService(BaseMemoryService):
    """Keeps every text turn reworded, no id, no time; a search returns every turn sharing a word with the query."""

    def __init__(self) -> None:
        self.turns: dict[tuple[str, str], list[str]] = {}

    async def add_session_to_memory(self, session) -> None:
        kept = self.turns.setdefault((session.app_name, session.user_id), [])
        kept.extend(reworded(p.text) for e in session.events for p in (e.content.parts or []) if p.text)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        words = {w.lower() for w in query.split()}
        found = [t for t in self.turns.get((app_name, user_id), []) if words & {w.lower() for w in t.split()}]
        return SearchMemoryResponse(memories=[
            MemoryEntry(content=types.Content(role="user", parts=[types.Part(text=t)])) for t in found])
