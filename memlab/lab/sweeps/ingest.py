"""Ingest rate against the model's raw encode rate on the same texts, measured side by side in one run (a ratio:
the machine is noisy). Options: IngestOptions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.lab.base.options import option
from memlab.lab.datasets.model import Dataset
from memlab.lab.metrics.scoring import SCORE_COLUMNS
from memlab.lab.runs.folder import RunFolder, save_table
from memlab.lab.sweeps.base import Sweep, SweepContext
from memlab.lab.systems.ingest_timing import measure_ingest
from memlab.lab.systems.kinds import Env

METRICS = ("ingest_units_per_s", "raw_encode_per_s", "ratio", "texts")


@dataclass(frozen=True)
class IngestOptions:
    repeat: int = option(1, "copies of the sessions ingested", low=1, high=100)


class IngestSweep(Sweep):
    """Ingest units/s against the model's raw encode rate, one table per data set."""

    name = "ingest"
    measures = True
    options_type = IngestOptions

    def planned(self, options: dict[str, Any], config: dict[str, Any]) -> int:
        return int(options.get("repeat", 1))  # copies of the sessions ingested

    def measure(self, env: Env, dataset: Dataset, options: dict[str, Any], context: SweepContext,
                out: Path) -> None:  # fmt: skip
        embedder = env.embedder("default")
        bench = measure_ingest(env.store, getattr(embedder, "inner", embedder), dataset,
                               repeat=self.typed(options).repeat)  # fmt: skip
        save_table(out, "ingest", dataset.name, pd.DataFrame([bench.as_dict()]))

    def scores(self, folder: RunFolder, dataset: str, options: dict[str, Any], base: pd.DataFrame) -> pd.DataFrame:
        frame = folder.table("ingest", dataset)
        rows = []
        if frame is not None:
            r = frame.iloc[0]
            rows = [(dataset, "ingest", m, float(r[m]), int(r.texts)) for m in METRICS]
        return pd.DataFrame(rows, columns=SCORE_COLUMNS)

    def section(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
        frame = folder.table("ingest", dataset)
        if frame is None:
            return None
        r = frame.iloc[0]
        return (f"Ingest {r.ingest_units_per_s:.1f} units/s vs the model's raw encode rate {r.raw_encode_per_s:.1f} "
                f"texts/s on the same {int(r.texts)} texts: ratio {r.ratio:.2f} (the rest is filtering, secret "
                "scanning, bookkeeping and HNSW maintenance).")


__all__ = ["METRICS", "IngestSweep"]
