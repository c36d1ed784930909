"""Isolation: every read path returns only rows of the (app, user) asked, for look-alike ids."""

from __future__ import annotations

import asyncio
import itertools
import random
import re
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Any

import memlab
from memlab.lab.reliability.probes.family import Family
from memlab.lab.reliability.probes.sizes import Size

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
            memlab.facts.Candidate("user", PREDICATE, m, m, basis="stated" if e.author == "user" else "inferred",
                                   event_id=e.id, event_time=e.timestamp, session_id=session_id)
            for e in events
            for m in MARK.findall(e.text or "")
        ]


class IsolationCheck:
    """A scratch database where every row is traceable to its owner (markers and session ids unique per run)."""

    def __init__(self, store: memlab.Store, embedder: memlab.Embedder, family: Family) -> None:
        self.family = family
        self.marker_owner: dict[str, tuple[str, str]] = {}
        self.session_owner: dict[str, tuple[str, str]] = {}
        self.counter = itertools.count()
        self.store = store
        log = memlab.QueryLog(enabled=True)  # every search is recorded: the query log is a read path too
        self.memories = {
            "event": memlab.EventMemory(store, embedder, query_log=log),
            "chunk": memlab.EventMemory(store, embedder, "chunk", chunk_size=2, chunk_overlap=1, query_log=log),
        }
        self.facts = memlab.FactMemory(store, embedder, extractor=MarkerExtractor(), query_log=log)
        self.services: dict[str, Any] = {}
        try:  # optional dependency: memlab.adk needs google-adk (the `adk` extra), imported only when checked
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
        sessions = []
        for (app, user), lines in texts.items():
            sid = f"iso-s{next(self.counter)}"
            self.session_owner[sid] = (app, user)
            events = [memlab.Event(f"e{i}", "user" if i % 2 == 0 else "model", start + timedelta(minutes=i),
                                   f"{self.marker((app, user))} {text}") for i, text in enumerate(lines)]  # fmt: skip
            sessions.append(memlab.Session(app, user, sid, events))
        for mem in self.memories.values():  # one batch per layer: the model embeds full batches, not one per pair
            report = mem.add_sessions(sessions)
            if report.failed:  # a session left out would leave nothing to leak: refuse to check without it
                raise memlab.InputError(f"isolation ingest refused {len(report.failed)} session(s): "
                                        f"{report.failed[0].reason}")  # fmt: skip
        for session in sessions:
            self.facts.add_session(session)
        for app in domain_apps:
            self.facts.add_domain_fact(app, "team:core", DOMAIN_PREDICATE, self.marker((app, memlab.facts.DOMAIN_USER)))

    def _rows(self, what: str, owners: list[tuple[str, str] | None], allowed: set, ask: str) -> None:
        self.family.add("reads")
        for owner in owners:
            self.family.add("rows_checked")
            if owner not in allowed:
                self.family.problem("leaks", f"{what} for {ask} returned a row of {owner!a}")

    def _markers(self, text: str) -> list[tuple[str, str] | None]:
        return [self.marker_owner.get(m) for m in MARK.findall(text)]

    def check(self, app: str, user: str, look: memlab.SearchSettings, granularity: str, query: str) -> None:
        me, domain = (app, user), (app, memlab.facts.DOMAIN_USER)
        ask = f"app {app!a} user {user!a} ({granularity}, {look})"
        mem = self.memories[granularity]
        hits = mem.search(app, user, query, look)
        self._rows("EventMemory.search", [self.session_owner.get(h.session_id) for h in hits], {me}, ask)
        self._rows("EventMemory.search text", [o for h in hits for o in self._markers(h.text)], {me}, ask)
        count = mem.count(app, user)
        if len(hits) > count:
            self.family.problem("leaks", f"EventMemory.search for {ask}: {len(hits)} hits, the user has {count}")
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
        if self.services:
            self._check_services(app, user, granularity, query, ask)
        logged = memlab.events.logged_queries(self.store, app, user)
        self._rows("logged_queries", [(r.app_name, r.user_id) for r in logged], {me}, ask)
        self._rows("logged_queries sessions", [self.session_owner.get(s) for r in logged if r.kind == "events"
                                               for s in r.sessions], {me}, ask)  # fmt: skip

    def _check_services(self, app: str, user: str, granularity: str, query: str, ask: str) -> None:
        me, domain = (app, user), (app, memlab.facts.DOMAIN_USER)
        entries = asyncio.run(self.services[granularity].search_memory(app_name=app, user_id=user, query=query))
        self._rows("EventMemoryService.search_memory",
                   [self.session_owner.get(e.custom_metadata["session_id"]) for e in entries.memories]
                   + [o for e in entries.memories for o in self._markers(e.content.parts[0].text)], {me}, ask)
        entries = asyncio.run(self.services["facts"].search_memory(app_name=app, user_id=user, query=query))
        self._rows("FactMemoryService.search_memory",
                   [(app, memlab.facts.parse_fact_id(e.id)[0]) for e in entries.memories]
                   + [o for e in entries.memories for o in self._markers(e.content.parts[0].text)],
                   {me, domain}, ask)  # fmt: skip


def _random_id(rng: random.Random) -> str:
    return "".join(rng.choice(ID_CHARS) for _ in range(rng.randint(1, 10)))


def random_settings(rng: random.Random) -> memlab.SearchSettings:
    return memlab.SearchSettings(
        top_k=rng.randint(1, 12),
        max_distance=rng.choice([None, round(rng.uniform(0.3, 2.0), 3)]),
        strategy=rng.choice(["auto", "exact", "hnsw", "planner"]),
        ef_search=rng.randint(1, 80),
        iterative_scan=rng.choice(["off", "relaxed_order", "strict_order"]),
        exact_below=rng.choice([0, 3, 2_000]),
    )


def isolation_figures() -> Family:
    """The isolation family before any check ran."""
    return Family("isolation", {"cases": 0, "reads": 0, "rows_checked": 0, "leaks": 0}, must_be_zero=["leaks"])


MATRIX_LOOKS = [
    (memlab.SearchSettings(top_k=5, strategy="exact"), "event"),
    (memlab.SearchSettings(top_k=5, strategy="hnsw", exact_below=0, iterative_scan="relaxed_order"), "chunk"),
    (memlab.SearchSettings(top_k=3, strategy="planner", iterative_scan="strict_order"), "event"),
]


def look_alike_matrix(iso: IsolationCheck, bases: tuple[str, ...], apps: tuple[str, ...]) -> list[str]:
    """The systematic half: every look-alike of `bases` in each of `apps`, each with its own rows, each asked with
    exact, HNSW and planner searches (event and chunk layers) and every other read path. Returns the users."""
    users = sorted({u for base in bases for u in look_alikes(base)} - {memlab.facts.DOMAIN_USER})
    pairs = [(app, user) for app in apps for user in users]
    iso.ingest({p: [TOPICS[i % len(TOPICS)], TOPICS[(i + 1) % len(TOPICS)]] for i, p in enumerate(pairs)},
               list(apps))  # fmt: skip
    for i, (app, user) in enumerate(pairs):
        look, granularity = MATRIX_LOOKS[i % len(MATRIX_LOOKS)]
        iso.check(app, user, look, granularity, TOPICS[i % len(TOPICS)])
        iso.family.add("cases")
    return users


def isolation_family(store: memlab.Store, embedder: memlab.Embedder, size: Size, rng: random.Random) -> Family:
    family = isolation_figures()
    iso = IsolationCheck(store, embedder, family)
    users = look_alike_matrix(iso, size.matrix_bases, size.matrix_apps)
    family.figures["look_alike_ids"] = len(users) * len(size.matrix_apps)
    for _ in range(size.isolation_cases):
        user_pool = [u for u in look_alikes(rng.choice(USER_BASES)) if u != memlab.facts.DOMAIN_USER]
        app_pool = look_alikes(rng.choice(APP_BASES))
        users = rng.sample(user_pool, rng.randint(2, 4)) + ([_random_id(rng)] if rng.random() < 0.5 else [])
        apps = rng.sample(app_pool, rng.randint(1, 2)) + ([_random_id(rng)] if rng.random() < 0.3 else [])
        every = [(a, u) for a in dict.fromkeys(apps) for u in dict.fromkeys(users) if u != memlab.facts.DOMAIN_USER]
        rng.shuffle(every)
        texts = {p: [f"{rng.choice(TOPICS)} {_random_id(rng)}" for _ in range(rng.randint(1, 2))] for p in every[:6]}
        iso.ingest(texts, [a for a in apps if rng.random() < 0.5])
        look, granularity = random_settings(rng), rng.choice(["event", "chunk"])
        query = rng.choice([rng.choice(TOPICS), *[t for ts in texts.values() for t in ts]])
        for app, user in every[:9]:
            iso.check(app, user, look, granularity, query)
        family.add("cases")
    return family


