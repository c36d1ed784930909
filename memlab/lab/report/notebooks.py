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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError
from memlab.safety.redact import dsn_secrets, hide_known, redact

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"
KERNEL = "memlab-run"


def _nbformat():
    try:  # optional: nbformat, nbclient and nbconvert come with the `lab` extra, not with memlab itself
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


def with_parameters(nb, overrides: dict[str, object], *, from_env: dict[str, str] | None = None):
    """Insert an `injected-parameters` cell after the parameters cell (only known names are accepted).
    `from_env` maps a parameter to the environment variable the kernel reads it from: a secret's value (a DSN's
    password) is then never written into the notebook, so no rendered page shows it."""
    nbformat = _nbformat()
    cell = parameters_cell(nb)
    from_env = from_env or {}
    unknown = sorted((set(overrides) | set(from_env)) - set(parameter_names(cell)))
    if unknown:
        raise ConfigError(f"not parameters of this notebook: {unknown}")
    source = "\n".join([*(f"{name} = {value!r}" for name, value in overrides.items()),
                        *(f"{name} = __import__('os').environ[{var!r}]" for name, var in from_env.items())])
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


def _client(nb, kernel_name: str, timeout: int, cwd: Path, km: Any = None):
    """The nbclient client that runs `nb` in `cwd`, stopping at the first cell error; on `km`'s kernel if given."""
    from nbclient import NotebookClient  # optional (the `lab` extra); render_notebooks checked nbformat first

    return NotebookClient(nb, km=km, kernel_name=kernel_name, timeout=timeout, allow_errors=False,
                          resources={"metadata": {"path": str(cwd)}})  # fmt: skip


def execute(nb, kernel_name: str, *, timeout: int = 600, cwd: Path = NOTEBOOKS) -> float:
    """Run every cell on a kernel of its own; raises on the first cell error. Returns seconds."""
    started = time.perf_counter()
    _client(nb, kernel_name, timeout, cwd).execute()
    return time.perf_counter() - started


@contextmanager
def one_kernel(kernel_name: str, *, timeout: int = 600, cwd: Path = NOTEBOOKS) -> Iterator[Callable[[Any], float]]:
    """One kernel for a series of notebooks: the `run(nb)` it yields executes `nb` (raising on the first cell
    error; seconds) on that kernel after clearing what the previous notebook left: its names (`%reset -f`, so a
    notebook still fails on a name it never defined or imported) and the working folder. What carries over is
    the interpreter's imported modules and memlab's loaded model, seconds of CPU each kernel would pay again;
    the cells' execution counts also run on, which is why `render_notebooks`, whose pages people read, gives
    each notebook a kernel of its own. The kernel is shut down on leaving."""
    from nbclient.util import run_sync  # optional (the `lab` extra), as in `_client`

    nbformat = _nbformat()
    kernel: list[Any] = []  # the kernel manager, once the first notebook started it

    def on_kernel(nb) -> None:
        client = _client(nb, kernel_name, timeout, cwd, km=kernel[0] if kernel else None)
        try:
            client.execute(cleanup_kc=False)  # the kernel outlives this notebook
        finally:
            if not kernel and client.km is not None:
                kernel.append(client.km)
            if client.kc is not None:
                client.kc.stop_channels()

    def run(nb) -> float:
        started = time.perf_counter()
        if kernel:
            on_kernel(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
                f"%reset -f\nimport os as _os\n_os.chdir({str(cwd)!r})\ndel _os")]))  # fmt: skip
        on_kernel(nb)
        return time.perf_counter() - started

    try:
        yield run
    finally:
        if kernel:
            run_sync(kernel[0].shutdown_kernel)(now=True)


def secret_parameters(overrides: dict[str, object]) -> dict[str, str]:
    """The overrides the redactor would change (a DSN with a password, a key): passed through the kernel's
    environment, never written into a cell."""
    return {k: v for k, v in overrides.items() if isinstance(v, str) and redact(v) != v}


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def redact_outputs(nb, secrets: list[str]) -> None:
    """Every output of the executed notebook (printed text, values, HTML, tracebacks) through the redactor, which
    also knows the secret parameters; cell sources have the secrets' literal values replaced."""
    def clean(text):
        return [clean(t) for t in text] if isinstance(text, list) else redact(text, secrets)

    for cell in nb.cells:
        cell.source = hide_known(cell.source, secrets)
        for output in cell.get("outputs", []):
            if "text" in output:
                output["text"] = clean(output["text"])
            for mime in [m for m in output.get("data", {}) if m.startswith("text/") or m.endswith("json")]:
                if isinstance(output["data"][mime], str | list):
                    output["data"][mime] = clean(output["data"][mime])
            if output.get("output_type") == "error":
                output["evalue"] = clean(output.get("evalue", ""))
                output["traceback"] = clean(output.get("traceback", []))


def render_notebooks(out: Path, overrides: dict[str, object], *, folder: Path = NOTEBOOKS) -> dict[str, float]:
    """Execute every notebook of `folder` with `overrides` and write `<out>/<name>.html`; seconds per notebook.
    A parameter holding a secret (`secret_parameters`) reaches the kernel through its environment, and every
    output passes the redactor, so the pages in a run folder hold no password."""
    nbformat = _nbformat()
    try:  # optional: the `lab` extra
        from nbconvert import HTMLExporter
    except ImportError as exc:  # pragma: no cover - depends on extras
        raise ConfigError("rendering notebooks to HTML needs nbconvert: pip install 'memlab[lab]'") from exc
    out.mkdir(parents=True, exist_ok=True)
    timings = {}
    secrets = secret_parameters(overrides)
    env = {f"MEMLAB_NB_{name}": value for name, value in secrets.items()}
    known = [*secrets.values(), *(p for v in secrets.values() for p in dsn_secrets(v))]  # a password echoed alone
    with this_interpreter_kernel() as kernel, _environ(env):
        for path in sorted(folder.glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            names = set(parameter_names(parameters_cell(nb)))
            with_parameters(nb, {k: v for k, v in overrides.items() if k in names and k not in secrets},
                            from_env={k: f"MEMLAB_NB_{k}" for k in secrets if k in names})  # fmt: skip
            try:
                timings[path.stem] = execute(nb, kernel, cwd=folder)
            finally:
                redact_outputs(nb, known)
            html, _ = HTMLExporter().from_notebook_node(nb)
            html = hide_known(html, known)
            (out / f"{path.stem}.html").write_text(html, encoding="utf-8")
    return timings
