"""The secret filter's rates on a labelled corpus (the checkout's fixtures/secrets), and the same texts through a
real ingest. The corpus is part of the checkout, not of the installed library: the library only scans."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import yaml

import memlab
from memlab.lab.datasets.loaders import CHECKOUT
from memlab.lab.reliability.probes.concurrency import T0
from memlab.lab.reliability.probes.family import Family
from memlab.lab.reliability.probes.sizes import SECRET_GOALS

SECRET_CORPUS = CHECKOUT / "fixtures" / "secrets"  # the checkout's labelled corpus (an editable install has it)
CORPUS_FILES = ("credentials.yaml", "ordinary.yaml")


def secret_corpus(folder: str | Path | None = None) -> Path:
    """The labelled corpus folder: `folder`, else the checkout's fixtures/secrets. A folder without both files
    raises a FixtureError naming it (an installed memlab has no checkout, so its default folder is missing)."""
    path = Path(folder) if folder is not None else SECRET_CORPUS
    missing = [name for name in CORPUS_FILES if not (path / name).is_file()]
    if missing:
        fix = ("pass the folder holding them" if folder is not None else
               "run from a memlab checkout (fixtures/secrets), or pass the folder of a labelled corpus")  # fmt: skip
        raise memlab.errors.FixtureError(f"secret corpus {path}: no {' or '.join(missing)} there; {fix}")
    return path


def secret_filter_rates(folder: str | Path | None = None) -> dict:
    """How the secret filter does on a labelled corpus (`secret_corpus(folder)`): the caught share of credentials
    (`credentials.yaml`, by split) and the flagged share of ordinary technical text (`ordinary.yaml`), with the
    misses and false alarms listed. Reads the files and scans; changes nothing."""
    folder = secret_corpus(folder)
    credentials = yaml.safe_load((folder / "credentials.yaml").read_text())["credentials"]
    ordinary = yaml.safe_load((folder / "ordinary.yaml").read_text())["ordinary"]

    def share(hits: int, total: int) -> float:
        return hits / total if total else 0.0

    out: dict = {"kinds": len({c["kind"] for c in credentials})}
    missed = [c for c in credentials if not memlab.find_secrets(c["text"])]
    flagged = [o for o in ordinary if memlab.find_secrets(o["text"])]
    for split in ("tuning", "held_out"):
        n = sum(c["split"] == split for c in credentials)
        out[f"{split}_credentials"] = n
        out[f"{split}_caught"] = share(n - sum(c["split"] == split for c in missed), n)
        m = sum(o["split"] == split for o in ordinary)
        out[f"{split}_ordinary"] = m
        out[f"{split}_ordinary_flagged"] = share(sum(o["split"] == split for o in flagged), m)
    out["credentials"] = len(credentials)
    out["caught"] = share(len(credentials) - len(missed), len(credentials))
    out["ordinary"] = len(ordinary)
    out["ordinary_flagged"] = share(len(flagged), len(ordinary))
    out["missed"] = [(c["split"], c["kind"], c["text"]) for c in missed]
    out["flagged"] = [(o["split"], o["text"], memlab.find_secrets(o["text"])) for o in flagged]
    return out


# -- secrets ----------------------------------------------------------------------------------------------------


def secrets_family(db: memlab.Store, embedder: memlab.Embedder) -> Family:
    rates = secret_filter_rates()
    family = Family("secrets", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in rates.items()
                                if not isinstance(v, list)}, goals=dict(SECRET_GOALS))  # fmt: skip
    family.notes += [f"missed ({split}, {kind}): {text[:60]!r}" for split, kind, text in rates["missed"][:10]]
    family.notes += [f"flagged ({split}): {text[:60]!r} as {kinds}" for split, text, kinds in rates["flagged"][:10]]
    folder = secret_corpus()
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


