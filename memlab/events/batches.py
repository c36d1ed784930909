"""How `EventMemory.add_sessions` cuts its work: batches of sessions sized in the units they will embed
(events, or chunks for a chunk layer), small at both ends of a long job, and the texts of a batch sent to the
model in chunks; and the progress display of an ingest."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.progress import Progress

from memlab.events.units import window_starts
from memlab.types import Session


class IngestProgress:
    """One rich display of an ingest: texts embedded (advanced per chunk of the model's work, so it moves
    smoothly) and events written (advanced per batch). Totals grow as batches are filtered."""

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
FIRST_BATCH_SHARE = 8  # add_sessions' first and last batches hold about 1/8 of batch_units (batch_sessions)


def planned_units(session: Session, granularity: str = "event", size: int = 0, overlap: int = 0) -> int:
    """How many units `session` will embed at most: one per event, or one per chunk window (`size` events
    stepping by size - overlap). Counted before filtering, which is the batch's own first step."""
    n = len(session.events)
    return n if granularity == "event" else len(window_starts(n, size, overlap))


def batch_sessions(
    sessions: Sequence[Session],
    batch_units: int,
    units_of: Callable[[Session], int] = planned_units,
    *,
    ramp: bool = True,
) -> list[list[Session]]:
    """Group sessions, in order, into batches of about `batch_units` units (`units_of(session)`: what the model
    will embed, so a chunk layer's batches fill the model as an event layer's do). A job of more than one batch gets
    small batches at both ends: nothing overlaps the first batch's filtering and secret scan (the model has
    nothing to embed yet) or the last batch's write (the model is done), so the first batch holds about
    1/FIRST_BATCH_SHARE of `batch_units` and the last stretch of at most `batch_units` is halved down to that
    size. A job of one batch stays whole: split, its two halves' extra round trips and smaller model calls
    cost more than the overlap saves.
    `ramp=False` keeps every batch full (a first load: see `Ingest.add_checked`)."""
    weights = [units_of(s) for s in sessions]
    remaining = sum(weights)
    small = max(1, batch_units // FIRST_BATCH_SHARE) if remaining > batch_units and ramp else batch_units
    batches: list[list[Session]] = [[]]
    size, limit = 0, small
    for session, weight in zip(sessions, weights, strict=True):
        if batches[-1] and size >= limit:
            batches.append([])
            size = 0
            limit = batch_units if remaining > batch_units or not ramp else max(small, remaining // 2)
        batches[-1].append(session)
        size += weight
        remaining -= weight
    return batches
