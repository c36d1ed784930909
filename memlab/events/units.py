"""Turn a session's kept events into memory units: one per event, or windows of consecutive events (chunks).

A unit is what gets embedded and stored. Its identity is (session id, `unit_id`), stable across re-ingests,
so the store's unique key makes adding the same session again a no-op. An event unit's id is the event id:
ADK event ids are unique within a session only, so the same id in another session is another unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memlab.errors import ConfigError
from memlab.types import Event, Session

EVENT_LAYER = "event"


@dataclass(frozen=True)
class Unit:
    """A piece of memory before it is embedded."""

    session_id: str
    unit_id: str
    event_ids: tuple[str, ...]
    author: str | None
    occurred_at: datetime
    body: str
    rendered: str | None = None  # the text embedded and indexed when it differs from the body (see renderings)

    @property
    def embed_text(self) -> str:
        """What the model embeds and full-text search indexes."""
        return self.body if self.rendered is None else self.rendered


def layer_name(granularity: str, chunk_size: int = 4, chunk_overlap: int = 1) -> str:
    """The stored name of a granularity: 'event', or 'chunk:<size>:<overlap>' (chunk settings never mix)."""
    if granularity == "event":
        return EVENT_LAYER
    if granularity == "chunk":
        if chunk_size < 1:
            raise ConfigError(f"chunk_size must be >= 1, got {chunk_size}.")
        if not 0 <= chunk_overlap < chunk_size:
            raise ConfigError(f"chunk_overlap must be in 0..chunk_size-1 ({chunk_size - 1}), got {chunk_overlap}.")
        return f"chunk:{chunk_size}:{chunk_overlap}"
    raise ConfigError(f"granularity {granularity!r} is unknown; use 'event' or 'chunk'.")


def event_units(session: Session, kept: list[Event]) -> list[Unit]:
    """One unit per kept event; the event id is the unit id (unique within the session: see kept_events)."""
    return [Unit(session.id, e.id, (e.id,), e.author, e.timestamp, (e.text or "").strip()) for e in kept]


def render_lines(events: list[Event]) -> str:
    """'author: text' lines, the form chunks (and later fact extraction) read."""
    return "\n".join(f"{e.author}: {(e.text or '').strip()}" for e in events)


def window_starts(n: int, size: int, overlap: int) -> list[int]:
    """Start positions of windows of `size` with `overlap` over n items; the last window reaches the end."""
    if n == 0:
        return []
    step = size - overlap
    starts = list(range(0, max(n - overlap, 1), step))
    return starts or [0]


def chunk_units(session: Session, kept: list[Event], size: int, overlap: int) -> list[Unit]:
    """Windows of `size` consecutive kept events, stepping by size - overlap.

    A chunk's id is its session and start position; the ids of the events it holds are kept with it, so a
    trailing chunk that grows when the session continues is recognised and replaced on the next ingest.
    """
    layer = layer_name("chunk", size, overlap)
    units = []
    for start in window_starts(len(kept), size, overlap):
        window = kept[start : start + size]
        authors = sorted({e.author for e in window})
        units.append(
            Unit(
                session_id=session.id,
                unit_id=f"{session.id}#{layer}@{start}",
                event_ids=tuple(e.id for e in window),
                author=authors[0] if len(authors) == 1 else ",".join(authors),
                occurred_at=window[-1].timestamp,
                body=render_lines(window),
            )
        )
    return units
