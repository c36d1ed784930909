"""Erasure against an add in flight, and the documented order of a "currently" question.

Each race holds an add inside its slow phase (the embedder's `embed_documents` for event memory, the extractor
for fact memory) behind a gate, runs the erasure (`delete_memory`, `forget_session`, `forget_user`; fact
memory's `forget_user`, `forget_session`, `forget_events`) while it waits, then opens the gate: the interleaving
is the same every run, no sleep decides it. What the erasure named must not be stored afterwards
(`resurrected_units`, `resurrected_facts`), and the add's report must say why it left it out
(`unexplained_skips`). The order check asks "currently" questions over two conflicting memories whose older one
is nearer by relevance: with `time="boost"` the newer must come first (`boost_order_violations`)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import memlab
from memlab.lab.reliability.probes.family import Family
from memlab.storage import unit_housekeeping as housekeeping

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
ROUNDS = 1  # each race this many times (the gate makes every run the same interleaving)
TEXTS = [
    "I adopted a grey cat called Pixel last spring.",
    "My sister Ines lives in Lisbon and teaches chemistry.",
    "I am allergic to peanuts, so I avoid satay sauce.",
    "We deploy the billing service with Argo CD every Tuesday.",
]
FACT_TEXTS = ["I live in Berlin now.", "Noted, Berlin it is.", "I am vegetarian these days.", "Great, noted."]
CONFLICTS = [  # (older, newer, question): the older one is nearer the question by relevance
    ("I live in Berlin.", "I live in Munich now.", "Where do I live currently?"),
    ("I drive a Toyota Corolla.", "I drive a Honda Civic now.", "What car do I currently drive?"),
    ("I work as a nurse.", "I work as a teacher now.", "What is my latest job?"),
]
WAIT = 120.0  # seconds a gate or a worker is waited for before the probe gives up on it (a hang, reported)


class _Gate:
    entered: threading.Event
    gate: threading.Event


class GatedEmbedder(_Gate):
    """The real embedder, whose `embed_documents` waits at a gate (an add there is between plan and write)."""

    def __init__(self, inner: memlab.Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.entered, self.gate = threading.Event(), threading.Event()

    def embed_documents(self, texts: list[str]) -> Any:
        self.entered.set()
        self.gate.wait(WAIT)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


class GatedExtractor(_Gate):
    """The rule extractor, whose `extract` waits at a gate (fact memory's slow phase)."""

    name = "gated-rules"

    def __init__(self) -> None:
        self.inner = memlab.RuleExtractor()
        self.entered, self.gate = threading.Event(), threading.Event()

    def extract(self, events: Any, **kwargs: Any) -> Any:
        self.entered.set()
        self.gate.wait(WAIT)
        return self.inner.extract(events, **kwargs)


def race(gated: _Gate, add: Callable[[], Any], erase: Callable[[], Any]) -> tuple[Any, Any]:
    """Run `add` in a thread, `erase` once the add waits at the gate, then open it: (what erase returned, the
    add's report). The add's own exception is raised here; a gate never reached or an add that hangs is a
    RuntimeError."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["report"] = add()
        except BaseException as exc:  # raised again in the caller's thread below
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    if not gated.entered.wait(WAIT):
        gated.gate.set()
        raise RuntimeError("the add never reached its slow phase")
    try:
        erased = erase()
    finally:
        gated.gate.set()
        worker.join(WAIT)
    if "error" in out:
        raise out["error"]
    if "report" not in out:
        raise RuntimeError("the add hung")
    return erased, out["report"]


def session(app: str, user: str, sid: str, texts: list[str], start: datetime = T0) -> memlab.Session:
    events = [memlab.Event(f"{sid}-e{i}", "user" if i % 2 == 0 else "model", start + timedelta(minutes=i), text)
              for i, text in enumerate(texts)]  # fmt: skip
    return memlab.Session(app, user, sid, events)


def _units(store: memlab.Store, app: str, user: str) -> list[list[str]]:
    with store.connection() as conn:
        return [event_ids for _, _, event_ids in housekeeping.user_rows(conn, app, user)]


def _event_races(family: Family, store: memlab.Store, embedder: memlab.Embedder, app: str) -> None:
    shapes = {"event": {}, "chunk": {"chunk_size": 2, "chunk_overlap": 0}}
    for granularity, shape in shapes.items():
        for how in ("delete_memory", "forget_session", "forget_user"):
            for n in range(ROUNDS):
                user = f"{granularity}-{how}-{n}"
                gated = GatedEmbedder(embedder)
                mem = memlab.EventMemory(store, gated, granularity, **shape)
                erase = {
                    "delete_memory": lambda m=mem, u=user: m.delete_memory(app, u, "s1-e0"),
                    "forget_session": lambda m=mem, u=user: m.forget_session(app, u, "s1"),
                    "forget_user": lambda m=mem, u=user: m.forget_user(app, u),
                }[how]
                _, report = race(gated, lambda m=mem, u=user: m.add_session(session(app, u, "s1", TEXTS)), erase)
                family.add("event_races")
                left = _units(store, app, user)
                named = [ids for ids in left if how != "delete_memory" or "s1-e0" in ids]
                if named:
                    family.problem("resurrected_units", f"{granularity} {how}: {len(named)} unit(s) stored after it")
                reason = "deleted" if how == "delete_memory" else "erased_during_ingest"
                if not report.skipped.get(reason):
                    family.problem("unexplained_skips", f"{granularity} {how}: report.skipped has no {reason!r}")


def _fact_races(family: Family, store: memlab.Store, embedder: memlab.Embedder, app: str) -> None:
    for how in ("forget_user", "forget_session", "forget_events"):
        for n in range(ROUNDS):
            user = f"facts-{how}-{n}"
            gated = GatedExtractor()
            facts = memlab.FactMemory(store, embedder, extractor=gated)
            erase = {
                "forget_user": lambda f=facts, u=user: f.forget_user(app, u),
                "forget_session": lambda f=facts, u=user: f.forget_session(app, u, "s1"),
                "forget_events": lambda f=facts, u=user: f.forget_events(app, u, ["s1-e0", "s1-e2"], session_id="s1"),
            }[how]
            _, report = race(gated, lambda f=facts, u=user: f.add_session(session(app, u, "s1", FACT_TEXTS)), erase)
            family.add("fact_races")
            rows = facts.rows(app, user)
            if rows:
                family.problem("resurrected_facts", f"{how}: {len(rows)} fact row(s) written after it")
            if not report.dropped.get("erased_during_ingest"):
                family.problem("unexplained_skips", f"facts {how}: report.dropped has no 'erased_during_ingest'")


def _boost_order(family: Family, store: memlab.Store, embedder: memlab.Embedder, app: str) -> None:
    mem = memlab.EventMemory(store, embedder)
    for n, (older, newer, question) in enumerate(CONFLICTS):
        user = f"boost-{n}"
        mem.add_session(session(app, user, "before", ["My sister Ines teaches chemistry in Lisbon."],
                                start=T0 - timedelta(days=30)))  # fmt: skip
        mem.add_session(session(app, user, "old", [older]))
        mem.add_session(session(app, user, "new", [newer], start=T0 + timedelta(days=60)))
        for mode in ("vector", "hybrid"):
            for top_k in (2, 4):
                settings = memlab.SearchSettings(mode=mode, time="boost", top_k=top_k)
                hits = mem.search(app, user, question, settings, asked_at=T0 + timedelta(days=90))
                family.add("boost_cases")
                order = [h.text for h in hits if h.text in (older, newer)]
                if order != [newer, older]:
                    family.problem("boost_order_violations", f"{question!r} ({mode}, top {top_k}): {order}")


def races_family(store: memlab.Store, embedder: memlab.Embedder, workdir: Path) -> Family:
    """Erasure-vs-add races on event (event and chunk layers) and fact memory, and the "currently" order."""
    family = Family(
        "races",
        must_be_zero=["resurrected_units", "resurrected_facts", "unexplained_skips", "boost_order_violations"],
    )
    for name in (*family.must_be_zero, "event_races", "fact_races", "boost_cases"):
        family.figures[name] = 0
    started = time.perf_counter()
    app = f"races-{uuid.uuid4().hex[:10]}"
    _event_races(family, store, embedder, app)
    _fact_races(family, store, embedder, app)
    _boost_order(family, store, embedder, app)
    family.notes.append(
        f"{ROUNDS} rounds of each race, the add held at a gate in its slow phase while the erasure ran; "
        "forget_user's contract: an add planned before it writes nothing of the user (skipped/dropped as "
        "'erased_during_ingest')"
    )
    family.seconds = time.perf_counter() - started
    return family
