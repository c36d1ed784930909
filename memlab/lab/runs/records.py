"""A run is data: each question's ranked hits from one system on one data set, saved before anything is scored.

One row per (question, rank) with the unit, its event ids, distance, characters and latency, and where they come
from: the unit's session and the session of each event id (an event is (app, user, session, event id), the app
and user being the question's; see memlab.lab.base.identity). A question that got nothing still leaves one row
(rank 0, no unit) carrying its latency. Runs are saved as parquet under
`runs/` of a run folder, so scores and reports are recomputed from them without querying again."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from rich.progress import track

from memlab.errors import ConfigError
from memlab.lab.base.redacted import write_parquet
from memlab.lab.datasets.model import Question
from memlab.lab.systems.roles import ROLE_COLUMNS, SystemRole, role_frame, role_of_row
from memlab.types import Hit

RUN_COLUMNS = [
    "system", "question_id", "rank", "unit_id", "event_ids", "distance", "chars", "latency_ms", "plan", "lexical",
    "coverage", "score",
]  # fmt: skip
SESSION_COLUMNS = ["session_id", "event_sessions"]  # the hit's session and each event's (None: not known)
LIST_COLUMNS = {"event_ids", "event_sessions"}  # a list per row
# a re-ranked system's runs only (memlab.lab.systems.rerank): the hit's re-ranker score beside its embedding distance,
# and
# per question (repeated on its rows) the model call's seconds, tokens, cache hit and the error it fell back on
RERANK_COLUMNS = ["rerank", "rerank_seconds", "rerank_tokens", "rerank_cached", "rerank_error"]

Searcher = Callable[[Question, np.ndarray], Sequence[Hit]]


def collect(
    system: str, search: Searcher, questions: Sequence[Question], vectors: dict[str, np.ndarray],
    *, progress: str | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Ask `search` every question (with its pre-embedded vector) and record the ranked hits (and, for a
    re-ranked system, what re-ranking cost: RERANK_COLUMNS)."""
    rows: list[tuple] = []
    reranked: list[tuple] = []
    items: Sequence[Question] = questions
    if progress:
        items = track(questions, description=progress, transient=True)
    for q in items:
        started = time.perf_counter()
        hits = search(q, vectors[q.id])
        latency = (time.perf_counter() - started) * 1000
        plan = getattr(hits, "plan", "")
        cost = getattr(hits, "rerank", None)
        asked = (np.nan, np.nan, None, None) if cost is None else (
            cost.seconds, np.nan if cost.tokens is None else cost.tokens, cost.cached, cost.error)  # fmt: skip
        if not hits:
            rows.append((system, q.id, 0, None, [], np.nan, 0, latency, plan, np.nan, np.nan, np.nan, None, []))
            reranked.append((np.nan, *asked))
        for rank, h in enumerate(hits, start=1):
            lexical = np.nan if getattr(h, "lexical", None) is None else h.lexical
            fused = np.nan if getattr(h, "score", None) is None else h.score
            coverage = np.nan if getattr(h, "coverage", None) is None else h.coverage
            rows.append((system, q.id, rank, h.unit_id, list(h.event_ids), h.distance, len(h.text), latency, plan,
                         lexical, coverage, fused, h.session_id, event_sessions(h)))  # fmt: skip
            reranked.append((np.nan if getattr(h, "rerank", None) is None else h.rerank, *asked))
    frame = pd.DataFrame(rows, columns=[*RUN_COLUMNS, *SESSION_COLUMNS])
    if any(r[1] == r[1] for r in reranked):  # some question was re-ranked (its seconds are not NaN)
        extra = pd.DataFrame(reranked, columns=RERANK_COLUMNS, index=frame.index)
        frame = pd.concat([frame, extra.astype({"rerank": float, "rerank_seconds": float, "rerank_tokens": float})],
                          axis=1)  # fmt: skip
    return frame


def event_sessions(hit: Hit) -> list[str | None]:
    """The session of each of a hit's event ids: its own list (a fact cites events of several sessions), else
    the unit's session (events, chunks and sessions lie in one)."""
    given = list(getattr(hit, "event_sessions", ()) or ())
    return given if len(given) == len(hit.event_ids) else [hit.session_id] * len(hit.event_ids)


def slug(name: str) -> str:
    """A file-name-safe form of a data set or system name (the name itself stays in the data)."""
    return re.sub(r"[^A-Za-z0-9._@=-]+", "_", name).strip("_") or "_"


@dataclass
class Run:
    """One system's answers to one data set's questions. `reference` names the exact system it is compared with;
    `role` says what the system is (memlab.lab.systems.roles; None: a run saved before roles were recorded, which the
    run
    folder's upgrade step gives one)."""

    dataset: str
    system: str
    frame: pd.DataFrame
    reference: str | None = None
    role: SystemRole | None = None

    def to_dataframe(self) -> pd.DataFrame:
        framed = self.frame.assign(dataset=self.dataset, system=self.system, reference=self.reference or "")
        return framed if self.role is None else role_frame(framed, self.role)

    def path_in(self, folder: Path) -> Path:
        return Path(folder) / "runs" / f"{slug(self.dataset)}__{slug(self.system)}.parquet"

    def save(self, folder: str | Path) -> Path:
        """Write the run; a file of another data set or system with the same file name is never replaced (two
        names that slug alike are a config error, also caught here for the systems sweeps add)."""
        path = self.path_in(Path(folder))
        if path.exists():
            before = pd.read_parquet(path, columns=["dataset", "system"]).head(1)
            if len(before) and (str(before.dataset.iloc[0]), str(before.system.iloc[0])) != (self.dataset, self.system):
                raise ConfigError(f"data set {self.dataset!r} x system {self.system!r} and data set "
                                  f"{before.dataset.iloc[0]!r} x system {before.system.iloc[0]!r} share the file "
                                  f"{path.name}; rename one")  # fmt: skip
        return write_parquet(self.to_dataframe(), path)  # through the redactor, like every run-folder file

    @classmethod
    def load(cls, path: str | Path) -> Run:
        """One saved run file as it is (a run folder's reader, memlab.lab.RunFolder, brings an older one to the
        current shape)."""
        frame = pd.read_parquet(path)
        for column in LIST_COLUMNS.intersection(frame.columns):  # parquet gives arrays back
            frame[column] = frame[column].map(lambda values: list(values) if values is not None else [])
        dataset, system = str(frame.dataset.iloc[0]), str(frame.system.iloc[0])
        reference = str(frame.reference.iloc[0]) or None if "reference" in frame else None
        role = role_of_row(next(frame.head(1).itertuples())) if set(ROLE_COLUMNS) <= set(frame.columns) else None
        kept = frame.drop(columns=["dataset", "reference", *ROLE_COLUMNS], errors="ignore")
        return cls(dataset, system, kept, reference, role)


def read_runs(folder: str | Path) -> list[Run]:
    """Every run file of a run folder as saved, in file order (memlab.lab.runs.load_runs reads them in the current
    shape)."""
    return [Run.load(p) for p in sorted((Path(folder) / "runs").glob("*.parquet"))]
