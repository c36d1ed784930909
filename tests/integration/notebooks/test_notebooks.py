"""The notebooks run headless, at CI size, against this test run's embedded PostgreSQL; committed notebooks carry
no outputs and start with a papermill-style `parameters` cell.

The notebooks name the stock `python3` kernel, so any Python 3 kernel that has memlab runs them (no kernel of
memlab's own to install). They are executed with nbclient on one such kernel, the stock one of this test's
environment (ipykernel's `python3`, which jupyter_client starts with this very interpreter), its names cleared
between notebooks (`one_kernel`). The parameters cell is followed by an injected cell that sets MEMLAB_HOME to the
test home and shrinks the sizes; any cell error fails the test.

Notebooks drive memlab through its public faces only: tests/integration/package/test_faces.py checks their
imports and attribute use.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

import memlab
from memlab.lab.report.notebooks import one_kernel, parameter_names, parameters_cell, with_parameters
from tests.conftest import ROOT

NOTEBOOKS = ROOT / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
KERNEL = "python3"  # the stock kernel every committed notebook names
CELL_TIMEOUT_S = 600

# CI size, per notebook; every name must exist in that notebook's parameters cell.
# Every cell runs; the grids are as small as still gives each table and plot more than one value to show.
SYNTH_CI = {"name": "synth", "format": "synth", "users": 3, "max_events": 80, "seed": 0}
CI_PARAMETERS: dict[str, dict[str, object]] = {
    "01_quickstart.ipynb": {},
    "02_granularity.ipynb": {"DATASET": SYNTH_CI, "CHUNKS": [[4, 1]]},
    "03_cutoffs.ipynb": {"DATASET": SYNTH_CI, "CUTOFF_STEP": 0.1},
    "04_filtered_search.ipynb": {"DATASET": SYNTH_CI, "TEXTS": 300, "TOTAL_ROWS": 3000, "SHARES": [0.001, 0.1],
                                 "EF_SEARCH": [10, 100], "ITERATIVE": ["off", "relaxed_order"], "QUERIES": 3,
                                 "BACKGROUND_TENANTS": 10},
    "05_fact_consolidation.ipynb": {"FIXTURES": ["mealkit-asha", "mealkit-chidi"], "EXTRACTORS": ["labelled", "rules"]},
}  # fmt: skip


def printed_defaults() -> dict[str, list[str]]:
    """Per notebook, what its outputs must say of the defaults its prose refers to, as memlab's code has them: a
    notebook prints a default from the code rather than stating a number in Markdown that can drift from it."""
    search, policy = memlab.SearchSettings(), memlab.AutoPolicy()
    exact = f"auto scans a user's rows exactly up to {policy.exact_below:,} units"
    return {"01_quickstart.ipynb": [exact],
            "04_filtered_search.ipynb": [f"ef_search {search.ef_search}, iterative_scan {search.iterative_scan!r}",
                                         exact]}  # fmt: skip


def printed(nb) -> str:
    """Everything an executed notebook's code cells printed."""
    return "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
                   if out.output_type == "stream")  # fmt: skip


@pytest.fixture(scope="module")
def out_dir():
    path = Path(tempfile.mkdtemp(prefix="memlab-nb-out-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def execute():
    """Runs a notebook on the module's one stock `python3` kernel (`one_kernel`: its names cleared between
    notebooks, its imports and loaded model kept: a kernel of its own costs seconds of CPU to import memlab and load
    the model)."""
    with one_kernel(KERNEL, timeout=CELL_TIMEOUT_S, cwd=NOTEBOOKS) as run:
        yield run


def _notebook(*sources: str):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])


def test_the_stock_kernel_runs_this_interpreter(execute):
    nb = _notebook("import sys\nprint(sys.executable, sys.prefix)")
    execute(nb)
    assert nb.cells[0].outputs[0]["text"].split() == [sys.executable, sys.prefix], "python3 runs another Python"


def test_a_notebook_on_the_shared_kernel_sees_no_name_the_previous_one_left(execute, tmp_path):
    from nbclient.exceptions import CellExecutionError

    execute(_notebook("import os\nleft_behind = 1\nos.chdir(" + repr(str(tmp_path)) + ")"))
    with pytest.raises(CellExecutionError, match="NameError"):
        execute(_notebook("left_behind"))
    with pytest.raises(CellExecutionError, match="NameError"):
        execute(_notebook("os.getcwd()"))  # imports are names too: each notebook imports what it uses
    nb = _notebook("import os\nprint(os.getcwd())")
    execute(nb)
    assert nb.cells[0].outputs[0]["text"].strip() == str(NOTEBOOKS), "the working folder is set again"


def test_every_notebook_has_ci_parameters():
    assert len(PATHS) >= 5, PATHS
    assert {p.name for p in PATHS} == set(CI_PARAMETERS)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_committed_notebook_is_clean(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == KERNEL, f"{path.name}: names kernel {nb.metadata.kernelspec.name!r}"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: outputs not stripped"
    params = parameters_cell(nb)
    assert "parameters" in params.metadata.get("tags", []), f"{path.name}: first code cell is not tagged parameters"
    assert {"DSN", "MEMLAB_HOME"} <= set(parameter_names(params)), f"{path.name}: needs DSN and MEMLAB_HOME"
    assert path.name in (NOTEBOOKS / "README.md").read_text(encoding="utf-8"), f"{path.name}: not in README"


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs_at_ci_size(path: Path, execute, store, memlab_home, out_dir, record_property):
    nb = nbformat.read(path, as_version=4)
    names = set(parameter_names(parameters_cell(nb)))
    common = {"MEMLAB_HOME": str(memlab_home), "DSN": None, "FIXTURES_DIR": str(ROOT / "fixtures"),
              "OUT_DIR": str(out_dir / path.stem)}  # fmt: skip
    overrides = {k: v for k, v in common.items() if k in names} | CI_PARAMETERS[path.name]
    run = with_parameters(nb, overrides)
    seconds = execute(run)
    record_property("seconds", round(seconds, 1))
    print(f"{path.name}: {seconds:.1f} s")
    for line in printed_defaults().get(path.name, []):
        assert line in printed(run), f"{path.name} does not print {line!r}, the default its prose refers to"
    with store.connection() as conn:  # the notebook's last cell dropped its scratch database
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'memlab\\_nb%'").fetchall()
    assert not left, f"{path.name} left scratch databases behind: {left}"


def test_notebooks_render_to_html_for_a_run(tmp_path, store, memlab_home):
    """`memlab eval --notebooks` renders executed notebooks into the run folder: a small notebook that opens the
    store its injected parameters name (each real notebook already runs at ci size above; quickstart ran twice)."""
    from memlab import lab

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("DSN = 'unset'\nMEMLAB_HOME = 'unset'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("import memlab\nwith memlab.open_store(home=MEMLAB_HOME, dsn=DSN) as s, "
                                  "s.connection() as conn:\n"
                                  "    print('server', conn.execute('SHOW port').fetchone()[0])"),
    ])  # fmt: skip
    folder = tmp_path / "nb"
    folder.mkdir()
    nbformat.write(nb, folder / "small.ipynb")
    parameters = {"MEMLAB_HOME": str(memlab_home), "DSN": None}
    seconds = lab.report.render_notebooks(tmp_path / "html", parameters, folder=folder)
    html = (tmp_path / "html" / "small.html").read_text()
    with store.connection() as conn:
        port = conn.execute("SHOW port").fetchone()[0]
    assert set(seconds) == {"small"} and "<html" in html.lower() and "Traceback" not in html
    assert f"server {port}" in html, "the notebook reached this run's server through its injected MEMLAB_HOME"


def test_a_dsn_password_never_reaches_the_rendered_html(tmp_path, memlab_home):
    """`memlab eval --notebooks --dsn postgresql://u:PASSWORD@...`: the notebook gets the DSN (through its
    kernel's environment, not a cell) and no page shows the password, not even a cell that prints it."""
    from memlab import lab

    mark = "Zq7NotebookMarker"
    dsn = f"postgresql://memlab:{mark}@127.0.0.1:1/memlab"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("DSN = None\nMEMLAB_HOME = None", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("print('got the dsn:', DSN is not None and DSN.startswith('postgresql://'))"),
        nbformat.v4.new_code_cell("print(DSN)\nDSN"),
        nbformat.v4.new_code_cell("print(DSN.split(':')[2].split('@')[0][::-1][::-1])"),  # the password alone
    ])  # fmt: skip
    folder = tmp_path / "nb"
    folder.mkdir()
    nbformat.write(nb, folder / "leak.ipynb")
    lab.report.render_notebooks(tmp_path / "html", {"MEMLAB_HOME": str(memlab_home), "DSN": dsn}, folder=folder)
    html = (tmp_path / "html" / "leak.html").read_text()
    assert "got the dsn: True" in html
    assert mark not in html and "***" in html
