"""Search while writing: the multi-tenant table `search_bench` left loaded, searched by client threads while a
writer adds sessions at a fixed rate (the streaming case of VectorDBBench).

What one run measures, on the table of `search.layout(...)` (layer `bench:search:<corpus>`, app APP):

- Search under writes. `clients` threads search the tenants under test (the fixed user and the buckets) with
  every query under each client strategy (`auto` and HNSW with a relaxed iterative scan by default), as a
  caller pays it (`EventMemory.search_vector`), recall@10 against FAISS exact over the tenant's own rows (their
  rows never change: the writer writes other users). Phases: quiet (half before the writes, half after, so a
  machine that drifts moves both sides), then writing. p95 and recall during the writes are reported against
  quiet. The writer embeds with the model in the same process (an uncached embedder: new conversations are
  never in the cache), so the clients share the cores with the model, as in a service that ingests itself.
- Visibility lag. After each `add_session` returns, the writer polls a search that must find the new memory (a
  new event's own vector as the query, expecting that event at rank 1, ties counted) and records the time from
  the return to the search that found it, and the polls it took, per strategy: `exact` (a new small user, an
  exact scan of its scope), `hnsw` (a new small user, the layer's shared index with a relaxed iterative scan)
  and `partial` (one user with its own partial HNSW index, `store.create_tenant_index`, seeded with corpus rows
  before the run; every partial session is written into it). Every poll loop is bounded in count and time.
- Half-written sessions. Each session has `events` > 1 events, all kept. A checker thread reads the session in
  flight (published by the writer before `add_session`) all through the run: the user's unit count
  (`EventMemory.count`) less what the user held before must be 0 or `units`, and for a user holding only that
  session an exact search deep enough to return all of it must return 0 or `units` of its hits
  (`half_written`). An observation taken while the writer moved to the next session is dropped (it could mix
  two sessions). Why it must hold: `add_session` writes a session in one transaction (`Ingest._write`: one
  `store.transaction()` locks the session key and COPYs every unit through a staging table with one INSERT;
  the per-user count rows are written by statement triggers inside it), and `add_sessions` never splits a
  session across batches (`batch_sessions`), each batch being one such transaction.

Everything written is forgotten at the end (`forget_user` of every stream user, which drops the partial index).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

import memlab.lab.bench.search as search
from memlab.embedding.base import Embedder
from memlab.events.memory import EventMemory
from memlab.events.units import Unit
from memlab.lab.base.tables import markdown_table
from memlab.lab.bench.corpora import real_texts
from memlab.lab.bench.markdown import fig
from memlab.lab.systems.ingest_timing import model_threads
from memlab.storage import units as sqlu
from memlab.storage.store import Store
from memlab.types import Event, Hit, SearchSettings, Session

APP = search.APP
VISIBLE: dict[str, str] = {"exact": "exact", "hnsw": "hnsw-relaxed", "partial": "partial"}  # -> settings_for name
CLIENT_STRATEGIES: tuple[str, ...] = ("auto", "hnsw-relaxed")
PARTIAL_USER = "stream-partial"
TIE = 1e-5  # a hit as near as the new event counts as rank 1 (duplicate texts, float noise)
TEXT_CHARS = (20, 300)  # written turns: real, neither trivial nor long (the model's cost per text stays small)


@dataclass(frozen=True)
class StreamingSize:
    """How big one streaming run is."""

    name: str
    clients: int  # search threads
    quiet_seconds: float  # searched without writes: half before the writes, half after
    sessions: int  # sessions written, taking turns over the VISIBLE strategies
    rate: float  # sessions per second the writer aims at
    events: int  # events per session (> 1: a half-written session must be possible)
    partial_seed_rows: int  # corpus rows the partial-index user holds before the writes
    max_polls: int = 500  # visibility poll bound, in searches ...
    max_poll_seconds: float = 5.0  # ... and in seconds
    max_write_seconds: float | None = None  # no session starts later (None: twice the planned time); one per strategy
    # The writer's model threads. One: with clients, the checker and PostgreSQL busy, torch's threads wait on each
    # other for a core (on a loaded 2-core machine two threads embed a few short texts far slower than one).
    model_threads: int | None = 1

    @property
    def write_bound(self) -> float:
        return self.max_write_seconds if self.max_write_seconds is not None else 2 * self.sessions / self.rate


STREAMING_SIZES = {
    # ci, at 10,000 rows: 3 s quiet, 9 sessions at 2/s (4.5 s; at most 9 s), set-up and clean-up.
    "ci": StreamingSize("ci", clients=2, quiet_seconds=3.0, sessions=9, rate=2.0, events=4, partial_seed_rows=200),
    # full, on the 1M-row table: 30 s quiet, 120 sessions at 2/s (60 s), a 10,000-row partial-index user.
    "full": StreamingSize("full", clients=2, quiet_seconds=30.0, sessions=120, rate=2.0, events=4,
                          partial_seed_rows=10_000),
}  # fmt: skip


@dataclass
class StreamingRun:
    """What `streaming_bench` measured (`summarize_streaming` turns it into the table and bench.json keys).

    searches: one row per client search (phase, part, client, tenant, bucket, strategy, query, latency_ms,
    recall, plan). writes: one row per session written (strategy, user, session, units, added, due_s, start_s,
    add_ms, visible_ms, polls, found). checks: one row per half-written check (phase, session, kind, seen, units,
    partial). meta: size, rows, rates, seconds, the access path of each visibility strategy."""

    searches: pd.DataFrame
    writes: pd.DataFrame
    checks: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)


def half_written(seen: Sequence[int], units: int) -> int:
    """How many observations of one session saw part of it: anything but 0 (not there yet) or `units` (whole).
    `seen` are unit counts (beyond what the user held before) or a search's hits from the session."""
    return sum(1 for s in seen if s not in (0, units))


@dataclass(frozen=True)
class _Write:
    strategy: str
    session: Session
    units: tuple[Unit, ...]
    vectors: np.ndarray  # the units' vectors, embedded as add_session will embed them

    @property
    def user(self) -> str:
        return self.session.user_id


@dataclass
class _InFlight:
    """The session the writer is about to write or just wrote (what the checker reads)."""

    seq: int
    write: _Write
    base: int  # the user's units before the write


class _State:
    def __init__(self) -> None:
        self.phase = ("quiet", "before")
        self.stop = threading.Event()
        self.current: _InFlight | None = None


def _plan_writes(memory: EventMemory, model: Embedder, size: StreamingSize, seed: int) -> list[_Write]:
    """The sessions to write: real turns (from the end of `real_texts`, the part a ci corpus does not hold),
    `size.events` per session, every event kept by the filters; strategies take turns. Their texts are embedded
    here, in one batch, for the poll's query (the stored vector, up to float noise far below TIE)."""
    if size.events < 2:
        raise ValueError(f"a session needs more than one event to be half-written, got events={size.events}")
    low, high = TEXT_CHARS
    texts = iter([t for t in reversed(real_texts(seed=seed)) if low <= len(t) <= high])
    strategies = list(VISIBLE)
    planned: list[tuple[str, Session, list[Unit]]] = []
    for i in range(size.sessions):
        strategy = strategies[i % len(strategies)]
        user = PARTIAL_USER if strategy == "partial" else f"stream-{strategy}-{i:04d}"
        while True:
            chunk = [next(texts, None) for _ in range(size.events)]
            if None in chunk:
                raise ValueError("real_texts ran out of turns for the streaming sessions")
            at = search._T0 + timedelta(minutes=i)
            events = [Event(f"e{j}", "user" if j % 2 == 0 else "assistant", at + timedelta(seconds=j), text)
                      for j, text in enumerate(chunk)]  # fmt: skip
            session = Session(APP, user, f"stream-s{i:04d}", events)
            kept, _ = memory.kept_events(session)
            units = memory.units_of(session, kept)
            if len(units) == size.events:
                break
        planned.append((strategy, session, units))
    ordered = sorted({u.embed_text for _, _, units in planned for u in units}, key=lambda t: (-len(t), t))
    by_text = dict(zip(ordered, np.asarray(model.embed_documents(ordered), dtype=np.float32), strict=True))
    return [_Write(strategy, session, tuple(units), np.vstack([by_text[u.embed_text] for u in units]))
            for strategy, session, units in planned]  # fmt: skip


def _seed_partial_user(memory: EventMemory, vectors: np.ndarray, rows: int, seed: int) -> None:
    """Give PARTIAL_USER `rows` corpus rows (COPY into the live table: the shared index stays, unlike
    bulk_load) and its own partial HNSW index."""
    picked = np.random.default_rng(seed + 29).choice(len(vectors), size=min(rows, len(vectors)), replace=False)
    scope = memory.scope(APP, PARTIAL_USER)
    batch = 5_000
    for start in range(0, len(picked), batch):
        part = [sqlu.unit_row(scope, Unit(f"{PARTIAL_USER}-seed", f"seed-{j}", (f"seed-{j}",), "user",
                                          search._T0 + timedelta(seconds=j), f"seed row {j}"), vectors[row])
                for j, row in enumerate(picked[start : start + batch], start=start)]  # fmt: skip
        with memory.store.transaction() as conn:
            sqlu.copy_rows(conn, part)
    memory.store.create_tenant_index(memory.model.model_id, memory.layer, APP, PARTIAL_USER)


def _found(hits: Sequence[Hit], session_id: str, unit_id: str) -> bool:
    """Whether the unit is the first hit, or as near as it (ties)."""
    if not hits:
        return False
    first = hits[0].distance
    return any(h.session_id == session_id and h.unit_id == unit_id and h.distance <= first + TIE for h in hits)


def _visible(memory: EventMemory, write: _Write, size: StreamingSize, returned: float) -> tuple[float, int]:
    """(ms from `returned` to the search that found the session's last unit, polls); NaN if the bound ran out."""
    settings = search.settings_for(VISIBLE[write.strategy])
    unit, vector = write.units[-1], write.vectors[-1]
    for poll in range(1, size.max_polls + 1):
        hits = memory.search_vector(APP, write.user, vector, settings)
        now = time.perf_counter()
        if _found(hits, write.session.id, unit.unit_id):
            return (now - returned) * 1000, poll
        if now - returned > size.max_poll_seconds:
            return float("nan"), poll
    return float("nan"), size.max_polls


def _client(memory: EventMemory, state: _State, tasks: list, start: int, truth: dict, k: int, client: int) -> list:
    """Search the tasks round robin from `start` until stopped; a search that straddles a phase change is
    dropped (it belongs to neither)."""
    rows = []
    i = start
    while not state.stop.is_set():
        tenant, qi, strategy, vector = tasks[i % len(tasks)]
        i += 1
        phase = state.phase
        hits, ms, plan = search._search(memory, tenant.user_id, vector, strategy, k)
        if state.phase != phase:
            continue
        rows.append({"phase": phase[0], "part": phase[1], "client": client, "tenant": tenant.user_id,
                     "bucket": tenant.bucket, "tenant_rows": tenant.size, "strategy": strategy, "query": qi,
                     "latency_ms": ms, "recall": search.recall_with_ties(hits, truth[(tenant.user_id, qi)]),
                     "plan": plan})  # fmt: skip
    return rows


def _checker(memory: EventMemory, state: _State) -> list:
    """Read the session in flight until stopped: its user's count beyond the base, and (for a user holding only
    that session) an exact search's hits from it. Observations taken while the writer moved on are dropped."""
    rows = []
    while not state.stop.is_set():
        current = state.current
        if current is None:
            time.sleep(0.002)
            continue
        write, phase = current.write, state.phase
        n = len(write.units)
        seen = {"count": memory.count(APP, write.user) - current.base}
        if write.user != PARTIAL_USER:  # the user holds this session only: a search deep enough returns all of it
            deep = SearchSettings(top_k=n + 2, strategy="exact")
            hits = memory.search_vector(APP, write.user, write.vectors[0], deep)
            seen["search"] = sum(h.session_id == write.session.id for h in hits)
        if state.current is not current:
            continue
        for kind, value in seen.items():
            rows.append({"phase": phase[0], "session": write.session.id, "strategy": write.strategy, "kind": kind,
                         "seen": value, "units": n, "partial": half_written([value], n) > 0})  # fmt: skip
    return rows


def _writer(memory: EventMemory, state: _State, writes: list[_Write], size: StreamingSize) -> list[dict]:
    """Write the sessions at `size.rate` (a late session goes at once), each published to the checker first,
    and poll each one's visibility after add_session returns. No session starts after `size.write_bound`
    seconds, except the first of each strategy (a loaded machine shortens the run instead of stretching it)."""
    rows = []
    began = time.perf_counter()
    done: set[str] = set()
    for i, write in enumerate(writes):
        due = began + i / size.rate
        time.sleep(max(0.0, due - time.perf_counter()))
        if time.perf_counter() - began > size.write_bound and write.strategy in done:
            continue
        done.add(write.strategy)
        base = memory.count(APP, write.user) if write.user == PARTIAL_USER else 0
        state.current = _InFlight(i + 1, write, base)
        started = time.perf_counter()
        report = memory.add_session(write.session)
        returned = time.perf_counter()
        visible_ms, polls = _visible(memory, write, size, returned)
        rows.append({"strategy": write.strategy, "user": write.user, "session": write.session.id,
                     "units": len(write.units), "added": report.added, "due_s": due - began,
                     "start_s": started - began, "add_ms": (returned - started) * 1000, "visible_ms": visible_ms,
                     "polls": polls, "found": visible_ms == visible_ms,
                     **{f"{stage}_ms": seconds * 1000 for stage, seconds in report.timings.items()}})  # fmt: skip
    return rows


def _plans(memory: EventMemory, writes: list[_Write]) -> dict[str, str]:
    """The access path of each visibility strategy's search (EXPLAIN, outside any timing), on its last session."""
    last = {w.strategy: w for w in writes}
    return {s: memory.explain_vector(APP, w.user, w.vectors[-1], search.settings_for(VISIBLE[s])).access_path
            for s, w in last.items()}  # fmt: skip


def streaming_bench(
    store: Store, embedder: Embedder, vectors: np.ndarray, queries: np.ndarray, *, total_rows: int,
    background_tenants: int, corpus_name: str = "real", size: str | StreamingSize = "ci",
    strategies: Sequence[str] = CLIENT_STRATEGIES, k: int = search.K, buckets: Sequence[float] = search.BUCKETS,
    seed: int = 0,
) -> StreamingRun:  # fmt: skip
    """Search while writing (see the module docstring) on the table `search.search_bench` left loaded with the
    same `vectors`, `total_rows`, `corpus_name`, `background_tenants`, `buckets` and `seed` (raises ValueError
    when the tenants' counts say it is not there). Leaves the table as it found it."""
    spec = STREAMING_SIZES[size] if isinstance(size, str) else size
    if spec.clients < 1 or spec.rate <= 0 or spec.sessions < len(VISIBLE):
        raise ValueError(f"streaming size {spec} needs a client, a positive rate and a session per strategy")
    started = time.perf_counter()
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
    tenants = search.layout(total_rows, len(vectors), buckets=buckets, background_tenants=background_tenants,
                            seed=seed)  # fmt: skip
    tested = [t for t in tenants if t.bucket != "background"]
    model = getattr(embedder, "inner", embedder)  # uncached: a new session's texts are not in any cache
    memory = EventMemory(store, model, layer=search.LAYER_PREFIX + corpus_name)
    wrong = [t.user_id for t in tested if memory.count(APP, t.user_id) != t.size]
    if wrong:
        raise ValueError(f"the {corpus_name} table of {total_rows:,} rows is not loaded as search.layout says "
                         f"({wrong[:3]} differ): run search_bench with the same arguments first")  # fmt: skip
    truth = search.exact_truth(tested, vectors, queries, k)
    tasks = [(t, qi, s, q) for qi, q in enumerate(queries) for t in tested for s in strategies]
    seconds = {"truth_s": time.perf_counter() - started}
    with model_threads(spec.model_threads) as threads:
        writes = _plan_writes(memory, model, spec, seed)
        seconds["plan_s"] = time.perf_counter() - started - sum(seconds.values())
        try:
            _seed_partial_user(memory, vectors, spec.partial_seed_rows, seed)
            for t, _, s, q in tasks[: len(tested) * len(strategies)]:
                search._search(memory, t.user_id, q, s, k)  # warm-up, not recorded
            seconds["seed_s"] = time.perf_counter() - started - sum(seconds.values())
            search_rows, write_rows, check_rows, write_seconds = _phases(memory, writes, spec, tasks, truth, k)
            plans = _plans(memory, writes)
            seconds["phases_s"] = time.perf_counter() - started - sum(seconds.values())
        finally:
            for user in sorted({w.user for w in writes} | {PARTIAL_USER}):
                memory.forget_user(APP, user)
    seconds["cleanup_s"] = time.perf_counter() - started - sum(seconds.values())
    meta = {"size": spec.name, "rows_total": total_rows, "corpus": corpus_name, "clients": spec.clients,
            "strategies": list(strategies), "sessions": len(writes), "events": spec.events, "rate": spec.rate,
            "partial_seed_rows": spec.partial_seed_rows, "write_seconds": write_seconds, "model_threads": threads,
            "max_polls": spec.max_polls, "max_poll_seconds": spec.max_poll_seconds, "plans": plans,
            "seconds": time.perf_counter() - started, **seconds}  # fmt: skip
    return StreamingRun(pd.DataFrame(search_rows), pd.DataFrame(write_rows), pd.DataFrame(check_rows), meta)


def _phases(
    memory: EventMemory, writes: list[_Write], spec: StreamingSize, tasks: list, truth: dict, k: int
) -> tuple[list, list, list, float]:
    """Clients and the checker run all through: quiet (half), the writer, quiet (half). Returns the search,
    write and check rows and the seconds the writer took."""
    state = _State()
    # Before the writes the checker reads the first session, not written yet (it must see 0 of it).
    state.current = _InFlight(0, writes[0], memory.count(APP, writes[0].user))
    with ThreadPoolExecutor(spec.clients + 1, "memlab-stream") as pool:
        step = max(1, len(tasks) // spec.clients)
        clients = [pool.submit(_client, memory, state, tasks, c * step, truth, k, c) for c in range(spec.clients)]
        checker = pool.submit(_checker, memory, state)
        try:
            time.sleep(spec.quiet_seconds / 2)
            state.phase = ("writing", "")
            began = time.perf_counter()
            write_rows = _writer(memory, state, writes, spec)
            write_seconds = time.perf_counter() - began
            state.phase = ("quiet", "after")
            time.sleep(spec.quiet_seconds / 2)
        finally:
            state.stop.set()
        search_rows = [row for c in clients for row in c.result()]
        return search_rows, write_rows, checker.result(), write_seconds


def _pct(values: pd.Series, q: float) -> float:
    values = values.dropna()
    return float(np.percentile(values, q)) if len(values) else float("nan")


def _most(values: pd.Series) -> str | None:
    values = values.dropna()
    return str(values.mode().iloc[0]) if len(values) else None


def summarize_streaming(run: StreamingRun) -> tuple[pd.DataFrame, dict[str, float]]:
    """The search table (one row per phase and client strategy, `all` first: searches, p50/p95/p99 ms, recall@10,
    and the writing rows' ratios to quiet) and flat bench.json keys `streaming.*`."""
    s, w, c, meta = run.searches, run.writes, run.checks, run.meta
    rows = []
    for phase in ("quiet", "writing"):
        grp = s[s.phase == phase] if not s.empty else s
        for strategy in ["all", *meta.get("strategies", [])]:
            part = grp if strategy == "all" or grp.empty else grp[grp.strategy == strategy]
            rows.append({"phase": phase, "strategy": strategy, "searches": len(part),
                         "p50_ms": _pct(part.get("latency_ms", pd.Series()), 50),
                         "p95_ms": _pct(part.get("latency_ms", pd.Series()), 95),
                         "p99_ms": _pct(part.get("latency_ms", pd.Series()), 99),
                         "recall": float(part["recall"].mean()) if len(part) else float("nan"),
                         "plan": _most(part.get("plan", pd.Series(dtype=object)))})  # fmt: skip
    table = pd.DataFrame(rows)
    table.attrs["plans"] = dict(meta.get("plans", {}))  # the visibility searches' access paths, for bench.md
    quiet = table[table.phase == "quiet"].set_index("strategy")
    table["p95_vs_quiet"] = [r.p95_ms / quiet.p95_ms[r.strategy] if r.phase == "writing" else float("nan")
                             for r in table.itertuples()]  # fmt: skip
    table["recall_vs_quiet"] = [r.recall / quiet.recall[r.strategy] if r.phase == "writing" else float("nan")
                                for r in table.itertuples()]  # fmt: skip
    out: dict[str, float] = {}
    for r in table.itertuples():
        stem = f"streaming.{r.phase}" + ("" if r.strategy == "all" else f".{r.strategy}")
        out.update({f"{stem}.p50_ms": r.p50_ms, f"{stem}.p95_ms": r.p95_ms, f"{stem}.p99_ms": r.p99_ms,
                    f"{stem}.recall": r.recall, f"{stem}.searches": r.searches})  # fmt: skip
        if r.phase == "writing":
            lead = "streaming" if r.strategy == "all" else f"streaming.{r.strategy}"
            out[f"{lead}.p95_vs_quiet"], out[f"{lead}.recall_vs_quiet"] = r.p95_vs_quiet, r.recall_vs_quiet
    starts = w["start_s"].to_numpy() if not w.empty else np.zeros(0)
    out.update({"streaming.rows_total": meta.get("rows_total", np.nan),
                "streaming.clients": meta.get("clients", np.nan), "streaming.sessions": len(w),
                "streaming.events_per_session": meta.get("events", np.nan),
                "streaming.write_rate_target": meta.get("rate", np.nan),
                "streaming.write_rate": (len(starts) - 1) / (starts[-1] - starts[0]) if len(starts) > 1 else np.nan,
                "streaming.write_late_ms.max": float((w.start_s - w.due_s).max() * 1000) if len(w) else np.nan,
                "streaming.write_seconds": meta.get("write_seconds", np.nan),
                "streaming.written_units": float(w.added.sum()) if len(w) else 0.0,
                "streaming.add_session_ms.p50": _pct(w.get("add_ms", pd.Series()), 50),
                "streaming.add_session_ms.p95": _pct(w.get("add_ms", pd.Series()), 95),
                "streaming.add_session.embed_share": float(w.embed_ms.sum() / w.add_ms.sum())
                if "embed_ms" in w and w.add_ms.sum() > 0 else np.nan,
                "streaming.sessions_planned": meta.get("sessions", np.nan),
                "streaming.seconds": meta.get("seconds", np.nan)})  # fmt: skip
    for strategy in VISIBLE:
        mine = w[w.strategy == strategy] if len(w) else pd.DataFrame()
        ms, key, seen = f"streaming.visible_ms.{strategy}", f"streaming.visible.{strategy}", bool(len(mine))
        out.update({f"{ms}.p50": _pct(mine.visible_ms, 50) if seen else np.nan,
                    f"{ms}.p95": _pct(mine.visible_ms, 95) if seen else np.nan,
                    f"{ms}.max": float(mine.visible_ms.max()) if seen else np.nan,
                    f"{key}.sessions": len(mine), f"{key}.found": float(mine.found.mean()) if seen else np.nan,
                    f"{key}.first_poll": float((mine.polls == 1).mean()) if seen else np.nan,
                    f"{key}.polls_max": float(mine.polls.max()) if seen else np.nan})  # fmt: skip
    live = c[c.phase == "writing"] if len(c) else c
    out.update({"streaming.half_written": float(c.partial.sum()) if len(c) else 0.0,
                "streaming.checks": len(c), "streaming.checks.writing": len(live),
                "streaming.checks.count": int((c.kind == "count").sum()) if len(c) else 0,
                "streaming.checks.search": int((c.kind == "search").sum()) if len(c) else 0,
                "streaming.checks.absent": int((c.seen == 0).sum()) if len(c) else 0,
                "streaming.checks.whole": int((c.seen == c.units).sum()) if len(c) else 0})  # fmt: skip
    return table, {k: float(v) for k, v in out.items() if v == v}


def streaming_section(table: pd.DataFrame, results: dict[str, float]) -> list[str]:
    """bench.md's streaming part: search under writes against quiet, visibility lag per strategy, and the
    half-written check."""
    r = results.get
    nan = float("nan")
    vis = pd.DataFrame([{"strategy": s, "sessions": r(f"streaming.visible.{s}.sessions", nan),
                         "found": r(f"streaming.visible.{s}.found", nan),
                         "found on first poll": r(f"streaming.visible.{s}.first_poll", nan),
                         "p50 ms": r(f"streaming.visible_ms.{s}.p50", nan),
                         "p95 ms": r(f"streaming.visible_ms.{s}.p95", nan),
                         "max ms": r(f"streaming.visible_ms.{s}.max", nan),
                         "most polls": r(f"streaming.visible.{s}.polls_max", nan),
                         "plan": table.attrs.get("plans", {}).get(s)} for s in VISIBLE])  # fmt: skip
    return [
        "## Search while writing", "",
        f"{fig(r('streaming.clients', nan))} client threads search the tenants under test of the "
        f"{fig(r('streaming.rows_total', nan))}-row table (every query, each client strategy in turn) while one writer "
        f"adds {fig(r('streaming.sessions', nan))} sessions of {fig(r('streaming.events_per_session', nan))} real "
        f"turns through `EventMemory.add_session` at {fig(r('streaming.write_rate_target', nan))} sessions/s "
        f"(reached {fig(r('streaming.write_rate', nan))}/s; add_session p50 "
        f"{fig(r('streaming.add_session_ms.p50', nan))} ms, p95 {fig(r('streaming.add_session_ms.p95', nan))} ms, "
        f"{fig(100 * r('streaming.add_session.embed_share', nan))}% of it the model embedding, in the same process). "
        "`quiet`: the same clients without writes, half before and half after them. Latency in ms per search; "
        "recall@10 against FAISS exact over the tenant's own rows.", "",
        markdown_table(table), "",
        "Visibility: from `add_session` returning to a search finding the new event at rank 1 (its own vector as "
        "the query), polled without pause. `exact`: a new small user, exact scan; `hnsw`: a new small user, the "
        "layer's HNSW index with a relaxed iterative scan; `partial`: a user with its own partial HNSW index. "
        "Found on the first poll means visible at commit; the ms are then one search's latency.", "",
        markdown_table(vis), "",
        f"Half-written sessions seen: **{fig(r('streaming.half_written', nan))}** in "
        f"{fig(r('streaming.checks', nan))} checks ({fig(r('streaming.checks.writing', nan))} during the writes; "
        f"{fig(r('streaming.checks.count', nan))} unit counts, "
        f"{fig(r('streaming.checks.search', nan))} exact searches; "
        f"{fig(r('streaming.checks.absent', nan))} saw the session absent, {fig(r('streaming.checks.whole', nan))} "
        "whole). `add_session` writes a session in one transaction, so a reader sees none of it or all of it.", "",
    ]  # fmt: skip
