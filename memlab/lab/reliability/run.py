"""The reliability report: `memlab check reliability [--size ci|full]`, `lab.run_reliability(out, size=...)`.

Bounded versions of the test families (tests/reliability/test_isolation.py, test_concurrency.py, test_faults.py,
test_erasure_everywhere.py, tests/integration/events/test_bad_input.py), run against a fresh scratch database of the
configured server (and, for faults, a private embedded server of its own), so no stored memory is touched:

- isolation: random apps, users (look-alike ids: case, whitespace, NFC/NFD, `/ : % _ '`, LIKE patterns), texts
  and settings; every read path (EventMemory.search and explain, FactMemory.current, search, preload_block, why,
  the ADK services when installed) may only return rows of the (app, user) asked. Figure: leaks (must be 0).
- concurrency: the same sessions from 8 threads and 2 spawned processes at once, in a loop: the result must be one
  clean sequential ingest. Figures: duplicates, lost writes, two current values of a single-valued key, a
  confidence not counting each session once, search settings leaking into a later use of a pooled connection.
- faults: SIGKILL of the embedded postmaster mid-ingest, then recovery and re-ingest; an embedder raising on its
  Nth call. Figures: half-written sessions, lost writes and extra units against a clean ingest, unrecovered kills.
- erasure: forget_user in event and fact memory; traces of the user in any table of the schema or in the cache.
- secrets: the secret filter's rates on fixtures/secrets (goals: held-out caught >= 0.95, ordinary flagged <=
  0.10) and the same texts through a real ingest.
- bad inputs: NUL characters, lone surrogates, int ids, None and year-9999 timestamps, duplicate event ids, ...;
  how each ended (memlab error, counted skip, stored). Figure: inputs that ended any other way (must be 0).

- the second hostile probe's classes, one module each in memlab/lab/reliability/probes/: folder safety and name
collisions
  (folders), input checks on both memories and the ADK services (input_checks), erasure racing a write (races),
  the lexical plan's row count as a user grows (lexical), secrets in run folders and error messages (leaks),
  secrets split across events (split_secrets), and a byte search of the data folder after erasure (erasure_disk).
- the third hostile probe's classes, one module each too: the gate's direction for every defined metric and the
  one cut-off rule (gate_direction), untrusted text fenced in every model prompt and whole-reply abstentions
  (prompt_fences), what a probe's run folder may hold, plans labelled as they ran and lost labels (run_folders),
  model calls' deadlines, body bounds, origins and caches (model_safety), erasure during multi-batch and bulk
  writes and secrets in the query log (erasure_writes), scratch databases of dead runs (scratch_leftovers), and
  labels pointing outside the data, judgment order, config expansion and nesting bounds (input_bounds).

Each run writes `<out>/<run-id>/reliability.json` and `reliability.md`; `ok` is false when a must-be-zero figure is
not zero or a goal is missed."""

from __future__ import annotations

import json
import logging
import random
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import memlab
from memlab.lab.reliability.probes.bad_inputs import bad_inputs_family
from memlab.lab.reliability.probes.concurrency import concurrency_family
from memlab.lab.reliability.probes.erasure_disk import erasure_disk_family
from memlab.lab.reliability.probes.erasure_traces import erasure_family
from memlab.lab.reliability.probes.erasure_writes import erasure_writes_family
from memlab.lab.reliability.probes.family import Family
from memlab.lab.reliability.probes.faults import faults_family
from memlab.lab.reliability.probes.folders import folders_family
from memlab.lab.reliability.probes.gate_direction import gate_direction_family
from memlab.lab.reliability.probes.input_bounds import input_bounds_family
from memlab.lab.reliability.probes.inputs import inputs_family
from memlab.lab.reliability.probes.isolation import isolation_family
from memlab.lab.reliability.probes.leaks import leaks_family
from memlab.lab.reliability.probes.lexical import lexical_family
from memlab.lab.reliability.probes.model_safety import model_safety_family
from memlab.lab.reliability.probes.prompt_fences import prompt_fences_family
from memlab.lab.reliability.probes.races import races_family
from memlab.lab.reliability.probes.run_folders import run_folders_family
from memlab.lab.reliability.probes.scratch_leftovers import scratch_leftovers_family
from memlab.lab.reliability.probes.secret_rates import secrets_family
from memlab.lab.reliability.probes.sizes import SIZES, memory_cached_embedder
from memlab.lab.reliability.probes.split_secrets import split_secrets_family
from memlab.storage.servers import Server

SECOND_PROBE: dict[str, Callable[[memlab.Store, memlab.Embedder, Path], Family]] = {
    "folders": folders_family, "input_checks": inputs_family, "races": races_family, "lexical": lexical_family,
    "leaks": leaks_family, "split_secrets": split_secrets_family, "erasure_disk": erasure_disk_family,
}  # fmt: skip  (each family's name in the report -> its probe)
THIRD_PROBE: dict[str, Callable[[memlab.Store, memlab.Embedder, Path], Family]] = {
    "gate_direction": gate_direction_family, "prompt_fences": prompt_fences_family,
    "run_folders": run_folders_family, "model_safety": model_safety_family,
    "erasure_writes": erasure_writes_family, "scratch_leftovers": scratch_leftovers_family,
    "input_bounds": input_bounds_family,
}  # fmt: skip  (wrong verdicts, erasures that did not hold, leaks into folders and prompts, unbounded input)
LATER_PROBES = {**SECOND_PROBE, **THIRD_PROBE}

FAMILY_NAMES = ("isolation", "concurrency", "faults", "erasure", "secrets", "bad_inputs", *LATER_PROBES)


# -- the run ----------------------------------------------------------------------------------------------------


def run_reliability(
    out: str | Path = "reports/reliability",
    *,
    size: str = "ci",
    dsn: str | None = None,
    run_id: str | None = None,
    log: Callable[[str], None] | None = None,
    families: Sequence[str] = (),
) -> dict:
    """Run every family at `size` ("ci": a few minutes on 2 cores, "full", or "smoke" for tests) and write
    `<out>/<run-id>/reliability.json` and `reliability.md`. Returns the json's content (`ok`, `failures`,
    `families`, `folder`). `families` runs only those (FAMILY_NAMES; all by default): to re-check one class
    after a fix without the rest. Rows go to scratch databases of the configured server (`dsn`, else MEMLAB_DSN,
    else the embedded one), dropped afterwards; the faults family uses a private embedded server of its own."""
    if size not in SIZES:
        raise memlab.ConfigError(f"size {size!r} is unknown; use one of {sorted(SIZES)}")
    unknown = sorted(set(families) - set(FAMILY_NAMES))
    if unknown:
        raise memlab.ConfigError(f"unknown reliability famil{'y' if len(unknown) == 1 else 'ies'} {unknown}; "
                                 f"choose from {', '.join(FAMILY_NAMES)}")  # fmt: skip
    say = log or (lambda _: None)
    spec = SIZES[size]
    run_id = run_id or f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{size}"
    folder = Path(out) / run_id
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    embedder = memory_cached_embedder()
    ran: list[Family] = []
    # the server only makes scratch databases: the database `dsn` names gets no memlab table, no extension
    with memlab.open_server(dsn=dsn) as store, tempfile.TemporaryDirectory(prefix="memlab-reliability-") as work:
        plan: list[tuple[str, Callable[[], Family]]] = [
            ("isolation", lambda: _in_scratch(store, lambda db: isolation_family(db, embedder, spec,
                                                                                 random.Random(spec.seed)))),
            ("concurrency", lambda: _in_scratch(store, lambda db: concurrency_family(db, embedder, spec))),
            ("faults", lambda: faults_family(embedder, spec)),
            ("erasure", lambda: _in_scratch(store, lambda db: erasure_family(db, embedder, Path(work)))),
            ("secrets", lambda: _in_scratch(store, lambda db: secrets_family(db, embedder))),
            ("bad_inputs", lambda: _in_scratch(store, lambda db: bad_inputs_family(db, embedder))),
        ]  # fmt: skip
        # The later hostile probes' classes (memlab/lab/reliability/probes/), each on its own scratch database.
        for name, probe in LATER_PROBES.items():
            plan.append((name, lambda probe=probe: _in_scratch(store, lambda db: probe(db, embedder, Path(work)))))
        assert [name for name, _ in plan] == list(FAMILY_NAMES)
        for name, run in plan:
            if families and name not in families:
                continue
            say(f"reliability: {name} ...")
            t0 = time.perf_counter()
            try:
                with _quiet("psycopg.pool", "memlab.events.memory", "memlab.storage"):
                    family = run()
            except Exception as exc:  # a family that crashes is a failure of the run, reported as such
                family = Family(name, {"crashed": 1}, must_be_zero=["crashed"])
                family.found.append("".join(traceback.format_exception(exc))[-2000:])
            family.seconds = round(time.perf_counter() - t0, 1)
            failures = family.failures()
            say(f"reliability: {name} {'ok' if not failures else 'FAILED: ' + '; '.join(failures)} "
                f"({family.seconds:.0f} s)")  # fmt: skip
            ran.append(family)
    failures = [f for family in ran for f in family.failures()]
    result = {
        "run_id": run_id,
        "size": size,
        "size_settings": asdict(spec),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(time.perf_counter() - started, 1),
        "memlab_version": memlab.__version__,
        "ok": not failures,
        "failures": failures,
        "must_be_zero": {f"{fam.name}.{k}": fam.figures.get(k, 0) for fam in ran for k in fam.must_be_zero},
        "goals": {f"{fam.name}.{k}": {"value": fam.figures.get(k), "goal": f"{op} {bound}"}
                  for fam in ran for k, (op, bound) in fam.goals.items()},
        "families": {fam.name: asdict(fam) for fam in ran},
        "folder": str(folder),
    }
    (folder / "reliability.json").write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
    (folder / "reliability.md").write_text(reliability_markdown(result))
    return result


@contextmanager
def _quiet(*names: str) -> Iterator[None]:
    """Silence the warnings these loggers print while a family provokes them on purpose (a killed server, a
    refused session); what happened is in the report."""
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _in_scratch(store: Server, run: Callable[[memlab.Store], Family]) -> Family:
    with memlab.scratch_store(store, prefix="memlab_reliability") as db:
        return run(db)


def reliability_markdown(result: dict) -> str:
    """reliability.md from the json's content."""
    verdict = "PASS" if result["ok"] else "FAIL"
    lines = [f"# memlab reliability: {result['run_id']}", "",
             f"Size `{result['size']}`, {result['seconds']:.0f} s, memlab {result['memlab_version']}. "
             f"**{verdict}**" + ("" if result["ok"] else ": " + "; ".join(result["failures"])), "",
             *([f"Only these families ran (--family): {', '.join(result['families'])}.", ""]
               if len(result["families"]) < len(FAMILY_NAMES) else []),
             "| family | figure | value | must be |", "|---|---|---|---|"]  # fmt: skip
    for name, fam in result["families"].items():
        unset = {k: 0 for k in fam["must_be_zero"] if k not in fam["figures"]}  # zero because nothing was counted
        for key, value in {**fam["figures"], **unset}.items():
            if key == "table":
                continue
            bound = "0" if key in fam["must_be_zero"] else " ".join(map(str, fam["goals"].get(key, ())))
            lines.append(f"| {name} | {key} | {value} | {bound} |")
    table = result["families"].get("bad_inputs", {}).get("figures", {}).get("table", [])
    if table:
        lines += ["", "## Bad inputs: how each ended", "", "| input | ended | documented | detail |",
                  "|---|---|---|---|"]
        for row in table:
            detail = row["detail"].replace("|", "\\|")
            lines.append(f"| {row['input']} | {row['ended']} | {row['documented']} | {detail} |")
    for title, key in (("What was found", "found"), ("Known issues (not gating)", "known_issues"), ("Notes", "notes")):
        items = [f"- {name}: {item}" for name, fam in result["families"].items() for item in fam[key]]
        if items:
            lines += ["", f"## {title}", "", *(i.replace("\n", " ") for i in items)]
    lines += ["", "Families, in order: " + ", ".join(f"{n} ({f['seconds']:.0f} s)"
                                                   for n, f in result["families"].items()), ""]  # fmt: skip
    return "\n".join(lines)

