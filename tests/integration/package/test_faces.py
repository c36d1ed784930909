"""Each part of memlab has a small public face: `memlab`, each library package (memlab.events, .facts, .storage,
.embedding, .models, .table_store), `memlab.lab` and each stage package of the workbench (memlab.lab.datasets,
.metrics, .report, ...). Each face's `__all__` holds at most MAX_NAMES names, every one of them there.

The CLI and the notebooks (their code cells, and the names notebooks/README.md shows) use only faces: they import
a face or a name of its `__all__`, and reach through attributes only to a name of a face's `__all__` or to a face
below it (`lab.report.write_report`), never to a module below a stage package (`lab.report.writer`). The import
contract "cli-through-faces" (pyproject.toml) states the CLI's part for `lint-imports`; this file checks the
attributes it cannot see, the notebooks, and that the contract fails on a violation. The CLI imports the
workbench lazily (`workbench()`), which counts here as `memlab.lab`."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import nbformat
import pytest

from tests.conftest import ROOT
from tests.integration.package.test_import_graph import MEMLAB, lint_imports

MAX_NAMES = 40
LIBRARY = ["events", "facts", "storage", "embedding", "models", "table_store"]
STAGES = sorted(p.parent.name for p in (MEMLAB / "lab").glob("*/__init__.py"))  # every stage package is a face
FACES = ["memlab", *(f"memlab.{name}" for name in LIBRARY), "memlab.lab", *(f"memlab.lab.{name}" for name in STAGES),
         "memlab.lab.reliability.probes"]  # fmt: skip
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CLI = MEMLAB / "cli"  # a module per group of commands, each importing the shared parts of cli/main.py
LAZY_CALLS = {"workbench": "memlab.lab"}  # the CLI's deferred import of the workbench


def face(name: str) -> ModuleType:
    return importlib.import_module(name)


def child_face(module: str, attr: str) -> str | None:
    """`module.attr` when that is a face itself (a stage package of memlab.lab, a library package of memlab)."""
    return f"{module}.{attr}" if f"{module}.{attr}" in FACES else None


def exported(module: str, attr: str) -> bool:
    return attr in face(module).__all__ or child_face(module, attr) is not None


class FaceUse(ast.NodeVisitor):
    """Walks one source: which memlab modules it imports and which attributes of a face it reads. `bound` maps a
    local name to the face it stands for (`lab` -> memlab.lab after `from memlab import lab`)."""

    def __init__(self, where: str, calls: dict[str, str] | None = None) -> None:
        self.where, self.calls, self.bound, self.problems = where, calls or {}, {}, []

    def problem(self, node: ast.AST, text: str) -> None:
        self.problems.append(f"{self.where}:{getattr(node, 'lineno', '?')}: {text}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] != "memlab":
                continue
            if alias.name not in FACES:
                self.problem(node, f"import {alias.name} (not a face)")
            elif alias.asname:
                self.bound[alias.asname] = alias.name
            else:
                self.bound["memlab"] = "memlab"

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or module.split(".")[0] != "memlab":
            return
        if module not in FACES:
            self.problem(node, f"from {module} import ... ({module} is not a face)")
            return
        for alias in node.names:
            if not exported(module, alias.name):
                self.problem(node, f"from {module} import {alias.name} (not in {module}.__all__)")
            elif sub := child_face(module, alias.name):
                self.bound[alias.asname or alias.name] = sub

    def visit_Assign(self, node: ast.Assign) -> None:
        if (module := self.resolve(node.value)) is not None:
            self.bound.update({target.id: module for target in node.targets if isinstance(target, ast.Name)})

    def resolve(self, expr: ast.expr) -> str | None:
        """The face an expression stands for, if any."""
        if isinstance(expr, ast.Name):
            return self.bound.get(expr.id)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and not expr.args:
            return self.calls.get(expr.func.id)
        if isinstance(expr, ast.Attribute) and (module := self.resolve(expr.value)) is not None:
            return child_face(module, expr.attr)
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        """One step of a chain: only the first step past a face is reported (the rest resolve to nothing)."""
        module = self.resolve(node.value)
        if module is not None and not node.attr.startswith("__") and not exported(module, node.attr):
            self.problem(node, f"{ast.unparse(node)} ({node.attr} is not in {module}.__all__)")


def face_problems(where: str, trees: Iterable[ast.AST], calls: dict[str, str] | None = None) -> list[str]:
    """Every use of memlab in `trees` (a file, or a notebook's cells) that goes past a face: imports first (a
    notebook's import cell binds names for the cells after it), then names assigned a face, then every attribute
    read."""
    use = FaceUse(where, calls)
    trees = list(trees)
    for kind, visit in ((ast.Import | ast.ImportFrom, use.visit), (ast.Assign, use.visit_Assign),
                        (ast.Attribute, use.visit_Attribute)):  # fmt: skip
        for i, tree in enumerate(trees):
            use.where = f"{where} code cell {i}" if len(trees) > 1 else where
            for node in sorted((n for n in ast.walk(tree) if isinstance(n, kind)), key=_position):
                visit(node)
    return use.problems


def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def notebook_trees(path: Path) -> list[ast.Module]:
    """Each code cell, parsed (IPython magics and shell escapes blanked out)."""
    out = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in cell.source.splitlines()]
            out.append(ast.parse("\n".join(lines)))
    return out


def readme_names(text: str) -> list[str]:
    """`memlab.X...` and `lab.X...` in the code spans of a markdown page, as attribute chains."""
    spans = re.findall(r"`([^`\n]+)`", text)
    return [m.group(0) for span in spans for m in re.finditer(r"(?<![\w./])(?:memlab|lab)(?:\.\w+)+", span)]


# ------------------------------------------------------------------------------------------------- the faces


@pytest.mark.parametrize("name", FACES)
def test_a_face_exports_at_most_forty_names_that_exist(name: str):
    module = face(name)
    names = list(module.__all__)
    assert len(names) <= MAX_NAMES, f"{name}.__all__ has {len(names)} names (at most {MAX_NAMES})"
    assert len(set(names)) == len(names), f"{name}.__all__ repeats a name"
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not hold: {missing}"
    assert module.__doc__ and module.__doc__.strip(), f"{name} has no package docstring saying what it is"


@pytest.mark.parametrize("name", [f for f in FACES if f not in ("memlab", "memlab.lab")])
def test_a_package_face_says_its_modules_are_internal(name: str):
    assert "internal" in face(name).__doc__, f"{name}'s docstring does not say its modules are internal"


def test_the_workbench_face_holds_every_stage():
    from memlab import lab

    assert set(STAGES) <= set(lab.__all__), f"stages missing from memlab.lab.__all__: {set(STAGES) - set(lab.__all__)}"
    assert {"datasets", "metrics", "report", "experiment", "reliability"} <= set(STAGES)


def test_the_library_face_leaves_the_workbench_unimported():
    """`import memlab` and the CLI's --help never pay for the workbench (pandas, scikit-learn, FAISS ...)."""
    code = "import sys, memlab, memlab.cli; print(sorted(m for m in sys.modules if m.startswith('memlab.lab')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout


# ------------------------------------------------------------------------------------------- the face checker


def check(source: str, calls: dict[str, str] | None = None) -> list[str]:
    return [p.split(": ", 1)[1] for p in face_problems("x", [ast.parse(source)], calls)]


def test_the_face_checker_catches_internal_use():
    assert check("import memlab\nimport memlab.storage.store\nfrom memlab.lab.sweeps import cutoff\n"
                 "from memlab import lab, EventMemory, migrate_embeddings\nfrom memlab.lab import plots\n"
                 "memlab.embedding.nope\nlab.FaissExact\nlab.report.writer.write_report\nmemlab.lab.suites\n"
                 "lab.outputs.claim_folder\nmemlab.EventMemory\nlab.report.write_report") == [
        "import memlab.storage.store (not a face)",
        "from memlab.lab.sweeps import cutoff (not in memlab.lab.sweeps.__all__)",
        "from memlab import migrate_embeddings (not in memlab.__all__)",
        "from memlab.lab import plots (not in memlab.lab.__all__)",
        "memlab.embedding.nope (nope is not in memlab.embedding.__all__)",
        "lab.report.writer (writer is not in memlab.lab.report.__all__)",
        "memlab.lab.suites (suites is not in memlab.lab.__all__)",
        "lab.outputs (outputs is not in memlab.lab.__all__)",
    ]


def test_the_face_checker_follows_a_lazy_import_and_names_bound_to_a_face():
    source = "def f():\n    lab = workbench()\n    lab.config.load_config\n    lab.config.parse.load_config\n" \
             "workbench().outputs\nfrom memlab.lab import report\nreport.writer\nreport.write_report\n"
    assert check(source, LAZY_CALLS) == [
        "lab.config.parse (parse is not in memlab.lab.config.__all__)",
        "workbench().outputs (outputs is not in memlab.lab.__all__)",
        "report.writer (writer is not in memlab.lab.report.__all__)",
    ]
    assert check("from memlab.lab.datasets.model import Dataset") == [
        "from memlab.lab.datasets.model import ... (memlab.lab.datasets.model is not a face)"]


# ------------------------------------------------------------------------------------- the CLI and notebooks


def test_the_cli_uses_only_faces():
    trees = [ast.parse(path.read_text()) for path in sorted(CLI.glob("*.py"))]
    assert any(isinstance(n, ast.FunctionDef) and n.name == "workbench" for t in trees for n in t.body), \
        "no lazy workbench()"  # fmt: skip
    for tree in trees:  # the CLI's own modules import each other
        tree.body = [n for n in tree.body if not (isinstance(n, ast.ImportFrom) and (n.module or "").startswith(
            "memlab.cli"))]  # fmt: skip
    problems = face_problems("memlab/cli", trees, LAZY_CALLS)
    assert not problems, "the CLI reaches past a face:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_notebook_uses_only_faces(path: Path):
    """Its code cells, and the names its text cells show (`memlab.facts.state_of`)."""
    problems = face_problems(path.name, notebook_trees(path))
    assert not problems, f"{path.name} reaches past a face:\n" + "\n".join(problems)
    text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    problems = named_past_a_face(f"{path.name} (text)", readme_names(text))
    assert not problems, f"{path.name}'s text names what is not on a face:\n" + "\n".join(problems)


def named_past_a_face(where: str, names: list[str]) -> list[str]:
    source = "import memlab\nfrom memlab import lab\n" + "\n".join(n for n in names if not n.endswith("__"))
    return face_problems(where, [ast.parse(source)])


def test_the_notebooks_readme_names_only_faces():
    names = readme_names((ROOT / "notebooks" / "README.md").read_text(encoding="utf-8"))
    assert "lab.run_experiment" in names  # the check reads the page's code spans
    problems = named_past_a_face("notebooks/README.md", names)
    assert not problems, "notebooks/README.md names what is not on a face:\n" + "\n".join(problems)


# ------------------------------------------------------------------------------------------ the import contract


def test_the_faces_contract_fails_when_the_cli_imports_a_module_below_a_stage(tmp_path):
    shutil.copytree(MEMLAB, tmp_path / "memlab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / "memlab" / "cli" / "evaluation.py").open("a") as cli:
        cli.write("\n\ndef _reach():\n    from memlab.lab.datasets.formats import jsonl\n\n    return jsonl\n")
    result = lint_imports(tmp_path)
    out = " ".join(result.stdout.split())
    assert result.returncode == 1, result.stdout + result.stderr
    assert "The CLI uses only faces" in out and "BROKEN" in out
    assert "memlab.cli.evaluation -> memlab.lab.datasets.formats.jsonl" in result.stdout
