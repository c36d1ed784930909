"""Concurrency: the same sessions from threads and processes at once equal one clean ingest; pooled
connections keep no search setting."""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import threading
import traceback
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg

import memlab
from memlab.lab.reliability.probes.family import Family
from memlab.lab.reliability.probes.isolation import random_settings
from memlab.lab.reliability.probes.sizes import Size, memory_cached_embedder

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


def script_sessions(app: str, users: int) -> list[memlab.Session]:
    names = ["ana", "Ana", "bo", "ANA", "ana ", "bö", "bo\u0308", "cy"][:users]
    return [
        memlab.Session(app, user, f"s{k}", [
            memlab.Event(f"e{i}", "user" if i % 2 == 0 else "model", T0 + timedelta(days=k, minutes=i), text)
            for i, text in enumerate(lines)
        ])
        for user in names
        for k, lines in enumerate(SCRIPT)
    ]  # fmt: skip


def memories(store: memlab.Store, embedder: memlab.Embedder) -> dict:
    return {
        "event": memlab.EventMemory(store, embedder),
        "chunk": memlab.EventMemory(store, embedder, "chunk", chunk_size=3, chunk_overlap=1),
        "facts": memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor()),
    }


def ingest_rounds(
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


class KnownVectors:
    """The packaged model as a writer process sees it: the texts of `writer_vectors` are answered from their
    vectors, any other by the model itself (loaded on first need, counted in `delegated`); it states its
    dimension without loading the model, so a writer whose texts all come pre-embedded never imports torch."""

    def __init__(self, inner: memlab.Embedder, texts: list[str], vectors: np.ndarray) -> None:
        self.inner, self._dimension = inner, int(vectors.shape[1])
        self.table = dict(zip(texts, vectors, strict=True))
        self.delegated = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.table))
        if missing:
            self.table.update(zip(missing, self.inner.embed_documents(missing), strict=True))
            self.delegated += len(missing)
        return np.asarray([self.table[t] for t in texts], dtype=np.float32).reshape(len(texts), self._dimension)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_documents(texts)  # the packaged model embeds queries as documents


def writer_vectors(mems: dict, todo: list[memlab.Session], embedder: memlab.Embedder) -> tuple[list[str], np.ndarray]:
    """The texts a writer of `todo` embeds (the event and chunk units of every session, whole and its first four
    events) and their vectors, embedded once here by the model behind `embedder` (its cache left as it was, so the
    threads embed as before). A writer process gets them with its sessions instead of importing and running the
    model itself, which costs seconds of CPU per process for vectors this process computes anyway; a text
    missing here is embedded by the writer's own model (noted in the family's notes)."""
    texts: list[str] = []
    for session in todo:
        for version in (replace(session, events=session.events[:4]), session):
            for name in ("event", "chunk"):  # every event of the script is kept (tests/reliability/test_concurrency.py)
                texts += [u.embed_text for u in mems[name].units_of(version, list(version.events))]
    texts = list(dict.fromkeys(texts))
    model = getattr(embedder, "inner", embedder)
    return texts, np.asarray(model.embed_documents(texts), dtype=np.float32)


def writer_process(
    dsn: str, todo, rounds: int, seed: int, ready, go, results, vectors: tuple[list[str], np.ndarray] | None = None
) -> None:
    """A writer in its own process: its own store on the same database and its own model behind an in-memory
    cache; `vectors` (writer_vectors: texts, array) answer those texts without running the model."""
    try:
        store = memlab.open_store(dsn=dsn)
        model: memlab.Embedder = memlab.default_embedder(cache=False)
        if vectors is not None:
            model = KnownVectors(model, *vectors)
        mems = memories(store, memory_cached_embedder(model))
        ready.put(os.getpid())
        go.wait(300)
        totals = ingest_rounds(mems, todo, rounds, seed)
        totals["writer_embedded"] = getattr(model, "delegated", 0)
        results.put(("ok", dict(totals)))
        store.close()
    except BaseException as exc:  # reported to the parent
        ready.put(-1)
        results.put(("error", "".join(traceback.format_exception_only(exc)).strip()))


def units(mems: dict, app: str, users: Iterable[str]) -> list[tuple]:
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


def fact_rows(mems: dict, app: str, users: Iterable[str]) -> list[tuple]:
    """(user, subject, predicate, value, status, confidence, sessions, cardinality, basis) of every fact row."""
    return sorted(
        (user, f.subject, f.predicate, f.value, f.status, round(f.confidence, 4), tuple(f.sessions), f.cardinality,
         f.basis)
        for user in users
        for f in mems["facts"].rows(app, user)
    )  # fmt: skip


def observations(mems: dict, app: str, users: Iterable[str]) -> list[tuple]:
    """(user, session, event, subject, predicate, value, negated) of every observation behind the fact rows."""
    facts = mems["facts"]
    keys = {(user, f.subject, f.predicate) for user in users for f in facts.rows(app, user)}
    return sorted((user, p.session_id, p.event_id, subject, predicate, p.value, p.negated)
                  for user, subject, predicate in keys for p in facts.why(app, user, subject, predicate))  # fmt: skip


def users_of(todo: list[memlab.Session]) -> list[str]:
    return sorted({s.user_id for s in todo})


def compare_units(family: Family, got: list[tuple], want: list[tuple], where: str, *, extra: str) -> None:
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


def check_facts(family: Family, got: list[tuple], want: list[tuple], where: str) -> None:
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


def current_settings(conn) -> dict[str, str | None]:
    return {n: conn.execute("SELECT current_setting(%s, true)", [n]).fetchone()[0] for n in SETTINGS_SEEN}


def server_defaults(dsn: str) -> dict[str, str | None]:
    """SETTINGS_SEEN on a fresh connection (not from a pool), pgvector loaded: the values no search may leave."""
    with psycopg.connect(dsn, autocommit=True) as fresh:
        fresh.execute("SELECT '[1]'::vector")  # loads pgvector, which defines its settings with their defaults
        return current_settings(fresh)


def settings_leaks(family: Family, db: memlab.Store, embedder: memlab.Embedder, app: str, size: Size) -> None:
    """Searches with random settings from many threads on a 2-connection pool, each followed by a plain use of a
    pooled connection: what it sees must be the server's defaults."""
    defaults = server_defaults(db.dsn)
    errors: list[str] = []
    with memlab.open_store(dsn=db.dsn, pool_size=2) as small:
        mem = memlab.EventMemory(small, embedder)
        barrier = threading.Barrier(size.threads)

        def searcher(seed: int) -> None:
            rng = random.Random(seed)
            barrier.wait()
            try:
                for i in range(size.searches):
                    look = random_settings(rng)
                    look = replace(look, ef_search=rng.randint(1, 999), max_scan_tuples=rng.randint(1, 50_000),
                                   iterative_scan=rng.choice(["strict_order", "relaxed_order"]))  # fmt: skip
                    (mem.explain if i % 3 == 2 else mem.search)(app, "ana", "what do I eat?", look)
                    with small.connection() as conn:
                        seen = current_settings(conn)
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
                changed = {k: v for k, v in current_settings(conn).items() if v not in (None, defaults[k])}
                if changed:
                    family.problem("setting_leaks", f"a pooled connection kept {changed}")
    for error in errors:
        family.problem("errors", error)


CONCURRENCY_MUST_BE_ZERO = ["duplicates", "lost_writes", "added_mismatch", "two_current_values",
                            "confidence_not_once_per_session", "fact_mismatches", "setting_leaks",
                            "late_snapshot_chunks_rolled_back", "errors"]  # fmt: skip


def concurrency_figures(size: Size) -> Family:
    """The concurrency family before any check ran: every figure at zero, the must-be-zero ones named."""
    return Family("concurrency", {"writers": size.threads + size.processes, "threads": size.threads,
                                  "processes": size.processes, "sessions": 0, "adds": 0, "units": 0,
                                  "duplicates": 0, "lost_writes": 0, "added_mismatch": 0,
                                  "two_current_values": 0, "confidence_not_once_per_session": 0,
                                  "fact_mismatches": 0, "setting_checks": 0, "setting_leaks": 0, "errors": 0},
                  must_be_zero=list(CONCURRENCY_MUST_BE_ZERO))  # fmt: skip


def concurrency_family(db: memlab.Store, embedder: memlab.Embedder, size: Size) -> Family:
    family = concurrency_figures(size)
    concurrent_ingest(family, db, embedder, size, "concurrent")
    settings_leaks(family, db, embedder, "concurrent", size)
    late_snapshot(family, db, embedder, "late-snapshot")
    return family


def concurrent_ingest(family: Family, db: memlab.Store, embedder: memlab.Embedder, size: Size, app: str) -> dict:
    """The script's sessions from `size.threads` threads and `size.processes` spawned processes at once, then one
    clean sequential ingest into `<app>-clean`: units, facts and observations must match it. Returns the
    memories the threads shared (to read the result)."""
    reference = f"{app}-clean"
    todo = script_sessions(app, size.users)
    family.figures["sessions"] = len(todo)
    mems = memories(db, embedder)  # shared by the threads
    vectors = writer_vectors(mems, todo, embedder) if size.processes else None
    ctx = multiprocessing.get_context("spawn")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=writer_process,
                         args=(db.dsn, todo, size.rounds, 100 + i, ready, go, results, vectors))
             for i in range(size.processes)]  # fmt: skip
    for p in procs:
        p.start()
    totals: list[Counter] = []
    try:
        started = [ready.get(timeout=300) for _ in procs]
        if any(pid < 0 for pid in started):
            family.problem("errors", "a writer process could not start")
        barrier = threading.Barrier(size.threads + 1)

        def writer(seed: int) -> None:
            barrier.wait()
            try:
                totals.append(ingest_rounds(mems, todo, size.rounds, seed))
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
    if total["writer_embedded"]:
        family.notes.append(f"the writer processes embedded {total['writer_embedded']} texts themselves (not "
                            "among writer_vectors: each loaded the model)")  # fmt: skip
    clean = ingest_rounds(memories(db, embedder), script_sessions(reference, size.users), 1, 0, prefixes=False)
    users = users_of(todo)
    got, want = units(mems, app, users), units(mems, reference, users)
    family.figures["units"] = len(got)
    compare_units(family, got, want, "concurrent ingest", extra="duplicates")
    for layer, name in (("event", "event"), ("chunk:3:1", "chunk")):
        stored = sum(1 for r in got if r[1] == layer)
        if total[f"{name}_added"] != stored:
            family.problem("added_mismatch", f"{name}: writers reported {total[f'{name}_added']} added, {stored} "
                           "stored")  # fmt: skip
    if total["facts_consolidated"] != clean["facts_consolidated"] or total["facts_duplicates"]:
        family.problem("confidence_not_once_per_session",
                       f"{total['facts_consolidated']} candidates consolidated ({total['facts_duplicates']} as "
                       f"duplicates), a clean ingest consolidates {clean['facts_consolidated']}")  # fmt: skip
    check_facts(family, fact_rows(mems, app, users), fact_rows(mems, reference, users), "concurrent ingest")
    got_obs, want_obs = Counter(observations(mems, app, users)), Counter(observations(mems, reference, users))
    for row in sorted((got_obs - want_obs) + (want_obs - got_obs))[:5]:
        family.problem("fact_mismatches", f"concurrent ingest: observation {row} differs from a clean ingest")
    if clean["facts_consolidated"] != want_obs.total():
        family.problem("confidence_not_once_per_session", f"a clean ingest consolidated {clean['facts_consolidated']} "
                       f"candidates into {want_obs.total()} observations")  # fmt: skip
    return mems


def late_snapshot(family: Family, db: memlab.Store, embedder: memlab.Embedder, app: str) -> None:
    """Two writers with different snapshots of one live session, the older arriving last: the chunks must end
    as after the newer snapshot alone (`<app>-clean`)."""
    mems = memories(db, embedder)
    for name, late in ((app, True), (f"{app}-clean", False)):
        for session in script_sessions(name, 1):
            mems["chunk"].add_session(session)
            if late:
                mems["chunk"].add_session(replace(session, events=session.events[:4]))
    users = users_of(script_sessions(app, 1))
    got, want = set(units(mems, app, users)), set(units(mems, f"{app}-clean", users))
    family.figures["late_snapshot_chunks_rolled_back"] = len(want ^ got)  # chunks lost or cut back
