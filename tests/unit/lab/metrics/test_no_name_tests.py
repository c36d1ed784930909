"""No module of memlab decides what a system or a metric is from its name: a system's role, sweep and parent are
recorded (memlab.lab.systems.roles), a cut-off is a derived run of its parent (memlab.lab.systems.derived), and a
breakdown is a pair of columns of the long-form scores (memlab.lab.metrics.keys). The one place allowed to read
old names is the format's upgrade step (memlab/lab/runs/format.py), for folders written before any of that was
recorded.

The check reads every module's syntax tree: a comparison, a membership test, a loop over names or a string test
(startswith, contains, split, a regex, a glob) that holds one of the names memlab gives the systems it makes, or
takes a breakdown apart (`[qtype=`, `"["`), is a name test."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

NAMES = ("@cut", "faiss-exact", "filtered:", "extractor:", "answerability:", "event[")
BREAKDOWN = ("[qtype=", "[size=", "[share=", "[pool=")
ALLOWED = {Path("memlab/lab/runs/format.py")}  # the upgrade step: the one reader of old names
STRING_TESTS = {"startswith", "endswith", "removeprefix", "removesuffix", "contains", "match", "fullmatch", "search",
                "extract", "fnmatch", "fnmatchcase", "filter", "find", "rfind", "index", "split", "rsplit",
                "partition", "rpartition", "count"}  # fmt: skip
# what takes a metric apart at its breakdown's bracket (finding a bracket to skip it, as the alert grammar's
# tokenizer does, decides nothing about what a metric is)
BRACKET_TESTS = {"startswith", "contains", "extract", "split", "rsplit", "partition", "rpartition"}
SCANNED = ("memlab/lab", "memlab/cli")  # the library below never sees a system or metric name


def _strings(node: ast.AST) -> list[str]:
    """Every string literal under `node` (an f-string's literal parts too)."""
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _names_a_system(text: str) -> bool:
    return any(text.startswith(n) for n in NAMES) or any(b in text for b in BREAKDOWN)


def _takes_a_breakdown_apart(text: str) -> bool:
    return text == "[" or ("\\]" in text and "=" in text)


def _tested(node: ast.AST) -> list[tuple[ast.AST, bool]]:
    """The parts of `node` that test a string, each with whether a lone bracket counts there: a comparison, a
    string method or regex call, a loop's iterable, a `systems=` glob."""
    if isinstance(node, ast.Compare):
        return [(node, True)]
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        found = [(node, name in BRACKET_TESTS)] if name in STRING_TESTS else []
        return found + [(k.value, False) for k in node.keywords if k.arg == "systems"]
    if isinstance(node, ast.For | ast.comprehension):
        return [(node.iter, False)]
    return []


def name_tests(root: Path = ROOT) -> list[str]:
    """`path:line: the literal` of every name test in memlab/ outside ALLOWED."""
    found: set[tuple[str, int, str]] = set()
    paths = [p for scanned in SCANNED for p in ([root / scanned] if scanned.endswith(".py") else
                                                sorted((root / scanned).rglob("*.py")))]  # fmt: skip
    for path in paths:
        relative = path.relative_to(root)
        if relative in ALLOWED or not path.exists():
            continue
        tree = ast.parse(path.read_text(), str(relative))
        for node in ast.walk(tree):
            for part, brackets in _tested(node):
                found |= {(str(relative), part.lineno, text) for text in _strings(part)
                          if _names_a_system(text) or (brackets and _takes_a_breakdown_apart(text))}  # fmt: skip
    return [f"{path}:{line}: {text!r}" for path, line, text in sorted(found)]


def test_no_module_tests_a_system_or_metric_name():
    assert name_tests() == []


def test_the_check_finds_each_kind_of_name_test(tmp_path):
    """The check sees a name test in each form it looks for (so an empty list above means something)."""
    module = tmp_path / "memlab" / "lab" / "odd.py"
    module.parent.mkdir(parents=True)
    (tmp_path / "memlab" / "cli").mkdir()
    (tmp_path / "memlab" / "cli" / "odd.py").write_text('def g(name):\n    return "[" not in name\n')
    module.write_text("\n".join([
        'def f(system, metric, key, scores):',
        '    a = "@cut" in system',
        '    b = system.startswith("faiss-exact")',
        '    c = scores.system.str.startswith(("filtered:", "x"))',
        '    d = metric.split("[")[0]',
        '    e = scores.metric.str.startswith(f"{metric}[qtype=")',
        '    g = scores.metric.str.extract(r"=(.*)\\]$")',
        '    h = [s for s in ("extractor:", "answerability:") if system.startswith(s)]',
        '    i = text.find("[")  # a tokenizer finding a bracket to skip it',
        '    return dict(systems="event[*")',
        'NAME = f"filtered:{1}"  # making a name is no test',
    ]) + "\n")  # fmt: skip
    found = name_tests(tmp_path)
    assert [line.split(": ")[0] for line in found] == [
        "memlab/cli/odd.py:2", *[f"memlab/lab/odd.py:{n}" for n in (2, 3, 4, 5, 6, 7, 8, 8, 10)]], found
