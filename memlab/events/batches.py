"""How `EventMemory.add_sessions` cuts its work: batches of sessions sized in the units they will embed
(events, or chunks for a chunk layer), and the texts of a batch sent to the model in chunks; and the progress
display of an ingest."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.progress import Progress

from memlab.events.units import window_starts
from memlab.types import Session


class IngestProgress:
    """One rich display of an ingest: texts embedded (advanced per chunk of the model's work, so it moves
    smoothly) and events written (advanced per batch). The texts' total grows as batches are filtered."""

    def __init__(self, layer: str, events: int) -> None:
        self._bar = Progress(transient=False)
        self._bar.start()
        self._embed = self._bar.add_task(f"embed ({layer})", total=0)
        self._write = self._bar.add_task(f"write ({layer})", total=max(events, 1))
        self._texts = 0

    def planned(self, texts: int) -> None:
        self._texts += texts
        self._bar.update(self._embed, total=self._texts)

    def embedded(self, texts: int) -> None:
        self._bar.advance(self._embed, texts)

    def advance(self, events: int) -> None:
        self._bar.advance(self._write, events)

    def close(self) -> None:
        self._bar.stop()


EMBED_CHUNK = 256  # texts per call to the model within a batch: progress moves per chunk, padding stays minimal


def planned_units(session: Session, granularity: str = "event", size: int = 0, overlap: int = 0) -> int:
    """How many units `session` will embed at most: one per event, or one per chunk window (`size` events
    stepping by size - overlap). Counted before filtering, which is the batch's own first step."""
    n = len(session.events)
    return n if granularity == "event" else len(window_starts(n, size, overlap))


def batch_sessions(
    sessions: Sequence[Session], batch_units: int, units_of: Callable[[Session], int] = planned_units
) -> list[list[Session]]:
    """Group sessions, in order and each whole, into batches of about `batch_units` units (`units_of(session)`:
    what the model will embed, so a chunk layer's batches fill the model as an event layer's do): a batch closes
    once it holds `batch_units`, the last holds what is left."""
    batches: list[list[Session]] = [[]]
    size = 0
    for session in sessions:
        if batches[-1] and size >= batch_units:
            batches.append([])
            size = 0
        batches[-1].append(session)
        size += units_of(session)
    return batches
