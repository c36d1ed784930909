"""Every memlab command line the docs show parses against the Typer app, and every make line names a Makefile
target: the shell blocks of docs/**/*.md and the README, the example files under docs/examples/, and the commands
the prose names in code spans (`memlab report --against`). Nothing is run: the command tree says whether each
command and option exists (tests/support/command_lines.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.command_lines import Invocation, invocations, make_problem, make_targets, memlab_problem

SHELL = {"bash", "sh", "shell", "console", "cron"}
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
_SPAN = re.compile(r"(?<!`)`((?:\S*/)?memlab [a-z][^`\n]*)`(?!`)")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def fenced_blocks(text: str) -> Iterator[tuple[str, str, int]]:
    """(language, body, first line number) of each fenced code block, indented ones (in lists) included; the text
    outside the blocks is what `prose` returns."""
    lines, i = text.splitlines(), 0
    while i < len(lines):
        start = _FENCE.match(lines[i])
        if not start:
            i += 1
            continue
        fence, indent, body = start["fence"], start["indent"], []
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            body.append(lines[j].removeprefix(indent))
            j += 1
        yield (start["info"].split() or [""])[0], "\n".join(body) + "\n", i + 1
        i = j + 1


def prose(text: str) -> str:
    """The text outside fenced code blocks."""
    lines, inside = [], None
    for line in text.splitlines():
        start = _FENCE.match(line)
        if inside is None and start:
            inside = re.compile(rf"^[ \t]*{re.escape(start['fence'][0])}{{{len(start['fence'])},}}[ \t]*$")
        elif inside is not None and inside.match(line):
            inside = None
        elif inside is None:
            lines.append(line)
    return "\n".join(lines)


def _shell_blocks() -> list[tuple[str, str]]:
    found = []
    for page in _pages():
        for lang, body, line in fenced_blocks(page.read_text(encoding="utf-8")):
            if lang in SHELL:
                found.append((f"{page.relative_to(ROOT)}:{line}", body))
    for file in sorted((ROOT / "docs" / "examples").rglob("*.sh")):
        found.append((str(file.relative_to(ROOT)), file.read_text(encoding="utf-8")))
    return found


def _mentions() -> list[Invocation]:
    """The memlab commands named in code spans: of the pages' prose, and of the example files' comments."""
    found = []
    texts = [(page, prose(page.read_text(encoding="utf-8"))) for page in _pages()]
    texts += [(file, file.read_text(encoding="utf-8")) for file in sorted((ROOT / "docs" / "examples").rglob("*"))
              if file.is_file() and "__pycache__" not in file.parts]  # fmt: skip
    for path, text in texts:
        for span in _SPAN.findall(text):
            found += invocations(span, "memlab", str(path.relative_to(ROOT)))
    return found


def test_fences_and_prose_are_told_apart():
    text = "a `memlab eval`\n\n- item\n\n  ```bash\n  memlab report\n  ```\n\n````md\n```\nx\n```\n````\nz\n"
    assert [(lang, body) for lang, body, _ in fenced_blocks(text)] == [("bash", "memlab report\n"),
                                                                       ("md", "```\nx\n```\n")]
    assert prose(text).split() == ["a", "`memlab", "eval`", "-", "item", "z"]


def test_command_lines_are_split_as_the_shell_splits_them():
    text = 'A=1 memlab eval --out "a b" \\\n  --force  # memlab x\necho $# && memlab report --run r#1 >log\n'
    assert [inv.words for inv in invocations(text, "memlab", "t")] == [
        ("memlab", "eval", "--out", "a b", "--force"), ("memlab", "report", "--run", "r#1")]  # fmt: skip
    assert invocations("pip install memlab; echo memlab", "memlab", "t") == [], "memlab only as the command word"


@pytest.mark.parametrize("words, problem", [
    (("memlab", "evl"), "has no command 'evl'"),
    (("memlab", "eval", "--confg", "x.yaml"), "No such option: --confg"),
    (("memlab", "eval", "--out"), "requires an argument"),
    (("memlab", "report", "extra"), "takes no argument 'extra'"),
    (("memlab", "judge", "pol"), "has no command 'pol'"),
])  # fmt: skip
def test_the_checker_finds_what_does_not_exist(words, problem):
    assert problem in (memlab_problem(words) or "")


def test_every_memlab_line_of_the_docs_parses():
    lines = [inv for where, body in _shell_blocks() for inv in invocations(body, "memlab", where)]
    assert len(lines) > 20, "the walk found the docs' command lines"
    problems = [f"{inv}: {problem}" for inv in lines if (problem := memlab_problem(inv.words))]
    assert not problems, "\n".join(problems)


def test_every_memlab_command_the_prose_names_exists():
    named = _mentions()
    assert len(named) > 50, "the walk found the prose's commands"
    problems = [f"{inv}: {problem}" for inv in named if (problem := memlab_problem(inv.words, mention=True))]
    assert not problems, "\n".join(problems)


def test_every_make_line_of_the_docs_names_a_target():
    targets = make_targets(ROOT / "Makefile")
    assert {"eval", "test", "gate", "docs"} <= targets
    lines = [inv for where, body in _shell_blocks() for inv in invocations(body, "make", where)]
    assert len(lines) > 5
    problems = [f"{inv}: {problem}" for inv in lines if (problem := make_problem(inv.words, targets))]
    assert not problems, "\n".join(problems)
