"""Embedding models side by side: the event system once per configured embedder (`embedders:` in the config),
on the same questions, each scored against FAISS exact over its own vectors. Options: ModelsOptions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memlab.lab.base.options import option
from memlab.lab.base.tables import markdown_table, pivot_scores
from memlab.lab.datasets.model import Dataset
from memlab.lab.runs.folder import RunFolder
from memlab.lab.sweeps.base import Sweep, SweepContext, distinct
from memlab.lab.systems.kinds import GRANULARITIES, EventSystem, System
from memlab.lab.systems.roles import SWEEP


@dataclass(frozen=True)
class ModelsOptions:
    embedders: list[str] | None = option(None, "the embedders compared, by name (default: every configured one)")
    granularity: str = option("event", "the unit each system remembers", choices=GRANULARITIES)


def system_name(embedder: str) -> str:
    return f"event[{embedder}]"


class ModelsSweep(Sweep):
    """The event system once per configured embedder."""

    name = "models"
    options_type = ModelsOptions

    def planned(self, options: dict[str, Any], config: dict[str, Any]) -> int:
        return distinct(options.get("embedders") or [e.get("name") for e in config.get("embedders") or [{}]])

    def systems(self, dataset: Dataset, options: dict[str, Any], context: SweepContext) -> list[System]:
        names = options.get("embedders") or context.embedder_names
        return [EventSystem(system_name(n), granularity=options.get("granularity", "event"), embedder=n)
                for n in names]  # fmt: skip

    def section(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
        k = folder.k
        scores = folder.scores[folder.scores.dataset == dataset]
        wanted = list(dict.fromkeys(scores[(scores.role == SWEEP) & (scores.sweep == self.name)].system))
        if not wanted:
            return None
        table = pivot_scores(scores, wanted, [f"recall@{k}", f"mrr@{k}", f"ndcg@{k}", "recall_vs_exact",
                                              "latency_ms_p50"])  # fmt: skip
        note = "" if len(wanted) > 1 else ("\n\nOne embedder configured: add more under `embedders:` (a local "
                                           "sentence-transformers folder or an OpenAI-compatible endpoint) to "
                                           "compare.")  # fmt: skip
        skipped = folder.manifest.get("skipped_embedders") or {}
        if skipped:
            note += "\n\nSkipped embedders: " + "; ".join(f"{n}: {why}" for n, why in skipped.items())
        return markdown_table(table) + note


__all__ = ["ModelsSweep", "system_name"]
