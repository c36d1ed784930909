"""The ingest sets `memlab bench` measures, each described once: what it is (bench.md lists it), how its
sessions load and how many rounds are measured (the median round is reported)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memlab.errors import ConfigError
from memlab.lab.bench.corpora import EVENT_FIXTURES, LONGMEMEVAL_S_KU
from memlab.lab.datasets.formats.fixtures import load_event_fixtures
from memlab.lab.datasets.formats.longmemeval import load_longmemeval
from memlab.lab.datasets.loaders import CHECKOUT, load_dataset
from memlab.lab.datasets.model import Dataset


@dataclass(frozen=True)
class IngestSet:
    """One set of sessions the ingest bench measures."""

    description: str
    rounds: int
    load: Callable[[], Dataset]


# Rounds: a job of a second five times, the headline set of long turns nine times, the short turns in bulk fifteen
# times (a few seconds a round). On a shared 2-core host one round's ratio moves widely on the same code (the raw
# encodes around it move as much), and the median of a few rounds still straddles a goal such as 0.95; these
# counts are where the median settles (docs/results.md). bench.md shows each run's spread (`ratio q1..q3`).
INGEST_SETS: dict[str, IngestSet] = {
    "longmemeval-s": IngestSet(
        "3 LongMemEval-S haystacks: real long turns (about 1,200 distinct texts)", 9,
        lambda: load_longmemeval(CHECKOUT / LONGMEMEVAL_S_KU, limit=3),
    ),
    "synth-short": IngestSet(
        "24 memlab-synth users of up to 300 events: short generated turns in bulk (about 1,100 texts)", 15,
        lambda: load_dataset({"name": "synth-short", "format": "synth", "users": 24, "max_events": 300, "seed": 0}),
    ),
    "fixtures": IngestSet(
        "the event fixtures: short hand-written turns, one batch (162 texts), a small job", 5,
        lambda: load_event_fixtures(CHECKOUT / EVENT_FIXTURES),
    ),
}  # fmt: skip


def ingest_set(name: str) -> tuple[Dataset, int]:
    """The sessions of one ingest set and the rounds to measure."""
    if name not in INGEST_SETS:
        raise ConfigError(f"ingest set {name!r} is unknown; use one of {sorted(INGEST_SETS)}.")
    chosen = INGEST_SETS[name]
    return chosen.load(), chosen.rounds


def describe(name: str) -> str:
    """The set's one-line description for bench.md (the name itself for a set not listed)."""
    chosen = INGEST_SETS.get(name)
    return chosen.description if chosen else name
