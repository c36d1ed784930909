"""Which unit to remember: events, chunks of several sizes and overlaps, whole sessions, or extracted facts,
on the same questions with the same k, scored on recall, MRR and the context each hands the model.

Options: GranularityOptions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memlab.errors import ConfigError
from memlab.lab.base.options import option
from memlab.lab.base.plots import granularity_bars
from memlab.lab.base.tables import breakdown, markdown_table, pivot_scores
from memlab.lab.datasets.model import Dataset
from memlab.lab.runs.folder import RunFolder
from memlab.lab.runs.records import slug
from memlab.lab.sweeps.base import Sweep, SweepContext, distinct
from memlab.lab.systems.kinds import EXTRACTORS, EventSystem, FactSystem, System
from memlab.types import STRATEGIES, SearchSettings

DEFAULT_CHUNKS = ((2, 0), (4, 1), (8, 2))


@dataclass(frozen=True)
class GranularityOptions:
    chunks: list[list[int]] = option([list(c) for c in DEFAULT_CHUNKS], "the chunk systems, each [size, overlap] in "
                                     "events", low=0, high=1000)  # fmt: skip
    session: bool = option(True, "whole sessions as one unit too")
    extractors: list[str] = option(["rules"], "the fact systems' extractors (labelled replays the gold candidates "
                                              "where the data set has them)", choices=EXTRACTORS)  # fmt: skip
    strategy: str = option("auto", "the search strategy of every system", choices=STRATEGIES)

    def check(self, where: str) -> None:
        for i, chunk in enumerate(self.chunks):
            if len(chunk) != 2 or chunk[0] < 1 or chunk[1] >= chunk[0]:
                raise ConfigError(f"{where}.chunks[{i}] must be [size, overlap] with size >= 1 and overlap smaller "
                                  f"than size, got {chunk!r}; e.g. [4, 1]")  # fmt: skip


def names(options: dict[str, Any]) -> list[str]:
    chunks = [f"chunk{s}o{o}" for s, o in options.get("chunks", DEFAULT_CHUNKS)]
    return ["event", *chunks, *(["session"] if options.get("session", True) else []),
            *[f"facts-{e}" for e in options.get("extractors", ["rules"])]]  # fmt: skip


class GranularitySweep(Sweep):
    """Events, chunks, sessions and facts as the unit of memory, side by side."""

    name = "granularity"
    options_type = GranularityOptions

    def planned(self, options: dict[str, Any], config: dict[str, Any]) -> int:
        return (1 + distinct(list(options.get("chunks", DEFAULT_CHUNKS))) + bool(options.get("session", True))
                + distinct(options.get("extractors", ["rules"])))  # fmt: skip

    def systems(self, dataset: Dataset, options: dict[str, Any], context: SweepContext) -> list[System]:
        settings = SearchSettings(strategy=options.get("strategy", "auto"))
        out: list = [EventSystem("event", settings=settings)]
        for size, overlap in options.get("chunks", DEFAULT_CHUNKS):
            out.append(EventSystem(f"chunk{size}o{overlap}", "chunk", int(size), int(overlap), settings=settings))
        if options.get("session", True):
            out.append(EventSystem("session", "session", settings=settings))
        for extractor in options.get("extractors", ["rules"]):
            if extractor == "labelled" and not any(u.gold_candidates for u in dataset.users):
                continue  # nothing to replay: this data set has no gold candidates
            out.append(FactSystem(f"facts-{extractor}", extractor))
        return out

    def section(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
        k = folder.k
        scores = folder.scores[folder.scores.dataset == dataset]
        wanted = [n for n in names(options) if n in set(scores.system)]
        if not wanted:
            return None
        metrics = [f"recall@{k}", f"mrr@{k}", f"ndcg@{k}", f"session_recall@{k}", "empty_rate", "recall_vs_exact",
                   "context_chars", "correct_empty_rate"]  # fmt: skip
        table = pivot_scores(scores, wanted, metrics)
        bars = table.rename(columns={f"recall@{k}": "recall", f"mrr@{k}": "mrr"})
        parts = [markdown_table(table), *folder.figure(f"granularity__{slug(dataset)}.png", "granularity",
                                                       lambda png: granularity_bars(bars, png, k=k))]  # fmt: skip
        for group, label in (("qtype", "question type"), ("size", "memory size (events)")):
            wide = breakdown(scores, wanted, f"recall@{k}", group)
            if wide is not None:
                parts += ["", f"recall@{k} by {label}:", "", markdown_table(wide)]
        return "\n".join(parts)


__all__ = ["GranularitySweep", "names"]
