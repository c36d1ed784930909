"""How the suite runs in `make test`. Hypothesis example counts follow a profile (tests/conftest.py): `ci` by
default, `nightly` ten times as many, chosen by MEMLAB_HYPOTHESIS_PROFILE; an unknown name stops the run instead of
silently running the default. pytest-xdist workers (one per core and one more) share the suite, a module's tests on
one worker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib

from hypothesis import settings

from tests.conftest import HYPOTHESIS_PROFILE_ENV, ROOT, examples

PROBE = ("from hypothesis import settings; from tests.conftest import examples; "
         "print(settings.default.max_examples, settings.default.deadline, examples(25))")  # fmt: skip


def _probe(profile: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != HYPOTHESIS_PROFILE_ENV}
    if profile is not None:
        env[HYPOTHESIS_PROFILE_ENV] = profile
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True)


def test_the_ci_profile_is_loaded_by_default_and_keeps_each_tests_count():
    if os.environ.get(HYPOTHESIS_PROFILE_ENV, "ci") == "ci":
        assert settings.default.max_examples == 50 and examples(25) == 25
    assert _probe(None).stdout.split() == ["50", "None", "25"]


def test_nightly_runs_ten_times_the_examples_and_an_unknown_profile_is_refused():
    assert _probe("nightly").stdout.split() == ["1000", "None", "250"]
    bad = _probe("weekly")
    assert bad.returncode != 0 and f"{HYPOTHESIS_PROFILE_ENV}='weekly': use one of ci, nightly" in bad.stderr


def test_make_test_runs_a_worker_per_core_and_one_more_that_keep_a_modules_tests_together(request):
    recipe = (ROOT / "Makefile").read_text().split("\ntest:")[1].split("\n\n")[0]
    assert "pytest -n $(WORKERS) --dist loadscope --no-loadscope-reorder" in recipe, recipe
    dry = subprocess.run(["make", "-n", "-o", ".venv/.installed", "test"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    workers = int(re.search(r"pytest -n (\d+) ", dry).group(1))
    assert workers == len(os.sched_getaffinity(0)) + 1, dry
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    assert any(d.startswith("pytest-xdist") for d in dev), "the install step must install what make test runs"
    assert request.node.get_closest_marker("integration") is not None, "a test is marked with its folder's kind"
    assert request.node.get_closest_marker("unit") is None
