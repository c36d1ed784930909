"""Input checks on both memories and the ADK services: a table of hostile inputs (times
Python cannot read back, years 2999 and 9999, NUL characters, lone surrogates, over-long ids, texts, values and
queries, nonsense search settings) sent through every write and read entry point of EventMemory, FactMemory and,
when Google ADK is installed, EventMemoryService and FactMemoryService.

Each input must end as a memlab error or a counted skip (`other_endings` must be 0), store nothing for its user
(`stored_after_refusal`), and leave that user and a neighbour of the same app readable: after every input their
searches, current facts and preload block still work and the neighbour still gets its own facts and the app's
(`poisoned_users`). `cases`, `memlab_errors`, `counted_skips` and `reads_checked` say how much was tried."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import memlab
from memlab.lab.reliability.probes.family import Family

APP = "inputs-probe"
NEIGHBOUR = "neighbour"
TEXT = "Our payments service runs in eu-west-1 and we deploy it with Argo CD."
NOW = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
FAR_WEST = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5)))  # year 10000 in UTC
TIMES = {"year 10000 in UTC (9999 at UTC-5)": FAR_WEST, "year 9999": datetime(9999, 1, 1, tzinfo=UTC),
         "year 2999": datetime(2999, 1, 1, tzinfo=UTC), "1969": datetime(1969, 7, 20, tzinfo=UTC),
         "naive": datetime(2026, 1, 1)}  # fmt: skip
IDS = {"NUL": "u\x00x", "lone surrogate": "u\ud800x", "600 bytes": "u" * 600, "int": 5, "empty": ""}
HUGE = "lorem ipsum dolor sit amet " * 200_000  # 5.4 MB


class _Script:
    """An extractor returning fixed candidates (what a misbehaving LLM extractor could return)."""

    name = "probe-script"

    def __init__(self) -> None:
        self.candidates: list[memlab.facts.Candidate] = []

    def extract(self, events, *, session_id, registry, current_keys=()):
        return list(self.candidates)


def _session(user: Any, sid: Any = "s1", *, at: Any = NOW, text: Any = TEXT, app: Any = APP) -> memlab.Session:
    return memlab.Session(app, user, sid, [memlab.Event("e1", "user", at, text)])


def inputs_family(store: memlab.Store, embedder: memlab.Embedder, workdir: Path) -> Family:
    """Send every hostile input of the table through both memories (and the ADK services) and check each
    ended as a memlab error or a counted skip, stored nothing and poisoned no reader."""
    family = Family("input_checks", {"cases": 0, "memlab_errors": 0, "counted_skips": 0, "other_endings": 0,
                                     "stored_after_refusal": 0, "poisoned_users": 0, "reads_checked": 0,
                                     "adk_cases": 0, "adk_skipped": 0},
                    must_be_zero=["other_endings", "stored_after_refusal", "poisoned_users"])  # fmt: skip
    mem = memlab.EventMemory(store, embedder)
    chunks = memlab.EventMemory(store, embedder, "chunk", chunk_size=4, chunk_overlap=1)
    script = _Script()
    facts = memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor())
    scripted = memlab.FactMemory(store, embedder, extractor=script)
    mem.add_session(_session(NEIGHBOUR))
    facts.add_session(_session(NEIGHBOUR, text="I'm vegetarian."))
    facts.add_domain_fact(APP, "team:payments", "deploy_tool", "Argo CD", at=NOW)

    cases = _memory_cases(mem, chunks, facts, scripted, script) + _adk_cases(mem, facts, family)
    rows = []
    for name, user, call in cases:
        ended, detail = _run(call)
        family.add("cases")
        if ended in ("memlab error", "counted skip"):
            family.add("memlab_errors" if ended == "memlab error" else "counted_skips")
        else:
            family.problem("other_endings", f"{name}: {ended} ({detail})")
        if isinstance(user, str) and user.startswith("case-"):
            stored = mem.count(APP, user) + chunks.count(APP, user) + len(facts.rows(APP, user))
            if stored:
                family.problem("stored_after_refusal", f"{name}: {stored} row(s) of {user!r} stored")
        _check_readers(family, mem, facts, name, user)
        rows.append({"input": name, "ended": ended, "detail": detail})
    domain = [f.value for f in facts.current(APP, memlab.facts.DOMAIN_USER)]
    if domain != ["Argo CD"]:
        family.problem("stored_after_refusal", f"the app's domain facts changed: {domain}")
    family.figures["table"] = rows
    return family


def _run(call: Callable[[], Any]) -> tuple[str, str]:
    try:
        value = call()
    except memlab.MemlabError as exc:
        return "memlab error", f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    except Exception as exc:  # any other ending is what the family counts
        return "other error", f"{type(exc).__name__}: {str(exc)[:160]}"
    if isinstance(value, memlab.IngestReport) and (value.failed or value.skipped) and not value.added:
        return "counted skip", f"failed {len(value.failed)}, skipped {dict(value.skipped)}"
    if isinstance(value, memlab.facts.FactIngestReport) and value.dropped and not value.inserted:
        return "counted skip", f"dropped {dict(value.dropped)}"
    return "returned", repr(value)[:160]


def _check_readers(family: Family, mem: memlab.EventMemory, facts: memlab.FactMemory, name: str, user: Any) -> None:
    """The input's user (when its id is a valid one) and the neighbour are still readable; the neighbour still
    gets its own fact and the app's."""
    readers = [NEIGHBOUR] + ([user] if isinstance(user, str) and user.startswith("case-") else [])
    for reader in readers:
        try:
            mem.search(APP, reader, "payments region")
            facts.current(APP, reader)
            block = facts.preload_block(APP, reader, "what do I eat, how do we deploy?", now=NOW)
        except Exception as exc:  # a failing read is the hole
            family.problem("poisoned_users", f"after {name}: reading {reader!r} raised {type(exc).__name__}: {exc}")
            continue
        family.add("reads_checked")
        if reader == NEIGHBOUR and not ("vegetarian" in block and "Argo CD" in block):
            family.problem("poisoned_users", f"after {name}: the neighbour's block lost its facts: {block!r}")


Case = tuple[str, Any, Callable[[], Any]]  # (what is sent, the user it concerns, the call)


def _memory_cases(mem: memlab.EventMemory, chunks: memlab.EventMemory, facts: memlab.FactMemory,
                  scripted: memlab.FactMemory, script: _Script) -> list[Case]:  # fmt: skip
    """(name, user it concerns, call) for EventMemory and FactMemory."""
    cases: list[Case] = []
    for label, at in TIMES.items():
        user = f"case-time-{len(cases)}"
        cases += [
            (f"event at {label}", user, lambda u=user, at=at: mem.add_session(_session(u, at=at))),
            (f"fact stated at {label}", user, lambda u=user, at=at: facts.add_session(_session(u, at=at,
                                                                                            text="I'm vegan."))),
            (f"domain session at {label}", user,
             lambda u=user, at=at: facts.add_domain_session(_session(u, at=at, text="The payments team uses Helm."))),
            (f"domain fact at {label}", user,
             lambda at=at: facts.add_domain_fact(APP, "team:payments", "deploy_tool", "Helm", at=at)),
            (f"a batch holding an event at {label}", user,
             lambda u=user, at=at: mem.add_sessions([_session(u, at=at)])),
        ]  # fmt: skip
    for label, bad in IDS.items():
        cases += [
            (f"{label} user id: event ingest", bad, lambda b=bad: mem.add_session(_session(b))),
            (f"{label} user id: fact ingest", bad, lambda b=bad: facts.add_session(_session(b, text="I'm vegan."))),
            (f"{label} app id: fact ingest", bad, lambda b=bad: facts.add_session(_session("u", app=b))),
            (f"{label} session id: fact ingest", bad, lambda b=bad: facts.add_session(_session("case-sid", b))),
            (f"{label} user id: event search", bad, lambda b=bad: mem.search(APP, b, "payments")),
            (f"{label} user id: event count", bad, lambda b=bad: mem.count(APP, b)),
            (f"{label} user id: forget_session", bad, lambda b=bad: mem.forget_session(APP, b, "s1")),
            (f"{label} memory id: delete_memory", bad, lambda b=bad: mem.delete_memory(APP, NEIGHBOUR, b)),
            (f"{label} user id: current facts", bad, lambda b=bad: facts.current(APP, b)),
            (f"{label} user id: fact search", bad, lambda b=bad: facts.search(APP, b, "diet")),
            (f"{label} user id: preload block", bad, lambda b=bad: facts.preload_block(APP, b, "diet")),
            (f"{label} user id: why", bad, lambda b=bad: facts.why(APP, b, "user", "diet")),
            (f"{label} user id: forget_events", bad, lambda b=bad: facts.forget_events(APP, b, ["e1"])),
            (f"{label} event id: forget_events", bad, lambda b=bad: facts.forget_events(APP, NEIGHBOUR, [b])),
            (f"{label} app id: domain fact", bad,
             lambda b=bad: facts.add_domain_fact(b, "team:payments", "deploy_tool", "Helm", at=NOW)),
        ]  # fmt: skip
    many_words = " ".join(f"w{i:07d}" for i in range(140_000))  # 1.3 MB of distinct words: over the tsvector limit
    cases += [
        ("a 5 MB event text", "case-huge", lambda: mem.add_session(_session("case-huge", text=HUGE))),
        ("1.3 MB of distinct words in an event", "case-words",
         lambda: mem.add_session(_session("case-words", text=many_words))),
        ("a chunk of four 300 kB turns", "case-chunk", lambda: chunks.add_session(memlab.Session(
            APP, "case-chunk", "s1", [memlab.Event(f"e{i}", "user", NOW + timedelta(seconds=i),
                                                   f"turn {i} " + "deploy notes " * 23_000) for i in range(4)]))),
        ("a 5 MB fact session", "case-fact-huge", lambda: facts.add_session(_session("case-fact-huge", text=HUGE))),
        ("a 5 MB event query", NEIGHBOUR, lambda: mem.search(APP, NEIGHBOUR, HUGE)),
        ("a 5 MB hybrid query", NEIGHBOUR, lambda: mem.search(APP, NEIGHBOUR, HUGE, memlab.SearchSettings(
            mode="hybrid"))),
        ("a 5 MB fact query", NEIGHBOUR, lambda: facts.search(APP, NEIGHBOUR, HUGE)),
        ("a None query", NEIGHBOUR, lambda: facts.search(APP, NEIGHBOUR, None)),
        ("a 2 kB domain fact value", NEIGHBOUR,
         lambda: facts.add_domain_fact(APP, "team:payments", "deploy_tool", "Argo " * 400, at=NOW)),
        ("a NUL in a domain fact quote", NEIGHBOUR,
         lambda: facts.add_domain_fact(APP, "team:payments", "deploy_tool", "Helm", quote="x\x00", at=NOW)),
        ("an extractor's 2 kB value", "case-value", lambda: _scripted(scripted, script, "case-value", "Argo " * 400)),
        ("an extractor's NUL value", "case-nul-value",
         lambda: _scripted(scripted, script, "case-nul-value", "Ar\x00go")),
        ("an extractor's lone-surrogate value", "case-sur-value",
         lambda: _scripted(scripted, script, "case-sur-value", "Ar\ud800go")),
        ("fact search limit=0", NEIGHBOUR, lambda: facts.search(APP, NEIGHBOUR, "diet", limit=0)),
        ("fact search limit=2**63", NEIGHBOUR, lambda: facts.search(APP, NEIGHBOUR, "diet", limit=2**63)),
        ("fact search threshold=nan", NEIGHBOUR, lambda: facts.search(APP, NEIGHBOUR, "diet", threshold=math.nan)),
        ("fact search with a naive now", NEIGHBOUR, lambda: facts.search(APP, NEIGHBOUR, "diet",
                                                                       now=datetime(2026, 1, 1))),
    ]  # fmt: skip
    settings = {"top_k=1001 with exact_below=0": {"top_k": 1001, "exact_below": 0}, "top_k=2**63": {"top_k": 2**63},
                "ef_search='1e9'": {"ef_search": "1e9"}, "ef_search=1e9": {"ef_search": 1e9},
                "candidates=5000 hybrid": {"candidates": 5000, "mode": "hybrid"}, "rrf_k=-1": {"rrf_k": -1},
                "max_scan_tuples=2**40": {"max_scan_tuples": 2**40}, "max_distance=nan": {"max_distance": math.nan},
                "top_k=True": {"top_k": True}}  # fmt: skip
    for label, kwargs in settings.items():
        cases.append((f"SearchSettings {label}", NEIGHBOUR,
                      lambda kw=kwargs: mem.search(APP, NEIGHBOUR, "payments", memlab.SearchSettings(**kw))))
    cases.append(("search settings given as a dict", NEIGHBOUR, lambda: mem.search(APP, NEIGHBOUR, "payments",
                                                                                 {"top_k": 3})))  # type: ignore[arg-type]
    return cases


def _scripted(facts: memlab.FactMemory, script: _Script, user: str, value: str) -> memlab.facts.FactIngestReport:
    session = _session(user, text="We deploy with Argo CD.")
    event = session.events[0]
    script.candidates = [memlab.facts.Candidate("user", "deploy_tool", value, event.text, event_id=event.id,
                                                event_time=event.timestamp, session_id=session.id)]  # fmt: skip
    return facts.add_session(session)


def _adk_cases(mem: memlab.EventMemory, facts: memlab.FactMemory, family: Family) -> list[Case]:
    """The same kinds of input through the ADK services; none (and `adk_skipped` = 1) without Google ADK."""
    try:  # optional dependency: google-adk (the `adk` extra), imported only when this family runs
        from google.adk.events import Event as AdkEvent
        from google.adk.memory.memory_entry import MemoryEntry
        from google.genai import types

        from memlab.adk import EventMemoryService, FactMemoryService
    except ImportError:
        family.add("adk_skipped")
        family.notes.append("google-adk is not installed: the ADK services were not probed")
        return []
    services = {"event service": EventMemoryService(mem), "fact service": FactMemoryService(facts)}

    def entry(text: str, when: str | None) -> MemoryEntry:
        return MemoryEntry(content=types.Content(parts=[types.Part(text=text)]), timestamp=when)

    def adk_event(stamp: float) -> AdkEvent:
        return AdkEvent(author="user", timestamp=stamp, content=types.Content(parts=[types.Part(text="I'm vegan.")]))

    cases: list[Case] = []
    for label, service in services.items():
        user = f"case-adk-{len(cases)}"
        for when in (FAR_WEST.isoformat(), "2999-01-01T00:00:00+00:00", "not a time"):
            cases.append((f"{label}: add_memory at {when}", user, lambda s=service, u=user, w=when: asyncio.run(
                s.add_memory(app_name=APP, user_id=u, memories=[entry("I'm vegan.", w)]))))
        for stamp in (253_402_318_800.0, 1e20, math.nan):  # year 10000 in UTC, beyond any calendar, not a number
            cases.append((f"{label}: add_events_to_memory at {stamp}", user, lambda s=service, u=user, t=stamp:
                          asyncio.run(s.add_events_to_memory(app_name=APP, user_id=u, events=[adk_event(t)]))))
        cases += [
            (f"{label}: a 1.8 MB memory", user, lambda s=service, u=user: asyncio.run(
                s.add_memory(app_name=APP, user_id=u, memories=[entry("vegan " * 300_000, None)]))),
            (f"{label}: NUL user id in search_memory", "u\x00", lambda s=service: asyncio.run(
                s.search_memory(app_name=APP, user_id="u\x00", query="diet"))),
            (f"{label}: a 5 MB query", NEIGHBOUR, lambda s=service: asyncio.run(
                s.search_memory(app_name=APP, user_id=NEIGHBOUR, query=HUGE))),
            (f"{label}: delete_memory of a malformed id", NEIGHBOUR, lambda s=service: asyncio.run(
                s.delete_memory(app_name=APP, user_id=NEIGHBOUR, memory_id="x\x00y"))),
        ]  # fmt: skip
    family.add("adk_cases", len(cases))
    return cases
