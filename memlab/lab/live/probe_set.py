"""The labelled set a probe asks, checked against the live store it probes.

Its questions name apps, users and event ids of the live store. The store is the truth: the users' events are
read back from it (read-only, scoped by app, user and layer in SQL), and a labelled event the store no longer holds
for that user and layer (erased, purged by retention) is stale. A stale label is taken out of its question's
relevant set; a question whose every label is stale is not asked at all, so it leaves the denominator instead of
counting as a miss. A user the store holds nothing of in the layer is an error (a wrong DSN, app, user or layer).
For a fact probe an event is also held while a fact observation of the user cites it (memlab.lab.live.probe_facts).

Labels come from a memlab JSONL file (its question records; session records are skipped) or from a data set of an
experiment config (any format `memlab eval` reads, judged sets included)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.config.parse import ExperimentConfig, load_config
from memlab.lab.datasets.formats.jsonl import load_questions
from memlab.lab.datasets.loaders import load_dataset
from memlab.lab.datasets.model import Dataset, Question, UserHistory
from memlab.lab.live.probe_facts import observed_units
from memlab.storage import unit_housekeeping as housekeeping
from memlab.storage.store import Store
from memlab.types import Event, Session

CONFIG_SUFFIXES = (".yaml", ".yml")
STALE_COLUMNS = ["question_id", "app_name", "user_id", "session_id", "event_id", "question_left_out"]
UserKey = tuple[str, str]


@dataclass
class ProbeSet:
    """The questions of a labelled set (labels as given), with the config they came from, if any."""

    name: str
    questions: list[Question]
    source: str
    format: str
    pool: dict[str, Any] | None = None
    config: ExperimentConfig | None = None


def load_probe_set(labels: str | Path, dataset: str | None = None) -> ProbeSet:
    """A memlab JSONL file's questions, or one data set of an experiment config (`dataset` names it when the
    config has several)."""
    path = Path(labels)
    if not path.exists():
        raise ConfigError(f"--labels {path}: no such file; give a memlab JSONL file of questions or an experiment "
                          "config (YAML) whose data set holds them")  # fmt: skip
    if path.suffix not in CONFIG_SUFFIXES:
        if dataset is not None:
            raise ConfigError(f"--dataset {dataset!r} picks a data set of an experiment config; {path} is a JSONL "
                              "file (one labelled set)")  # fmt: skip
        return ProbeSet(path.name.split(".")[0], load_questions(path), str(path), "memlab")
    config = load_config(path)
    specs = config.resolved["datasets"]
    names = [str(s.get("name")) for s in specs]
    if dataset is None and len(specs) != 1:
        raise ConfigError(f"{path} has {len(specs)} data sets ({', '.join(names)}); pick one with --dataset")
    if dataset is not None and dataset not in names:
        raise ConfigError(f"{path} has no data set {dataset!r}; it has {', '.join(names)}")
    spec = specs[0] if dataset is None else specs[names.index(dataset)]
    data = load_dataset(spec, config.base_dirs)
    return ProbeSet(data.name, data.questions, str(path), str(spec.get("format")), data.pool, config)


def stored_events(store: Store, users: Sequence[UserKey], layer: str, *, facts: bool = False
                  ) -> dict[UserKey, list[tuple]]:  # fmt: skip
    """(app, user) -> that user's stored units of `layer` (session, unit id, event ids, author, time, body), and
    with `facts` (a fact probe) the events the user's fact observations cite after them; a user with none is
    refused, every such user named with the layers they do have."""
    out: dict[UserKey, list[tuple]] = {}
    unknown: list[str] = []
    with store.connection() as conn:
        for app, user in dict.fromkeys(users):
            rows = housekeeping.stored_units(conn, app, user, layer)
            out[(app, user)] = rows = rows + observed_units(conn, app, user) if facts else rows
            if not rows:
                layers = housekeeping.stored_layers(conn, app, user)
                unknown.append(f"{app}/{user}" + (f" (has layers {layers})" if layers else " (nothing in any layer)"))
    if unknown:
        where = f"layer {layer!r} nor in fact memory" if facts else f"layer {layer!r}"
        raise ConfigError(f"the labels name {len(unknown)} user(s) this store holds nothing of in {where}: "
                          f"{', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}. Fix: check --dsn, the app "
                          "and user ids of the labels, and --layer; drop the questions of a user erased "
                          "entirely")  # fmt: skip
    return out


def _held(rows: list[tuple]) -> dict[str, set[str]]:
    """event id -> the sessions holding it, of one user's stored units."""
    held: dict[str, set[str]] = {}
    for session, _, event_ids, *_ in rows:
        for event in event_ids:
            held.setdefault(event, set()).add(session)
    return held


def drop_stale(questions: Sequence[Question], stored: Mapping[UserKey, list[tuple]]
               ) -> tuple[list[Question], pd.DataFrame]:  # fmt: skip
    """The questions with their stale labels taken out (a question left with none is left out), and the stale
    labels: question, app, user, session ('' where the label named none), event id ('' for a session label), and
    whether the question was left out."""
    kept: list[Question] = []
    stale: list[tuple] = []
    for q in questions:
        rows = stored[(q.app_name, q.user_id)]
        held = _held(rows)
        sessions = {r[0] for r in rows}
        live, gone = [], []
        for session, event in q.evidence:
            there = held.get(event, set())
            (live if (event in held if session is None else session in there) else gone).append((session, event))
        live_sessions = tuple(s for s in q.relevant_sessions if s in sessions)
        gone += [(s, "") for s in q.relevant_sessions if s not in sessions]
        left_out = not live if q.evidence else bool(q.relevant_sessions) and not live_sessions
        stale += [(q.id, q.app_name, q.user_id, s or "", e, left_out) for s, e in gone]
        if left_out:
            continue
        if gone:
            judged = tuple((s, e) for s, e in q.judged if e in held and (s is None or s in held[e]))
            q = replace(q, relevant=tuple(dict.fromkeys(e for _, e in live)), evidence=tuple(live),
                        relevant_sessions=live_sessions, judged=judged)  # fmt: skip
        kept.append(q)
    return kept, pd.DataFrame(stale, columns=STALE_COLUMNS)


EventKey = tuple[str, str, str | None, str]  # (app, user, session, event id); session None: any that holds it


def _sessions(app: str, user: str, rows: list[tuple], keep: Callable[[str, str], bool]) -> list[Session]:
    """A user's stored units as sessions of events (a chunk's events each carry the chunk's text), for the run
    folder's labels: each event's id (the memory sizes of the size breakdown) and, where `keep(session, event)`,
    its text (the viewer's)."""
    by_session: dict[str, dict[str, Event]] = {}
    for session, _, event_ids, author, at, body in rows:
        events = by_session.setdefault(session, {})
        for event in event_ids:
            events.setdefault(event, Event(id=event, author=author or "", timestamp=at,
                                           text=body if keep(session, event) else ""))  # fmt: skip
    return [Session(app_name=app, user_id=user, id=sid, events=list(events.values()))
            for sid, events in by_session.items()]  # fmt: skip


def shown_events(questions: Sequence[Question], hits: pd.DataFrame, k: int) -> set[EventKey]:
    """The events whose texts a probe's run folder keeps: the questions' labelled (and judged) events and the
    events of each hit within k. Every other memory of a labelled user stays in the store only, where erasure
    reaches it."""
    keys: set[EventKey] = set()
    for q in questions:
        keys.update((q.app_name, q.user_id, s, e) for s, e in (*q.evidence, *q.judged))
    if not len(hits):
        return keys
    user_of = {q.id: (q.app_name, q.user_id) for q in questions}
    within = hits[(hits["rank"] > 0) & (hits["rank"] <= k)]
    sessions = within["event_sessions"] if "event_sessions" in within.columns else [None] * len(within)
    for qid, events, held in zip(within.question_id, within.event_ids, sessions, strict=True):
        app, user = user_of[qid]
        held = list(held) if held is not None and len(held) == len(events) else [None] * len(events)
        keys.update((app, user, s, e) for s, e in zip(held, events, strict=True))
    return keys


def stored_dataset(probe: ProbeSet, questions: list[Question], stored: Mapping[UserKey, list[tuple]],
                   shown: set[EventKey] | None = None) -> Dataset:  # fmt: skip
    """The probe as a Dataset: the kept questions over the users' sessions as the store holds them, with the texts
    of the `shown` events only (None: every text)."""
    def keeper(app: str, user: str) -> Callable[[str, str], bool]:
        if shown is None:
            return lambda session, event: True
        return lambda session, event: (app, user, session, event) in shown or (app, user, None, event) in shown

    users = [UserHistory(app, user, _sessions(app, user, rows, keeper(app, user)), source="store")
             for (app, user), rows in stored.items()]  # fmt: skip
    return Dataset(probe.name, users, questions, pool=probe.pool)


__all__ = ["ProbeSet", "drop_stale", "load_probe_set", "shown_events", "stored_dataset", "stored_events"]
