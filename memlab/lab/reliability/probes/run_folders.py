"""What a probe's run folder and its monitoring say, against what the store held and what ran: a small `memlab
probe` of a scratch store whose labelled users hold many unlabelled memories, then its folder scanned and its
claims checked.

- `unlabelled_memories_in_folder`: stored texts found anywhere in the folder that are neither a labelled event
  nor a hit within k (those stay in the store, where erasure reaches them);
- `mislabelled_plans`: hits whose plan label is not the access path EXPLAIN shows for the same search (`hnsw`
  asked on a layer without its index, `auto` resolved to the graph; and, the positive control, with the index),
  or a probe whose ef_search did nothing without its report saying so;
- `silent_lost_labels`: labels deleted between two probes that the second neither counts in new_lost_labels nor
  alerts on (a question partly and one wholly lost; a probe that crashes on them counts all);
- `stale_textfiles_after_failure`: failed probes (a mistyped alert after the folder was begun, an unreachable
  server) whose Prometheus textfile still shows success or an earlier probe's metric (`failures_not_reached`: a
  case that did not fail, so it checked nothing);
- `redactor_crashes`: DSNs with empty or odd user and password parts (the embedded server's own form among
  them) that crash the redactor, or a probe given one;
- `ids_redacted`: ids of the shapes data sets use (`conv-47:D4:36`, `answer_abc123_2`, a uuid, `D1:3`) changed by
  the redactor in error lines that put a login word beside them; and `secrets_shown_beside_ids`, its positive
  control: a password of the same neighbourhood left visible.

A `memlab eval` folder is not scanned: it holds its data set's texts by design (the user's own file, not a copy
of a live store)."""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import psycopg

import memlab
from memlab.lab.live.probe import run_probe
from memlab.lab.live.textfile import write_textfile
from memlab.lab.reliability.probes.family import Family
from memlab.lab.runs.folder import RunFolder
from memlab.safety.redact import redact

MUST_BE_ZERO = ["unlabelled_memories_in_folder", "mislabelled_plans", "silent_lost_labels",
                "stale_textfiles_after_failure", "failures_not_reached", "redactor_crashes", "ids_redacted",
                "secrets_shown_beside_ids"]  # fmt: skip
LAYER = "run_folders"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
K = 2
UNLABELLED = 24  # unlabelled memories per labelled user
LABELLED = {"u1": ["I moved to Lyon last spring.", "Lyon has a lovely old town by the river.",
                   "Our flat in Lyon is near the Croix-Rousse hill."],
            "u2": ["My sister Ana plays the cello in an orchestra."]}  # fmt: skip
QUESTIONS = [("q1", "u1", "Which city do I live in?", ["s0-e0", "s0-e1", "s0-e2"]),
             ("q2", "u2", "What does my sister play?", ["s0-e0"])]  # fmt: skip
ODD_PARTS = ["", ":", "@", "%", "%ZZ", "'", '"', " ", "p@ss:w/rd", "ü", "\\", "a b", "#?&="]
ID_CONTEXTS = ["user conv-47: evidence ['{}']", "check-dataset: user conv-47 has no event {}>",
               "account {}: unknown session ({})", "login history of user alice: {{{}}}", "user x: ({}, {})."]
SECRETS_BESIDE_IDS = [("ssh root:hunter22!x", "hunter22!x"), ("user bob:Passw0rd!", "Passw0rd!"),
                      ("user conv-47: password answer_abc123_2", "answer_abc123_2"),
                      ("recovery codes: 56109-7c823 c9025-bed4b", "56109-7c823")]  # fmt: skip


def _chores(user: str) -> list[str]:
    return [f"Chore {i} of {user}: water the {['ferns', 'tomatoes', 'orchids'][i % 3]} in pot {i * 7 + 3}."
            for i in range(UNLABELLED)]  # fmt: skip


def _fill(db: memlab.Store, embedder: memlab.Embedder, app: str) -> None:
    memory = memlab.EventMemory(db, embedder, layer=LAYER)
    sessions = [memlab.Session(app, user, "s0", [memlab.Event(id=f"s0-e{i}", author="user", text=t,
                                                              timestamp=T0 + timedelta(minutes=i))
                                                 for i, t in enumerate([*texts, *_chores(user)])])
                for user, texts in LABELLED.items()]  # fmt: skip
    memory.add_sessions(sessions)


def _labels(path: Path, app: str) -> Path:
    path.write_text("".join(json.dumps({"type": "question", "id": qid, "app": app, "user": user, "text": text,
                                        "relevant": relevant}) + "\n" for qid, user, text, relevant in QUESTIONS))
    return path


def _folder_text(folder: Path) -> str:
    parts = []
    for path in folder.rglob("*"):
        if path.suffix == ".parquet":
            parts.append(pd.read_parquet(path).astype(str).to_csv())
        elif path.is_file() and path.suffix != ".png":
            parts.append(path.read_text(errors="replace"))
    return "\n".join(parts)


def _unlabelled_in_folder(family: Family, folder: Path) -> None:
    """Each chore text in the folder that is not a hit within k of its user counts."""
    run = RunFolder(folder)
    frames = [r.frame for r in run.all_runs]
    hits = pd.concat(frames) if frames else pd.DataFrame(columns=["question_id", "rank", "event_ids"])
    user_of = {qid: user for qid, user, _, _ in QUESTIONS}
    shown = {(user_of[q], e) for q, r, ids in zip(hits.question_id, hits["rank"], hits.event_ids, strict=True)
             if 0 < r <= K for e in ids}  # fmt: skip
    text = _folder_text(folder)
    for user, texts in LABELLED.items():
        for i, chore in enumerate(_chores(user)):
            family.add("memories_checked")
            if chore in text and (user, f"s0-e{len(texts) + i}") not in shown:
                family.problem("unlabelled_memories_in_folder", f"{user}'s unlabelled memory {i} is in {folder.name}")


def _check_plans(family: Family, db: memlab.Store, embedder: memlab.Embedder, app: str, folder: Path,
                 indexed: bool) -> None:  # fmt: skip
    """Each saved plan label against EXPLAIN of the same search on the read-only store, and direct searches of
    the strategies that may walk the graph."""
    asked = [memlab.SearchSettings(strategy="hnsw", ef_search=123), memlab.SearchSettings(exact_below=0),
             memlab.SearchSettings(strategy="hnsw", mode="hybrid")]  # fmt: skip
    run = RunFolder(folder)
    text = {qid: (user, q) for qid, user, q, _ in QUESTIONS}
    with memlab.open_store(db.dsn, read_only=True) as ro:
        memory = memlab.EventMemory(ro, embedder, layer=LAYER)
        for frame in (r.frame for r in run.all_runs):
            for qid, plan in frame.drop_duplicates("question_id")[["question_id", "plan"]].itertuples(index=False):
                user, query = text[qid]
                path = memory.explain(app, user, query, asked[0]).access_path
                family.add("plans_checked")
                if (plan == "hnsw") != (path == "hnsw"):
                    family.problem("mislabelled_plans", f"probe {qid}: labelled {plan!r}, EXPLAIN {path!r}")
        for settings in asked:
            hits = memory.search(app, "u1", "Which city do I live in?", settings)
            path = memory.explain(app, "u1", "Which city do I live in?", settings).access_path
            family.add("plans_checked")
            if (hits.plan.split("+")[0] == "hnsw") != (path == "hnsw"):
                family.problem("mislabelled_plans", f"{settings.strategy}: labelled {hits.plan!r}, EXPLAIN {path!r}")
    labelled = {p for r in run.all_runs for p in r.frame.plan}
    family.add("hnsw_plans_seen", int("hnsw" in labelled))
    if indexed and "hnsw" not in labelled:
        family.problem("mislabelled_plans", f"with the index built, the probe's plans were {sorted(labelled)}")
    notes = " ".join(run.manifest.get("probe", {}).get("plan_notes", []))
    if not indexed and "ef_search 123 had no effect" not in notes:
        family.problem("mislabelled_plans", "a probe whose ef_search did nothing does not say so")


def _samples(path: Path) -> dict[str, list[float]]:
    """Sample name -> values of a textfile (a plain reading: the family needs no Prometheus client)."""
    out: dict[str, list[float]] = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            out.setdefault(name, []).append(float(line.rsplit(" ", 1)[1]))
    return out


def _failures(family: Family, db: memlab.Store, embedder: memlab.Embedder, labels: Path, work: Path,
              prom: Path) -> None:  # fmt: skip
    """Probes that fail after a good one: each must leave the textfile saying failed, with no metric."""
    bad = {"a mistyped alert": dict(dsn=db.dsn, alerts=["recal@10<0.5"]),
           "an unreachable server": dict(dsn="postgresql://probe:@127.0.0.1:1/memlab")}  # fmt: skip
    for name, given in bad.items():
        write_textfile(prom, [("app", "recall@10", 1.0)], run_time=datetime.now(UTC), questions=2,
                       stale_labels=0)  # fmt: skip  (what the previous, good probe left)
        try:
            run_probe(labels, work / f"failed-{name.replace(' ', '-')}", embedder=embedder, k=K, layer=LAYER,
                      health=False, textfile=prom, **given)  # type: ignore[arg-type]  # fmt: skip
        except memlab.MemlabError:
            family.add("failures_checked")
        else:  # the case meant nothing: that probe did not fail
            family.problem("failures_not_reached", f"a probe with {name} finished")
            continue
        samples = _samples(prom)
        if samples.get("memlab_probe_success") != [0.0] or samples.get("memlab_probe_metric"):
            family.problem("stale_textfiles_after_failure", f"{name}: the textfile still reads {samples}")


def _lost_labels(family: Family, db: memlab.Store, embedder: memlab.Embedder, app: str, labels: Path,
                 before: Path, work: Path) -> None:  # fmt: skip
    """Delete two of q1's three labels and q2's only one, probe against `before`: all three must be new lost
    labels, and the built-in alert must fire."""
    memory = memlab.EventMemory(db, embedder, layer=LAYER)
    deleted = [("u1", "s0-e1"), ("u1", "s0-e2"), ("u2", "s0-e0")]
    for user, event in deleted:
        memory.delete_memory(app, user, event, session_id="s0")
    try:
        after = run_probe(labels, work / "after", dsn=db.dsn, embedder=embedder, k=K, layer=LAYER, health=False,
                          against=before)  # fmt: skip
    except Exception as exc:  # a crash on lost labels reports none of them
        family.problem("silent_lost_labels", f"{len(deleted)} lost: the probe failed ({type(exc).__name__}: {exc})")
        return
    family.add("lost_labels_checked", len(deleted))
    counted = int(after.metrics.get("new_lost_labels", 0))
    if counted < len(deleted):
        family.problem("silent_lost_labels", f"{len(deleted) - counted} of {len(deleted)} lost labels not counted")
    if not any(a.fired and a.alert.metric == "new_lost_labels" for a in after.alerts):
        family.problem("silent_lost_labels", "labels lost since the previous probe fired no alert")


def _redactor(family: Family, db: memlab.Store, embedder: memlab.Embedder, labels: Path, work: Path) -> None:
    for user in ODD_PARTS:
        for password in ODD_PARTS:
            for dsn in (f"postgresql://{user}:{password}@localhost/db", f"host=h user={user} password={password}"):
                family.add("dsns_checked")
                try:
                    redact(f"cannot reach {dsn}: refused")
                except Exception as exc:
                    family.problem("redactor_crashes", f"{dsn!r}: {type(exc).__name__}: {exc}")
    parts = psycopg.conninfo.conninfo_to_dict(db.dsn)
    empty = (f"postgresql://{parts.get('user', 'postgres')}:@/{parts.get('dbname', 'postgres')}?host="
             f"{parts.get('host', 'localhost')}" + (f"&port={parts['port']}" if parts.get("port") else ""))
    try:  # the embedded server's own form: an empty password (refused or run, never a traceback)
        run_probe(labels, work / "empty-password", dsn=empty, embedder=embedder, k=K, layer=LAYER, health=False)
    except memlab.MemlabError:
        pass
    except Exception as exc:
        family.problem("redactor_crashes", f"a probe given {empty!r}: {type(exc).__name__}: {exc}")


def _ids(family: Family) -> None:
    rng = random.Random(7)
    ids = ["conv-47:D4:36", "D1:3", "answer_abc123_2", "conv-26:session_4"]
    ids += [f"conv-{rng.randint(1, 99)}:D{rng.randint(1, 40)}:{rng.randint(1, 400)}" for _ in range(20)]
    ids += [f"answer_{rng.getrandbits(32):08x}_{rng.randint(0, 9)}" for _ in range(10)]
    ids += [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(10)]
    for ident in ids:
        for context in ID_CONTEXTS:
            text = context.format(ident, ident)
            family.add("ids_checked")
            if redact(text) != text:
                family.problem("ids_redacted", f"{text!r} -> {redact(text)!r}")
    for text, secret in SECRETS_BESIDE_IDS:
        if secret in redact(text):
            family.problem("secrets_shown_beside_ids", f"{text!r} -> {redact(text)!r}")


def run_folders_family(db: memlab.Store, embedder: memlab.Embedder, work: Path) -> Family:
    """See the module docstring."""
    family = Family("run_folders", {name: 0 for name in MUST_BE_ZERO}, must_be_zero=list(MUST_BE_ZERO))
    work = Path(work) / f"run_folders-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    app = f"rf-{uuid.uuid4().hex[:8]}"
    _fill(db, embedder, app)
    labels = _labels(work / "labels.jsonl", app)
    first = run_probe(labels, work / "first", dsn=db.dsn, embedder=embedder, k=K, layer=LAYER, strategy="hnsw",
                      ef_search=123, health=False)  # fmt: skip
    _unlabelled_in_folder(family, first.folder)
    _check_plans(family, db, embedder, app, first.folder, indexed=False)
    _failures(family, db, embedder, labels, work, work / "memlab.prom")
    _redactor(family, db, embedder, labels, work)
    _ids(family)
    memlab.EventMemory(db, embedder, layer=LAYER).search(app, "u1", "city", memlab.SearchSettings(strategy="hnsw"))
    indexed = run_probe(labels, work / "indexed", dsn=db.dsn, embedder=embedder, k=K, layer=LAYER,
                        strategy="hnsw", health=False)  # fmt: skip  (the index now exists: labels must say hnsw)
    _check_plans(family, db, embedder, app, indexed.folder, indexed=True)
    _lost_labels(family, db, embedder, app, labels, indexed.folder, work)
    _unlabelled_in_folder(family, work / "after")
    return family


__all__ = ["MUST_BE_ZERO", "run_folders_family"]
