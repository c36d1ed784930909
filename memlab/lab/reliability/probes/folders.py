"""Folder and config safety: memlab writes only into folders and files it made, two names
never share one result file, an experiment's name never leads the output out of reports/, and a config file cannot
grow without bound or crash the run with a traceback.

Every case goes through the public function the CLI itself uses (`run_experiment`, `publish_latest`,
`claim_folder` / `claim_file`, `parse_config`, `load_config`, `default_run_folder`, `Run.save`); the user's
files are compared byte for byte afterwards. Positive controls (memlab's own folders, distinct names, ordinary
anchors) make sure a zero is not bought by refusing everything."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

import memlab
from memlab.errors import ConfigError
from memlab.lab.base.outputs import BENCH, RELIABILITY, RUN, claim_file, claim_folder, is_gate_file, mark
from memlab.lab.config.parse import load_config, parse_config
from memlab.lab.experiment.run import default_run_folder, publish_latest, run_experiment
from memlab.lab.reliability.probes.family import Family
from memlab.lab.report.gate import write_baseline
from memlab.lab.runs.records import RUN_COLUMNS, Run

DATA = {"name": "ex", "format": "memlab", "path": "fixtures/jsonl/example.jsonl"}
MUST_BE_ZERO = ["user_files_lost", "memlab_folders_refused", "silent_collisions", "distinct_names_refused",
                "unbounded_configs", "ordinary_anchors_refused", "escaped_writes", "config_crashes"]  # fmt: skip


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _user_folders(root: Path) -> list[Path]:
    """Folders of someone else's files, in the shapes a mistyped --out meets: the issue's, with a manifest.json
    that is not memlab's (another tool's, broken, a list), a lone hidden file, a memlab-looking subfolder."""
    shapes: list[dict[str, bytes]] = [
        {"holiday.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "runs/training-log.txt": b"epoch 1 loss 0.3\n",
         "labels/labels.csv": b"id,label\n1,cat\n", "report.md": b"# my report\n"},
        {"manifest.json": b'{"name": "my-app", "version": "1.0", "status": "complete"}', "scores.csv": b"a\n1\n"},
        {"manifest.json": b"{not json at all", "metrics.json": b"{}"},
        {"manifest.json": b"[1, 2, 3]", "plot.png": b"\x89PNG"},
        {"manifest.json": b'{"made_by": "someone-else", "folder": "run", "config": {}}'},
        {".keep": b""},
        {"old-run/manifest.json": json.dumps({"made_by": "memlab", "folder": "run", "status": "complete"}).encode(),
         "notes.txt": b"mine"},
        {"bench.json": b'{"results": "mine"}', "tables.csv": b"x\n"},
    ]  # fmt: skip
    out = []
    for i, files in enumerate(shapes):
        folder = root / f"user-{i}"
        for name, data in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        out.append(folder)
    return out


def _folder_safety(family: Family, store: memlab.Store, workdir: Path) -> None:
    config = parse_config({"name": "probe", "datasets": [DATA], "systems": [], "sweeps": []}, source="probe")
    writers = {
        "run_experiment": lambda f: run_experiment(config, f, dsn=store.dsn),
        "publish_latest": lambda f: publish_latest(ours, f),
        "bench --out": lambda f: claim_folder(f, BENCH),
        "check reliability": lambda f: claim_folder(f, RELIABILITY),
    }
    ours = workdir / "memlab-run"  # a folder memlab made: the positive control
    ours.mkdir(parents=True)
    (ours / "manifest.json").write_text(json.dumps({**mark(RUN), "status": "complete"}))
    (ours / "metrics.json").write_text(json.dumps({"ex/a/recall@10": 0.5}))
    for writer, write in writers.items():
        for folder in _user_folders(workdir / writer.replace(" ", "-")):
            before = _snapshot(folder)
            family.add("folders_checked")
            try:
                write(folder)
            except ConfigError:
                pass
            except Exception as exc:  # any other end is a finding, not a crash of the probe
                family.problem("user_files_lost", f"{writer} {folder.name}: {type(exc).__name__}: {exc}")
                continue
            if _snapshot(folder) != before:
                family.problem("user_files_lost", f"{writer} changed files of {folder.name}")
    files = {"write_baseline": ("b.json", b'{"my": "settings"}', lambda p: write_baseline(ours, p)),
             "write_baseline (scores)": ("c.questions.parquet", b"PAR1 mine", lambda p: write_baseline(
                 ours, p.with_name("c.json"))),
             "gate.md": ("gate.md", b"my notes\n", lambda p: claim_file(p, is_gate_file, flag="--run",
                                                                                 what="gate report"))}  # fmt: skip
    for writer, (name, data, write) in files.items():
        path = workdir / "files" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        family.add("folders_checked")
        with contextlib.suppress(ConfigError):  # refused: the point
            write(path)
        if path.read_bytes() != data:
            family.problem("user_files_lost", f"{writer}: a user's {name} was overwritten")
    for folder in (ours, workdir / "new-folder", workdir / "empty-folder"):
        if folder.name == "empty-folder":
            folder.mkdir()
        family.add("memlab_folders_checked")
        try:
            claim_folder(folder)
        except ConfigError as exc:
            family.problem("memlab_folders_refused", f"{folder.name}: {exc}")


def _names_like(name: str) -> list[str]:
    """Names that become the same file name as `name`: separators, punctuation, case, edges."""
    out = []
    for sep in ("/", " ", ":", "\\", "?", "  ", "\t", "*"):
        if "_" in name:
            out.append(name.replace("_", sep))
    return [*out, name.upper(), f"_{name}_", f"{name}/"]


def _collisions(family: Family) -> None:
    for base in ("d_1", "my_data", "sys_one", "Run_2"):
        for other in _names_like(base):
            if other == base:
                continue
            for kind in ("datasets", "systems", "embedders"):
                raw: dict[str, Any] = {"name": "x", "datasets": [DATA], "sweeps": []}
                if kind == "datasets":
                    raw["datasets"] = [{**DATA, "name": base}, {**DATA, "name": other}]
                elif kind == "systems":
                    raw["systems"] = [{"name": base}, {"name": other}]
                else:
                    raw["embedders"] = [{"name": base, "kind": "packaged"}, {"name": other, "kind": "packaged"}]
                family.add("collision_cases")
                try:
                    parse_config(raw, source="probe")
                    family.problem("silent_collisions", f"{kind} {base!r} and {other!r} accepted")
                except ConfigError:
                    pass
    cross = {"name": "x", "datasets": [{**DATA, "name": "a__b"}, {**DATA, "name": "a"}], "sweeps": [],
             "systems": [{"name": "c"}, {"name": "b__c"}]}  # fmt: skip
    family.add("collision_cases")
    try:
        parse_config(cross, source="probe")
        family.problem("silent_collisions", "a__b x c and a x b__c share runs/a__b__c.parquet")
    except ConfigError:
        pass
    distinct = {"name": "x", "datasets": [{**DATA, "name": n} for n in ("d1", "d-1", "d.1", "d_1", "d@1")],
                "systems": [{"name": n} for n in ("s-1", "s_1", "s.1", "s=1")], "sweeps": []}  # fmt: skip
    family.add("distinct_name_cases")
    try:
        parse_config(distinct, source="probe")
    except ConfigError as exc:
        family.problem("distinct_names_refused", str(exc))


def _run_file_guard(family: Family, workdir: Path) -> None:
    """The last line of defence, for systems a sweep adds: a run never replaces another pair's file."""
    nan = math.nan
    frame = pd.DataFrame([("s", "q1", 0, None, [], nan, 0, 1.0, "", nan, nan, nan)], columns=RUN_COLUMNS)
    folder = workdir / "run-files"
    Run("d/1", "s one", frame).save(folder)
    for dataset, system in (("d_1", "s one"), ("d/1", "s_one"), ("d 1", "s:one")):
        family.add("collision_cases")
        try:
            Run(dataset, system, frame).save(folder)
            family.problem("silent_collisions", f"run {dataset!r} x {system!r} replaced 'd/1' x 's one'")
        except ConfigError:
            pass


def _bombs() -> dict[str, str]:
    def ladder(levels: int, width: int, leaf: str) -> str:
        text = f"&a0 [{', '.join([leaf] * width)}]"
        for i in range(1, levels):
            text = f"&a{i} [{text}, {', '.join([f'*a{i - 1}'] * (width - 1))}]"
        return text

    mapping = "{" + ", ".join(f"k{j}: *m0" for j in range(10)) + "}"
    return {
        "list ladder 9x9": f"name: b\ndescription: {ladder(9, 9, 'lol')}\n",
        "long leaves": f"name: b\ndescription: {ladder(4, 10, 'x' * 5000)}\n",
        "mapping ladder": "name: b\nm: &m0 {a: 1, b: 2}\n" + "".join(
            f"l{i}: &m{i + 1} " + mapping.replace("*m0", f"*m{i}") + "\n" for i in range(7)),
        "merge keys": "name: b\nbase: &b0 {a: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}\n" + "".join(
            f"x{i}: &b{i + 1} {{<<: [*b{i}], k{i}: [" + ", ".join([f"*b{i}"] * 8) + "]}\n" for i in range(8)),
        "recursive": "name: b\ndescription: &r [1, [2, *r]]\n",
        "deep nesting": "name: b\ndescription: " + "[" * 3000 + "]" * 3000 + "\n",
        "huge file": "name: b\ndescription: '" + "x" * 1_200_000 + "'\n",
    }


def _bounded_configs(family: Family, workdir: Path) -> None:
    for name, text in _bombs().items():
        path = workdir / "bombs" / f"{name.replace(' ', '-')}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        family.add("bomb_configs")
        try:
            config = load_config(path)
            family.problem("unbounded_configs", f"{name}: loaded ({len(json.dumps(config.raw)):,} characters)")
        except ConfigError:
            pass
        except (RecursionError, ValueError, MemoryError) as exc:
            family.problem("unbounded_configs", f"{name}: {type(exc).__name__}")
    ok = workdir / "bombs" / "ordinary.yaml"
    ok.write_text(f"name: ok\nsweeps: []\ndatasets: [{json.dumps(DATA)}]\n"
                  "systems:\n  - &s {name: a, strategy: hnsw, ef_search: 40}\n  - {<<: *s, name: b}\n")  # fmt: skip
    family.add("ordinary_anchor_cases")
    try:
        load_config(ok)
    except ConfigError as exc:
        family.problem("ordinary_anchors_refused", str(exc))


def _escapes(family: Family, workdir: Path) -> None:
    root = workdir / "cwd" / "reports"
    for name in ("../../escaped", "/tmp/abs", "a/../../b", "..", "..\\..\\x", "x/y", "~/x", "./..", "a\x00b",
                 "line\nbreak", "../" * 40 + "etc"):  # fmt: skip
        family.add("escape_names")
        try:
            config = parse_config({"name": name, "datasets": [DATA], "sweeps": []}, source="probe")
        except ConfigError:
            continue
        folder = default_run_folder(config, "20260101T000000", root=root)
        if folder.resolve().parent != root.resolve():
            family.problem("escaped_writes", f"name {name!r} -> {folder}")


BAD_KEYS = ["systems.0.ef_search", "systems.0.max_distance", "systems.0.chunk_size", "systems.0.candidates",
            "systems.0.vector_weight", "systems.0.per_session", "systems.0.exact_below", "systems.0.mode",
            "datasets.0.limit", "datasets.1.users", "datasets.1.seed", "options.filtered.total_rows",
            "options.cutoff.target", "options.retrieval.modes", "options.ingest.repeat", "name", "description", "k"]
BAD_VALUES = ["1e9", "abc", "[]", "{a: 1}", ".nan", ".inf", "99999999999999999999999", "-1"]


def _bad_values(family: Family) -> None:
    base = {"name": "v", "datasets": [{**DATA, "limit": 5}, {"name": "s", "format": "synth", "users": 4}],
            "systems": [{"name": "a", "strategy": "hnsw"}], "sweeps": ["filtered", "cutoff", "retrieval", "ingest"],
            "options": {"filtered": {}, "cutoff": {}, "retrieval": {}, "ingest": {}}}  # fmt: skip
    for key in BAD_KEYS:
        for value in BAD_VALUES:
            family.add("bad_values")
            try:
                parse_config(base, source="probe", overrides=[f"{key}={value}"])
            except ConfigError:
                pass
            except Exception as exc:  # a traceback on the command line is the finding
                family.problem("config_crashes", f"{key}={value}: {type(exc).__name__}: {exc}")


def folders_family(store: memlab.Store, embedder: memlab.Embedder, workdir: Path) -> Family:
    """Folder safety, name collisions, bounded configs, path escapes and config values; all must-be-zero."""
    family = Family("folders", must_be_zero=list(MUST_BE_ZERO))
    for figure in MUST_BE_ZERO:
        family.add(figure, 0)
    workdir = Path(workdir)
    _folder_safety(family, store, workdir / "folders")
    _collisions(family)
    _run_file_guard(family, workdir)
    _bounded_configs(family, workdir)
    _escapes(family, workdir)
    _bad_values(family)
    family.notes.append("cases: " + ", ".join(f"{k} {v}" for k, v in family.figures.items() if k not in MUST_BE_ZERO))
    return family
