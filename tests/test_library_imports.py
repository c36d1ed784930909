"""The memory library's import graph (memlab/ without the workbench memlab/lab and the CLI): it flows one way,
base modules <- storage <- embedding <- models <- events <- facts <- erasure and adapters, with no circle
(imports inside functions and under TYPE_CHECKING counted), modules import their siblings rather than their own
package, and every import is at module level except those of an optional or costly dependency, each listed here with its
reason and commented where it stands."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT
from tests.test_import_graph import imported_names, module_files

BASE = {"memlab.errors", "memlab.redact", "memlab.config", "memlab.types", "memlab.inputs"}
LAYERS = ("storage", "embedding", "models", "events", "facts")  # models: the chat and re-rank clients
TOP = {"memlab.erasure", "memlab.adk", "memlab.adapters"}
# The credential detector decides which events become memory, so it lives in events; the base redactor uses it
# too. It imports nothing of memlab but its shapes and the pattern gates, so the redactor pulls no event memory in.
BASE_LEAVES = {"memlab.events.secrets", "memlab.events.secret_shapes", "memlab.events.pattern_gates"}

# (file, imported module) -> why it is imported inside a function. One line each.
DEFERRED: dict[tuple[str, str], str] = {
    ("memlab/embedding/sentence_transformer.py", "sentence_transformers"): "torch and sentence-transformers take "
    "seconds to import; a user who never embeds locally never pays it",
    ("memlab/embedding/sentence_transformer.py", "transformers.utils"): "the same: part of the model's lazy load",
    ("memlab/embedding/sentence_transformer.py", "torch"): "the same: read after the model's lazy load (cpu_threads)",
    ("memlab/models/rerank.py", "sentence_transformers"): "the same cost, paid only when a cross-encoder re-ranker "
    "scores a pair the cache does not hold",
}


def _library_files() -> dict[str, Path]:
    """module name -> file, for the memory library (the workbench and the CLI left out)."""
    return {m: p for m, p in module_files().items() if not (m.startswith("memlab.lab") or m == "memlab.cli")}


def _imports(module: str, path: Path) -> list[tuple[ast.stmt, list[str]]]:
    """Each import statement of a module with the modules it names (tests/test_import_graph.py reads them)."""
    return imported_names(module, path, ast.parse(path.read_text()))


def _graph() -> dict[str, set[str]]:
    files = _library_files()
    return {
        m: {t for _, targets in _imports(m, p) for t in targets if t in files and t != m} for m, p in files.items()
    }


def _rank(module: str) -> int:
    if module in BASE or module in BASE_LEAVES:
        return 0
    if module in TOP or module.startswith("memlab.adapters."):
        return len(LAYERS) + 1
    if module == "memlab":
        return len(LAYERS) + 2
    return 1 + LAYERS.index(module.split(".")[1])


def test_the_library_has_no_import_circle():
    graph = _graph()
    seen: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(node: str, path: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(graph[node]):
            assert seen.get(nxt) != 1, "import circle: " + " -> ".join([*path[path.index(nxt) :], nxt])
            if nxt not in seen:
                visit(nxt, [*path, nxt])
        seen[node] = 2

    for start in sorted(graph):
        if start not in seen:
            visit(start, [start])


def test_modules_import_their_siblings_not_their_own_package():
    problems = []
    for module, path in _library_files().items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node, targets in _imports(module, path):
            if path.name != "__init__.py" and package != "memlab" and targets[0] == package:
                problems.append(f"{path.relative_to(ROOT)}:{node.lineno} imports its own package {package}")
    assert not problems, "\n".join(problems)


def test_the_library_flows_one_way():
    problems = [
        f"{m} (layer {_rank(m)}) imports {t} (layer {_rank(t)})"
        for m, targets in _graph().items()
        for t in targets
        if _rank(t) > _rank(m)
    ]
    assert not problems, "\n".join(problems)


def test_imports_are_at_module_level_but_for_listed_optional_or_costly_ones():
    found = {}
    for path in _library_files().values():
        lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    name = node.names[0].name if isinstance(node, ast.Import) else node.module or ""
                    key = (path.relative_to(ROOT).as_posix(), name)
                    found[key] = "#" in lines[node.lineno - 1] or "#" in lines[node.lineno - 2]
    unexplained = sorted(set(found) - set(DEFERRED))
    assert not unexplained, f"imports inside functions (move them to the top, or list the reason): {unexplained}"
    assert all(found.values()), f"a deferred import without its comment: {[k for k, v in found.items() if not v]}"
    assert not set(DEFERRED) - set(found), "DEFERRED lists imports that are gone"
