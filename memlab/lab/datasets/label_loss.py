"""Labels that point outside the data, said wherever a data set is used. A loader drops a label naming an event the
data does not hold (a qrels row for a document the corpus lacks, a LoCoMo evidence id the conversation lacks, a
judged event the sessions no longer hold) and counts it in `Dataset.dropped`. Scores then count only the labels
kept: a query with 12 relevant documents of which 11 are missing reads recall 1.000 where trec_eval, counting all
12, gives 0.083. So every dropped reference is counted in the run's log, manifest and report (as `memlab
check-dataset` lists them), and a data set that lost most of its labels (more than MOSTLY) is refused: its scores
would measure the loader, not the memory."""

from __future__ import annotations

from typing import Any

from memlab.errors import FixtureError
from memlab.lab.datasets.model import Dataset

MOSTLY = 0.5  # a data set that lost more than this share of its labels is refused
EXAMPLES = 3


def _kinds(dataset: Dataset, kinds: list[str]) -> str:
    """`kind: count (first, second, ...)` for each kind, `; `-separated."""
    parts = []
    for kind in kinds:
        items = dataset.dropped[kind]
        shown = ", ".join(items[:EXAMPLES]) + (", ..." if len(items) > EXAMPLES else "")
        parts.append(f"{kind}: {len(items)} ({shown})")
    return "; ".join(parts)


def refuse_lost_labels(dataset: Dataset) -> None:
    """FixtureError when more than MOSTLY of the labels the source gave name events the data does not hold."""
    lost, given = dataset.label_loss()
    if not given or lost <= MOSTLY * given:
        return
    kinds = [k for k in dataset.label_kinds if dataset.dropped.get(k)]
    raise FixtureError(f"data set {dataset.name!r}: {lost} of {given} labels ({lost / given:.0%}) name events the data "
                       f"does not hold ({_kinds(dataset, kinds)}); scored on the {given - lost} left, recall would "
                       f"read far higher than trec_eval on the same labels, which counts all {given}. Refused: give "
                       "the labels and the data of the same corpus, split and version, or remove the stray "
                       "labels")  # fmt: skip


def dropped_warning(dataset: Dataset) -> str | None:
    """The run's warning naming every reference loading dropped, labels first with their share; None when
    nothing was dropped."""
    if not any(dataset.dropped.values()):
        return None
    lost, given = dataset.label_loss()
    labels = [k for k in dataset.label_kinds if dataset.dropped.get(k)]
    others = [k for k in dataset.dropped if k not in labels and dataset.dropped[k]]
    text = f"data set {dataset.name!r}: "
    if lost:
        text += (f"loading dropped {lost} of {given} labels ({lost / given:.0%}) that name events the data does not "
                 f"hold ({_kinds(dataset, labels)}); recall and every label-based score count only the "
                 f"{given - lost} kept, so they read higher than a scorer that counts every label (trec_eval on the "
                 "same labels). ")  # fmt: skip
    if others:
        text += f"{'Also dropped' if lost else 'Loading dropped'}: {_kinds(dataset, others)}. "
    return text + "Fix the labels or the data (`memlab check-dataset` lists what is dropped)."


def dropped_fields(dataset: Dataset) -> dict[str, Any]:
    """The manifest's record of what loading dropped: each kind's count, and the labels given and lost."""
    lost, given = dataset.label_loss()
    return {"dropped": {kind: len(items) for kind, items in dataset.dropped.items() if items},
            "labels_given": given, "labels_dropped": lost}  # fmt: skip


def label_line(dataset: Dataset) -> str | None:
    """`memlab check-dataset`'s line on the labels lost (None when the format counts none)."""
    lost, given = dataset.label_loss()
    if not given:
        return None
    return f"labels dropped (naming events the data does not hold): {lost} of {given} ({lost / given:.0%})"
