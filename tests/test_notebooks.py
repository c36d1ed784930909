"""The notebooks run headless, at CI size, against this test run's embedded PostgreSQL; committed notebooks carry
no outputs and start with a papermill-style `parameters` cell.

Each notebook is executed with nbclient on a kernel that runs this very interpreter (a kernelspec installed into
a temporary folder and found through JUPYTER_PATH). The parameters cell is followed by an injected cell that
sets MEMLAB_HOME to the test home and shrinks the sizes; any cell error fails the test.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from memlab.lab.notebooks import execute as run_notebook
from memlab.lab.notebooks import parameter_names, parameters_cell, this_interpreter_kernel, with_parameters

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
KERNEL = "memlab-test"
CELL_TIMEOUT_S = 600

# CI size, per notebook; every name must exist in that notebook's parameters cell.
CI_PARAMETERS: dict[str, dict[str, object]] = {
    "01_quickstart.ipynb": {},
    "02_granularity.ipynb": {"DATASET": "synth", "SUITE": "ci", "SYNTH_USERS": 8, "SYNTH_MAX_EVENTS": 120},
    "03_cutoffs.ipynb": {"DATASET": "synth", "SUITE": "ci", "SYNTH_USERS": 8, "SYNTH_MAX_EVENTS": 120,
                         "MODEL_2": "minilm-256", "CUTOFF_STEP": 0.02},
    "04_filtered_search.ipynb": {"DATASET": "synth", "SUITE": "ci", "SYNTH_USERS": 8, "SYNTH_MAX_EVENTS": 120,
                                 "TOTAL_ROWS": 3000, "SHARES": (0.001, 0.01, 0.1), "EF_SEARCH": (10, 40, 100, 400),
                                 "QUERIES": 3},
    "05_fact_consolidation.ipynb": {"FIXTURES": ["mealkit-asha", "mealkit-chidi"]},
}  # fmt: skip


@pytest.fixture(scope="module")
def kernel():
    """A kernelspec whose argv is this interpreter, visible to nbclient through JUPYTER_PATH."""
    with this_interpreter_kernel(KERNEL) as name:
        yield name


@pytest.fixture(scope="module")
def out_dir():
    path = Path(tempfile.mkdtemp(prefix="memlab-nb-out-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def execute(nb, kernel_name: str) -> float:
    return run_notebook(nb, kernel_name, timeout=CELL_TIMEOUT_S, cwd=NOTEBOOKS)


def test_kernel_runs_this_interpreter(kernel):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import sys\nprint(sys.executable, sys.prefix)")])
    execute(nb, kernel)
    assert nb.cells[0].outputs[0]["text"].split() == [sys.executable, sys.prefix], "the kernel runs another Python"


def test_every_notebook_has_ci_parameters():
    assert len(PATHS) >= 5, PATHS
    assert {p.name for p in PATHS} == set(CI_PARAMETERS)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_committed_notebook_is_clean(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: outputs not stripped"
    params = parameters_cell(nb)
    assert "parameters" in params.metadata.get("tags", []), f"{path.name}: first code cell is not tagged parameters"
    assert {"DSN", "MEMLAB_HOME"} <= set(parameter_names(params)), f"{path.name}: needs DSN and MEMLAB_HOME"
    assert path.name in (NOTEBOOKS / "README.md").read_text(encoding="utf-8"), f"{path.name}: not in README"


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs_at_ci_size(path: Path, kernel, store, memlab_home, out_dir, record_property):
    nb = nbformat.read(path, as_version=4)
    names = set(parameter_names(parameters_cell(nb)))
    common = {"MEMLAB_HOME": str(memlab_home), "DSN": None, "FIXTURES_DIR": str(ROOT / "fixtures"),
              "OUT_DIR": str(out_dir / path.stem)}  # fmt: skip
    overrides = {k: v for k, v in common.items() if k in names} | CI_PARAMETERS[path.name]
    seconds = execute(with_parameters(nb, overrides), kernel)
    record_property("seconds", round(seconds, 1))
    print(f"{path.name}: {seconds:.1f} s")
    with store.connection() as conn:  # the notebook's last cell dropped its scratch database
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'memlab\\_nb%'").fetchall()
    assert not left, f"{path.name} left scratch databases behind: {left}"


def test_notebooks_render_to_html_for_a_run(tmp_path, store, memlab_home):
    """`memlab eval --notebooks` renders executed notebooks into the run folder (one notebook here, for time)."""
    from memlab.lab.notebooks import render_notebooks

    folder = tmp_path / "nb"
    folder.mkdir()
    shutil.copy(NOTEBOOKS / "01_quickstart.ipynb", folder)
    shutil.copytree(NOTEBOOKS.parent / "fixtures", tmp_path / "fixtures")
    seconds = render_notebooks(tmp_path / "html", {"MEMLAB_HOME": str(memlab_home), "DSN": None}, folder=folder)
    html = (tmp_path / "html" / "01_quickstart.html").read_text()
    assert set(seconds) == {"01_quickstart"} and "<html" in html.lower() and "Traceback" not in html
