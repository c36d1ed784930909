"""`make lab` starts JupyterLab, also as root (the usual user in a container): the real make target, on a free
port of 127.0.0.1, until the server answers HTTP; then the test stops it (the whole process group)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import ROOT

STAMP = ".venv/.installed"  # the venv this test runs in is set up: `-o` keeps make from redoing the setup
START_LIMIT = 240  # seconds for the server to answer; a guard against a hang, not a measured figure


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _make_lab(port: int, token: str) -> list[str]:
    args = (f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} --ServerApp.port_retries=0 "
            f"--IdentityProvider.token={token}")  # fmt: skip
    return ["make", "--no-print-directory", "-o", STAMP, "lab", f"LAB_ARGS={args}"]


def _stop(proc: subprocess.Popen) -> None:
    """make, jupyter and its kernels share one process group (start_new_session): end them all."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def test_make_lab_passes_allow_root_exactly_when_root():
    dry = subprocess.run(["make", "-n", "-o", STAMP, "lab"], cwd=ROOT, capture_output=True, text=True, check=True)
    command = next(line for line in dry.stdout.splitlines() if " lab " in line and "jupyter" in line)
    assert ("--allow-root" in command) == (os.geteuid() == 0), command


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lab_starts_and_answers_http(tmp_path):
    port, token = _free_port(), "memlab-test-token"
    log = (tmp_path / "lab.log").open("w")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}  # the server's files stay in tmp_path
    proc = subprocess.Popen(_make_lab(port, token), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        status, deadline = None, time.monotonic() + START_LIMIT
        while status is None and time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"make lab exited with {proc.returncode}:\n{(tmp_path / 'lab.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=5) as r:
                    status = json.loads(r.read())
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(1)
        assert status is not None, f"no answer in {START_LIMIT} s:\n{(tmp_path / 'lab.log').read_text()[-3000:]}"
        assert "started" in status and status.get("kernels") == 0
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}", timeout=10) as page:
            assert page.status == 200 and b"JupyterLab" in page.read()
    finally:
        _stop(proc)
        log.close()
    assert proc.poll() is not None, "make lab was stopped"
