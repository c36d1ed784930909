"""Execute the notebooks headless with injected parameters (papermill style) and render them to HTML.

Used by the test suite (every notebook at CI size) and by `memlab eval --notebooks` (HTML in the run folder).
Needs nbclient, nbformat, ipykernel and, for HTML, nbconvert (extras `dev` / `lab`)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memlab.errors import ConfigError

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
KERNEL = "memlab-run"


def _nbformat():
    try:
        import nbformat
    except ImportError as exc:  # pragma: no cover - depends on extras
        raise ConfigError("running notebooks needs nbclient and nbformat: pip install 'memlab[lab]'") from exc
    return nbformat


def parameters_cell(nb):
    code = [c for c in nb.cells if c.cell_type == "code"]
    if not code or "parameters" not in code[0].get("metadata", {}).get("tags", []):
        raise ConfigError("a notebook's first code cell must be tagged 'parameters'")
    return code[0]


def parameter_names(cell) -> list[str]:
    """Names assigned in a parameters cell; it may hold plain `NAME = <literal>` lines only."""
    names = []
    for node in ast.parse(cell.source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            raise ConfigError(f"parameters cell: only plain assignments, got {ast.unparse(node)!r}")
        ast.literal_eval(node.value)
        names.append(node.targets[0].id)
    return names


def with_parameters(nb, overrides: dict[str, object]):
    """Insert an `injected-parameters` cell after the parameters cell (only known names are accepted)."""
    nbformat = _nbformat()
    cell = parameters_cell(nb)
    unknown = sorted(set(overrides) - set(parameter_names(cell)))
    if unknown:
        raise ConfigError(f"not parameters of this notebook: {unknown}")
    source = "\n".join(f"{name} = {value!r}" for name, value in overrides.items())
    nb.cells.insert(
        nb.cells.index(cell) + 1, nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]})
    )
    return nb


@contextmanager
def this_interpreter_kernel(name: str = KERNEL) -> Iterator[str]:
    """A kernelspec that runs this interpreter, made visible through JUPYTER_PATH for the duration."""
    prefix = Path(tempfile.mkdtemp(prefix="memlab-kernel-"))
    old = os.environ.get("JUPYTER_PATH")
    try:
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", name],
                       check=True, capture_output=True)  # fmt: skip
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(prefix / "share" / "jupyter"), old]))
        yield name
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old
        shutil.rmtree(prefix, ignore_errors=True)


def execute(nb, kernel_name: str, *, timeout: int = 600, cwd: Path = NOTEBOOKS) -> float:
    """Run every cell; raises on the first cell error. Returns seconds."""
    from nbclient import NotebookClient

    started = time.perf_counter()
    NotebookClient(nb, kernel_name=kernel_name, timeout=timeout, allow_errors=False,
                   resources={"metadata": {"path": str(cwd)}}).execute()  # fmt: skip
    return time.perf_counter() - started


def render_notebooks(out: Path, overrides: dict[str, object], *, folder: Path = NOTEBOOKS) -> dict[str, float]:
    """Execute every notebook of `folder` with `overrides` and write `<out>/<name>.html`; seconds per notebook."""
    nbformat = _nbformat()
    try:
        from nbconvert import HTMLExporter
    except ImportError as exc:  # pragma: no cover - depends on extras
        raise ConfigError("rendering notebooks to HTML needs nbconvert: pip install 'memlab[lab]'") from exc
    out.mkdir(parents=True, exist_ok=True)
    timings = {}
    with this_interpreter_kernel() as kernel:
        for path in sorted(folder.glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            known = set(parameter_names(parameters_cell(nb)))
            with_parameters(nb, {k: v for k, v in overrides.items() if k in known})
            timings[path.stem] = execute(nb, kernel, cwd=folder)
            html, _ = HTMLExporter().from_notebook_node(nb)
            (out / f"{path.stem}.html").write_text(html, encoding="utf-8")
    return timings
