"""A probe's run folder keeps the texts scoring and the viewer need (labelled events, hits within k) and no
other memory of the labelled users: those stay in the store, where erasure reaches them. The memory size of each
user (the size breakdown) is still there."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pandas as pd

import memlab
from memlab import lab
from tests.conftest import make_session
from tests.integration.lab.live.test_probe_store import select_only_role

UNLABELLED = 60


def folder_text(folder: Path) -> str:
    """Every text the folder holds: files as text, parquet tables cell by cell."""
    parts = []
    for path in folder.rglob("*"):
        if path.suffix == ".parquet":
            parts.append(pd.read_parquet(path).astype(str).to_csv())
        elif path.is_file() and path.suffix != ".png":
            parts.append(path.read_text(errors="replace"))
    return "\n".join(parts)


def test_a_probe_folder_holds_no_unlabelled_memory(store, embedder, tmp_path):
    app = f"texts-{uuid.uuid4().hex[:8]}"
    chores = [f"Reminder number {i}: water the {['ferns', 'tomatoes', 'orchids'][i % 3]} in pot {i * 7 + 3}."
              for i in range(UNLABELLED)]  # fmt: skip
    labelled = "I moved to Lyon last spring."
    memlab.EventMemory(store, embedder).add_session(make_session(app, "u1", "s0", [labelled, *chores]))
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"type": "question", "id": "q1", "app": app, "user": "u1",
                                  "text": "Which city do I live in?", "relevant": ["s0-e0"]}) + "\n")  # fmt: skip
    result = lab.run_probe(labels, tmp_path / "run", dsn=select_only_role(store), embedder=embedder, k=1,
                           health=False)  # fmt: skip
    hits = lab.RunFolder(result.folder).all_runs[0].frame
    shown = {e for ids in hits[(hits["rank"] > 0) & (hits["rank"] <= 1)].event_ids for e in ids} | {"s0-e0"}
    text = folder_text(result.folder)
    assert labelled in text
    kept = [c for i, c in enumerate(chores) if c in text and f"s0-e{i + 1}" not in shown]
    assert kept == [], f"{len(kept)} unlabelled memories copied into the run folder"
    events = lab.RunFolder(result.folder).events(result.dataset)
    assert len(events) == UNLABELLED + 1  # every event's id: the memory size the breakdown reads
    assert lab.RunFolder(result.folder).question_scores.memory_units.tolist() == [UNLABELLED + 1]
