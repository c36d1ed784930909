"""A run folder's rankings and labels as TREC files, so trec_eval, ranx and ir-measures read them.

    <out>/<dataset>.qrels               qid 0 docid 1            (the relevant events of each answerable question)
    <out>/<dataset>__<system>.run       qid Q0 docid rank score tag
    <out>/export.json                   which file is which data set and system, and the id scheme

Documents are events, as memlab scores them: each question's hits mapped to their events in rank order (an event
at the rank of the first unit that holds it). The docid is the event's identity, `app/user/session/event`, each
part percent-encoded (`%`, `/`, whitespace and other reserved characters as %XX, UTF-8), so an event id that
repeats across sessions or users (`D1:3` in every conversation) names one document each. The qid is the question
id, percent-encoded the same way (question ids are unique within a data set; one qrels file per data set). The
score is rank-derived (events returned minus position, higher is better): hybrid and time-aware systems do not
rank by distance, and the events of one unit share a distance, so a distance score would let tools reorder ties.
A question that got no hit has no line in the run file: tools then leave it out of their means, where memlab
counts it as 0 (`trec_eval -c` counts it too). An event whose session the run could not record (a run folder of
an older format, memlab.lab.runs.format) is named as scoring names it: the label it matches on the id, else with
the session `*`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.base.identity import as_labelled
from memlab.lab.base.json_bounds import loads
from memlab.lab.base.outputs import RUN, folder_kind, is_empty_folder
from memlab.lab.datasets.model import Question
from memlab.lab.metrics.ranking import events_in_rank_order
from memlab.lab.runs.folder import RunFolder
from memlab.lab.runs.records import Run, slug

INDEX = "export.json"
Key = tuple[str, str]  # (session id, event id) within one question's app and user
UNKNOWN = "*"  # the session part of an event whose session is not known (never an encoded part: * is %2A)


def part(text: str) -> str:
    """One part of a qid or docid: percent-encoded so it holds no `/`, `%` or whitespace."""
    return quote(str(text), safe="")


def docid(app: str, user: str, session: str, event: str) -> str:
    """An event's document id: `app/user/session/event`, each part percent-encoded (an UNKNOWN session as is)."""
    return "/".join([part(app), part(user), session if session == UNKNOWN else part(session), part(event)])


def labels(q: Question) -> list[Key]:
    """A question's relevant events as (session, event); a label whose session is not known cannot be a TREC
    document and is refused."""
    out = []
    for session, event in q.evidence:
        if session is None:
            raise ConfigError(f"question {q.id!r}: relevant event {event!r} is in several sessions of user "
                              f"{q.user_id!r} (or in none) and its label does not say which; name the session in "
                              "the data set and run it again")  # fmt: skip
        out.append((str(session), str(event)))
    return list(dict.fromkeys(out))


def _hit_keys(row: pd.Series, gold: Sequence[Key]) -> list[Key]:
    """The (session, event) of each event of one hit, as scoring names it: an event whose session is not known
    is the label it matches on the id (memlab.lab.base.identity), else UNKNOWN."""
    keys = zip(row["event_sessions"], (str(e) for e in row["event_ids"]), strict=True)
    named = [as_labelled(gold, (s, e)) for s, e in keys]
    return [(UNKNOWN if s is None else str(s), e) for s, e in named]


def ranked_events(run: Run, questions: Iterable[Question]) -> dict[str, list[Key]]:
    """Question id -> its hits' events in rank order (each event once, at its first unit's rank)."""
    by_id = {q.id: q for q in questions}
    rows = run.frame[(run.frame["rank"] > 0) & run.frame.question_id.isin(by_id)].sort_values("rank", kind="stable")
    units: dict[str, list[list[Key]]] = {}
    gold = {qid: labels(q) for qid, q in by_id.items()}
    for _, row in rows.iterrows():
        units.setdefault(row.question_id, []).append(_hit_keys(row, gold[row.question_id]))
    return {qid: events_in_rank_order(found) for qid, found in units.items()}


def export_run(folder: str | Path, out: str | Path) -> list[dict[str, str]]:
    """Write every (data set, system) of a run folder as a TREC run file and each data set's labels as a qrels
    file under `out` (a new or empty folder, or an earlier export); returns what export.json lists."""
    source = RunFolder(Path(folder))
    if folder_kind(source.path) != RUN:
        raise ConfigError(f"--run {folder}: not a memlab run folder (no memlab manifest.json); give the folder of "
                          "a finished `memlab eval`.")  # fmt: skip
    read = [(dataset, source.questions(dataset), source.runs(dataset)) for dataset in source.datasets]
    gold = {(dataset, q.id): labels(q) for dataset, questions, _ in read for q in questions}
    target = _claim(Path(out))  # only once the run folder was read: one it refuses leaves nothing written
    target.mkdir(parents=True, exist_ok=True)
    files = []
    for dataset, questions, runs in read:
        qrels = target / f"{slug(dataset)}.qrels"
        with qrels.open("w", encoding="utf-8") as f:
            for q in questions:
                for session, event in gold[(dataset, q.id)]:
                    f.write(f"{part(q.id)} 0 {docid(q.app_name, q.user_id, session, event)} 1\n")
        by_id = {q.id: q for q in questions}
        for system, run in runs.items():
            path = target / f"{slug(dataset)}__{slug(system)}.run"
            tag = slug(system)
            with path.open("w", encoding="utf-8") as f:
                for qid, events in ranked_events(run, questions).items():
                    q = by_id[qid]
                    for i, (session, event) in enumerate(events):
                        f.write(f"{part(qid)} Q0 {docid(q.app_name, q.user_id, session, event)} {i + 1} "
                                f"{len(events) - i} {tag}\n")  # fmt: skip
            files.append({"dataset": dataset, "system": system, "run": path.name, "qrels": qrels.name})
    index = {"made_by": "memlab", "folder": "export", "source": str(source.path), "k": source.k,
             "docid": "app/user/session/event, each part percent-encoded (urllib.parse.quote, safe='')",
             "qid": "question id, percent-encoded", "files": files}  # fmt: skip
    (target / INDEX).write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return files


def _claim(out: Path) -> Path:
    """A new or empty folder, or one an earlier export wrote (its export.json says so; the files it listed are
    removed first, so a system no longer in the run leaves no stale file): never the user's files."""
    if not out.exists() and not out.is_symlink():
        return out
    if not out.is_dir():
        raise ConfigError(f"--out {out}: this is a file, not a folder; give a new or empty folder.")
    if is_empty_folder(out):
        return out
    try:
        earlier = loads((out / INDEX).read_text(encoding="utf-8"), str(out / INDEX), ConfigError)
    except (OSError, ValueError, ConfigError):
        earlier = None
    if not isinstance(earlier, dict) or earlier.get("folder") != "export":
        raise ConfigError(f"--out {out}: the folder is not empty and holds no memlab export ({INDEX}); memlab only "
                          "replaces its own exports, so nothing was written. Give a new or empty folder.")  # fmt: skip
    for entry in earlier.get("files", []):
        for name in (entry.get("run"), entry.get("qrels")):
            if isinstance(name, str) and "/" not in name and (out / name).is_file():
                (out / name).unlink()
    return out
