"""The project's own set-up: conda and pip agree, the README's commands come first, CI runs the tests. (The README's
Python example is docs/examples/python_api.py, run by tests/integration/docs/test_examples.py.)"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

import yaml

from tests.conftest import ROOT


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(project["dependencies"]).union(*project["optional-dependencies"].values())
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert {_name(r) for r in pip_section} == {_name(r) for r in wanted}
    assert set(pip_section) == wanted, "versions must match too"


def test_readme_starts_with_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^make (\w+)", readme, flags=re.MULTILINE)
    assert commands[:3] == ["eval", "test", "lab"]


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_top_level_layout():
    for name in (
        "notebooks",
        "memlab",
        "datasets",
        "fixtures",
        "reports",
        "tests",
        "pyproject.toml",
        "environment.yml",
        "README.md",
        "Makefile",
        ".ci/run",
    ):
        assert (ROOT / name).exists(), name
    for package in ("storage", "embedding", "events", "lab", "facts", "adapters"):
        assert (ROOT / "memlab" / package / "__init__.py").exists(), package


# The workbench and the CLI run from a checkout (its data sets, fixtures and reports); the library does not.
WORKBENCH = ("memlab/lab/", "memlab/cli/")
_OUT_OF_PACKAGE = re.compile(r"__file__.*\.parents?\b|/\s*[\"'](?:fixtures|datasets|reports|notebooks)\b")
_BESIDE = re.compile(r"Path\(__file__\)\.with_name\(\s*[\"']([^\"']+)[\"']\s*\)")


def _library_sources() -> dict[str, str]:
    return {path.relative_to(ROOT).as_posix(): path.read_text() for path in sorted((ROOT / "memlab").rglob("*.py"))
            if not path.relative_to(ROOT).as_posix().startswith(WORKBENCH)}  # fmt: skip


def test_library_code_reads_no_folder_of_the_checkout():
    """An installed package has no fixtures/, datasets/ or reports/ beside it: the library reads only files
    inside its own package (the workbench may read the checkout's)."""
    found = [f"{rel}:{n}: {line.strip()}" for rel, source in _library_sources().items()
             for n, line in enumerate(source.splitlines(), 1) if _OUT_OF_PACKAGE.search(line)]  # fmt: skip
    assert not found, "library code reaching outside its package:\n" + "\n".join(found)


def test_data_files_the_library_reads_are_package_data():
    """Every file a library module reads beside itself is installed with it (a package-data glob matches it)."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["memlab"]
    read = {(Path(rel).parent / name).relative_to("memlab").as_posix() for rel, source in _library_sources().items()
            for name in _BESIDE.findall(source)}  # fmt: skip
    assert read, "the check found the data files the library reads"
    unpackaged = sorted(f for f in read if not any(fnmatch.fnmatch(f, g) for g in globs))
    assert not unpackaged, f"files the library reads but the package does not install: {unpackaged}"
    assert all((ROOT / "memlab" / f).is_file() for f in read)
