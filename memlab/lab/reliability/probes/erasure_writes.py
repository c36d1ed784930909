"""Write paths held to the erasure contract and the ingest filter, whichever way the data comes in.

- A `forget_user` that commits while a multi-batch `add_sessions` runs (the first-load COPY path and the normal
  path) or while a `bulk_load` runs wins over the whole call: no unit of the user is stored once it returned
  (`units_after_erasure`). The call is held at a gate (the embedder's first model call, or the load's rows after
  its first batches) while the erasure runs, so every run is the same interleaving.
- `bulk_load`, the fast path for imports, is no way around ingest's guards: a credential ingest refuses (alone,
  or a password given as the reply to a question) and a memory deleted with `delete_memory` are not stored
  (`bulk_guard_bypasses`).
- The query log refuses what ingest refuses, with the same context: a password typed as the reply to a question
  about it, after that question as the previous query or as the search's `context` (`secrets_in_query_log`)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np

import memlab
from memlab.events.units import Unit
from memlab.lab.reliability.probes.family import Family
from memlab.lab.reliability.probes.races import T0, WAIT, GatedEmbedder, race, session

BATCH = 8  # batch_units: the sessions below make several batches
SESSIONS, TURNS = 10, 4
TOPICS = ["garden shed", "piano lessons", "tax return", "flight to Lisbon", "dentist visit", "book club"]
CREDENTIAL = "use this key AKIAIOSFODNN7EXAMPLE for the bucket"
QUESTION = "What is the wifi password at the cabin?"
REPLY = "Tr0ub4dor&3Cabin"  # alone no credential; as the reply to QUESTION, one ingest refuses


class GatedRows:
    """Rows for `bulk_load` that stop at a gate after `before` rows: the load is between two of its batches."""

    def __init__(self, rows: list[tuple], before: int) -> None:
        self.rows, self.before = rows, before
        self.entered, self.gate = threading.Event(), threading.Event()

    def __iter__(self) -> Iterator[tuple]:
        for at, row in enumerate(self.rows):
            if at == self.before:
                self.entered.set()
                self.gate.wait(WAIT)
            yield row


def _texts(s: int) -> list[str]:
    return [f"Note {s}.{i}: the {TOPICS[(s + i) % len(TOPICS)]} moved to week {i}" for i in range(TURNS)]


def _held(store: memlab.Store, embedder: memlab.Embedder, app: str, user: str) -> list[memlab.Hit]:
    """Every unit the user holds in the event layer, read through the public search (an exact scan scores every
    row of the user)."""
    mem = memlab.EventMemory(store, embedder)
    probe = np.zeros(mem.model.dimension, dtype=np.float32)
    probe[0] = 1.0
    return mem.search_vector(app, user, probe, memlab.SearchSettings(top_k=1_000_000, strategy="exact"))


def _units(store: memlab.Store, embedder: memlab.Embedder, app: str, user: str) -> int:
    return len(_held(store, embedder, app, user))


def _rows(embedder: memlab.Embedder, app: str, user: str, units: list[Unit]) -> list[tuple]:
    vectors = embedder.embed_documents([u.embed_text for u in units])
    return [(app, user, u, v) for u, v in zip(units, vectors, strict=True)]


def _add_sessions_races(family: Family, db: memlab.Store, embedder: memlab.Embedder, app: str) -> None:
    for path in ("first-load", "normal"):
        user = f"add-{path}"
        gated = GatedEmbedder(embedder)
        mem = memlab.EventMemory(db, gated)
        if path == "normal":  # the user holds units already: the call is no first load
            gated.gate.set()
            mem.add_session(session(app, user, "before", _texts(99)))
            gated.entered.clear()
            gated.gate.clear()
        sessions = [session(app, user, f"s{s}", _texts(s), T0 + timedelta(days=s)) for s in range(SESSIONS)]
        _, report = race(gated, lambda m=mem, s=sessions: m.add_sessions(s, batch_units=BATCH),
                         lambda m=mem, u=user: m.forget_user(app, u))  # fmt: skip
        family.add("erasure_races")
        left = _units(db, embedder, app, user)
        if left:
            family.problem("units_after_erasure", f"add_sessions ({report.path}): {left} unit(s) stored after "
                                                  "forget_user returned")  # fmt: skip


def _bulk_load_race(family: Family, db: memlab.Store, embedder: memlab.Embedder, app: str) -> None:
    mem = memlab.EventMemory(db, embedder)
    user = "bulk-race"
    ids = [f"s{i // TURNS}-e{i % TURNS}" for i in range(3 * TURNS)]
    units = [Unit(eid.split("-")[0], eid, (eid,), "user", T0 + timedelta(minutes=i), text)
             for i, (eid, text) in enumerate(zip(ids, _texts(0) + _texts(1) + _texts(2), strict=True))]  # fmt: skip
    rows = GatedRows(_rows(embedder, app, user, units), before=TURNS)
    race(rows, lambda: mem.bulk_load(rows, batch_rows=2), lambda: mem.forget_user(app, user))
    family.add("erasure_races")
    left = _units(db, embedder, app, user)
    if left:
        family.problem("units_after_erasure", f"bulk_load: {left} unit(s) stored after forget_user returned")


def _bulk_load_guards(family: Family, db: memlab.Store, embedder: memlab.Embedder, app: str) -> None:
    mem = memlab.EventMemory(db, embedder)
    texts = ["I moved the piano lessons to Thursday evenings.", CREDENTIAL, QUESTION, REPLY]
    units = [Unit("s1", f"s1-e{i}", (f"s1-e{i}",), "user", T0 + timedelta(minutes=i), t) for i, t in enumerate(texts)]
    mem.bulk_load(_rows(embedder, app, "bulk-secrets", units))
    family.add("bulk_cases", 2)
    bodies = {hit.text for hit in _held(db, embedder, app, "bulk-secrets")}
    for what, text in (("a credential", CREDENTIAL), ("a password given as a reply", REPLY)):
        if text in bodies:
            family.problem("bulk_guard_bypasses", f"bulk_load stored {what} ingest refuses")
    user = "bulk-deleted"
    mem.add_session(session(app, user, "s1", texts[:1] + _texts(0)[:1]))
    mem.delete_memory(app, user, "s1-e0")
    again = [Unit("s1", "s1-e0", ("s1-e0",), "user", T0, texts[0]),
             Unit("s1", "import-0", ("s1-e0", "s1-e1"), "user", T0, f"{texts[0]}\n{_texts(0)[0]}")]  # fmt: skip
    mem.bulk_load(_rows(embedder, app, user, again))
    family.add("bulk_cases")
    back = sum("s1-e0" in hit.event_ids for hit in _held(db, embedder, app, user))
    if back:
        family.problem("bulk_guard_bypasses", f"bulk_load brought back {back} unit(s) of a deleted memory")


def _query_log(family: Family, db: memlab.Store, embedder: memlab.Embedder, app: str) -> None:
    log = memlab.QueryLog(enabled=True)
    memories = {"events": memlab.EventMemory(db, embedder, query_log=log),
                "facts": memlab.FactMemory(db, embedder, query_log=log)}  # fmt: skip
    for kind, mem in memories.items():
        mem.search(app, f"log-{kind}-1", QUESTION)
        mem.search(app, f"log-{kind}-1", REPLY)
        mem.search(app, f"log-{kind}-2", REPLY, context=[QUESTION])
        family.add("query_log_cases", 2)
        for user in (f"log-{kind}-1", f"log-{kind}-2"):
            if any(q.text == REPLY for q in memlab.events.logged_queries(db, app, user)):
                family.problem("secrets_in_query_log", f"{kind}: a password typed as the reply to a question was "
                                                       "recorded")  # fmt: skip


def erasure_writes_family(db: memlab.Store, embedder: memlab.Embedder, work: Path) -> Family:
    """Erasures against whole multi-batch calls and bulk loads; bulk_load and the query log against ingest's
    filter (see the module docstring)."""
    family = Family("erasure_writes",
                    must_be_zero=["units_after_erasure", "bulk_guard_bypasses", "secrets_in_query_log"])  # fmt: skip
    for name in (*family.must_be_zero, "erasure_races", "bulk_cases", "query_log_cases"):
        family.figures[name] = 0
    started = time.perf_counter()
    app = f"erasure-writes-{uuid.uuid4().hex[:10]}"
    _add_sessions_races(family, db, embedder, app)
    _bulk_load_race(family, db, embedder, app)
    _bulk_load_guards(family, db, embedder, app)
    _query_log(family, db, embedder, app)
    family.notes.append(f"add_sessions of {SESSIONS * TURNS} units in batches of {BATCH} (first-load and normal "
                        "paths) and a bulk_load in batches of 2, each held at a gate while forget_user ran")
    family.seconds = time.perf_counter() - started
    return family
