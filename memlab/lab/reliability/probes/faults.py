"""Faults: the embedded postmaster killed mid-ingest and an embedder failing mid-batch leave no half-written
session, lost write or extra unit."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import psutil

import memlab
from memlab.lab.reliability.probes.concurrency import T0, compare_units, fact_rows, memories, units
from memlab.lab.reliability.probes.family import Family
from memlab.lab.reliability.probes.server import postmaster_pid, private_server, signal_postmaster
from memlab.lab.reliability.probes.sizes import Size

# -- faults -----------------------------------------------------------------------------------------------------

FAULT_TEXTS = [
    "I am vegetarian these days and cook at home most evenings.",
    "Our payments service runs in eu-west-1 and we deploy it with Argo CD.",
    "I live in Berlin now, close to the old airport park.",
    "The nightly billing export job writes CSV files to an S3 bucket at 2am.",
    "I program in Rust and Go for the platform team.",
    "My daughter starts piano lessons on Thursday afternoons.",
]


def fault_sessions(app: str, users: int, per_user: int) -> list[memlab.Session]:
    """`per_user` sessions of five events for each of `users` users (`user-0`, ...), texts from FAULT_TEXTS."""
    return [
        memlab.Session(app, f"user-{u}", f"s{k}", [
            memlab.Event(f"e{i}", "user" if i % 2 == 0 else "model", T0 + timedelta(days=k, minutes=i),
                         f"{FAULT_TEXTS[(i + k + u) % len(FAULT_TEXTS)]} (u{u} s{k} #{i})")
            for i in range(5)
        ])
        for u in range(users)
        for k in range(per_user)
    ]  # fmt: skip


class Tripwire:
    """An embedder that runs `action` on its Nth `embed_documents` call (before embedding), then carries on."""

    def __init__(self, inner: memlab.Embedder, at: int, action: Callable[[], None]) -> None:
        self.inner, self.at, self.action, self.calls = inner, at, action, 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts):
        self.calls += 1
        if self.calls == self.at:
            self.action()
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


class KillInsideWrite:
    """SIGKILLs `home`'s postmaster inside the `nth` transaction `store` opens once `arm()` was called (after
    BEGIN, before the transaction's first statement), so the kill lands inside a write whatever the thread timing.

    An ingest writes its batches one at a time on one thread, so when armed by the first model call, the writes
    before the `nth` have committed and the later ones never start. A kill left to the clock (at a model call)
    can fall between two writes instead; the store's next connection then starts a new server and the ingest
    finishes there, cutting nothing."""

    def __init__(self, store: memlab.Store, home: Path, nth: int = 2) -> None:
        self.store, self.home, self.nth = store, home, nth
        self.armed, self.seen = False, 0

    def arm(self) -> None:
        self.armed = True

    @contextmanager
    def installed(self) -> Iterator[KillInsideWrite]:
        original = self.store.transaction

        @contextmanager
        def transaction() -> Iterator[Any]:
            with original() as conn:
                if self.armed:
                    self.seen += 1
                    if self.seen == self.nth:
                        signal_postmaster(self.home)
                yield conn

        self.store.transaction = transaction  # type: ignore[method-assign]
        try:
            yield self
        finally:
            del self.store.transaction  # the class's method again


def _fault_ingest(mems: dict, todo: list[memlab.Session], *, batch: int = 8, facts: bool = True) -> None:
    for name in ("event", "chunk"):
        mems[name].add_sessions(todo, batch_units=batch)
    if facts:
        for session in todo:
            mems["facts"].add_session(session)


def _whole(family: Family, partial: list[tuple], clean: list[tuple], where: str) -> None:
    """Each (user, layer, session) of `partial` holds exactly its units of a clean ingest, or nothing."""
    def group(rows):
        out: dict[tuple, set] = {}
        for row in rows:
            out.setdefault(row[:3], set()).add(row[3:])
        return out

    whole = group(clean)
    for key, rows in group(partial).items():
        family.add("sessions_checked")
        if rows != whole.get(key):
            family.problem("half_written_sessions", f"{where}: session {key} holds {len(rows)} of "
                           f"{len(whole.get(key, ()))} units")  # fmt: skip


def faults_figures() -> Family:
    """The faults family before any check ran: every figure at zero, the must-be-zero ones named."""
    return Family("faults", {"kills": 0, "cut_mid_ingest": 0, "recovered": 0, "recovery_seconds_max": 0.0,
                             "embedder_failures": 0, "embedder_failures_mid_ingest": 0, "sessions_checked": 0,
                             "facts_compared": 0, "half_written_sessions": 0, "lost_writes": 0, "extra_units": 0,
                             "duplicates": 0, "fact_mismatches": 0, "not_recovered": 0},
                  must_be_zero=["half_written_sessions", "lost_writes", "extra_units", "duplicates",
                                "fact_mismatches", "not_recovered"])  # fmt: skip


def faults_family(embedder: memlab.Embedder, size: Size) -> Family:
    family = faults_figures()
    with private_server("memlab-reliability-", timeout=5.0) as (store, home):
        sigkill_faults(family, store, home, embedder, size)
        embedder_faults(family, store, embedder, size, "faults-embedder")
    return family


def sigkill_faults(family: Family, store: memlab.Store, home: Path, embedder: memlab.Embedder, size: Size) -> None:
    """SIGKILL of `home`'s postmaster (a private server: `store` is on it) inside a write and at a random moment
    of an ingest; the next call must start a new server, and a re-ingest must equal one clean ingest."""
    users = [f"user-{u}" for u in range(size.fault_users)]
    reader = memories(store, embedder)
    for how in ("inside-a-write", "at-a-random-moment"):
        app = f"faults-{how}"
        todo = fault_sessions(app, size.fault_users, size.fault_sessions)
        old_pid = postmaster_pid(home)
        try:
            if how == "inside-a-write":  # the server dies inside the second write after the first model call
                with KillInsideWrite(store, home).installed() as kill:
                    _fault_ingest(memories(store, Tripwire(embedder, 1, kill.arm)), todo)
            else:
                mems = memories(store, embedder)
                killer = threading.Timer(0.4, signal_postmaster, [home])
                killer.start()
                try:
                    for _ in range(100):  # keeps writing (re-adds are no-ops) until the server is gone
                        _fault_ingest(mems, todo, batch=4)
                finally:
                    killer.join()
            if old_pid is not None and not psutil.pid_exists(old_pid):
                # The server died inside the call and the call still returned: the store's next connection started
                # a new server (a kill timed between two statements). The kill took effect; what the ingest left is
                # checked below like any other cut.
                family.add("kills")
                family.notes.append(f"SIGKILL {how}: the call recovered on a new server before it returned")
            else:
                family.notes.append(f"SIGKILL {how}: the ingest finished before the kill took effect")
        except memlab.DatabaseUnavailableError:
            family.add("kills")
        started = time.monotonic()
        try:
            before = units(reader, app, users)  # the next call restarts the server
        except memlab.MemlabError as exc:
            family.problem("not_recovered", f"{how}: {exc}")
            continue
        seconds = round(time.monotonic() - started, 2)
        if postmaster_pid(home) in (None, old_pid):
            family.problem("not_recovered", f"{how}: the next call did not start a new server")
            continue
        family.add("recovered")
        family.figures["recovery_seconds_max"] = max(family.figures["recovery_seconds_max"], seconds)
        reference = f"{app}-clean"
        _fault_ingest(memories(store, embedder), fault_sessions(reference, size.fault_users, size.fault_sessions))
        want = units(reader, reference, users)
        _whole(family, before, want, f"after SIGKILL {how}")
        if 0 < len(before) < len(want):
            family.add("cut_mid_ingest")
        _fault_ingest(memories(store, embedder), todo)
        got = units(reader, app, users)
        compare_units(family, got, want, f"re-ingest after SIGKILL {how}", extra="extra_units")
        facts, clean_facts = fact_rows(reader, app, users), fact_rows(reader, reference, users)
        family.add("facts_compared", len(clean_facts))
        for row in sorted(set(facts) ^ set(clean_facts))[:5]:
            family.problem("fact_mismatches", f"re-ingest after SIGKILL {how}: {row}")


def embedder_faults(family: Family, store: memlab.Store, embedder: memlab.Embedder, size: Size, app: str) -> None:
    """An embedder raising on its 2nd call of a batched ingest, and on the 1st of a single session's add, in
    both layers: every session is whole or absent, and a re-ingest equals one clean ingest (`<app>-clean`)."""
    users = [f"user-{u}" for u in range(size.fault_users)]
    reader = memories(store, embedder)
    reference = f"{app}-clean"
    todo = fault_sessions(app, size.fault_users, size.fault_sessions)
    _fault_ingest(memories(store, embedder), fault_sessions(reference, size.fault_users, size.fault_sessions),
                  facts=False)  # fmt: skip
    want = units(reader, reference, users)

    def fail() -> None:
        raise RuntimeError("the embedding endpoint went away")

    for layer in ("event", "chunk"):
        # One session a batch: the 2nd model call comes after a batch (pipelined) or a window of 8 batches (a first
        # load with the model on every core: one call a window) was written, and fails the rest whole.
        for at, add in ((2, lambda mem: mem.add_sessions(todo, batch_units=1)),
                        (1, lambda mem: mem.add_session(todo[-1]))):  # fmt: skip
            mem = memories(store, Tripwire(embedder, at, fail))[layer]
            try:
                add(mem)
                family.notes.append(f"embedder failure ({layer}, call {at}): the ingest finished before it")
            except RuntimeError:
                family.add("embedder_failures")
        partial = [r for r in units(reader, app, users) if r[1] == mem.layer]
        if 0 < len({r[:3] for r in partial}) < len(todo):
            family.add("embedder_failures_mid_ingest")
        _whole(family, partial, want, f"embedder failure ({layer})")
    _fault_ingest(memories(store, embedder), todo, facts=False)
    got = units(reader, app, users)
    compare_units(family, got, want, "re-ingest after embedder failures", extra="extra_units")
