"""`make test`'s xdist workers keep a module's tests on one worker, so a module fixture is built once.

xdist 3.8 marks a test's group by rewriting `item._nodeid`, which pytest 9 does not read: every test would be its
own unit and module fixtures (the sweeps run, the isolation database, ...) would be built on every worker. The
grouping is tests/conftest.py's scheduler; this runs it on a tiny suite in a child pytest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, xdist_group

MODULE = '''
import os
from pathlib import Path

import pytest

LOG = Path(os.environ["XDIST_GROUPS_LOG"])


@pytest.fixture(scope="module")
def built(request):
    with LOG.open("a") as f:
        f.write(f"setup {request.module.__name__}\\n")


@pytest.mark.parametrize("i", range(6))
def test_one(built, i):
    with LOG.open("a") as f:
        f.write(f"run {__name__} {os.environ['PYTEST_XDIST_WORKER']}\\n")
'''


def test_a_modules_tests_run_on_one_worker_and_its_fixture_is_built_once(tmp_path: Path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("from tests.conftest import pytest_collection_modifyitems, "
                                       "pytest_xdist_make_scheduler  # noqa: F401\n")  # fmt: skip
    for name in ("test_a", "test_b", "test_c"):
        (suite / f"{name}.py").write_text(MODULE)
    log = tmp_path / "log.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDIST_GROUPS_LOG": str(log)}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist",
                             "loadgroup", "--no-loadscope-reorder", "--rootdir", str(tmp_path), str(suite)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = log.read_text().splitlines()
    assert sorted(line for line in lines if line.startswith("setup")) == [f"setup {m}" for m in
                                                                         ("test_a", "test_b", "test_c")]  # fmt: skip
    workers = {m: {line.split()[2] for line in lines if line.startswith(f"run {m} ")} for m in ("test_a", "test_b")}
    assert all(len(w) == 1 for w in workers.values()), workers
    assert sum(line.startswith("run") for line in lines) == 18


def test_the_fixtures_run_readers_share_a_group():
    assert xdist_group("tests/test_cli.py::test_x") == xdist_group("tests/lab/test_report_html.py::t[1]")
    assert xdist_group("tests/lab/test_sweeps.py::test_x") == "tests/lab/test_sweeps.py"
