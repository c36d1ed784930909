"""The format of a run folder and of a baseline, versioned, and the one step that brings an older one to the
current shape when it is read.

A run folder's manifest.json and a baseline file carry `format_version` (FORMAT_VERSION when this memlab writes
them); one without it is version 1. A reader never handles an older shape itself: `RunFolder` passes every
file of a version-1 folder through the `upgrade_*` step for it once (kept in the folder's memo), and the gate
reads metrics and baselines through `current_metrics` and `read_baseline`. Nothing is rewritten on disk. What
version 1 may lack, and how it is filled in:

- runs: each hit's `session_id` (None: not recorded) and `event_sessions`, each event's session being the one
  session of the user holding that event id, else None (not known: memlab.lab.base.identity matches it on the id,
  which is how such a run was scored when it was made); `lexical`, `coverage`, `score` (NaN: not measured).
- labels: each label's session (`evidence_*`, `judged_*`), resolved as above (the one session holding the id,
  or the one of the question's `relevant_sessions`; else None, matched on the id); the events' `author` and
  `text` (empty: none saved).
- tables: the facts sweep's stale and serving figures (NaN: not measured; no serving check ran), the answer
  sweep's `hits_read` (NaN: not recorded).
- scores, metrics.json and baselines: metric names memlab has renamed (memlab.lab.metrics.definitions'
  FORMER_NAMES) under their current name; a baseline of the flat {metric: number} form as {"metrics": ...}.

Version 2 (and 1) wrote the per-question scores (question_scores.parquet, a baseline's questions file) with some
columns under other names than their metric's; version 3 names every column by its metric. Such a table is read
with those columns renamed (FORMER_COLUMNS) and `empty_rate` taken from its `empty` column on answerable questions.

Versions 1 to 3 did not record what each system is (memlab.lab.systems.roles); such a folder's runs and scores get their
roles derived once, here, from the configured systems' names (main) and the names memlab gave the systems it made
(`derived_role`): this is the one place a system's name says what it is.

Versions 1 to 4 wrote a breakdown into the metric of scores.parquet (`recall@10[qtype=temporal]`); version 5 gives it
columns (`group`, `group_value`: memlab.lab.metrics.keys) beside the metric (`recall@10`). Such a scores file is read
with its breakdowns taken out of the metric into those columns (`upgrade_scores_groups`): this is the one place a
metric's name says what breakdown it is. metrics.json's flat keys are the same in every version. Version 5 also
records in the manifest what each system is (`systems`: its role, sweep, parent and description, such as a cut's
max_distance or what a system embeds); a folder without that record gets what its names say
(`derived_description`).

A folder or baseline of a newer version than this memlab reads, or a version-1 file missing what every version
held, is refused with one line: what, where, and what to do."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import memlab
from memlab.errors import ConfigError
from memlab.lab.base.identity import session_index
from memlab.lab.base.outputs import RUN, mark
from memlab.lab.datasets.model import Question
from memlab.lab.metrics.definitions import FORMER_COLUMNS, FORMER_NAMES
from memlab.lab.metrics.keys import GROUP_COLUMNS, label_key, metric_key, parse_key
from memlab.lab.runs.records import Run
from memlab.lab.systems.roles import CUT, MAIN, MEASURE, REFERENCE, ROLE_COLUMNS, SWEEP, SystemRole

FORMAT_VERSION = 5  # what this memlab writes; 1: everything written before the version was recorded
VERSION_KEY = "format_version"
UNVERSIONED = 1
# the version each step brings a file to: a file of an older folder passes that step when read
SESSIONS_RECORDED = 2  # hits and labels carry their sessions; metrics under their current names
METRIC_COLUMNS = 3  # every per-question score column named by its metric
ROLES_RECORDED = 4  # runs and scores record each system's role (memlab.lab.systems.roles)
GROUPS_RECORDED = 5  # scores give a breakdown its columns (group, group_value), not a part of the metric

# what every version-1 file held: without it a file cannot be brought to the current shape
RUN_REQUIRED = ("system", "question_id", "rank", "unit_id", "event_ids", "distance", "chars", "latency_ms", "plan")
LABELS_REQUIRED = ("id", "app_name", "user_id", "text", "relevant")
EVENTS_REQUIRED = ("app_name", "user_id", "session_id", "event_id")
SCORES_REQUIRED = ("dataset", "system", "metric", "value")
# columns version 1 may lack, with the value that says "not measured" (or "none")
_RUN_FILL = {"lexical": np.nan, "coverage": np.nan, "score": np.nan}
_LABELS_FILL = {"asked_at": None, "qtype": "default", "fact_key": None, "answer": None}
_STALE = {"key_questions": np.nan, "stale_served": np.nan, "replaced_questions": np.nan}
_TABLE_FILL: dict[str, dict[str, Any]] = {
    "facts": {**_STALE, "stale_answers": np.nan, "serving_checks": 0, "serving_failed": ""},
    "fact_yield": {**_STALE, "stale_recall": np.nan},
    "answers": {"hits_read": np.nan},
}


def run_mark() -> dict[str, Any]:
    """The fields every run folder's manifest.json starts with: memlab's mark and the format it is written in."""
    return {**mark(RUN), VERSION_KEY: FORMAT_VERSION}


def _version(raw: object, what: str, redo: str) -> int:
    """A format version as written (None: version 1), refused when it is not one or is newer than this memlab."""
    if raw is None:
        return UNVERSIONED
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < UNVERSIONED:
        raise ConfigError(f"{what}: {VERSION_KEY} {raw!r} is not a format version (a whole number from 1); the file "
                          f"was not written by memlab as it is: {redo}")  # fmt: skip
    if raw > FORMAT_VERSION:
        raise ConfigError(f"{what} is in format version {raw}, written by a newer memlab; this memlab "
                          f"({memlab.__version__}) reads format versions up to {FORMAT_VERSION}: upgrade memlab to "
                          f"read it, or {redo}")  # fmt: skip
    return raw


def folder_version(manifest: Mapping[str, Any], folder: Path) -> int:
    """The format version of a run folder, from its manifest (none there: version 1)."""
    return _version(manifest.get(VERSION_KEY), f"run folder {folder}",
                    "run `memlab eval` again with this memlab to make the folder anew")  # fmt: skip


def _cannot(where: str, missing: Sequence[str]) -> ConfigError:
    return ConfigError(f"{where} lacks {', '.join(missing)}, which every memlab run folder held, so it cannot be "
                       "read as a run: run `memlab eval` again to make the folder anew")  # fmt: skip


def _require(frame: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise _cannot(where, missing)


def _filled(frame: pd.DataFrame, fill: Mapping[str, Any]) -> pd.DataFrame:
    """`frame` with each column of `fill` it lacks, holding that value."""
    missing = {c: v for c, v in fill.items() if c not in frame.columns}
    return frame.assign(**missing) if missing else frame


def _place(event: str, holders: Sequence[str], relevant_sessions: Sequence[str]) -> str | None:
    """The session of an event given by id alone: the one session holding it, else the one of them the question's
    session labels name, else None (not known)."""
    if len(holders) == 1:
        return holders[0]
    narrowed = [s for s in holders if s in relevant_sessions]
    return narrowed[0] if len(narrowed) == 1 else None


def upgrade_events(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    """labels/<dataset>.events.parquet of a version-1 folder in the current shape."""
    _require(frame, EVENTS_REQUIRED, where)
    return _filled(frame, {"author": "", "text": None})


def upgrade_labels(frame: pd.DataFrame, events: pd.DataFrame, where: str) -> pd.DataFrame:
    """labels/<dataset>.questions.parquet of a version-1 folder in the current shape: every label as (session,
    event), its session resolved from the events file where it was saved without one."""
    _require(frame, LABELS_REQUIRED, where)
    frame = _filled(frame, _LABELS_FILL)
    empty = [[] for _ in range(len(frame))]
    if "relevant_sessions" not in frame.columns:
        frame = frame.assign(relevant_sessions=empty)
    if "evidence_events" not in frame.columns or "evidence_sessions" not in frame.columns:
        frame = frame.assign(evidence_events=[list(r) for r in frame.relevant],
                             evidence_sessions=[[None] * len(r) for r in frame.relevant])  # fmt: skip
    if "judged_events" not in frame.columns or "judged_sessions" not in frame.columns:
        frame = frame.assign(judged_events=empty, judged_sessions=empty)
    index = session_index(zip(events.app_name, events.user_id, events.session_id, events.event_id, strict=True))

    def placed(r, sessions, ids) -> list[str | None]:
        held = index.get((r.app_name, r.user_id), {})
        return [s if s is not None else _place(e, held.get(e, []), list(r.relevant_sessions))
                for s, e in zip(list(sessions), list(ids), strict=True)]  # fmt: skip

    rows = list(frame.itertuples(index=False))
    return frame.assign(
        evidence_sessions=[placed(r, r.evidence_sessions, r.evidence_events) for r in rows],
        judged_sessions=[placed(r, r.judged_sessions, r.judged_events) for r in rows],
    )


def _known(ids: list, sessions) -> bool:
    """Whether a hit's events all carry their session as saved (a hit of no event has nothing to know)."""
    if not ids:
        return True
    return sessions is not None and len(sessions) == len(ids) and all(s is not None for s in sessions)


def upgrade_run(run: Run, questions: Callable[[], Sequence[Question]], events: Callable[[], pd.DataFrame],
                where: str) -> Run:  # fmt: skip
    """A saved run of a version-1 folder in the current shape. Each event saved without its session gets the one
    session of the question's user holding that id, else None (not known); the labels and events are read only
    when some event needs them."""
    frame = run.frame
    _require(frame, RUN_REQUIRED, where)
    frame = _filled(frame, {**_RUN_FILL, "session_id": None})
    saved = list(frame.event_sessions) if "event_sessions" in frame.columns else [None] * len(frame)
    ids = [list(e) for e in frame.event_ids]
    sessions = [(list(s) if e else []) if _known(e, s) else None for e, s in zip(ids, saved, strict=True)]
    if any(s is None for s in sessions):
        asker = {q.id: (q.app_name, q.user_id) for q in questions()}
        ev = events()
        index = session_index(zip(ev.app_name, ev.user_id, ev.session_id, ev.event_id, strict=True))
        for i, (qid, found) in enumerate(zip(frame.question_id, saved, strict=True)):
            if sessions[i] is not None:
                continue
            given = list(found) if found is not None and len(found) == len(ids[i]) else [None] * len(ids[i])
            held = index.get(asker.get(qid, ("", "")), {})
            sessions[i] = [s if s is not None else _place(e, held.get(e, []), ()) for s, e in
                           zip(given, ids[i], strict=True)]  # fmt: skip
    return replace(run, frame=frame.assign(event_ids=ids, event_sessions=sessions))


def upgrade_table(sweep: str, frame: pd.DataFrame) -> pd.DataFrame:
    """A sweep's table (tables/<sweep>__<dataset>.parquet) of a version-1 folder in the current shape."""
    return _filled(frame, _TABLE_FILL.get(sweep, {}))


def current_metric(metric: str) -> str:
    """A metric (`name`, `name@k`, `name[group=value]`) under its current name (FORMER_NAMES)."""
    for former, now in FORMER_NAMES.items():
        if metric == former or metric.startswith((f"{former}@", f"{former}[")):
            return now + metric[len(former):]
    return metric


def current_key(key: str) -> str:
    """A `dataset/system/metric` key under its metric's current name."""
    parts = parse_key(key)
    if parts is None:
        return key
    return metric_key(parts.dataset, parts.system, current_metric(parts.metric), parts.group, parts.group_value)


def current_metrics(metrics: Mapping[str, Any], version: int) -> dict[str, Any]:
    """metrics.json's keys (or a baseline's) in the current shape: a renamed metric under its current name (a key
    already under the current name wins)."""
    if version >= SESSIONS_RECORDED:
        return dict(metrics)
    renamed, kept = {}, {}
    for key, value in metrics.items():
        current = current_key(key)
        (kept if current == key else renamed)[current] = value
    return {**renamed, **kept}


def upgrade_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """scores.parquet of a version-1 folder: each metric under its current name."""
    return frame.assign(metric=frame.metric.map(current_metric)) if "metric" in frame.columns else frame


def upgrade_scores_groups(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    """scores.parquet of a folder of versions 1 to 4 (a breakdown written into the metric, `recall@10[qtype=x]`)
    with the breakdown in GROUP_COLUMNS and the metric without it; a metric not of the registry's form stays as it
    is, over all questions."""
    _require(frame, SCORES_REQUIRED, where)
    if set(GROUP_COLUMNS) <= set(frame.columns):
        return frame
    parts = [label_key(str(m), str(d), str(s)) for d, s, m in zip(frame.dataset, frame.system, frame.metric,
                                                                   strict=True)]  # fmt: skip
    return frame.assign(metric=[p.metric if p is not None else str(m) for p, m in zip(parts, frame.metric,
                                                                                        strict=True)],
                        group=[p.group if p is not None else "" for p in parts],
                        group_value=[p.group_value if p is not None else "" for p in parts])  # fmt: skip


def upgrade_question_scores(frame: pd.DataFrame, version: int) -> pd.DataFrame:
    """Per-question scores (question_scores.parquet, a baseline's questions file) written in format `version`, in
    the current shape: each column under its metric's name."""
    if version >= METRIC_COLUMNS:
        return frame
    frame = frame.rename(columns={old: new for old, new in FORMER_COLUMNS.items()
                                  if old in frame.columns and new not in frame.columns})  # fmt: skip
    if {"empty", "answerable"} <= set(frame.columns) and "empty_rate" not in frame.columns:
        empty = pd.to_numeric(frame["empty"], errors="coerce").astype(float)
        frame = frame.assign(empty_rate=empty.where(frame["answerable"].astype(bool)))
    return frame


def derived_role(system: str, configured: Collection[str]) -> SystemRole:
    """The role of a system of a folder that did not record roles: a configured name is main; else the role the
    name memlab gave it says (a cut `<parent>@cut<d>` or `<parent>@cut-from-<set>`, the exact reference, a
    sweep's system or figures); else main."""
    if system in configured:
        return SystemRole(MAIN)
    if "@cut" in system:  # the cut-off sweep appends `@cut<d>` or `@cut-from-<data set>` to its parent's name
        marker = "@cut-from-" if "@cut-from-" in system else "@cut"
        return SystemRole(CUT, "cutoff", system.rsplit(marker, 1)[0])
    if system.startswith("faiss-exact"):
        return SystemRole(REFERENCE)
    for prefix, sweep in (("filtered:", "filtered"), ("extractor:", "facts"), ("answerability:", "retrieval"),
                          ("ingest", "ingest")):  # fmt: skip
        if system.startswith(prefix):
            return SystemRole(MEASURE, sweep)
    if system.startswith("event["):
        return SystemRole(SWEEP, "models")
    if "/" in system:
        return SystemRole(SWEEP, "retrieval")
    return SystemRole(MAIN)


def derived_description(system: str) -> dict[str, str]:
    """What a system of a folder that recorded no descriptions (before format 5, or a probe's) embeds, as the name
    memlab gave it says: the retrieval sweep's names start with their rendering; others embed the text."""
    return {"rendering": system.split("/")[0].split("+")[0] if "/" in system else "text"}


def configured_systems(manifest: Mapping[str, Any]) -> set[str]:
    """The names of a run folder's configured systems, as its manifest records them."""
    listed = manifest.get("config", {}).get("resolved", {}).get("systems") or []
    return {str(s.get("name")) for s in listed if isinstance(s, Mapping)}


def upgrade_run_role(run: Run, configured: Collection[str]) -> Run:
    """A saved run of a folder that did not record roles, with its role derived (`derived_role`)."""
    return run if run.role is not None else replace(run, role=derived_role(run.system, configured))


def upgrade_scores_roles(frame: pd.DataFrame, configured: Collection[str]) -> pd.DataFrame:
    """scores.parquet of a folder that did not record roles, with ROLE_COLUMNS derived (`derived_role`)."""
    if set(ROLE_COLUMNS) <= set(frame.columns) or "system" not in frame.columns:
        return frame
    found = {s: derived_role(str(s), configured) for s in dict.fromkeys(frame.system)}
    return frame.assign(role=frame.system.map(lambda s: found[s].role),
                        sweep=frame.system.map(lambda s: found[s].sweep or ""),
                        parent=frame.system.map(lambda s: found[s].parent or ""))  # fmt: skip


def baseline_roles(keys: Iterable[str]) -> dict[tuple[str, str], SystemRole]:
    """{(dataset, system): role} of a metrics file's keys: a baseline records no roles, so they are derived
    (`derived_role`); a run folder's recorded roles win over these wherever both name a system."""
    pairs = {(p.dataset, p.system) for k in keys if (p := parse_key(k)) is not None}
    return {pair: derived_role(pair[1], ()) for pair in pairs}


def baseline_version(data: object, path: Path) -> int:
    """The format version a baseline file was written in (a flat {metric: number} one: version 1)."""
    redo = f"make the baseline again with this memlab: `memlab baseline --run <run folder> --out {path}`"
    return _version(data.get(VERSION_KEY) if isinstance(data, dict) else None, f"baseline {path}", redo)


def read_baseline(data: object, path: Path) -> dict[str, Any]:
    """A baseline file's content in the current shape: {"format_version", "experiment", "metrics"}, from either
    form memlab wrote ({"experiment", "metrics"}, or version 1's flat {metric: number}). What is not a baseline
    is refused."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a metrics file (expected a JSON object of metric -> number).")
    version = baseline_version(data, path)
    metrics = data.get("metrics") if isinstance(data.get("metrics"), dict) else \
        {k: v for k, v in data.items() if k != VERSION_KEY}  # fmt: skip
    experiment = data.get("experiment") if isinstance(data.get("metrics"), dict) else None
    return {VERSION_KEY: FORMAT_VERSION, "experiment": experiment, "metrics": current_metrics(metrics, version)}


__all__ = ["FORMAT_VERSION", "GROUPS_RECORDED", "METRIC_COLUMNS", "ROLES_RECORDED", "SESSIONS_RECORDED",
           "VERSION_KEY", "baseline_roles", "baseline_version", "configured_systems", "current_key", "current_metric",
           "current_metrics", "derived_description", "derived_role", "folder_version", "read_baseline", "run_mark",
           "upgrade_events", "upgrade_labels", "upgrade_question_scores", "upgrade_run", "upgrade_run_role",
           "upgrade_scores", "upgrade_scores_groups", "upgrade_scores_roles", "upgrade_table"]
