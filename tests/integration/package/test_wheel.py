"""memlab as a dependency: the wheel built from this checkout, installed into a new venv outside it, loads every
data set of the quick and example suites from an empty folder, on the data the wheel ships, and they are the
checkout's data sets (the same checksums); a suite whose data it does not ship is refused with where to get it.

To stay offline and inside the CI budget the venv gets no pip and no dependencies of its own: this environment's
pip installs the wheel into it with --no-deps, then a .pth file written after it appends this environment's
site-packages, so memlab itself comes from the wheel (checked) and everything it imports from here. `memlab eval
--dry-run` loads the data sets as a run does, without the minutes of a run; `make wheel-check` runs the whole quick
suite from a wheel installed from the package index (docs/development/testing.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from memlab import lab
from tests.conftest import ROOT

LOADED = re.compile(r"^ok (\S+)(?: from (.+))?: .*; checksum ([0-9a-f]{64})$")
EXTRAS = ("lab", "adk", "systems", "stores")  # what a user installs memlab with (dev and docs are the checkout's)
REFUSED = re.compile(r"^(\S+): data set '\1': (.*)$")


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
    built = _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                  "--wheel-dir", root / "dist", source])  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
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


def _memlab(venv: Path, *args: str) -> subprocess.CompletedProcess:
    """The wheel's console script, run from an empty folder outside the checkout."""
    return _run([venv / "venv" / "bin" / "memlab", *args], cwd=venv / "empty", env=_env(venv))


def test_memlab_is_imported_from_the_wheel(venv):
    found = _run([venv / "venv" / "bin" / "python", "-c", "import memlab; print(memlab.__file__)"],
                 cwd=venv / "empty", env=_env(venv))  # fmt: skip
    assert found.returncode == 0, found.stderr[-3000:]
    assert Path(found.stdout.strip()).is_relative_to(venv / "venv"), found.stdout


@pytest.mark.parametrize("suite", ["quick", "example"])
def test_a_packaged_suite_loads_the_checkouts_data_sets_from_the_wheel(venv, suite):
    done = _memlab(venv, "eval", "--suite", suite, "--dry-run")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    loaded = {m[1]: (m[2], m[3]) for line in done.stdout.splitlines() if (m := LOADED.match(line))}
    config = lab.load_suite(suite)  # in the checkout: its own fixtures/ and datasets/
    expected = {spec["name"]: lab.load_dataset(spec, config.base_dirs).checksum()
                for spec in config.resolved["datasets"]}  # fmt: skip
    assert {name: checksum for name, (_, checksum) in loaded.items()} == expected, done.stdout
    read = [Path(path) for path, _ in loaded.values() if path]
    assert read and all(path.is_relative_to(venv / "venv") for path in read), f"read outside the wheel: {read}"
    assert not list((venv / "empty").iterdir()), "a dry run writes nothing"


def test_a_suite_whose_data_is_not_shipped_is_refused_with_where_to_get_it(venv):
    done = _memlab(venv, "eval", "--suite", "ci", "--dry-run")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout[-3000:] + done.stderr[-3000:]
    refused = {m[1]: m[2] for line in done.stdout.splitlines() if (m := REFUSED.match(line))}
    assert set(refused) == {"fact-fixtures", "lme-oracle", "lme-s-ku"}, done.stdout
    assert "fixtures/facts not found" in refused["fact-fixtures"] and "memlab checkout" in refused["fact-fixtures"]
    for name in ("lme-oracle", "lme-s-ku"):
        assert "ships only an extract" in refused[name] and "https://" in refused[name], refused[name]
        assert f"--set datasets.{name}.path=FILE" in refused[name], refused[name]


def test_the_quick_suite_runs_and_is_gated_from_the_wheel(venv, tmp_path, memlab_home, store):
    """`memlab eval` on the quick suite (the example conversations it ships, one system and no sweeps, on the test
    session's server and embedding cache, to stay inside the test budget: `make wheel-check` runs the whole suite in
    a home of its own), then `memlab baseline` and `memlab report` on it."""
    run, baseline = tmp_path / "run", tmp_path / "baseline.json"
    env = {**_env(venv), "MEMLAB_HOME": str(memlab_home)}
    eval_args = ["eval", "--suite", "quick", "--out", str(run), "--set", "sweeps=[]",
                 "--set", "datasets=[{name: mydata, format: memlab, path: fixtures/jsonl/example.jsonl}]",
                 "--set", "systems=[{name: pg-exact, strategy: exact}]"]  # fmt: skip
    for args in (eval_args, ["baseline", "--run", str(run), "--out", str(baseline)],
                 ["report", "--baseline", str(baseline), "--run", str(run)]):  # fmt: skip
        done = _run([venv / "venv" / "bin" / "memlab", *args], cwd=venv / "empty", env=env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "no regression" in done.stdout, done.stdout
    recall = json.loads((run / "metrics.json").read_text())["mydata/pg-exact/recall@10"]
    assert 0.5 < recall <= 1.0 and (run / "report.md").is_file() and (run / "report.html").is_file()
    [recorded] = json.loads((run / "manifest.json").read_text())["datasets"]
    ours = lab.load_dataset({"name": "mydata", "format": "memlab", "path": str(ROOT / "fixtures/jsonl/example.jsonl")})
    assert recorded["checksum"] == ours.checksum(), "the wheel's copy is the checkout's file"
