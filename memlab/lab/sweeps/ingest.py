"""Ingest rate against the model's raw encode rate on the same texts, measured side by side in one run (a ratio:
the machine is noisy). Options: `repeat` (copies of the sessions, default 1)."""

from __future__ import annotations

import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.bench.ingest import measure_ingest
from memlab.lab.folder import save_table

METRICS = ("ingest_units_per_s", "raw_encode_per_s", "ratio", "texts")


def check_options(options: dict, source: str = "<config>") -> None:
    repeat = options.get("repeat", 1)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= 100:
        raise ConfigError(f"{source}: options.ingest.repeat must be a whole number in 1..100 (copies of the "
                          f"sessions ingested), got {repeat!r}.")  # fmt: skip


def measure(env, dataset, options: dict, context, out) -> None:
    check_options(options)
    embedder = env.embedder("default")
    bench = measure_ingest(env.store, getattr(embedder, "inner", embedder), dataset, repeat=options.get("repeat", 1))
    save_table(out, "ingest", dataset.name, pd.DataFrame([bench.as_dict()]))


def scores(folder, dataset: str, options: dict, base: pd.DataFrame) -> pd.DataFrame:
    frame = folder.table("ingest", dataset)
    rows = []
    if frame is not None:
        r = frame.iloc[0]
        rows = [(dataset, "ingest", m, float(r[m]), int(r.texts)) for m in METRICS]
    return pd.DataFrame(rows, columns=["dataset", "system", "metric", "value", "questions"])


def section(folder, dataset: str, options: dict) -> str | None:
    frame = folder.table("ingest", dataset)
    if frame is None:
        return None
    r = frame.iloc[0]
    return (f"Ingest {r.ingest_units_per_s:.1f} units/s vs the model's raw encode rate {r.raw_encode_per_s:.1f} "
            f"texts/s on the same {int(r.texts)} texts: ratio {r.ratio:.2f} (the rest is filtering, secret scanning, "
            "bookkeeping and HNSW maintenance).")
