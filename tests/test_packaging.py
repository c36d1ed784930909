"""The project's own set-up: conda and pip agree, the README's commands come first, CI runs the tests."""

from __future__ import annotations

import re
import tomllib

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


def test_readme_python_example_runs(store):
    """The README's example must work as written (it runs on this test run's embedded store)."""
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, flags=re.DOTALL).group(1)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["report"].added == 1 and dict(namespace["report"].skipped) == {"partial": 1}
    assert namespace["hits"] and "Argo CD" in namespace["hits"][0].text
