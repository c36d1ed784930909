"""The documentation site: its reference pages are written from memlab's registries and name everything the code
accepts (every metric, data set format, sweep, config key and CLI command, compared against the registries
themselves), the site builds with `mkdocs build --strict` (no broken link, anchor or nav entry), its Python API pages
list every name each public face exports, and the README stays a short entry point whose relative links all
resolve."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import typer

from memlab.cli import app
from memlab.lab.datasets.formats.registry import DATA_FORMATS, format_options
from memlab.lab.metrics.definitions import definitions
from memlab.lab.sweeps import SWEEPS
from memlab.lab.sweeps.options import sweep_option_rows
from memlab.lab.systems.kinds import EVENT_KEYS, FACT_KEYS, SETTINGS_KEYS
from memlab.lab.systems.services import ADK_KEYS, MEM0_KEYS
from memlab.lab.systems.table import TABLE_KEYS
from tests.conftest import ROOT

DOCS = ROOT / "docs"
README_MAX_LINES = 150
# each public face with a Python API page (docs/reference/api/), rendered by mkdocstrings from the docstrings
API_PAGES = {
    "memlab": "reference/api/memlab/",
    "memlab.events": "reference/api/events/",
    "memlab.facts": "reference/api/facts/",
    "memlab.storage": "reference/api/storage/",
    "memlab.models": "reference/api/models/",
    "memlab.adk": "reference/api/adk/",
    "memlab.lab": "reference/api/lab/",
    "memlab.lab.datasets": "reference/api/lab-datasets/",
    "memlab.lab.metrics": "reference/api/lab-metrics/",
    "memlab.lab.report": "reference/api/lab-report/",
}
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, str]:
    """The reference pages, written afresh into a temporary folder: name -> text."""
    out = tmp_path_factory.mktemp("reference")
    written = _generator().write_reference(out)
    assert {p.parent for p in written} == {out}
    return {p.name: p.read_text(encoding="utf-8") for p in written}


def _commands(command: Any, path: tuple[str, ...] = ("memlab",)) -> Iterator[tuple[tuple[str, ...], Any]]:
    """The Typer app's commands as click sees them, read here rather than through the generator's own walk."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_metric_pages_name_every_defined_metric(reference):
    page = reference["metrics.md"]
    missing = [d.name for d in definitions() if f"`{d.name}@k`" not in page and f"`{d.name}`" not in page]
    assert not missing, f"metrics.md lacks {missing}"
    gated = [d for d in definitions() if d.gated]
    assert gated and all(f"drop of {d.tolerance:g}" in page for d in gated)


def test_format_page_names_every_format_alias_and_option(reference):
    page = reference["formats.md"]
    headings = set(re.findall(r"^## (\S+)$", page, flags=re.MULTILINE))
    assert headings == set(DATA_FORMATS), headings
    aliases = [alias for f in DATA_FORMATS.values() for alias in f.aliases]
    assert aliases and all(f"`{alias}`" in page for alias in aliases)
    sections = dict(re.findall(r"^## (\S+)\n(.*?)(?=^## |\Z)", page, flags=re.MULTILINE | re.DOTALL))
    missing = [(r.owner, r.name) for r in format_options() if f"| `{r.name}` |" not in sections[r.owner]]
    assert not missing, f"formats.md lacks options {missing}"


def test_sweep_page_names_every_sweep_and_option(reference):
    page = reference["sweeps.md"]
    sections = dict(re.findall(r"^## (\S+)\n(.*?)(?=^## |\Z)", page, flags=re.MULTILINE | re.DOTALL))
    assert list(sections) == list(SWEEPS)
    missing = [(r.owner, r.name) for r in sweep_option_rows() if f"| `{r.name}` |" not in sections[r.owner]]
    assert not missing, f"sweeps.md lacks options {missing}"


def test_config_keys_page_names_every_key_of_every_system_kind(reference):
    page = reference["systems.md"]
    keys = EVENT_KEYS | FACT_KEYS | TABLE_KEYS | ADK_KEYS | MEM0_KEYS | SETTINGS_KEYS
    missing = sorted(k for k in keys if f"| `{k}` |" not in page)
    assert not missing, f"systems.md lacks keys {missing}"


def test_cli_page_names_every_command_and_option(reference):
    page = reference["cli.md"]
    headings = set(re.findall(r"^#{2,4} (memlab[^\n(]*?)\s*(?:\(top level\))?$", page, flags=re.MULTILINE))
    commands = list(_commands(typer.main.get_command(app)))
    assert len(commands) > 20, "the walk reached the subcommands"
    paths = {" ".join(path) for path, _ in commands}
    assert paths == headings, (paths ^ headings)
    missing = [(" ".join(path), opt) for path, command in commands for param in command.params
               if not getattr(param, "hidden", False)
               for opt in (param.opts if param.param_type_name == "option" else [param.name.upper()])
               if f"`{opt}`" not in page]  # fmt: skip
    assert not missing, f"cli.md lacks options {missing}"


def _inventory(site: Path) -> dict[str, set[str]]:
    """The objects mkdocstrings rendered, from the site's objects.inv (Sphinx inventory version 2: four header lines,
    then zlib-compressed lines `name domain:role priority uri display`, `$` in a uri standing for the name): name ->
    the pages that show it."""
    header, _, body = (site / "objects.inv").read_bytes().partition(b"compressed using zlib.\n")
    assert header.startswith(b"# Sphinx inventory version 2"), header[:80]
    pages: dict[str, set[str]] = {}
    for line in zlib.decompress(body).decode("utf-8").splitlines():
        name, _role, _priority, uri, _display = line.split(" ", 4)
        pages.setdefault(name, set()).add(uri.replace("$", name).split("#", 1)[0])
    return pages


def _unlisted(face: str, page: str, inventory: dict[str, set[str]]) -> list[str]:
    """The names of the face's `__all__` its API page does not show. A submodule the face exports has no entry (the
    pages show no submodules); a function or class whose name griffe reads as a submodule of the same name is shown
    by its module's path."""
    module = importlib.import_module(face)
    missing = []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.ismodule(obj):
            continue
        paths = {f"{face}.{name}"}
        if inspect.isfunction(obj) or inspect.isclass(obj):
            paths.add(f"{obj.__module__}.{obj.__qualname__}")
        if not any(page in inventory.get(path, ()) for path in paths):
            missing.append(name)
    return missing


def test_the_site_builds_strict(tmp_path):
    """The whole site, reference pages included, in a copy of docs/: a broken link, anchor or nav entry fails. Its
    Python API pages show every name of each public face's `__all__`."""
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs, ignore=shutil.ignore_patterns("__pycache__"))
    _generator().write_reference(docs / "reference")
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: docs\nsite_dir: site\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    for page in ("index.html", "reference/cli/index.html", "reference/metrics/index.html", "results/index.html"):
        assert (site / page).is_file(), page
    inventory = _inventory(site)
    for face, page in API_PAGES.items():
        assert (site / page / "index.html").is_file(), page
        assert page in inventory.get(face, ()), f"{page} does not show {face}"
    missing = {face: names for face, page in API_PAGES.items() if (names := _unlisted(face, page, inventory))}
    assert not missing, (f"the API pages lack these exported names: {missing}; a name the page's `::: face` "
                         "directive cannot reach needs a directive of its own on that page (as docs/reference/api/"
                         "facts.md shows memlab.facts.decide)")


def test_readme_is_short_and_its_links_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    targets = [t for t in _LINK.findall(readme) if not re.match(r"^[a-z]+:|^#", t)]
    assert any(t.startswith("docs/") for t in targets), "the README links into the site"
    broken = [t for t in targets if not (ROOT / t.split("#", 1)[0]).exists()]
    assert not broken, f"README links to missing files: {broken}"
