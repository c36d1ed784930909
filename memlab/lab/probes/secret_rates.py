"""The secret filter's rates on fixtures/secrets, and the same texts through a real ingest."""

from __future__ import annotations

from datetime import timedelta

import yaml

import memlab
from memlab.events import secrets as secret_scan
from memlab.lab.probes.concurrency import T0
from memlab.lab.probes.family import Family
from memlab.lab.probes.sizes import SECRET_GOALS

# -- secrets ----------------------------------------------------------------------------------------------------


def secrets_family(db: memlab.Store, embedder: memlab.Embedder) -> Family:
    rates = secret_scan.secret_filter_rates()
    family = Family("secrets", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in rates.items()
                                if not isinstance(v, list)}, goals=dict(SECRET_GOALS))  # fmt: skip
    family.notes += [f"missed ({split}, {kind}): {text[:60]!r}" for split, kind, text in rates["missed"][:10]]
    family.notes += [f"flagged ({split}): {text[:60]!r} as {kinds}" for split, text, kinds in rates["flagged"][:10]]
    folder = secret_scan.SECRET_CORPUS
    corpus = {
        "planted": [c["text"] for c in yaml.safe_load((folder / "credentials.yaml").read_text())["credentials"]],
        "ordinary": [o["text"] for o in yaml.safe_load((folder / "ordinary.yaml").read_text())["ordinary"]],
    }
    mem = memlab.EventMemory(db, embedder)
    for name, texts in corpus.items():
        session = memlab.Session("secrets", name, "s1", [
            memlab.Event(f"e{i}", "user", T0 + timedelta(seconds=i), text) for i, text in enumerate(texts)
        ])  # fmt: skip
        report = mem.add_session(session)
        family.figures[f"{name}_ingested"] = len(texts)
        family.figures[f"{name}_stored"] = report.added
        family.figures[f"{name}_skipped_as_secret"] = report.skipped.get("secret", 0)
    return family


