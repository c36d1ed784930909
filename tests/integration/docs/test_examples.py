"""The docs' code examples are files under docs/examples/ that run: each Python example runs as `python FILE` runs
it (as __main__, in an empty folder, on this test run's MEMLAB_HOME; one process runs them all, one after another,
tests/support/example_runner.py) and prints what its page says it gives.
Pages include the files (or a section of one) with the snippets extension, so a page shows what ran; every example
file is included somewhere, every include names a file and section that exist, and the README's Python example,
which GitHub shows without includes, is the file itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

EXAMPLES = ROOT / "docs" / "examples"
RUNNER = ROOT / "tests" / "support" / "example_runner.py"
# what each example prints: a regex per line that must match some line of its output
PRINTS = {
    "python_api.py": [r"^1 \{'partial': 1\}$",
                      r"^e1 Our payments service runs in eu-west-1 and we deploy with Argo CD\. 0\.\d+ \('e1',\)$",
                      r"^Execution Time: "],
    "event_memory.py": [r"^3 hit\(s\); first: We moved the payments service to eu-west-1\.$",
                        r"^logged: \['which region runs payments\?'\]$", r"^after forget_user: 0 hit\(s\)$"],
    "fact_memory.py": [r"^inserted 2; current: diet = pescatarian, home_city = Leeds$",
                       r"^best hit: diet = pescatarian \(stated \d{4}-\d\d-\d\d\)$", r"^<known_facts>$",
                       r"^diet first said in session s1: \"I'm pescatarian\"$", r"^decide: insert$"],
    "adk_agent.py": [r"^deploy-bot: agent ops with \['PreloadMemoryTool', 'LoadMemoryTool'\], memory "
                     r"EventMemoryService$"],
}  # fmt: skip
# a snippet line of a page: --8<-- "path" or --8<-- "path:section"
INCLUDE = re.compile(r'^[ \t]*--8<--[ \t]+"([^":]+)(?::([\w-]+))?"[ \t]*$', re.MULTILINE)


def _pages() -> list[Path]:
    return sorted((ROOT / "docs").rglob("*.md"))


def _includes() -> list[tuple[Path, str, str | None]]:
    """(page, included path, section or None) of every snippet line in the docs."""
    return [(page, path, section or None) for page in _pages()
            for path, section in INCLUDE.findall(page.read_text(encoding="utf-8"))]  # fmt: skip


def test_every_python_example_is_run_here():
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(PRINTS)


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory, memlab_home, store) -> dict[str, dict]:
    """name -> what the example printed and how it ended."""
    work = tmp_path_factory.mktemp("examples")
    results = work / "results.json"
    files = [str(EXAMPLES / name) for name in sorted(PRINTS)]
    done = subprocess.run([sys.executable, str(RUNNER), str(results), str(work / "runs"), *files], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "MEMLAB_HOME": str(memlab_home)})  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(results.read_text())


@pytest.mark.parametrize("name", sorted(PRINTS))
def test_the_example_runs(example_runs, name):
    run = example_runs[name]
    assert run["error"] is None, run["stdout"] + run["error"]
    missing = [p for p in PRINTS[name] if not re.search(p, run["stdout"], re.MULTILINE)]
    assert not missing, f"{name} printed no line matching {missing}:\n{run['stdout']}"


def test_every_include_names_a_file_and_section_that_exist():
    includes = _includes()
    assert len(includes) >= len(PRINTS)
    problems = []
    for page, path, section in includes:
        file = ROOT / path
        if not path.startswith("docs/examples/") or not file.is_file():
            problems.append(f"{page.name}: {path} is not a file under docs/examples/")
        elif section is not None:
            text = file.read_text(encoding="utf-8")
            marks = [f"--8<-- [{edge}:{section}]" for edge in ("start", "end")]
            if not all(text.count(mark) == 1 for mark in marks) or text.index(marks[0]) > text.index(marks[1]):
                problems.append(f"{page.name}: {path} has no section {section!r} (one start mark, then one end)")
    assert not problems, "\n".join(problems)


def test_every_example_file_is_shown_by_a_page():
    shown = {path for _, path, _ in _includes()}
    files = {p.relative_to(ROOT).as_posix() for p in EXAMPLES.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}  # fmt: skip
    assert files - shown == set(), "example files no page includes"


def test_the_readmes_python_example_is_the_example_file():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", readme, flags=re.MULTILINE | re.DOTALL)
    assert blocks == [(EXAMPLES / "python_api.py").read_text(encoding="utf-8")]
