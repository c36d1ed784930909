"""memlab as a dependency: the wheel built from this checkout, installed into a new venv outside it, loads every
data set of the quick and example suites from an empty folder, on the data the wheel ships, and they are the
checkout's data sets (the same checksums); a suite whose data it does not ship is refused with where to get it.

To stay offline and inside the CI budget the venv gets no pip and no dependencies of its own: this environment's
pip installs the wheel into it with --no-deps, then a .pth file written after it appends this environment's
site-packages, so memlab itself comes from the wheel (checked) and everything it imports from here. `memlab eval
--dry-run` loads the data sets as a run does, without the minutes of a run; `make wheel-check` runs the whole quick
suite from a wheel installed from the package index (docs/development/testing.md).

Every memlab process pays seconds of CPU importing the workbench, so the wheel's venv starts two: its `memlab`
console script runs `memlab eval`, and one Python runs the other commands in-process through the same Typer app
(`memlab.cli.app`, each from its own folder and MEMLAB_HOME, with its output and exit code), the tests reading
what each gave."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from memlab import lab
from tests.conftest import ROOT

LOADED = re.compile(r"^ok (\S+)(?: from (.+))?: .*; checksum ([0-9a-f]{64})$")
EXTRAS = ("lab", "adk", "systems", "stores")  # what a user installs memlab with (dev and docs are the checkout's)
REFUSED = re.compile(r"^(\S+): data set '\1': (.*)$")
SUITES = ("quick", "example", "ci")  # each `memlab eval --suite NAME --dry-run`

# Run in the wheel's venv: `memlab.__file__`, then each command of argv[1] (args, the folder it runs in, its
# MEMLAB_HOME) through the console script's Typer app, its stdout, stderr and exit code as a JSON list on stdout. A
# command that fails with a traceback leaves the traceback in its stderr, as the console script would.
IN_PROCESS = """
import contextlib, io, json, os, sys, traceback
import memlab
from memlab.cli import app

def invoke(args, cwd, home):
    os.chdir(cwd)
    os.environ["MEMLAB_HOME"] = home
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = app(args, prog_name="memlab", standalone_mode=False) or 0
        except Exception:
            code = 1
            traceback.print_exc()
    return {"args": args, "returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}

done = [invoke(**command) for command in json.loads(sys.argv[1])]
print(json.dumps({"memlab": memlab.__file__, "commands": done}))
"""


def _run(args: list[str | Path], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A new venv holding the wheel built from a copy of this checkout's package (no build files in the
    checkout), with this environment's site-packages after its own."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(ROOT / "memlab", source / "memlab", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    # the build backend pyproject names, called as pip calls it (offline, no build isolation) without pip's start
    backend = tomllib.loads((source / "pyproject.toml").read_text())["build-system"]["build-backend"]
    built = _run([sys.executable, "-c", f"import sys, {backend} as backend; backend.build_wheel(sys.argv[1])",
                  root / "dist"], cwd=source)  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (root / "dist").glob("memlab-*.whl")
    made = _run([sys.executable, "-m", "venv", "--without-pip", root / "venv"])
    assert made.returncode == 0, made.stderr[-3000:]
    python = root / "venv" / "bin" / "python"
    # byte-compiled at install: with PYTHONDONTWRITEBYTECODE set (as on CI machines) every run would compile again
    installed = _run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
                      "--no-index", wheel])  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))  # from this sys.prefix
    (Path(purelib) / "zz-memlab-test-dependencies.pth").write_text("".join(f"{p}\n" for p in ours))
    # the extras resolve: pip, offline, finds every requirement of memlab[...] met and has nothing to install
    extras = _run([sys.executable, "-m", "pip", "--python", python, "install", "--dry-run", "--no-index",
                   f"memlab[{','.join(EXTRAS)}]"])  # fmt: skip
    assert extras.returncode == 0 and "Would install" not in extras.stdout, extras.stdout[-3000:] + extras.stderr
    (root / "empty").mkdir()
    return root


def _env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MEMLAB_DSN", "VIRTUAL_ENV")}
    return {**env, "MEMLAB_HOME": str(venv / "home"), "PATH": f"{venv / 'venv' / 'bin'}{os.pathsep}{env['PATH']}"}


@pytest.fixture(scope="module")
def ran(venv, memlab_home, store) -> dict:
    """What the wheel's venv gave, from empty folders outside the checkout: `memlab eval` on the quick suite (the
    example conversations it ships, one system and no sweeps, on the test session's server and embedding cache, to
    stay inside the test budget: `make wheel-check` runs the whole suite in a home of its own) through the console
    script; then in one Python, `memlab.__file__`, each suite's `memlab eval --dry-run` (in venv/empty, with a
    MEMLAB_HOME of its own) and `memlab baseline` and `memlab report` on that run."""
    work, run, baseline = venv / "work", venv / "run", venv / "baseline.json"
    work.mkdir()
    evaluated = _run([venv / "venv" / "bin" / "memlab", "eval", "--suite", "quick", "--out", run, "--set", "sweeps=[]",
                      "--set", "datasets=[{name: mydata, format: memlab, path: fixtures/jsonl/example.jsonl}]",
                      "--set", "systems=[{name: pg-exact, strategy: exact}]"],
                     cwd=work, env={**_env(venv), "MEMLAB_HOME": str(memlab_home)})  # fmt: skip
    dry = [{"args": ["eval", "--suite", suite, "--dry-run"], "cwd": str(venv / "empty"), "home": str(venv / "home")}
           for suite in SUITES]  # fmt: skip
    gate = [{"args": args, "cwd": str(work), "home": str(memlab_home)}
            for args in (["baseline", "--run", str(run), "--out", str(baseline)],
                         ["report", "--baseline", str(baseline), "--run", str(run)])]  # fmt: skip
    done = _run([venv / "venv" / "bin" / "python", "-c", IN_PROCESS, json.dumps(dry + gate)],
                cwd=venv / "empty", env=_env(venv))  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(done.stdout)
    commands = dict(zip([*SUITES, "baseline", "report"], found["commands"], strict=True))
    return {"memlab": found["memlab"], "eval": evaluated, **commands, "run": run}


def _output(done: dict) -> str:
    return done["stdout"][-3000:] + done["stderr"][-3000:]


def test_memlab_is_imported_from_the_wheel(venv, ran):
    assert Path(ran["memlab"]).is_relative_to(venv / "venv"), ran["memlab"]


@pytest.mark.parametrize("suite", ["quick", "example"])
def test_a_packaged_suite_loads_the_checkouts_data_sets_from_the_wheel(venv, ran, suite):
    done = ran[suite]
    assert done["returncode"] == 0, _output(done)
    loaded = {m[1]: (m[2], m[3]) for line in done["stdout"].splitlines() if (m := LOADED.match(line))}
    config = lab.load_suite(suite)  # in the checkout: its own fixtures/ and datasets/
    expected = {spec["name"]: lab.load_dataset(spec, config.base_dirs).checksum()
                for spec in config.resolved["datasets"]}  # fmt: skip
    assert {name: checksum for name, (_, checksum) in loaded.items()} == expected, done["stdout"]
    read = [Path(path) for path, _ in loaded.values() if path]
    assert read and all(path.is_relative_to(venv / "venv") for path in read), f"read outside the wheel: {read}"
    assert not list((venv / "empty").iterdir()), "a dry run writes nothing"


def test_a_suite_whose_data_is_not_shipped_is_refused_with_where_to_get_it(ran):
    done = ran["ci"]
    assert done["returncode"] == 2 and "Traceback" not in done["stderr"], _output(done)
    refused = {m[1]: m[2] for line in done["stdout"].splitlines() if (m := REFUSED.match(line))}
    assert set(refused) == {"fact-fixtures", "lme-oracle", "lme-s-ku"}, done["stdout"]
    assert "fixtures/facts not found" in refused["fact-fixtures"] and "memlab checkout" in refused["fact-fixtures"]
    for name in ("lme-oracle", "lme-s-ku"):
        assert "ships only an extract" in refused[name] and "https://" in refused[name], refused[name]
        assert f"--set datasets.{name}.path=FILE" in refused[name], refused[name]


def test_the_quick_suite_runs_and_is_gated_from_the_wheel(ran):
    """`memlab eval` through the console script, then `memlab baseline` and `memlab report` on its run."""
    evaluated = ran["eval"]
    assert evaluated.returncode == 0, evaluated.stdout[-3000:] + evaluated.stderr[-3000:]
    for step in ("baseline", "report"):
        assert ran[step]["returncode"] == 0, _output(ran[step])
    assert "no regression" in ran["report"]["stdout"], ran["report"]["stdout"]
    run = ran["run"]
    recall = json.loads((run / "metrics.json").read_text())["mydata/pg-exact/recall@10"]
    assert 0.5 < recall <= 1.0 and (run / "report.md").is_file() and (run / "report.html").is_file()
    [recorded] = json.loads((run / "manifest.json").read_text())["datasets"]
    ours = lab.load_dataset({"name": "mydata", "format": "memlab", "path": str(ROOT / "fixtures/jsonl/example.jsonl")})
    assert recorded["checksum"] == ours.checksum(), "the wheel's copy is the checkout's file"
