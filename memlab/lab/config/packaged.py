"""The data the installed package ships (memlab/lab/datasets/packaged/): what the quick and example suites read,
so `pip install memlab` then `memlab eval` runs with no checkout, on the same questions as the checkout.

Written from the checkout by `make packaged-data` (`python -m memlab.lab.config.packaged`); `--check` lists how
the committed folder differs from what it would write (a test runs it). Fixture folders and small files are
copied; a LongMemEval file is cut to the questions the suites' entries select from it, in file order, with the
folder's licence beside it (`extract_longmemeval` keeps the ids the whole file gives them). `extracts.json`
records each extract's selections: the loader refuses any other selection of an extract
(memlab.lab.datasets.paths.extract_problem)."""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError
from memlab.lab.config.parse import load_suite
from memlab.lab.datasets.formats.longmemeval import extract_longmemeval
from memlab.lab.datasets.loaders import load_dataset
from memlab.lab.datasets.paths import CHECKOUT, EXTRACTS_FILE, PACKAGED, SELECTION_DEFAULTS, selection

PACKAGED_SUITES = ("quick", "example")  # the suites an installed memlab runs with no checkout
COPIED = ("fixtures", "memlab", "jsonl")  # formats whose files are small: shipped whole
EXTRACTED = ("longmemeval",)  # formats whose files are cut to the selected questions
BESIDE = ("LICENSE",)  # files shipped beside an extract, from its folder
README = """# Data packaged with memlab

What the `quick` and `example` suites read, so an installed memlab runs them with no checkout. Written from the
memlab checkout by `make packaged-data` (memlab.lab.config.packaged): do not edit. Paths mirror the checkout's:
a config naming `fixtures/events` gets `fixtures/events` here when neither its folder, the working folder nor a
checkout holds it.

The LongMemEval files (MIT licence, `datasets/longmemeval/LICENSE`; Wu et al., 2024) are extracts: only the
questions those suites select, listed with their selections in `extracts.json`. Any other selection of them is
refused with where to get the whole file.
"""


def packaged_entries(suites: Iterable[str] = PACKAGED_SUITES) -> list[tuple[str, dict[str, Any]]]:
    """The data set entries with a `path` of the packaged suites, with their suite's name, in order."""
    entries = []
    for name in suites:
        config = load_suite(name)
        for entry in config.resolved["datasets"]:
            if entry.get("path") is None:
                continue
            if entry["format"] not in (*COPIED, *EXTRACTED):
                raise ConfigError(f"suite {name!r}, data set {entry['name']!r}: format {entry['format']!r} has no "
                                  f"packaging rule; give it one in {__name__}")  # fmt: skip
            if Path(entry["path"]).is_absolute():
                raise ConfigError(f"suite {name!r}, data set {entry['name']!r}: a packaged suite names its data "
                                  "relative to the checkout, not by an absolute path")  # fmt: skip
            entries.append((name, entry))
    return entries


def _gzip_json(records: list[dict[str, Any]], path: Path) -> None:
    """JSON, gzipped with no name or time in the header: the same records write the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
        f.write(json.dumps(records, ensure_ascii=False).encode("utf-8"))


def write_packaged_data(out: Path = PACKAGED, checkout: Path = CHECKOUT,
                        suites: Iterable[str] = PACKAGED_SUITES) -> list[str]:  # fmt: skip
    """Write the packaged data folder `out` afresh from the checkout's files; returns its files, relative."""
    entries = packaged_entries(suites)
    out = Path(out)
    work = Path(tempfile.mkdtemp(prefix="memlab-packaged-", dir=out.parent if out.parent.is_dir() else None))
    try:
        extracts: dict[str, dict[str, Any]] = {}
        for suite, entry in entries:
            rel, source = entry["path"], checkout / entry["path"]
            if not source.exists():
                raise ConfigError(f"data set {entry['name']!r}: {source} is not in the checkout")
            target = work / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if entry["format"] in COPIED:
                if source.is_dir():
                    shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".*"))
                else:
                    shutil.copyfile(source, target)
                continue
            chosen = selection(entry)
            listed = extracts.setdefault(rel, {"selections": [], "ids": set(), "suites": []})
            listed["suites"] += [suite] if suite not in listed["suites"] else []
            if chosen not in listed["selections"]:
                listed["selections"].append(chosen)
                picked = {k: v for k, v in chosen.items() if v != SELECTION_DEFAULTS[k]}
                data = load_dataset({"name": entry["name"], "format": entry["format"], "path": str(source), **picked})
                listed["ids"].update(q.user_id for q in data.questions)  # a LongMemEval user is its question
        index = {}
        for rel, listed in sorted(extracts.items()):
            source = checkout / rel
            records = extract_longmemeval(source, listed["ids"])
            _gzip_json(records, work / rel)
            for name in BESIDE:
                if (source.parent / name).is_file():
                    shutil.copyfile(source.parent / name, work / rel.rsplit("/", 1)[0] / name)
            index[rel] = {"suites": listed["suites"], "selections": listed["selections"], "questions": len(records)}
        (work / EXTRACTS_FILE).write_text(json.dumps(index, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        (work / "README.md").write_text(README, encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        shutil.move(str(work), str(out))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())


def _content(path: Path) -> bytes:
    """A file's content; a gzipped one unpacked (compressors may differ in bytes, not in what they hold)."""
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as f:
            return f.read()
    return path.read_bytes()


def packaged_differences(folder: Path = PACKAGED, checkout: Path = CHECKOUT) -> list[str]:
    """How `folder` differs from what `write_packaged_data` writes from the checkout now (empty: up to date)."""
    with tempfile.TemporaryDirectory(prefix="memlab-packaged-check-") as tmp:
        fresh = Path(tmp) / "packaged"
        expected = write_packaged_data(fresh, checkout)
        present = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                         if p.is_file() and "__pycache__" not in p.parts) if folder.is_dir() else []  # fmt: skip
        problems = [f"missing: {rel}" for rel in expected if rel not in present]
        problems += [f"not written any more: {rel}" for rel in present if rel not in expected]
        problems += [f"differs: {rel}" for rel in expected
                     if rel in present and _content(folder / rel) != _content(fresh / rel)]  # fmt: skip
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memlab.lab.config.packaged", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="list how the packaged folder differs; write nothing")
    args = parser.parse_args(argv)
    if args.check:
        problems = packaged_differences()
        for line in problems:
            print(line)
        print(f"{PACKAGED}: {'out of date: run make packaged-data' if problems else 'up to date'}")
        return 1 if problems else 0
    files = write_packaged_data()
    print(f"wrote {len(files)} files to {PACKAGED}")
    return 0


if __name__ == "__main__":  # pragma: no cover - the make target's entry
    sys.exit(main())


__all__ = ["PACKAGED_SUITES", "main", "packaged_differences", "packaged_entries", "write_packaged_data"]
