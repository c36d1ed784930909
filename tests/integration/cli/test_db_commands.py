"""`memlab db dsn|status|stop|psql` on an embedded server of a home of its own, in child processes as a user runs
them (the DSN must outlive the command that printed it)."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest


def _memlab(home, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMLAB_HOME": str(home)}
    env.pop("MEMLAB_DSN", None)
    return subprocess.run([sys.executable, "-m", "memlab.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


@pytest.fixture
def home(tmp_path):
    yield tmp_path / "home"
    _memlab(tmp_path / "home", "db", "stop")


def test_dsn_status_psql_and_stop(home):
    assert _memlab(home, "db", "status").returncode == 3, "nothing runs before the first command"
    printed = _memlab(home, "db", "dsn")
    assert printed.returncode == 0, printed.stderr
    dsn = printed.stdout.strip().splitlines()[-1]
    with psycopg.connect(dsn) as conn:  # the server outlived the command that printed its DSN
        assert conn.execute("SELECT 1").fetchone() == (1,)
    status = _memlab(home, "db", "status")
    assert status.returncode == 0 and "running: True" in status.stdout and str(home) in status.stdout
    psql = _memlab(home, "db", "psql", "-At", "-c", "SELECT 40 + 2")
    assert psql.returncode == 0 and psql.stdout.strip() == "42", psql.stderr
    stopped = _memlab(home, "db", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert _memlab(home, "db", "status").returncode == 3
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(dsn, connect_timeout=3)
    again = _memlab(home, "db", "stop")
    assert again.returncode == 0 and "not running" in again.stdout
