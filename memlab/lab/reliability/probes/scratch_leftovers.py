"""Scratch databases of dead runs: a run (`memlab eval`, a sweep, this probe) works in a scratch database
holding every text it ingested; one killed before its `finally` must not leave it on the server for good.

Three child processes each open a scratch database through memlab's own `scratch_store` and wait. One is
SIGKILLed (nothing of it runs: its database stays until the next start), one SIGTERMed (it drops its own on the
way out), one stays alive. The next start (a scratch database opened here) must drop the dead ones' databases
(`dead_scratch_kept`) and keep the live one's (`live_scratch_dropped`); the SIGTERMed child must have dropped
its own before it exited (`sigterm_scratch_left`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from psycopg import sql

import memlab
from memlab.lab.reliability.probes.family import Family

WAIT = 60.0  # seconds a child may take to start (it imports memlab) and to exit after a signal
# A child: open the store, open a scratch database in it, say its name, wait to be killed.
CHILD = """
import sys, time
import psycopg
import memlab
with memlab.open_store(dsn=sys.argv[1]) as store, memlab.scratch_store(store, prefix="memlab_probe") as db:
    print(psycopg.conninfo.conninfo_to_dict(db.dsn)["dbname"], flush=True)
    time.sleep(600)
"""


def _databases(dsn: str) -> set[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}


def _child(dsn: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, dsn], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip


def _name_of(child: subprocess.Popen) -> str:
    """The scratch database the child opened (its first line of output)."""
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if not line:
        raise RuntimeError(f"a child never opened its scratch database (exit code {child.poll()})")
    return line


def _stop(child: subprocess.Popen, signum: int) -> int | None:
    """Send `signum` and reap the child; its exit code, or None if it outlived WAIT (then it is killed)."""
    if child.poll() is None:
        child.send_signal(signum)
    try:
        return child.wait(WAIT)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait(WAIT)
        return None


def scratch_leftovers_family(db: memlab.Store, embedder: memlab.Embedder, work: Path) -> Family:
    """A SIGKILLed and a SIGTERMed run's scratch databases are gone after the next start; a live run's stays."""
    family = Family("scratch_leftovers", must_be_zero=["dead_scratch_kept", "live_scratch_dropped",
                                                       "sigterm_scratch_left"])  # fmt: skip
    for name in (*family.must_be_zero, "children"):
        family.figures[name] = 0
    started = time.perf_counter()
    children = {how: _child(db.dsn) for how in ("killed", "terminated", "live")}
    names: dict[str, str] = {}
    try:
        for how, child in children.items():
            names[how] = _name_of(child)
            family.add("children")
        _stop(children["killed"], signal.SIGKILL)
        code = _stop(children["terminated"], signal.SIGTERM)
        if names["terminated"] in _databases(db.dsn):
            family.problem("sigterm_scratch_left", f"a SIGTERMed run (exit code {code}) left its scratch database")
        with memlab.scratch_store(db, prefix="memlab_probe_next"):  # the next start
            present = _databases(db.dsn)
        for how in ("killed", "terminated"):
            if names[how] in present:
                family.problem("dead_scratch_kept", f"the scratch database of a {how} run outlived the next start")
        if names["live"] not in present:
            family.problem("live_scratch_dropped", "the next start dropped the scratch database of a live run")
        _stop(children["live"], signal.SIGTERM)
    finally:
        for child in children.values():
            if child.poll() is None:
                child.kill()
            child.wait(WAIT)
            if child.stdout is not None:
                child.stdout.close()
        with psycopg.connect(db.dsn, autocommit=True) as conn:  # whatever the check found, nothing stays behind
            for name in names.values():
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    family.notes.append("three child processes each opened a scratch database through memlab.scratch_store; one was "
                        "SIGKILLed, one SIGTERMed, one kept alive while a new scratch database was opened here")
    family.seconds = time.perf_counter() - started
    return family
