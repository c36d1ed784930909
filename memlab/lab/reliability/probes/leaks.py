"""Leaks through run folders and error messages: a marker credential is planted where a
careless user puts one (a question, an answer, the config's description and LLM key, a DSN password, an endpoint
that echoes the Authorization header back, a base_url with user:password@), and hostile text where an HTML page
breaks (`<!--<script>`, `</script>`, ...). Then every write path runs: a tiny run folder through the public lab
functions, and every error path. Every file written is byte-searched for the marker, and so is every error
message and log line; report.html's embedded data must hold no `<` at all (the script-data state).

`secrets_in_run_folder`, `secrets_in_errors`, `unescaped_script_data` and `error_paths_not_reached` (an error
path that raised nothing, so its check meant nothing) must be zero; `files_checked`, `error_paths_checked` and
`hostile_texts_shown` say how much was looked at."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

import memlab
from memlab.lab.config.parse import load_config
from memlab.lab.experiment.run import run_experiment
from memlab.lab.reliability.probes.family import Family

MARK = "Zq7LeakMarker"  # in every planted secret; found anywhere, a secret leaked
HOSTILE = ["<!--<script>", "</script><b>bold</b>", "<!--", "-->", "</SCRIPT ", "<script>alert(1)</script>",
           "a\u2028b\u2029c", "&lt;not-an-entity&gt; & < > ' \""]  # fmt: skip
CREDENTIALS = {  # where a user types a credential, and the words around it
    "question": f"I told you my wifi password: {MARK}-Pa55w0rd! What did I call my notes file?",
    "answer": f"The file is called notes; the GitHub token is ghp_{MARK}abcdefghijklmnopqrstuvw",
    "description": f"staging run against postgresql://app:{MARK}Pw@db.internal:5432/memlab",
    "llm_key": f"sk-proj-{MARK}0123456789abcdefghij",
}
MALFORMED_DSNS = [  # DSNs the parser refuses, quoting what it was given
    f"postgresql://u:Pa%ZZw0rd{MARK}@localhost/db",  # invalid percent-encoding: the parser quotes the token
    f"postgresql://u:pa ss{MARK}@localhost/db",  # a space: "unexpected spaces found in ..."
    f"postgresql://u:{MARK}@[::1/db",  # an unclosed IPv6 host: the parser quotes the whole URI
    f"postgres://u:{MARK}%G1@h:5432/db?sslmode=require",
    f"host=localhost password='{MARK} dbname=x",  # an unterminated quote
    f"host=localhost password={MARK}%ZZ dbname=a b",  # a word without '='
]


def hostile_dataset(path: Path) -> Path:
    """A memlab JSONL data set: events holding the hostile strings, questions and answers holding credentials
    (and hostile strings too, so the page must show them literally)."""
    events = [{"id": f"e{i}", "author": "user", "at": f"2026-03-02T09:{i:02d}:00Z",
               "text": f"My notes file is called {text} and I open it every morning."}
              for i, text in enumerate(HOSTILE)]  # fmt: skip
    events.append({"id": "e-plain", "author": "model", "at": "2026-03-02T10:00:00Z",
                   "text": "Noted: you open your notes file every morning."})  # fmt: skip
    rows = [{"type": "session", "app": "leaks", "user": "u1", "id": "s1", "events": events},
            {"type": "question", "id": "q-credential", "app": "leaks", "user": "u1",
             "text": CREDENTIALS["question"], "asked_at": "2026-03-03T10:00:00Z", "relevant": ["e0"],
             "answer": CREDENTIALS["answer"], "qtype": "single-session"},
            {"type": "question", "id": "q-hostile", "app": "leaks", "user": "u1",
             "text": "What is my notes file called, <!--<script> or </script>?", "asked_at": "2026-03-03T10:00:00Z",
             "relevant": ["e1"], "answer": "</SCRIPT <!-- -->", "qtype": "single-session"}]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def hostile_run(workdir: Path, *, dsn: str | None = None, home: str | Path | None = None) -> Path:
    """A finished run folder (one exact system, no sweeps) of `hostile_dataset`, with a config whose description
    and LLM key hold credentials; report.md and report.html written. A few seconds."""
    workdir.mkdir(parents=True, exist_ok=True)
    data = hostile_dataset(workdir / "hostile.jsonl")
    config = {"name": "leaks", "description": CREDENTIALS["description"], "k": 5,
              "datasets": [{"name": "hostile", "format": "memlab", "path": str(data)}],
              "systems": [{"name": "pg-exact", "strategy": "exact"}],
              "llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": CREDENTIALS["llm_key"]}}
    path = workdir / "leaks.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = workdir / "run"
    run_experiment(load_config(path), out, dsn=dsn, home=home, log=lambda *a, **k: None)  # writes the report too
    return out


def files_holding(folder: Path, needle: str) -> list[str]:
    """Files under `folder` whose bytes hold `needle` (as UTF-8, or percent-/JSON-escaped), or whose name does."""
    forms = {needle.encode(), json.dumps(needle)[1:-1].encode(), needle.replace("-", "%2D").encode()}
    return [str(p.relative_to(folder)) for p in sorted(folder.rglob("*"))
            if needle in p.name or (p.is_file() and any(f in p.read_bytes() for f in forms))]  # fmt: skip


def page_script(html: str) -> str:
    """The text of report.html's data script element, as far as the HTML tokenizer reads it: up to the first
    `</script` (the page has one inline script)."""
    start = html.index("const DATA = ")
    return html[start:html.lower().index("</script", start)]


def script_data_problems(html: str) -> list[str]:
    """What in report.html's embedded data could change how the HTML tokenizer reads the script element."""
    script = page_script(html)
    data = script[len("const DATA = "):script.index("\n")]
    problems = [f"raw {c!r} in the embedded data" for c in "<>&\u2028\u2029" if c in data]
    if "render();" not in script:
        problems.append("the script element ends before its code (the page would be blank)")
    return problems


def page_data(html: str) -> dict:
    script = page_script(html)
    return json.loads(script[len("const DATA = "):script.index("\n")].rstrip(";"))


class EchoEndpoint:
    """An OpenAI-compatible endpoint on 127.0.0.1 that answers `status` and echoes the Authorization header."""

    def __init__(self, status: int) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.dumps({"echo": self.headers.get("Authorization"), "error": "invalid key",
                                   "headers": dict(self.headers)}).encode()  # fmt: skip
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def echo_endpoints() -> Iterator[list[EchoEndpoint]]:
    endpoints = [EchoEndpoint(401), EchoEndpoint(200)]
    try:
        yield endpoints
    finally:
        for e in endpoints:
            e.close()


def error_cases(endpoints: list[EchoEndpoint]) -> list[tuple[str, Callable[[], object]]]:
    """(name, call that must raise) for every error path whose message could echo a secret."""
    key = CREDENTIALS["llm_key"]
    event = memlab.Event(id="e1", author="user", text="I live in Lisbon.", timestamp=datetime(2026, 3, 1, tzinfo=UTC))
    cases: list[tuple[str, Callable[[], object]]] = [
        (f"malformed DSN {i}", lambda d=d: memlab.configured_dsn(d)) for i, d in enumerate(MALFORMED_DSNS)]
    cases.append(("unreachable DSN", lambda: memlab.open_store(f"postgresql://u:{MARK}@127.0.0.1:1/db", timeout=1)))
    for e in endpoints:
        llm = memlab.LlmExtractor(base_url=e.url, model="m", api_key=key)
        cases.append((f"LLM extractor, endpoint answering {e.server.server_address[1]}",
                      lambda llm=llm: llm.extract([event], session_id="s", registry=memlab.facts.default_registry())))
        cases.append((f"embedder, endpoint {e.url}", lambda url=e.url: _embed(url, key)))
    cases.append(("LLM base_url with user:password@",
                  lambda: memlab.LlmExtractor(base_url=f"http://u:{MARK}@127.0.0.1:1/v1", model="m")))
    cases.append(("embedder base_url with user:password@",
                  lambda: memlab.embedding.OpenAICompatibleEmbedder(f"http://u:{MARK}@127.0.0.1:1/v1", "m")))
    return cases


def _embed(url: str, key: str) -> object:
    os.environ["MEMLAB_LEAKS_PROBE_KEY"] = key
    try:
        embedder = memlab.embedding.OpenAICompatibleEmbedder(url, "m", api_key_env="MEMLAB_LEAKS_PROBE_KEY", retries=0)
        return embedder.embed_query("x")
    finally:
        os.environ.pop("MEMLAB_LEAKS_PROBE_KEY", None)


def _cli_lines(workdir: Path) -> list[str]:
    """The CLI's error output for malformed and unreachable DSNs holding the marker, from the `memlab` command run
    as a user runs it (a child process each, all at once; the workbench does not import the CLI that drives it).
    Line breaks are taken out, so a marker wrapped over two lines is still found."""
    calls = [["eval", "--suite", "fixtures", "--dsn", d, "--out", str(workdir / "cli-run")] for d in MALFORMED_DSNS[:2]]
    calls.append(["bench", "--dsn", f"postgresql://u:{MARK}@127.0.0.1:1/db", "--out", str(workdir / "cli-bench")])
    env = {**os.environ, "MEMLAB_DB_TIMEOUT": "1"}
    children = [subprocess.Popen([sys.executable, "-c", "from memlab.cli import app; app()", *args], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for args in calls]
    outputs = [(child.communicate(timeout=300)[0], child.returncode) for child in children]
    return [out.replace("\n", "") if code == 2 and "error:" in out else f"<no error line, exit {code}>"
            for out, code in outputs]  # fmt: skip


def _log_lines() -> list[str]:
    """What memlab's loggers print for records holding a DSN and an Authorization header."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Keep()
    names = ["memlab.events.memory", "memlab.storage.embedded", "memlab.leaks_probe.lazily_made"]
    for name in names:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        try:
            logger.warning("cannot reach %s; server said %s", f"postgresql://u:{MARK}@h/db",
                           {"Authorization": f"Bearer {MARK}xyz"})  # fmt: skip
        finally:
            logger.removeHandler(handler)
    return lines


def leaks_family(store: memlab.Store, embedder: memlab.Embedder, workdir: Path) -> Family:
    """Plant credentials and hostile text, run the write and error paths, byte-search what came out."""
    fam = Family("leaks", must_be_zero=["secrets_in_run_folder", "secrets_in_errors", "unescaped_script_data",
                                        "error_paths_not_reached"])  # fmt: skip
    started = time.perf_counter()
    run = hostile_run(Path(workdir) / "leaks", dsn=store.dsn)
    files = [p for p in run.rglob("*") if p.is_file()]
    fam.add("files_checked", len(files))
    for name in files_holding(run, MARK):
        fam.problem("secrets_in_run_folder", name)
    html = (run / "report.html").read_text(encoding="utf-8")
    for problem in script_data_problems(html):
        fam.problem("unescaped_script_data", problem)
    shown = json.dumps(page_data(html) if not script_data_problems(html) else {})
    fam.add("hostile_texts_shown", sum(json.dumps(h)[1:-1] in shown for h in HOSTILE))
    with echo_endpoints() as endpoints:
        for name, call in error_cases(endpoints):
            fam.add("error_paths_checked")
            try:
                call()
                fam.problem("error_paths_not_reached", f"{name}: no error raised")
            except memlab.MemlabError as exc:
                if MARK in str(exc) or MARK in str(exc.__cause__ or ""):
                    fam.problem("secrets_in_errors", f"{name}: {re.sub(MARK, '<MARK>', str(exc))[:160]}")
    for where, lines in (("log line", _log_lines()), ("CLI output", _cli_lines(Path(workdir) / "leaks"))):
        for line in lines:
            fam.add("error_paths_checked")
            if line.startswith("<no error line"):
                fam.problem("error_paths_not_reached", f"{where}: {line}")
            elif MARK in line:
                fam.problem("secrets_in_errors", f"{where}: {line.replace(MARK, '<MARK>')[:160]}")
    fam.seconds = time.perf_counter() - started
    return fam
