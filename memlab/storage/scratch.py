"""Scratch databases of dead runs: a run's scratch database (`scratch_store`) holds every text it ingested, and a
run killed before its `finally` (SIGKILL, OOM, a lost terminal) would leave it on the server for good.

Each scratch database's name says which process owns it: a digest of the host and of its boot, the owner's pid
and the moment that process started (so a pid used again by another process is not taken for the owner). Every
start of a scratch database, and every writable `open_store`, drops the scratch databases whose owner on this
host is gone (`drop_dead_scratch`); a database of a live process, or of another host, is never touched. While a
scratch database is open, SIGTERM and SIGHUP end the run through its `finally` (`dropped_on_signal`), so the
database goes at once rather than at the next start."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import secrets
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
import psycopg
from psycopg import sql

from memlab.safety.redact import get_logger

log = get_logger("memlab.storage.scratch")

MARK = "__mls_"  # between the caller's prefix and the owner's fields
_NAME = re.compile(rf"^(?P<prefix>.*){MARK}(?P<host>[0-9a-f]{{6}})_(?P<boot>[0-9a-f]{{6}})_(?P<pid>[0-9a-z]+)_"
                   r"(?P<start>[0-9a-z]+)_[0-9a-f]{6}$")  # fmt: skip
_MAX_NAME = 63  # PostgreSQL's identifier length
_START_SLACK = 2  # a start time read again may differ by a tick (or, off Linux, a second) of rounding
SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


@functools.cache
def _machine() -> tuple[str, str]:
    """Digests of this host's name and of this boot of it (Linux's boot id, else the boot time)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = str(int(psutil.boot_time()))
    return _digest(socket.gethostname()), _digest(boot)


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, d = divmod(n, 36)
        out = digits[d] + out
        if not n:
            return out


def started(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot on Linux, else seconds since the epoch), or None when
    it is gone or a zombie (killed, waiting for its parent to reap it)."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
        fields = data[data.rindex(b")") + 2 :].split()
        return None if fields[0] == b"Z" else int(fields[19])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, IndexError):
        pass
    try:
        process = psutil.Process(pid)
        return None if process.status() == psutil.STATUS_ZOMBIE else int(process.create_time())
    except psutil.Error:
        return None


@dataclass(frozen=True)
class Owner:
    """The process a scratch database belongs to, as its name records it."""

    host: str
    boot: str
    pid: int
    start: int

    @classmethod
    def this_process(cls) -> Owner:
        pid = os.getpid()
        host, boot = _machine()
        return cls(host, boot, pid, started(pid) or 0)

    def alive(self) -> bool | None:
        """Whether the owner still runs: None when it ran on another host (nothing can be told from here)."""
        here = Owner.this_process()
        if self.host != here.host:
            return None
        if self.boot != here.boot:
            return False  # the machine started again since
        now = started(self.pid)
        return now is not None and (not self.start or abs(now - self.start) <= _START_SLACK)


def scratch_name(prefix: str, owner: Owner | None = None) -> str:
    """A new scratch database name for `prefix` that records its owner (this process by default)."""
    owner = owner or Owner.this_process()
    tail = f"{MARK}{owner.host}_{owner.boot}_{_base36(owner.pid)}_{_base36(owner.start)}_{secrets.token_hex(3)}"
    return prefix[: _MAX_NAME - len(tail)] + tail


def owner_of(name: str) -> Owner | None:
    """The owner a scratch database's name records, or None for any other database."""
    match = _NAME.match(name)
    if match is None:
        return None
    return Owner(match["host"], match["boot"], int(match["pid"], 36), int(match["start"], 36))


def drop_dead_scratch(dsn: str, *, connect_timeout: int = 10) -> list[str]:
    """Drop every scratch database on the server of `dsn` whose owner on this host is gone; returns the names
    dropped. Never raises: a database that cannot be dropped (another role's, one being dropped meanwhile) is
    logged and left for the next start."""
    dropped: list[str] = []
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=connect_timeout) as conn:
            for (name,) in conn.execute("SELECT datname FROM pg_database ORDER BY datname").fetchall():
                owner = owner_of(name)
                if owner is None or owner.alive() is not False:
                    continue
                try:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
                    dropped.append(name)
                except psycopg.Error as exc:
                    log.warning("a scratch database of a dead run (%s) was not dropped: %s", name, str(exc).strip())
    except psycopg.Error as exc:
        log.warning("scratch databases of dead runs were not looked for: %s", str(exc).strip())
    if dropped:
        log.info("dropped %d scratch database(s) of runs that ended without dropping them", len(dropped))
    return dropped


class _Stopped(SystemExit):
    """Raised in the main thread by SIGTERM or SIGHUP while a scratch database is open."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(128 + signum)


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGTERM and SIGHUP wait while the block runs (the drop of a scratch database is not cut short by them):
    one that arrived meanwhile is handled when it ends."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextmanager
def dropped_on_signal() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP (left at their default, which ends the process without running
    any `finally`) end it by raising SystemExit in the main thread instead, so the scratch database's `finally`
    drops it on the way out. A handler the program set itself is kept; off the main thread nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    installed = []
    for signum in SIGNALS:
        if signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, _stop)
            installed.append(signum)
    try:
        yield
    finally:
        for signum in installed:
            signal.signal(signum, signal.SIG_DFL)


__all__ = ["Owner", "drop_dead_scratch", "dropped_on_signal", "owner_of", "scratch_name", "signals_held"]
