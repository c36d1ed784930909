"""The notebooks run headless, at CI size, against this test run's embedded PostgreSQL; committed notebooks carry
no outputs and start with a papermill-style `parameters` cell.

The notebooks are executed with nbclient on one kernel that runs this very interpreter (a kernelspec installed
into a temporary folder and found through JUPYTER_PATH), its names cleared between notebooks (`one_kernel`). The
parameters cell is followed by an injected cell that sets MEMLAB_HOME to the test home and shrinks the sizes; any
cell error fails the test.

Notebooks drive memlab through its public names only: `import memlab`, `from memlab import lab`, and names listed
in `memlab.__all__` / `memlab.lab.__all__` (checked on the imports and on attribute use of those modules).
"""

from __future__ import annotations

import ast
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from memlab.lab.report.notebooks import (
    one_kernel,
    parameter_names,
    parameters_cell,
    this_interpreter_kernel,
    with_parameters,
)
from tests.conftest import ROOT

NOTEBOOKS = ROOT / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
KERNEL = "memlab-test"
CELL_TIMEOUT_S = 600

# CI size, per notebook; every name must exist in that notebook's parameters cell.
SYNTH_CI = {"name": "synth", "format": "synth", "users": 4, "max_events": 120, "seed": 0}
CI_PARAMETERS: dict[str, dict[str, object]] = {
    "01_quickstart.ipynb": {},
    "02_granularity.ipynb": {"DATASET": SYNTH_CI},
    "03_cutoffs.ipynb": {"DATASET": SYNTH_CI, "CUTOFF_STEP": 0.05},
    "04_filtered_search.ipynb": {"DATASET": SYNTH_CI, "TOTAL_ROWS": 3000, "SHARES": [0.001, 0.01, 0.1],
                                 "EF_SEARCH": [10, 40, 100, 400], "QUERIES": 3},
    "05_fact_consolidation.ipynb": {"FIXTURES": ["mealkit-asha", "mealkit-chidi"], "EXTRACTORS": ["labelled", "rules"]},
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


@pytest.fixture(scope="module")
def execute(kernel):
    """Runs a notebook on the module's one kernel (`one_kernel`: its names cleared between notebooks, its imports
    and loaded model kept: a kernel of its own costs seconds of CPU to import memlab and load the model)."""
    with one_kernel(kernel, timeout=CELL_TIMEOUT_S, cwd=NOTEBOOKS) as run:
        yield run


def _notebook(*sources: str):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])


def test_kernel_runs_this_interpreter(execute):
    nb = _notebook("import sys\nprint(sys.executable, sys.prefix)")
    execute(nb)
    assert nb.cells[0].outputs[0]["text"].split() == [sys.executable, sys.prefix], "the kernel runs another Python"


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
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: outputs not stripped"
    params = parameters_cell(nb)
    assert "parameters" in params.metadata.get("tags", []), f"{path.name}: first code cell is not tagged parameters"
    assert {"DSN", "MEMLAB_HOME"} <= set(parameter_names(params)), f"{path.name}: needs DSN and MEMLAB_HOME"
    assert path.name in (NOTEBOOKS / "README.md").read_text(encoding="utf-8"), f"{path.name}: not in README"


def public_names() -> dict[str, set[str]]:
    """The modules a notebook may import and the names each exports."""
    import memlab
    from memlab import lab

    return {"memlab": set(memlab.__all__) | {"lab"}, "memlab.lab": set(lab.__all__)}


def code_of(nb) -> list[tuple[int, ast.Module]]:
    """Each code cell, parsed (IPython magics and shell escapes blanked out)."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in cell.source.splitlines()]
            out.append((i, ast.parse("\n".join(lines))))
    return out


def non_public_imports(trees: list[tuple[int, ast.Module]], public: dict[str, set[str]]) -> list[str]:
    """Imports of memlab modules other than memlab and memlab.lab, and imported names not in their __all__."""
    problems = []
    for i, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                problems += [f"cell {i}: import {a.name}" for a in node.names
                             if a.name.split(".")[0] == "memlab" and a.name not in public]  # fmt: skip
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "memlab":
                if node.module not in public:
                    problems.append(f"cell {i}: from {node.module} import {', '.join(a.name for a in node.names)}")
                else:
                    problems += [f"cell {i}: from {node.module} import {a.name} (not in {node.module}.__all__)"
                                 for a in node.names if a.name not in public[node.module]]  # fmt: skip
    return problems


def non_public_attributes(trees: list[tuple[int, ast.Module]], public: dict[str, set[str]]) -> list[str]:
    """`memlab.X` / `lab.X` (as bound by the notebook's imports) where X is not exported by that module."""
    bound: dict[str, str] = {}
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in public:
                        bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module == "memlab":
                bound.update({a.asname or a.name: "memlab.lab" for a in node.names if a.name == "lab"})

    def module_of(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return bound.get(expr.id)
        if isinstance(expr, ast.Attribute) and expr.attr == "lab" and module_of(expr.value) == "memlab":
            return "memlab.lab"
        return None

    problems = []
    for i, tree in trees:
        for node in ast.walk(tree):
            module = module_of(node.value) if isinstance(node, ast.Attribute) else None
            if module is not None and node.attr not in public[module] and not node.attr.startswith("__"):
                problems.append(f"cell {i}: {ast.unparse(node)} ({node.attr} is not in {module}.__all__)")
    return problems


def test_public_name_checks_catch_internal_use():
    public = public_names()
    trees = [(0, ast.parse("import memlab\nimport memlab.storage.store\nfrom memlab.lab.sweeps import cutoff\n"
                           "from memlab import lab, EventMemory, migrate\nfrom memlab.lab import plots, SUITES\n"
                           "memlab.embedding.packaged_minilm_path()\nlab.FaissExact\nlab.fixtures.x\n"
                           "memlab.lab.suites\nmemlab.EventMemory"))]  # fmt: skip
    assert non_public_imports(trees, public) == [
        "cell 0: import memlab.storage.store",
        "cell 0: from memlab.lab.sweeps import cutoff",
        "cell 0: from memlab import migrate (not in memlab.__all__)",
        "cell 0: from memlab.lab import SUITES (not in memlab.lab.__all__)",
    ]
    assert sorted(non_public_attributes(trees, public)) == [
        "cell 0: lab.fixtures (fixtures is not in memlab.lab.__all__)",
        "cell 0: memlab.embedding (embedding is not in memlab.__all__)",
        "cell 0: memlab.lab.suites (suites is not in memlab.lab.__all__)",
    ]


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebooks_import_only_public_names(path: Path):
    """Notebooks drive memlab: `import memlab`, `from memlab import lab`, `from memlab[.lab] import <__all__ name>`."""
    problems = non_public_imports(code_of(nbformat.read(path, as_version=4)), public_names())
    assert not problems, f"{path.name} imports memlab internals:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebooks_use_only_public_attributes(path: Path):
    """No reaching past the public API through attributes either (`memlab.storage.store...`, `lab.sweeps...`)."""
    problems = non_public_attributes(code_of(nbformat.read(path, as_version=4)), public_names())
    assert not problems, f"{path.name} uses memlab internals:\n" + "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs_at_ci_size(path: Path, execute, store, memlab_home, out_dir, record_property):
    nb = nbformat.read(path, as_version=4)
    names = set(parameter_names(parameters_cell(nb)))
    common = {"MEMLAB_HOME": str(memlab_home), "DSN": None, "FIXTURES_DIR": str(ROOT / "fixtures"),
              "OUT_DIR": str(out_dir / path.stem)}  # fmt: skip
    overrides = {k: v for k, v in common.items() if k in names} | CI_PARAMETERS[path.name]
    seconds = execute(with_parameters(nb, overrides))
    record_property("seconds", round(seconds, 1))
    print(f"{path.name}: {seconds:.1f} s")
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
    seconds = lab.render_notebooks(tmp_path / "html", {"MEMLAB_HOME": str(memlab_home), "DSN": None}, folder=folder)
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
    lab.render_notebooks(tmp_path / "html", {"MEMLAB_HOME": str(memlab_home), "DSN": dsn}, folder=folder)
    html = (tmp_path / "html" / "leak.html").read_text()
    assert "got the dsn: True" in html
    assert mark not in html and "***" in html
