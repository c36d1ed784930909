"""A run folder, read back: labels, runs, tables and scores. Scoring and reports read only from here.

    runs/<dataset>__<system>.parquet   each question's hit list, one file per data set x system
    labels/<dataset>.questions.parquet the questions with their labels: each labelled event's id and session
    labels/<dataset>.events.parquet    app, user, session, event id of every event (memory size, texts)
    tables/<sweep>__<dataset>.parquet  what a sweep measured that is not a ranked list (filtered search, ingest)
    question_scores.parquet            per-question scores
    scores.csv / scores.parquet        long form: dataset, system, metric, group, group_value, value, questions
    systems.parquet                    each data set x system's role, sweep and parent (memlab.lab.systems.roles)
    metrics.json                       flat keys dataset/system/metric
    manifest.json, report.md, *.png

A folder is read in the current shape whatever memlab version wrote it: each file of an older format passes
memlab.lab.runs.format's upgrade step once, as it is read; a folder of a newer format is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.base.json_bounds import loads
from memlab.lab.base.redacted import write_parquet  # every run-folder file passes the redactor (memlab.safety.redact)
from memlab.lab.datasets.model import Dataset, Question
from memlab.lab.metrics.uncertainty import QuestionTable
from memlab.lab.runs.format import (
    GROUPS_RECORDED,
    ROLES_RECORDED,
    SESSIONS_RECORDED,
    configured_systems,
    derived_description,
    folder_version,
    upgrade_events,
    upgrade_labels,
    upgrade_question_scores,
    upgrade_run,
    upgrade_run_role,
    upgrade_scores,
    upgrade_scores_groups,
    upgrade_scores_roles,
    upgrade_table,
)
from memlab.lab.runs.records import Run, read_runs, slug
from memlab.lab.systems.roles import SYSTEMS_FILE, with_roles
from memlab.safety.clean_texts import holds_secret  # memoised: ingest scanned most of these texts already

TEXT_KEPT = 600  # characters of each event kept in the run folder, for the per-question viewer


def _shown(text: str | None) -> str:
    """The start of an event's text as the viewer shows it; a text holding a credential is withheld (memory never
    stores it either, and a report is shared more widely than a database)."""
    if not text:
        return ""
    return "[withheld: looks like a credential]" if holds_secret(text) else text[:TEXT_KEPT]


def save_labels(folder: Path, dataset: Dataset) -> None:
    """Questions, the event -> session map and the start of each event's text, so runs can be scored and
    inspected (report.html) without the source data."""
    labels = folder / "labels"
    labels.mkdir(parents=True, exist_ok=True)
    _check_labels_free(labels, dataset.name)
    pd.DataFrame(
        [{"id": q.id, "app_name": q.app_name, "user_id": q.user_id, "text": q.text, "relevant": list(q.relevant),
          "asked_at": q.asked_at.isoformat() if q.asked_at else None, "qtype": q.qtype, "fact_key": q.fact_key,
          "relevant_sessions": list(q.relevant_sessions), "answer": q.answer,
          "evidence_sessions": [s for s, _ in q.evidence], "evidence_events": [e for _, e in q.evidence],
          "judged_sessions": [s for s, _ in q.judged], "judged_events": [e for _, e in q.judged]}
         for q in dataset.questions]
    ).pipe(write_parquet, labels / f"{slug(dataset.name)}.questions.parquet")  # fmt: skip
    pd.DataFrame(
        [(s.app_name, s.user_id, s.id, e.id, e.author, _shown(e.text)) for s in dataset.sessions() for e in s.events],
        columns=["app_name", "user_id", "session_id", "event_id", "author", "text"],
    ).pipe(write_parquet, labels / f"{slug(dataset.name)}.events.parquet")  # fmt: skip
    (labels / f"{slug(dataset.name)}.name").write_text(dataset.name)


def _check_labels_free(labels: Path, name: str) -> None:
    """Two data sets whose names slug alike would share labels/, runs/ and tables/ files: refuse the second."""
    marker = labels / f"{slug(name)}.name"
    if marker.exists() and marker.read_text() != name:
        raise ConfigError(f"data sets {marker.read_text()!r} and {name!r} share the file name {slug(name)!r}; "
                          "rename one")  # fmt: skip


def save_table(folder: Path, sweep: str, dataset: str, frame: pd.DataFrame) -> Path:
    path = folder / "tables" / f"{sweep}__{slug(dataset)}.parquet"
    return write_parquet(frame, path)


def _pairs(sessions, events) -> tuple:
    """(session, event) pairs from the two saved lists (arrays once read back)."""
    return tuple(zip(list(sessions), list(events), strict=True))


T = TypeVar("T")


@dataclass
class RunFolder:
    """A run folder, read lazily. Whatever it reads or derives is computed once per folder object and kept in
    one memo (`memo`), files and derived tables alike; `forget` drops it all (after the folder was rewritten)."""

    path: Path
    _memos: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)  # a str from a notebook or the shell works too

    @property
    def manifest(self) -> dict:
        return self.memo("manifest", None, self._read_manifest)

    def _read_manifest(self) -> dict:
        """The manifest (none: {}), refused when its format is newer than this memlab reads."""
        file = self.path / "manifest.json"
        manifest = loads(file.read_text(), str(file), ConfigError) if file.exists() else {}
        if not isinstance(manifest, dict):
            raise ConfigError(f"{file}: not a run folder's manifest (a JSON object); run `memlab eval` again to "
                              "make the folder anew")  # fmt: skip
        folder_version(manifest, self.path)
        return manifest

    @property
    def version(self) -> int:
        """The format version the folder was written in (memlab.lab.runs.format)."""
        return folder_version(self.manifest, self.path)

    def current(self, read: T, upgrade: Callable[[], T], step: int = SESSIONS_RECORDED) -> T:
        """What was `read`, or `upgrade()` of it in a folder older than the format version `step` brings files to
        (run_format's steps)."""
        return read if self.version >= step else upgrade()

    def described(self, dataset: str, system: str) -> dict:
        """What a system of the run is, as the manifest records it (its role, sweep, parent and `describe()`:
        memlab.lab.experiment.run); a folder that recorded none (an older one, a probe's) gets what the format's
        upgrade step derives (memlab.lab.runs.format.derived_description)."""
        recorded = self.manifest.get("systems", {}).get(dataset, {})
        return recorded[system] if system in recorded else derived_description(system)

    @property
    def k(self) -> int:
        return int(self.manifest.get("config", {}).get("resolved", {}).get("k", 10))

    @property
    def plots(self) -> bool:
        """Whether the report's sections draw their PNGs: the config's `plots` (default true). A run nobody looks
        at the figures of (a test, a CI gate) saves drawing them; report.md then links none."""
        return bool(self.manifest.get("config", {}).get("resolved", {}).get("plots", True))

    def figure(self, name: str, alt: str, draw: Callable[[Path], object]) -> list[str]:
        """The report lines linking the PNG `name` of this folder, drawn by `draw(path)`: none, and nothing drawn,
        when the config says `plots: false` (the one place a section's figure asks `plots`)."""
        if not self.plots:
            return []
        draw(self.path / name)
        return ["", f"![{alt}]({name})"]

    @property
    def datasets(self) -> list[str]:
        """Data set names in config order (as the manifest lists them), else as found."""
        return self.memo("datasets", None, self._find_datasets)

    def _find_datasets(self) -> list[str]:
        listed = [d["name"] for d in self.manifest.get("datasets", [])]
        found = [p.read_text() for p in sorted((self.path / "labels").glob("*.name"))]
        return [d for d in listed if d in found] + [d for d in found if d not in listed]

    @property
    def all_runs(self) -> list[Run]:
        return self.memo("all_runs", None, self._read_runs)

    def _read_runs(self) -> list[Run]:
        configured = configured_systems(self.manifest)
        runs = [self.current(run, lambda r=run: self._upgrade_run(r)) for run in read_runs(self.path)]
        return [self.current(run, lambda r=run: upgrade_run_role(r, configured), ROLES_RECORDED) for run in runs]

    def _upgrade_run(self, run: Run) -> Run:
        return upgrade_run(run, lambda: self.questions(run.dataset), lambda: self.events(run.dataset),
                           self._where(run.path_in(self.path)))  # fmt: skip

    def _where(self, path: Path) -> str:
        return f"run folder {self.path}: {path.relative_to(self.path)}"

    def runs(self, dataset: str) -> dict[str, Run]:
        return {r.system: r for r in self.all_runs if r.dataset == dataset}

    def memo(self, name: str, key: Hashable, compute: Callable[[], T]) -> T:
        """A result derived from this folder's data, computed once per (name, key) and kept with the folder:
        the report's sections and the sweeps ask for the same derived tables repeatedly."""
        if (name, key) not in self._memos:
            self._memos[(name, key)] = compute()
        return self._memos[(name, key)]

    def forget(self) -> None:
        """Drop everything read or derived, so the next call reads the folder again."""
        self._memos.clear()

    def questions(self, dataset: str) -> list[Question]:
        """The data set's labelled questions (read once per folder: scorers and sections ask repeatedly)."""
        return self.memo("questions", dataset, lambda: self._read_questions(dataset))

    def _read_questions(self, dataset: str) -> list[Question]:
        """The labels as saved, each a (session, event) pair."""
        path = self.path / "labels" / f"{slug(dataset)}.questions.parquet"
        frame = pd.read_parquet(path)
        frame = self.current(frame, lambda: upgrade_labels(frame, self.events(dataset), self._where(path)))
        return [
            Question(id=r.id, app_name=r.app_name, user_id=r.user_id, text=r.text, relevant=tuple(r.relevant),
                     asked_at=datetime.fromisoformat(r.asked_at) if r.asked_at else None, qtype=r.qtype,
                     fact_key=r.fact_key, relevant_sessions=tuple(r.relevant_sessions), answer=r.answer,
                     evidence=_pairs(r.evidence_sessions, r.evidence_events),
                     judged=_pairs(r.judged_sessions, r.judged_events))
            for r in frame.itertuples(index=False)
        ]  # fmt: skip

    def events(self, dataset: str) -> pd.DataFrame:
        """App, user, session, event id, author and saved text of every event of the data set."""
        return self.memo("events", dataset, lambda: self._read_events(dataset))

    def _read_events(self, dataset: str) -> pd.DataFrame:
        path = self.path / "labels" / f"{slug(dataset)}.events.parquet"
        frame = pd.read_parquet(path)
        return self.current(frame, lambda: upgrade_events(frame, self._where(path)))

    def table(self, sweep: str, dataset: str) -> pd.DataFrame | None:
        path = self.path / "tables" / f"{sweep}__{slug(dataset)}.parquet"
        if not path.exists():
            return None
        frame = pd.read_parquet(path)
        return self.current(frame, lambda: upgrade_table(sweep, frame))

    @property
    def scores(self) -> pd.DataFrame:
        return self.memo("scores", None, self._read_scores)

    def _read_scores(self) -> pd.DataFrame:
        path = self.path / "scores.parquet"
        read = pd.read_parquet(path)
        renamed = self.current(read, lambda: upgrade_scores(read))
        frame = self.current(renamed, lambda: upgrade_scores_groups(renamed, self._where(path)), GROUPS_RECORDED)
        systems = self.path / SYSTEMS_FILE
        if systems.exists():
            return with_roles(frame, pd.read_parquet(systems))
        configured = configured_systems(self.manifest)
        return self.current(with_roles(frame, None), lambda: upgrade_scores_roles(frame, configured), ROLES_RECORDED)

    @property
    def question_scores(self) -> pd.DataFrame:
        """The per-question scores (none saved: an empty frame), each column under its metric's name."""
        return self.memo("question_scores", None, self._read_question_scores)

    def _read_question_scores(self) -> pd.DataFrame:
        path = self.path / "question_scores.parquet"
        return upgrade_question_scores(pd.read_parquet(path), self.version) if path.exists() else pd.DataFrame()

    @property
    def question_table(self):
        return self.memo("question_table", None, self._split_question_scores)

    def _split_question_scores(self):
        """The per-question scores split by (data set, system) once, for every interval and paired test."""
        return QuestionTable(self.question_scores)


def load_runs(folder: str | Path) -> list[Run]:
    """Every run saved in a run folder, in file order and in the current shape (memlab.lab.runs.format)."""
    return RunFolder(Path(folder)).all_runs
