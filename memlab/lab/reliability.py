"""The reliability report: `memlab check reliability [--size ci|full]`, `lab.run_reliability(out, size=...)`.

Bounded versions of the test families (tests/test_isolation.py, test_concurrency.py, test_faults.py,
test_erasure_everywhere.py, tests/events/test_bad_input.py), run against a fresh scratch database of the
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

- the second hostile probe's classes, one module each in memlab/lab/probes/: folder safety and name collisions
  (folders), input checks on both memories and the ADK services (input_checks), erasure racing a write (races),
  the lexical plan's row count as a user grows (lexical), secrets in run folders and error messages (leaks),
  secrets split across events (split_secrets), and a byte search of the data folder after erasure (erasure_disk).

Each run writes `<out>/<run-id>/reliability.json` and `reliability.md`; `ok` is false when a must-be-zero figure is
not zero or a goal is missed."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import multiprocessing
import os
import queue
import random
import re
import sqlite3
import tempfile
import threading
import time
import traceback
import unicodedata
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
from psycopg import sql

import memlab
from memlab.events import secrets as secret_scan
from memlab.lab.probes.erasure_disk import erasure_disk_family
from memlab.lab.probes.family import Family
from memlab.lab.probes.folders import folders_family
from memlab.lab.probes.inputs import inputs_family
from memlab.lab.probes.leaks import leaks_family
from memlab.lab.probes.lexical import lexical_family
from memlab.lab.probes.races import races_family
from memlab.lab.probes.server import private_server, signal_postmaster
from memlab.lab.probes.split_secrets import split_secrets_family

# -- sizes ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Size:
    """How much each family does."""

    isolation_cases: int  # random worlds (each: up to 6 (app, user) pairs with sessions, 3 more asked empty)
    matrix_bases: tuple[str, ...]  # user ids whose every look-alike gets rows, asked one by one
    matrix_apps: tuple[str, ...]
    threads: int
    processes: int
    rounds: int  # how often each concurrent writer adds every session
    users: int  # users of the concurrency family
    searches: int  # searches per thread in the pooled-settings check
    fault_users: int
    fault_sessions: int  # sessions per user in the faults family
    seed: int = 20261201


SIZES: dict[str, Size] = {
    "smoke": Size(3, ("café",), ("app", "App"), 4, 1, 1, 2, 4, 2, 2),
    "ci": Size(20, ("café", "a%b", "Dan"), ("app", "App", "app "), 8, 2, 2, 3, 12, 4, 3),
    "full": Size(200, ("café", "a%b", "a_b", "Dan", "_domain", "straße", "o'neil"),
                 ("app", "App", "app ", "ap_", "app%"), 8, 2, 6, 6, 60, 8, 6),
}  # fmt: skip
SECRET_GOALS = {"held_out_caught": (">=", 0.95), "ordinary_flagged": ("<=", 0.10)}


def _embedder() -> memlab.Embedder:
    """The packaged model behind an in-memory cache: nothing of the run is written to MEMLAB_HOME/cache."""
    return memlab.CachedEmbedder(memlab.default_embedder(cache=False), memlab.EmbeddingCache())


# -- isolation --------------------------------------------------------------------------------------------------

MARK = re.compile(r"qzm\d{7}x")
PREDICATE, DOMAIN_PREDICATE = "programming_language", "deploy_tool"
TOPICS = [
    "We deploy the payments service with Argo CD every Friday afternoon.",
    "My daughter starts piano lessons on Thursday after school.",
    "The nightly billing export writes CSV files to the S3 bucket at 2am.",
    "I am allergic to peanuts so please never suggest satay.",
    "Our on-call rotation changes every Monday at nine in the morning.",
]
USER_BASES = ("alice", "Dan", "café", "Zoë", "straße", "ﬁnn", "a_b", "a%b", "a/b", "a:b", "%", "_", "%(user)s",
              "o'neil", "x\\y", "Ⅸ", "_domain", "İstanbul")  # fmt: skip
APP_BASES = ("app", "Ünïcode-app", "a%p", "app_1", "app/1", "app:1")
ID_CHARS = "abcXYZ019 -_%/:'\"\\.\t\néÉßẞİıﬁＡ\u0301\u200bΩ中😀"


def look_alikes(base: str) -> list[str]:
    """Ids equal to `base` under case folding, trimming, Unicode normalisation or a LIKE match, and near misses."""
    forms = {base, base.upper(), base.lower(), base.swapcase(), base.casefold(), base.title()}
    forms |= {unicodedata.normalize(f, base) for f in ("NFC", "NFD", "NFKC", "NFKD")}
    forms |= {f" {base}", f"{base} ", f"{base}\t", f"{base}\n", base.replace("a", "a ")}
    forms |= {f"{base}%", f"%{base}", f"{base}_", f"{base[:-1]}_", f"_{base[1:]}", f"{base}/", f"/{base}", f"{base}:"}
    forms |= {base.replace("%", "xx").replace("_", "x").replace("/", "").replace(":", "").replace("'", "''")}
    return sorted(f for f in forms if f and "\x00" not in f)


class MarkerExtractor:
    """Every marker in an event's text becomes the fact `user programming_language = <marker>`."""

    name = "markers"

    def extract(self, events, *, session_id, registry, current_keys=()):
        return [
            memlab.Candidate("user", PREDICATE, m, m, basis="stated" if e.author == "user" else "inferred",
                             event_id=e.id, event_time=e.timestamp, session_id=session_id)
            for e in events
            for m in MARK.findall(e.text or "")
        ]


class _Isolation:
    """A scratch database where every row is traceable to its owner (markers and session ids unique per run)."""

    def __init__(self, store: memlab.Store, embedder: memlab.Embedder, family: Family) -> None:
        self.family = family
        self.marker_owner: dict[str, tuple[str, str]] = {}
        self.session_owner: dict[str, tuple[str, str]] = {}
        self.counter = itertools.count()
        self.memories = {
            "event": memlab.EventMemory(store, embedder),
            "chunk": memlab.EventMemory(store, embedder, "chunk", chunk_size=2, chunk_overlap=1),
        }
        self.facts = memlab.FactMemory(store, embedder, extractor=MarkerExtractor())
        self.services: dict[str, Any] = {}
        try:
            from memlab.adk import EventMemoryService, FactMemoryService
        except ImportError:
            family.notes.append("ADK services not checked: the `adk` extra is not installed")
        else:
            self.services = {name: EventMemoryService(mem) for name, mem in self.memories.items()}
            self.services["facts"] = FactMemoryService(self.facts)

    def marker(self, owner: tuple[str, str]) -> str:
        m = f"qzm{next(self.counter):07d}x"
        self.marker_owner[m] = owner
        return m

    def ingest(self, texts: dict[tuple[str, str], list[str]], domain_apps: list[str]) -> None:
        start = datetime.now(UTC) - timedelta(hours=2)  # recent: facts keep serving confidence
        for (app, user), lines in texts.items():
            sid = f"iso-s{next(self.counter)}"
            self.session_owner[sid] = (app, user)
            events = [memlab.Event(f"e{i}", "user" if i % 2 == 0 else "model", start + timedelta(minutes=i),
                                   f"{self.marker((app, user))} {text}") for i, text in enumerate(lines)]  # fmt: skip
            session = memlab.Session(app, user, sid, events)
            for mem in self.memories.values():
                mem.add_session(session)
            self.facts.add_session(session)
        for app in domain_apps:
            self.facts.add_domain_fact(app, "team:core", DOMAIN_PREDICATE, self.marker((app, memlab.DOMAIN_USER)))

    def _rows(self, what: str, owners: list[tuple[str, str] | None], allowed: set, ask: str) -> None:
        self.family.add("reads")
        for owner in owners:
            self.family.add("rows_checked")
            if owner not in allowed:
                self.family.problem("leaks", f"{what} for {ask} returned a row of {owner!a}")

    def _markers(self, text: str) -> list[tuple[str, str] | None]:
        return [self.marker_owner.get(m) for m in MARK.findall(text)]

    def check(self, app: str, user: str, look: memlab.SearchSettings, granularity: str, query: str) -> None:
        me, domain = (app, user), (app, memlab.DOMAIN_USER)
        ask = f"app {app!a} user {user!a} ({granularity}, {look})"
        mem = self.memories[granularity]
        hits = mem.search(app, user, query, look)
        self._rows("EventMemory.search", [self.session_owner.get(h.session_id) for h in hits], {me}, ask)
        self._rows("EventMemory.search text", [o for h in hits for o in self._markers(h.text)], {me}, ask)
        count = mem.count(app, user)
        plan = mem.explain(app, user, query, look).plan
        self.family.add("reads")
        top = re.search(r"actual time=\S+ rows=([\d.]+)", plan)
        if top is None or float(top.group(1)) > min(look.top_k, count):
            self.family.problem("leaks", f"EventMemory.explain for {ask} returned more rows than the user has")
        for column, want in (("app_name", app), ("user_id", user)):
            found = {v.replace("''", "'") for v in re.findall(column + r" = '((?:[^']|'')*)'::text", plan, re.S)}
            if found != {want}:
                self.family.problem("leaks", f"EventMemory.explain for {ask} filtered {column} on {found}")
        self._rows("FactMemory.current", [self.marker_owner.get(f.value) for f in self.facts.current(app, user)],
                   {me}, ask)  # fmt: skip
        fact_hits = self.facts.search(app, user, query)
        self._rows("FactMemory.search", [self.marker_owner.get(h.fact.value) for h in fact_hits], {me, domain}, ask)
        self._rows("FactMemory.search owner", [(app, h.user_id) for h in fact_hits], {me, domain}, ask)
        self._rows("FactMemory.preload_block", self._markers(self.facts.preload_block(app, user, query)),
                   {me, domain}, ask)  # fmt: skip
        trail = self.facts.why(app, user, "user", PREDICATE) + self.facts.why(app, user, "team:core", DOMAIN_PREDICATE)
        self._rows("FactMemory.why", [self.marker_owner.get(p.value) for p in trail], {me}, ask)
        self._rows("FactMemory.why session", [self.session_owner.get(p.session_id) for p in trail], {me}, ask)
        if not self.services:
            return
        entries = asyncio.run(self.services[granularity].search_memory(app_name=app, user_id=user, query=query))
        self._rows("EventMemoryService.search_memory",
                   [self.session_owner.get(e.custom_metadata["session_id"]) for e in entries.memories]
                   + [o for e in entries.memories for o in self._markers(e.content.parts[0].text)], {me}, ask)
        entries = asyncio.run(self.services["facts"].search_memory(app_name=app, user_id=user, query=query))
        self._rows("FactMemoryService.search_memory",
                   [(app, memlab.parse_fact_id(e.id)[0]) for e in entries.memories]
                   + [o for e in entries.memories for o in self._markers(e.content.parts[0].text)],
                   {me, domain}, ask)  # fmt: skip


def _random_id(rng: random.Random) -> str:
    return "".join(rng.choice(ID_CHARS) for _ in range(rng.randint(1, 10)))


def _random_settings(rng: random.Random) -> memlab.SearchSettings:
    return memlab.SearchSettings(
        top_k=rng.randint(1, 12),
        max_distance=rng.choice([None, round(rng.uniform(0.3, 2.0), 3)]),
        strategy=rng.choice(["auto", "exact", "hnsw", "planner"]),
        ef_search=rng.randint(1, 80),
        iterative_scan=rng.choice(["off", "relaxed_order", "strict_order"]),
        exact_below=rng.choice([0, 3, 2_000]),
    )


def isolation_family(store: memlab.Store, embedder: memlab.Embedder, size: Size, rng: random.Random) -> Family:
    family = Family("isolation", {"cases": 0, "reads": 0, "rows_checked": 0, "leaks": 0}, must_be_zero=["leaks"])
    iso = _Isolation(store, embedder, family)
    users = sorted({u for base in size.matrix_bases for u in look_alikes(base)} - {memlab.DOMAIN_USER})
    pairs = [(app, user) for app in size.matrix_apps for user in users]
    iso.ingest({p: [TOPICS[i % len(TOPICS)], TOPICS[(i + 1) % len(TOPICS)]] for i, p in enumerate(pairs)},
               list(size.matrix_apps))  # fmt: skip
    looks = [
        (memlab.SearchSettings(top_k=5, strategy="exact"), "event"),
        (memlab.SearchSettings(top_k=5, strategy="hnsw", exact_below=0), "chunk"),
        (memlab.SearchSettings(top_k=3, strategy="planner", iterative_scan="strict_order"), "event"),
    ]
    for i, (app, user) in enumerate(pairs):
        look, granularity = looks[i % len(looks)]
        iso.check(app, user, look, granularity, TOPICS[i % len(TOPICS)])
        family.add("cases")
    family.figures["look_alike_ids"] = len(users) * len(size.matrix_apps)
    for _ in range(size.isolation_cases):
        user_pool = [u for u in look_alikes(rng.choice(USER_BASES)) if u != memlab.DOMAIN_USER]
        app_pool = look_alikes(rng.choice(APP_BASES))
        users = rng.sample(user_pool, rng.randint(2, 4)) + ([_random_id(rng)] if rng.random() < 0.5 else [])
        apps = rng.sample(app_pool, rng.randint(1, 2)) + ([_random_id(rng)] if rng.random() < 0.3 else [])
        every = [(a, u) for a in dict.fromkeys(apps) for u in dict.fromkeys(users) if u != memlab.DOMAIN_USER]
        rng.shuffle(every)
        texts = {p: [f"{rng.choice(TOPICS)} {_random_id(rng)}" for _ in range(rng.randint(1, 2))] for p in every[:6]}
        iso.ingest(texts, [a for a in apps if rng.random() < 0.5])
        look, granularity = _random_settings(rng), rng.choice(["event", "chunk"])
        query = rng.choice([rng.choice(TOPICS), *[t for ts in texts.values() for t in ts]])
        for app, user in every[:9]:
            iso.check(app, user, look, granularity, query)
        family.add("cases")
    return family


# -- concurrency ------------------------------------------------------------------------------------------------

SCRIPT = [  # one session per entry: the user at even positions, the model at odd ones
    ["I am vegetarian these days.", "Noted, I will suggest vegetarian recipes from now on.",
     "I live in Berlin now.", "Berlin is lovely in spring, enjoy the parks there.",
     "I program in Rust and Go.", "Rust and Go are both great choices for backend services."],
    ["I went pescatarian last month.", "Great, fish dishes it is for your meal plans then.",
     "I live in Berlin now.", "Still Berlin, got it, thanks for confirming that again.",
     "We deploy with Argo CD.", "Argo CD works well for GitOps style deployments."],
    ["I am vegetarian these days.", "Back to vegetarian meals, I have updated your plans.",
     "I program in Rust and Go.", "Good to know you still write Rust and Go every day."],
]  # fmt: skip
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _script_sessions(app: str, users: int) -> list[memlab.Session]:
    names = ["ana", "Ana", "bo", "ANA", "ana ", "bö", "bo\u0308", "cy"][:users]
    return [
        memlab.Session(app, user, f"s{k}", [
            memlab.Event(f"e{i}", "user" if i % 2 == 0 else "model", T0 + timedelta(days=k, minutes=i), text)
            for i, text in enumerate(lines)
        ])
        for user in names
        for k, lines in enumerate(SCRIPT)
    ]  # fmt: skip


def _memories(store: memlab.Store, embedder: memlab.Embedder) -> dict:
    return {
        "event": memlab.EventMemory(store, embedder),
        "chunk": memlab.EventMemory(store, embedder, "chunk", chunk_size=3, chunk_overlap=1),
        "facts": memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor()),
    }


def _ingest_rounds(
    mems: dict, todo: list[memlab.Session], rounds: int, seed: int, *, prefixes: bool = True
) -> Counter:
    """Add every session `rounds` times in a shuffled order, with `prefixes` half the time its first four events
    first (its trailing chunk then grows)."""
    rng = random.Random(seed)
    totals: Counter = Counter()
    for _ in range(rounds):
        order = list(todo)
        rng.shuffle(order)
        for session in order:
            first = prefixes and rng.random() < 0.5
            versions = [replace(session, events=session.events[:4]), session] if first else [session]
            for version in versions:
                totals["adds"] += 1
                for name in ("event", "chunk"):
                    totals[f"{name}_added"] += mems[name].add_session(version).added
                report = mems["facts"].add_session(version)
                totals["facts_consolidated"] += len(report.actions)
                totals["facts_duplicates"] += report.duplicates
    return totals


def _writer_process(dsn: str, todo, rounds: int, seed: int, ready, go, results) -> None:
    """A writer in its own process: its own store on the same database and its own model."""
    try:
        store = memlab.open_store(dsn=dsn)
        mems = _memories(store, _embedder())
        ready.put(os.getpid())
        go.wait(300)
        results.put(("ok", dict(_ingest_rounds(mems, todo, rounds, seed))))
        store.close()
    except BaseException as exc:  # reported to the parent
        ready.put(-1)
        results.put(("error", "".join(traceback.format_exception_only(exc)).strip()))


def _units(mems: dict, app: str, users: Iterable[str]) -> list[tuple]:
    """(user, layer, session, unit id, event ids, body) of every unit of these users in the event and chunk
    layers, read through the public search (exact: every row of the user is scored)."""
    out = []
    for name in ("event", "chunk"):
        mem = mems[name]
        probe = np.zeros(mem.model.dimension, dtype=np.float32)
        probe[0] = 1.0
        for user in users:
            hits = mem.search_vector(app, user, probe, memlab.SearchSettings(top_k=1_000_000, strategy="exact"))
            out += [(user, mem.layer, h.session_id, h.unit_id, tuple(h.event_ids), h.text) for h in hits]
    return sorted(out)


def _fact_rows(mems: dict, app: str, users: Iterable[str]) -> list[tuple]:
    """(user, subject, predicate, value, status, confidence, sessions, cardinality, basis) of every fact row."""
    return sorted(
        (user, f.subject, f.predicate, f.value, f.status, round(f.confidence, 4), tuple(f.sessions), f.cardinality,
         f.basis)
        for user in users
        for f in mems["facts"].rows(app, user)
    )  # fmt: skip


def _users(todo: list[memlab.Session]) -> list[str]:
    return sorted({s.user_id for s in todo})


def _compare_units(family: Family, got: list[tuple], want: list[tuple], where: str, *, extra: str) -> None:
    """Lost writes (in a clean ingest, not here) and extra units (here, not in a clean ingest)."""
    got_set, want_set = set(got), set(want)
    for row in sorted(want_set - got_set)[:5]:
        family.problem("lost_writes", f"{where}: {row[:4]} {row[4]} of a clean ingest is missing")
    family.add("lost_writes", max(0, len(want_set - got_set) - 5))
    for row in sorted(got_set - want_set)[:5]:
        family.problem(extra, f"{where}: {row[:4]} {row[4]} is not in a clean ingest")
    family.add(extra, max(0, len(got_set - want_set) - 5))
    keys = Counter((r[0], r[1], r[2], r[4]) for r in got)
    for key, n in keys.items():
        if n > 1:
            family.problem("duplicates", f"{where}: events {key} are stored in {n} units")


def _check_facts(family: Family, got: list[tuple], want: list[tuple], where: str) -> None:
    current = Counter((r[0], r[1], r[2]) for r in got if r[4] == "current" and r[7] == "one")
    for key, n in current.items():
        if n > 1:
            family.problem("two_current_values", f"{where}: {key} has {n} current values")
    base, cap = {"stated": (0.95, 0.99), "inferred": (0.4, 0.6)}, 0.02  # memlab.facts.decide's constants
    for row in got:
        if row[4] == "current":
            start, top = base[row[8]]
            if abs(row[5] - min(start + cap * (len(row[6]) - 1), top)) > 1e-4:
                family.problem("confidence_not_once_per_session", f"{where}: {row[:7]} ({row[8]})")
    for row in sorted(set(got) ^ set(want))[:5]:
        family.problem("fact_mismatches", f"{where}: {row} differs from a clean ingest")


SETTINGS_SEEN = ("hnsw.ef_search", "hnsw.iterative_scan", "hnsw.max_scan_tuples", "enable_sort", "enable_seqscan",
                 "plan_cache_mode", "maintenance_work_mem")  # fmt: skip


def _current_settings(conn) -> dict[str, str | None]:
    return {n: conn.execute("SELECT current_setting(%s, true)", [n]).fetchone()[0] for n in SETTINGS_SEEN}


def _settings_leaks(family: Family, db: memlab.Store, embedder: memlab.Embedder, app: str, size: Size) -> None:
    """Searches with random settings from many threads on a 2-connection pool, each followed by a plain use of a
    pooled connection: what it sees must be the server's defaults."""
    import psycopg

    with psycopg.connect(db.dsn, autocommit=True) as fresh:
        fresh.execute("SELECT '[1]'::vector")  # loads pgvector, which defines its settings
        defaults = _current_settings(fresh)
    errors: list[str] = []
    with memlab.open_store(dsn=db.dsn, pool_size=2) as small:
        mem = memlab.EventMemory(small, embedder)
        barrier = threading.Barrier(size.threads)

        def searcher(seed: int) -> None:
            rng = random.Random(seed)
            barrier.wait()
            try:
                for i in range(size.searches):
                    look = _random_settings(rng)
                    look = replace(look, ef_search=rng.randint(1, 999), max_scan_tuples=rng.randint(1, 50_000),
                                   iterative_scan=rng.choice(["strict_order", "relaxed_order"]))  # fmt: skip
                    (mem.explain if i % 3 == 2 else mem.search)(app, "ana", "what do I eat?", look)
                    with small.connection() as conn:
                        seen = _current_settings(conn)
                    family.add("setting_checks")
                    changed = {k: v for k, v in seen.items() if v not in (None, defaults[k])}
                    if changed:
                        family.problem("setting_leaks", f"after a search with {look}: {changed}")
            except BaseException as exc:  # counted below
                errors.append(repr(exc))

        threads = [threading.Thread(target=searcher, args=(i,)) for i in range(size.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        with small.connection() as a, small.connection() as b:
            for conn in (a, b):
                family.add("setting_checks")
                changed = {k: v for k, v in _current_settings(conn).items() if v not in (None, defaults[k])}
                if changed:
                    family.problem("setting_leaks", f"a pooled connection kept {changed}")
    for error in errors:
        family.problem("errors", error)


def concurrency_family(db: memlab.Store, embedder: memlab.Embedder, size: Size) -> Family:
    family = Family("concurrency", {"writers": size.threads + size.processes, "threads": size.threads,
                                    "processes": size.processes, "sessions": 0, "adds": 0, "units": 0,
                                    "duplicates": 0, "lost_writes": 0, "added_mismatch": 0,
                                    "two_current_values": 0, "confidence_not_once_per_session": 0,
                                    "fact_mismatches": 0, "setting_checks": 0, "setting_leaks": 0, "errors": 0},
                    must_be_zero=["duplicates", "lost_writes", "added_mismatch", "two_current_values",
                                  "confidence_not_once_per_session", "fact_mismatches", "setting_leaks",
                                  "late_snapshot_chunks_rolled_back", "errors"])  # fmt: skip
    app, reference = "concurrent", "concurrent-clean"
    todo = _script_sessions(app, size.users)
    family.figures["sessions"] = len(todo)
    ctx = multiprocessing.get_context("spawn")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_writer_process, args=(db.dsn, todo, size.rounds, 100 + i, ready, go, results))
             for i in range(size.processes)]  # fmt: skip
    for p in procs:
        p.start()
    totals: list[Counter] = []
    mems = _memories(db, embedder)  # shared by the threads
    try:
        started = [ready.get(timeout=300) for _ in procs]
        if any(pid < 0 for pid in started):
            family.problem("errors", "a writer process could not start")
        barrier = threading.Barrier(size.threads + 1)

        def writer(seed: int) -> None:
            barrier.wait()
            try:
                totals.append(_ingest_rounds(mems, todo, size.rounds, seed))
            except BaseException as exc:  # counted below
                family.problem("errors", repr(exc))

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(size.threads)]
        for t in threads:
            t.start()
        go.set()
        barrier.wait()
        for t in threads:
            t.join(timeout=600)
        for _ in procs:
            try:
                status, value = results.get(timeout=600)
            except queue.Empty:
                family.problem("errors", "a writer process did not report")
                continue
            if status == "ok":
                totals.append(Counter(value))
            else:
                family.problem("errors", f"writer process: {value}")
    finally:
        go.set()
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    total = sum(totals, Counter())
    family.figures["adds"] = total["adds"]
    clean = _ingest_rounds(_memories(db, embedder), _script_sessions(reference, size.users), 1, 0, prefixes=False)
    users = _users(todo)
    got, want = _units(mems, app, users), _units(mems, reference, users)
    family.figures["units"] = len(got)
    _compare_units(family, got, want, "concurrent ingest", extra="duplicates")
    for layer, name in (("event", "event"), ("chunk:3:1", "chunk")):
        stored = sum(1 for r in got if r[1] == layer)
        if total[f"{name}_added"] != stored:
            family.problem("added_mismatch", f"{name}: writers reported {total[f'{name}_added']} added, {stored} "
                           "stored")  # fmt: skip
    if total["facts_consolidated"] != clean["facts_consolidated"] or total["facts_duplicates"]:
        family.problem("confidence_not_once_per_session",
                       f"{total['facts_consolidated']} candidates consolidated ({total['facts_duplicates']} as "
                       f"duplicates), a clean ingest consolidates {clean['facts_consolidated']}")  # fmt: skip
    _check_facts(family, _fact_rows(mems, app, users), _fact_rows(mems, reference, users), "concurrent ingest")
    _settings_leaks(family, db, embedder, app, size)
    _late_snapshot(family, db, embedder)
    return family




def _late_snapshot(family: Family, db: memlab.Store, embedder: memlab.Embedder) -> None:
    """Two writers with different snapshots of one live session, the older arriving last: the chunks must end
    as after the newer snapshot alone."""
    mems = _memories(db, embedder)
    for app, late in (("late-snapshot", True), ("late-snapshot-clean", False)):
        for session in _script_sessions(app, 1):
            mems["chunk"].add_session(session)
            if late:
                mems["chunk"].add_session(replace(session, events=session.events[:4]))
    users = _users(_script_sessions("late-snapshot", 1))
    got, want = set(_units(mems, "late-snapshot", users)), set(_units(mems, "late-snapshot-clean", users))
    family.figures["late_snapshot_chunks_rolled_back"] = len(want - got)


# -- faults -----------------------------------------------------------------------------------------------------

FAULT_TEXTS = [
    "I am vegetarian these days and cook at home most evenings.",
    "Our payments service runs in eu-west-1 and we deploy it with Argo CD.",
    "I live in Berlin now, close to the old airport park.",
    "The nightly billing export job writes CSV files to an S3 bucket at 2am.",
    "I program in Rust and Go for the platform team.",
    "My daughter starts piano lessons on Thursday afternoons.",
]


def _fault_sessions(app: str, size: Size) -> list[memlab.Session]:
    return [
        memlab.Session(app, f"user-{u}", f"s{k}", [
            memlab.Event(f"e{i}", "user" if i % 2 == 0 else "model", T0 + timedelta(days=k, minutes=i),
                         f"{FAULT_TEXTS[(i + k + u) % len(FAULT_TEXTS)]} (u{u} s{k} #{i})")
            for i in range(5)
        ])
        for u in range(size.fault_users)
        for k in range(size.fault_sessions)
    ]  # fmt: skip


class Tripwire:
    """An embedder that runs `action` on its Nth `embed_documents` call (before embedding), then carries on."""

    def __init__(self, inner: memlab.Embedder, at: int, action: Callable[[], None]) -> None:
        self.inner, self.at, self.action, self.calls = inner, at, action, 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts):
        self.calls += 1
        if self.calls == self.at:
            self.action()
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def _fault_ingest(mems: dict, todo: list[memlab.Session], *, batch: int = 8, facts: bool = True) -> None:
    for name in ("event", "chunk"):
        mems[name].add_sessions(todo, batch_units=batch)
    if facts:
        for session in todo:
            mems["facts"].add_session(session)


def _whole(family: Family, partial: list[tuple], clean: list[tuple], where: str) -> None:
    """Each (user, layer, session) of `partial` holds exactly its units of a clean ingest, or nothing."""
    def group(rows):
        out: dict[tuple, set] = {}
        for row in rows:
            out.setdefault(row[:3], set()).add(row[3:])
        return out

    whole = group(clean)
    for key, rows in group(partial).items():
        family.add("sessions_checked")
        if rows != whole.get(key):
            family.problem("half_written_sessions", f"{where}: session {key} holds {len(rows)} of "
                           f"{len(whole.get(key, ()))} units")  # fmt: skip


def faults_family(embedder: memlab.Embedder, size: Size) -> Family:
    family = Family("faults", {"kills": 0, "recovered": 0, "recovery_seconds_max": 0.0, "embedder_failures": 0,
                               "sessions_checked": 0, "half_written_sessions": 0, "lost_writes": 0,
                               "extra_units": 0, "duplicates": 0, "fact_mismatches": 0, "not_recovered": 0},
                    must_be_zero=["half_written_sessions", "lost_writes", "extra_units", "duplicates",
                                  "fact_mismatches", "not_recovered"])  # fmt: skip
    users = [f"user-{u}" for u in range(size.fault_users)]
    with private_server("memlab-reliability-", timeout=5.0) as (store, home):
        reader = _memories(store, embedder)
        for how in ("inside-a-write", "at-a-random-moment"):
            app = f"faults-{how}"
            todo = _fault_sessions(app, size)
            try:
                if how == "inside-a-write":  # batch 2 is embedded inside its open transaction, then the server dies
                    wire = Tripwire(embedder, 2, lambda: signal_postmaster(home))
                    _fault_ingest(_memories(store, wire), todo)
                else:
                    mems = _memories(store, embedder)
                    killer = threading.Timer(0.4, signal_postmaster, [home])
                    killer.start()
                    try:
                        for _ in range(100):
                            _fault_ingest(mems, todo, batch=4)
                    finally:
                        killer.join()
                family.notes.append(f"SIGKILL {how}: the ingest finished before the kill took effect")
            except memlab.DatabaseUnavailableError:
                family.add("kills")
            started = time.monotonic()
            try:
                before = _units(reader, app, users)  # the next call restarts the server
            except memlab.MemlabError as exc:
                family.problem("not_recovered", f"{how}: {exc}")
                continue
            seconds = round(time.monotonic() - started, 2)
            family.add("recovered")
            family.figures["recovery_seconds_max"] = max(family.figures["recovery_seconds_max"], seconds)
            reference = f"{app}-clean"
            _fault_ingest(_memories(store, embedder), _fault_sessions(reference, size))
            want = _units(reader, reference, users)
            _whole(family, before, want, f"after SIGKILL {how}")
            _fault_ingest(_memories(store, embedder), todo)
            got = _units(reader, app, users)
            _compare_units(family, got, want, f"re-ingest after SIGKILL {how}", extra="extra_units")
            for row in sorted(set(_fact_rows(reader, app, users)) ^ set(_fact_rows(reader, reference, users)))[:5]:
                family.problem("fact_mismatches", f"re-ingest after SIGKILL {how}: {row}")

        app, reference = "faults-embedder", "faults-embedder-clean"
        todo = _fault_sessions(app, size)
        _fault_ingest(_memories(store, embedder), _fault_sessions(reference, size), facts=False)
        want = _units(reader, reference, users)

        def fail() -> None:
            raise RuntimeError("the embedding endpoint went away")

        for layer in ("event", "chunk"):
            mem = _memories(store, Tripwire(embedder, 2, fail))[layer]
            try:
                mem.add_sessions(todo, batch_units=8)  # batch 1 is written, batch 2 fails whole
                family.notes.append(f"embedder failure ({layer}): the ingest finished before the 2nd call")
            except RuntimeError:
                family.add("embedder_failures")
            partial = [r for r in _units(reader, app, users) if r[1] == mem.layer]
            _whole(family, partial, want, f"embedder failure ({layer})")
        _fault_ingest(_memories(store, embedder), todo, facts=False)
        got = _units(reader, app, users)
        _compare_units(family, got, want, "re-ingest after embedder failures", extra="extra_units")
    return family


# -- erasure ----------------------------------------------------------------------------------------------------



def _table_traces(store: memlab.Store, needles: list[str]) -> list[str]:
    """`table: needle` for every table of the schema (and index definition) whose text holds a needle."""
    found = []
    with store.connection() as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1").fetchall()]  # fmt: skip
        for table in tables:
            rows = conn.execute(sql.SQL("SELECT t::text FROM {} AS t").format(sql.Identifier(table))).fetchall()
            found += [f"{table}: {n}" for n in needles if any(n in r[0] for r in rows)]
        for name, definition in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
        ).fetchall():
            found += [f"index {name}: {n}" for n in needles if n in definition]
    return found


def _cache_keys(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as db:
        return {k for (k,) in db.execute("SELECT text_sha256 FROM embedding")}


class _ErasureCase:
    """A kept user and a forgotten one in one app, in event and chunk memory (and fact memory unless
    `events-only`), with a private cache file."""

    def __init__(self, db: memlab.Store, inner: memlab.Embedder, case: str, cache_path: Path) -> None:
        self.db, self.case, self.cache_path = db, case, cache_path
        cached = memlab.CachedEmbedder(inner, memlab.EmbeddingCache(cache_path))
        self.events = memlab.EventMemory(db, cached)
        self.chunks = memlab.EventMemory(db, cached, "chunk", chunk_size=2, chunk_overlap=1)
        self.facts = memlab.FactMemory(db, cached, extractor=memlab.RuleExtractor())
        self.app, self.tag = "erasure", uuid.uuid4().hex[:8]
        self.start = datetime.now(UTC) - timedelta(days=2)  # recent: facts are served (and so embedded)

    def fill(self, user: str, lines: list[str], who: str) -> list[str]:
        sids = []
        for k, part in enumerate([lines[:2], lines[2:]]):
            texts = [*part, f"Remember that the {who}{self.tag}{k} project ships on the first Monday of each quarter."]
            sid = f"s-{who}{self.tag}-{k}"
            events = [memlab.Event(f"e{i}", "user", self.start + timedelta(hours=k, minutes=i), t)
                      for i, t in enumerate(texts)]  # fmt: skip
            session = memlab.Session(self.app, user, sid, events)
            sids.append(sid)
            self.events.add_session(session)
            self.chunks.add_session(session)
            if self.case != "events-only":
                self.facts.add_session(session)
        if self.case != "events-only":
            self.facts.search(self.app, user, f"what does {user} eat and which languages does {user} write?")
        self.events.search(self.app, user, f"when does the project of {user} ship?")
        return sids

    def run(self, family: Family) -> None:
        gone, keep, marker = f"gone-{self.tag}", f"keep-{self.tag}", f"zq{self.tag}"
        self.fill(keep, ["I am vegetarian these days.", "I program in Rust and Go.", "I have a dog named Rex."], "k")
        kept = _cache_keys(self.cache_path)
        lines = ["I went pescatarian last month.", "I program in Haskell and Elixir.", f"I have a cat named {marker}."]
        sids = self.fill(gone, lines, "g")
        self.db.create_tenant_index(self.events.model.model_id, self.events.layer, self.app, gone)
        needles = [gone, *sids, f"g{self.tag}0", f"g{self.tag}1", marker]
        gone_keys = _cache_keys(self.cache_path) - kept
        if not _table_traces(self.db, needles) or not gone_keys:
            family.problem("table_traces", f"{self.case}: the forgotten user was not stored to begin with")
        order = {"events-only": ["events"], "events-then-facts": ["events", "facts"],
                 "facts-then-events": ["facts", "events"]}[self.case]  # fmt: skip
        for step in order:
            memory = self.events if step == "events" else self.facts
            memory.forget_user(self.app, gone)
        family.add("cases")
        for trace in _table_traces(self.db, needles):
            family.problem("table_traces", f"{self.case}: {trace}")
        left = gone_keys & _cache_keys(self.cache_path)
        if self.case == "events-only" and left:
            family.problem("event_cache_traces", f"{self.case}: {len(left)} cache entries of the user's texts left")
            family.add("event_cache_traces", len(left) - 1)
        elif left:
            family.add("fact_memory_cache_traces", len(left))
        if not kept <= _cache_keys(self.cache_path):
            family.notes.append(f"{self.case}: erasure also dropped cache entries of the user kept")


def erasure_family(db: memlab.Store, embedder: memlab.Embedder, workdir: Path) -> Family:
    family = Family("erasure", {"cases": 0, "tables_scanned": 0, "table_traces": 0, "event_cache_traces": 0,
                                "fact_memory_cache_traces": 0},
                    must_be_zero=["table_traces", "event_cache_traces", "fact_memory_cache_traces"])  # fmt: skip
    inner = getattr(embedder, "inner", embedder)
    for case in ("events-only", "events-then-facts", "facts-then-events"):
        _ErasureCase(db, inner, case, workdir / f"erasure-{case}" / "embeddings.sqlite").run(family)
    with db.connection() as conn:
        query = "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        family.figures["tables_scanned"] = conn.execute(query).fetchone()[0]
    return family


# -- secrets ----------------------------------------------------------------------------------------------------


def secrets_family(db: memlab.Store, embedder: memlab.Embedder) -> Family:
    import yaml

    rates = secret_scan.secret_filter_rates()
    family = Family("secrets", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in rates.items()
                                if not isinstance(v, list)}, goals=dict(SECRET_GOALS))  # fmt: skip
    family.notes += [f"missed ({split}, {kind}): {text[:60]!r}" for split, kind, text in rates["missed"][:10]]
    family.notes += [f"flagged ({split}): {text[:60]!r} as {kinds}" for split, text, kinds in rates["flagged"][:10]]
    folder = secret_scan.SECRET_CORPUS
    corpus = {
        "planted": [c["text"] for c in yaml.safe_load((folder / "credentials.yaml").read_text())["credentials"]],
        "ordinary": [o["text"] for o in yaml.safe_load((folder / "ordinary.yaml").read_text())["ordinary"]],
    }
    mem = memlab.EventMemory(db, embedder)
    for name, texts in corpus.items():
        session = memlab.Session("secrets", name, "s1", [
            memlab.Event(f"e{i}", "user", T0 + timedelta(seconds=i), text) for i, text in enumerate(texts)
        ])  # fmt: skip
        report = mem.add_session(session)
        family.figures[f"{name}_ingested"] = len(texts)
        family.figures[f"{name}_stored"] = report.added
        family.figures[f"{name}_skipped_as_secret"] = report.skipped.get("secret", 0)
    return family


# -- bad inputs -------------------------------------------------------------------------------------------------

GOOD_TEXT = "Our payments service runs in eu-west-1 and we deploy it with Argo CD."
FAR = datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
FAR_WEST = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5)))  # year 10000 in UTC


def _ended(value: Any) -> tuple[str, str]:
    """How a call ended (memlab error, listed as failed, counted skip, stored, ...) and the detail."""
    if isinstance(value, BaseException):
        kind = "memlab error" if isinstance(value, memlab.MemlabError) else "other error"
        return kind, f"{type(value).__name__}: {str(value).splitlines()[0][:160] if str(value) else ''}"
    if isinstance(value, memlab.IngestReport):
        skips = ", ".join(f"{k} {v}" for k, v in sorted(value.skipped.items()))
        if value.failed:
            refused = len(value.failed)
            return "listed as failed", f"{refused} session(s) refused, {value.added} unit(s) of the others stored"
        if value.skipped and value.added:
            return "stored + counted skip", f"{value.added} stored; skipped: {skips}"
        if value.skipped:
            return "counted skip", skips
        return ("stored", f"{value.added} stored") if value.added else ("nothing new", "already stored")
    if isinstance(value, memlab.FactIngestReport):
        return "stored", f"{value.inserted} fact(s)"
    return "returned", type(value).__name__


ENDINGS = {"memlab error": "memlab_errors", "listed as failed": "listed_as_failed", "counted skip": "counted_skips",
           "stored": "stored", "stored + counted skip": "stored"}  # how a bad input may end -> its figure


def bad_inputs_family(db: memlab.Store, embedder: memlab.Embedder) -> Family:
    family = Family("bad_inputs", {"cases": 0, "memlab_errors": 0, "listed_as_failed": 0, "counted_skips": 0,
                                   "stored": 0, "other_endings": 0, "not_as_documented": 0, "poisoned_users": 0},
                    must_be_zero=["other_endings", "not_as_documented", "poisoned_users"])  # fmt: skip
    mem = memlab.EventMemory(db, embedder)
    facts = memlab.FactMemory(db, embedder, extractor=memlab.RuleExtractor())
    app = "bad-inputs"

    def ev(eid: Any = "e1", text: Any = GOOD_TEXT, at: Any = T0, author: Any = "user", **kw) -> memlab.Event:
        return memlab.Event(eid, author, at, text, **kw)

    def add(user: str, *events: memlab.Event, sid: Any = "s1") -> memlab.IngestReport:
        return mem.add_session(memlab.Session(app, user, sid, list(events)))

    cases: list[tuple[str, str, Callable[[], Any]]] = [
        ("NUL character in the text", "memlab error", lambda: add("u-nul-text", ev(text=f"{GOOD_TEXT} \x00"))),
        ("NUL character in the user id", "memlab error", lambda: add("u-nul\x00", ev())),
        ("NUL character in the event id", "memlab error", lambda: add("u-nul-eid", ev("e\x001"))),
        ("NUL character in the author", "memlab error", lambda: add("u-nul-author", ev(author="us\x00er"))),
        ("lone surrogate in the text", "memlab error", lambda: add("u-sur-text", ev(text=f"{GOOD_TEXT} \ud800"))),
        ("lone surrogate in the session id", "memlab error", lambda: add("u-sur-sid", ev(), sid="s\udfff")),
        ("int user id", "memlab error", lambda: memlab.Session(app, 5, "s1", [ev()])),
        ("int session id", "memlab error", lambda: memlab.Session(app, "u-int-sid", 7, [ev()])),
        ("int event id", "memlab error", lambda: add("u-int-eid", ev(eid=7))),
        ("int text", "memlab error", lambda: add("u-int-text", ev(text=42))),
        ("None timestamp", "memlab error", lambda: add("u-none-ts", ev(at=None))),
        ("naive timestamp", "memlab error", lambda: add("u-naive", ev(at=datetime(2026, 1, 1)))),
        ("year-9999 timestamp (UTC)", "memlab error", lambda: add("u-9999", ev(at=FAR))),
        ("year-9999 timestamp at UTC-5 (year 10000 in UTC)", "memlab error",
         lambda: add("u-9999-west", ev(at=FAR_WEST))),
        ("timestamp before 1970", "memlab error", lambda: add("u-1969", ev(at=datetime(1969, 7, 20, tzinfo=UTC)))),
        ("duplicate event ids in one session", "stored + counted skip",
         lambda: add("u-dup", ev("e1"), ev("e1", text=GOOD_TEXT + " Again."), ev("e2", text=GOOD_TEXT + " Two."))),
        ("the same event id in two sessions", "stored",
         lambda: (add("u-dup2", ev("e1"), sid="s1"), add("u-dup2", ev("e1", text=GOOD_TEXT + " B"), sid="s2"))[1]),
        ("empty text", "counted skip", lambda: add("u-empty", ev(text=""))),
        ("None text with a tool call", "counted skip",
         lambda: add("u-tool", ev(text=None, function_calls=(memlab.FunctionCall("lookup"),)))),
        ("a 300-byte user id", "memlab error", lambda: add("u" * 300, ev())),
        ("a 100 kB text", "stored", lambda: add("u-long", ev(text=GOOD_TEXT + " x" * 50_000))),
        ("None query", "memlab error", lambda: mem.search(app, "u-long", None)),
        ("int user id in a search", "memlab error", lambda: mem.search(app, 5, "payments")),
        ("empty user id in a search", "memlab error", lambda: mem.search(app, "", "payments")),
        ("session of the reserved user _domain into fact memory", "memlab error",
         lambda: facts.add_session(memlab.Session(app, memlab.DOMAIN_USER, "s1", [ev(text="I live in Berlin now.")]))),
        ("a bad session among good ones (add_sessions)", "listed as failed",
         lambda: mem.add_sessions([memlab.Session(app, "u-batch", "ok1", [ev()]),
                                   memlab.Session(app, "u-batch", "bad", [ev(at=FAR)]),
                                   memlab.Session(app, "u-batch", "ok2", [ev()])])),
    ]  # fmt: skip
    rows = []
    for name, expected, call in cases:
        try:
            value = call()
        except BaseException as exc:  # classified below; KeyboardInterrupt still stops the run
            if isinstance(exc, KeyboardInterrupt):
                raise
            value = exc
        ended, detail = _ended(value)
        family.add("cases")
        family.add(ENDINGS.get(ended, "other_endings"))
        if ended != expected:
            family.problem("not_as_documented", f"{name}: ended as {ended} ({detail}), documented: {expected}")
        rows.append({"input": name, "ended": ended, "documented": expected, "detail": detail})
    for user in ("u-nul-text", "u-9999", "u-dup", "u-dup2", "u-long", "u-batch"):
        try:
            mem.search(app, user, "payments region")
            facts.search(app, user, "payments region")
        except BaseException as exc:
            family.problem("poisoned_users", f"{user}: {exc!r}")
    family.figures["table"] = rows
    return family


SECOND_PROBE: tuple[Callable[[memlab.Store, memlab.Embedder, Path], Family], ...] = (
    folders_family, inputs_family, races_family, lexical_family, leaks_family, split_secrets_family,
    erasure_disk_family,
)

# -- the run ----------------------------------------------------------------------------------------------------


def run_reliability(
    out: str | Path = "reports/reliability",
    *,
    size: str = "ci",
    dsn: str | None = None,
    run_id: str | None = None,
    log: Callable[[str], None] | None = None,
) -> dict:
    """Run every family at `size` ("ci": a few minutes on 2 cores, "full", or "smoke" for tests) and write
    `<out>/<run-id>/reliability.json` and `reliability.md`. Returns the json's content (`ok`, `failures`,
    `families`, `folder`). Rows go to scratch databases of the configured server (`dsn`, else MEMLAB_DSN, else the
    embedded one), dropped afterwards; the faults family uses a private embedded server of its own."""
    if size not in SIZES:
        raise memlab.ConfigError(f"size {size!r} is unknown; use one of {sorted(SIZES)}")
    say = log or (lambda _: None)
    spec = SIZES[size]
    run_id = run_id or f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{size}"
    folder = Path(out) / run_id
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    embedder = _embedder()
    families: list[Family] = []
    with memlab.open_store(dsn=dsn) as store, tempfile.TemporaryDirectory(prefix="memlab-reliability-") as work:
        plan: list[tuple[str, Callable[[], Family]]] = [
            ("isolation", lambda: _in_scratch(store, lambda db: isolation_family(db, embedder, spec,
                                                                                 random.Random(spec.seed)))),
            ("concurrency", lambda: _in_scratch(store, lambda db: concurrency_family(db, embedder, spec))),
            ("faults", lambda: faults_family(embedder, spec)),
            ("erasure", lambda: _in_scratch(store, lambda db: erasure_family(db, embedder, Path(work)))),
            ("secrets", lambda: _in_scratch(store, lambda db: secrets_family(db, embedder))),
            ("bad_inputs", lambda: _in_scratch(store, lambda db: bad_inputs_family(db, embedder))),
        ]  # fmt: skip
        # The second hostile probe's classes (memlab/lab/probes/), each on its own scratch database.
        for probe in SECOND_PROBE:
            plan.append((probe.__name__.removesuffix("_family"),
                         lambda probe=probe: _in_scratch(store, lambda db: probe(db, embedder, Path(work)))))
        for name, run in plan:
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
            families.append(family)
    failures = [f for family in families for f in family.failures()]
    result = {
        "run_id": run_id,
        "size": size,
        "size_settings": asdict(spec),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(time.perf_counter() - started, 1),
        "memlab_version": memlab.__version__,
        "ok": not failures,
        "failures": failures,
        "must_be_zero": {f"{fam.name}.{k}": fam.figures.get(k, 0) for fam in families for k in fam.must_be_zero},
        "goals": {f"{fam.name}.{k}": {"value": fam.figures.get(k), "goal": f"{op} {bound}"}
                  for fam in families for k, (op, bound) in fam.goals.items()},
        "families": {fam.name: asdict(fam) for fam in families},
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


def _in_scratch(store: memlab.Store, run: Callable[[memlab.Store], Family]) -> Family:
    with memlab.scratch_store(store, prefix="memlab_reliability") as db:
        return run(db)


def reliability_markdown(result: dict) -> str:
    """reliability.md from the json's content."""
    verdict = "PASS" if result["ok"] else "FAIL"
    lines = [f"# memlab reliability: {result['run_id']}", "",
             f"Size `{result['size']}`, {result['seconds']:.0f} s, memlab {result['memlab_version']}. "
             f"**{verdict}**" + ("" if result["ok"] else ": " + "; ".join(result["failures"])), "",
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
