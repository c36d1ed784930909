"""Isolation over random input: no read path returns a row of another (app, user).

Hypothesis draws apps and users whose ids differ only by case, whitespace or Unicode normalisation (NFC vs NFD,
compatibility forms), hold `/ : % _ '` or look like a LIKE pattern of another id, plus arbitrary ids; texts on
shared topics (so another user's row is always a near neighbour); search settings (every strategy, iterative scan
mode, ef_search, top_k, cut-off) and the granularity. Each example ingests its users into one scratch database
shared by the whole module (rows of earlier examples stay, so later examples search among more look-alikes) and
asks every read path, for every drawn (app, user) and for look-alikes holding nothing: `EventMemory.search` and
`explain`, `FactMemory.current`, `search`, `preload_block` and `why`, and the ADK services' `search_memory`.

Every stored row is traceable to its owner: each event text carries a marker token unique over the run (also the
value of the fact it yields), and session ids are unique over the run. App-wide facts (reserved user `_domain`)
are served to every user of their own app, never to another app's."""

from __future__ import annotations

import asyncio
import itertools
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memlab
from tests.conftest import examples

try:
    from memlab.adk import EventMemoryService, FactMemoryService
except ImportError:  # the `adk` extra is not installed: the ADK part of the check is skipped
    EventMemoryService = FactMemoryService = None  # type: ignore[assignment,misc]

PREDICATE = "programming_language"  # many-valued, normal sensitivity, values kept as they are
DOMAIN_PREDICATE = "deploy_tool"
MARK = re.compile(r"qzm\d{6}x")
TOPICS = [
    "We deploy the payments service with Argo CD every Friday afternoon.",
    "My daughter starts piano lessons on Thursday after school.",
    "The nightly billing export writes CSV files to the S3 bucket at 2am.",
    "I am allergic to peanuts so please never suggest satay.",
    "Our on-call rotation changes every Monday at nine in the morning.",
]
USER_BASES = ["alice", "Dan", "café", "Zoë", "straße", "ﬁnn", "a_b", "a%b", "a/b", "a:b", "%", "_", "%(user)s",
              "o'neil", "x\\y", "Ⅸ", "_domain", "İstanbul"]  # fmt: skip
APP_BASES = ["app", "Ünïcode-app", "a%p", "app_1", "app/1", "app:1"]


def look_alikes(base: str) -> list[str]:
    """Ids equal to `base` under case folding, trimming, Unicode normalisation or a LIKE match, and near misses."""
    forms = {base, base.upper(), base.lower(), base.swapcase(), base.casefold(), base.title()}
    forms |= {unicodedata.normalize(f, base) for f in ("NFC", "NFD", "NFKC", "NFKD")}
    forms |= {f" {base}", f"{base} ", f"{base}\t", f"{base}\n", base.replace("a", "a ")}
    forms |= {f"{base}%", f"%{base}", f"{base}_", f"{base[:-1]}_", f"_{base[1:]}", f"{base}/", f"/{base}", f"{base}:"}
    forms |= {base.replace("%", "xx").replace("_", "x").replace("/", "").replace(":", "").replace("'", "''")}
    return sorted(f for f in forms if f and "\x00" not in f)


ID_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
RANDOM_ID = st.text(ID_CHARS, min_size=1, max_size=12)
NOISE = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=24).map(lambda s: s.replace("qzm", ""))
TEXT = st.builds(lambda topic, noise: f"{topic} {noise}".strip(), st.sampled_from(TOPICS), NOISE)
SETTINGS = st.builds(
    memlab.SearchSettings,
    top_k=st.integers(1, 12),
    max_distance=st.one_of(st.none(), st.floats(0.3, 2.0)),
    strategy=st.sampled_from(["auto", "exact", "hnsw", "planner"]),
    ef_search=st.integers(1, 80),
    iterative_scan=st.sampled_from(["off", "relaxed_order", "strict_order"]),
    exact_below=st.sampled_from([0, 3, 2_000]),  # 0 and 3: `auto` takes the index for these small users too
)


@dataclass
class World:
    pairs: list[tuple[str, str]]  # (app, user) that get sessions
    probes: list[tuple[str, str]]  # look-alikes of the same apps that hold nothing of their own
    texts: dict[tuple[str, str], list[str]]
    domain_apps: list[str]
    settings: memlab.SearchSettings
    granularity: str
    query: str


@st.composite
def worlds(draw) -> World:
    """Mostly look-alikes of one user id in look-alikes of one app id (so a sloppy comparison would merge them),
    sometimes an arbitrary id beside them; every drawn user has sessions in every drawn app (at most 6 pairs)."""
    user_pool = [u for u in look_alikes(draw(st.sampled_from(USER_BASES))) if u != memlab.DOMAIN_USER]
    app_pool = look_alikes(draw(st.sampled_from(APP_BASES)))
    users = draw(st.lists(st.sampled_from(user_pool), min_size=2, max_size=4, unique=True))
    users += [u for u in draw(st.lists(RANDOM_ID, max_size=1)) if u not in users and u != memlab.DOMAIN_USER]
    apps = draw(st.lists(st.sampled_from(app_pool), min_size=1, max_size=2, unique=True))
    apps += [a for a in draw(st.lists(RANDOM_ID, max_size=1)) if a not in apps]
    every = draw(st.permutations([(a, u) for a in apps for u in users]))
    pairs, probes = every[:6], every[6:9]
    texts = {pair: draw(st.lists(TEXT, min_size=1, max_size=2)) for pair in pairs}
    every_text = [t for ts in texts.values() for t in ts]
    return World(
        pairs=pairs,
        probes=probes,
        texts=texts,
        domain_apps=draw(st.lists(st.sampled_from(apps), unique=True)),
        settings=draw(SETTINGS),
        granularity=draw(st.sampled_from(["event", "chunk"])),
        query=draw(st.one_of(TEXT, st.sampled_from(every_text))),  # often exactly another user's text
    )


class MarkerExtractor:
    """Every marker in an event's text becomes a fact `user programming_language = <marker>` (stated by the user,
    inferred from the model), so every fact row names its owner."""

    name = "markers"

    def extract(self, events, *, session_id, registry, current_keys=()):
        return [
            memlab.Candidate("user", PREDICATE, m, m, basis="stated" if e.author == "user" else "inferred",
                             event_id=e.id, event_time=e.timestamp, session_id=session_id)
            for e in events
            for m in MARK.findall(e.text or "")
        ]


@dataclass
class Env:
    store: memlab.Store
    embedder: memlab.Embedder
    marker_owner: dict[str, tuple[str, str]] = field(default_factory=dict)
    session_owner: dict[str, tuple[str, str]] = field(default_factory=dict)
    counter: itertools.count = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        self.memories = {
            "event": memlab.EventMemory(self.store, self.embedder),
            "chunk": memlab.EventMemory(self.store, self.embedder, "chunk", chunk_size=2, chunk_overlap=1),
        }
        self.facts = memlab.FactMemory(self.store, self.embedder, extractor=MarkerExtractor())
        self.services = {}
        if EventMemoryService is not None:
            self.services = {name: EventMemoryService(mem) for name, mem in self.memories.items()}
            self.fact_service = FactMemoryService(self.facts)

    def marker(self, owner: tuple[str, str]) -> str:
        m = f"qzm{next(self.counter):06d}x"
        self.marker_owner[m] = owner
        return m

    def ingest(self, world: World) -> None:
        start = datetime.now(UTC) - timedelta(hours=2)  # recent: facts keep serving confidence
        for (app, user), texts in world.texts.items():
            sid = f"iso-s{next(self.counter)}"
            self.session_owner[sid] = (app, user)
            events = [
                memlab.Event(f"e{i}", "user" if i % 2 == 0 else "model", start + timedelta(minutes=i),
                             f"{self.marker((app, user))} {text}")
                for i, text in enumerate(texts)
            ]
            session = memlab.Session(app, user, sid, events)
            for mem in self.memories.values():
                mem.add_session(session)
            self.facts.add_session(session)
        for app in world.domain_apps:
            self.facts.add_domain_fact(app, "team:core", DOMAIN_PREDICATE, self.marker((app, memlab.DOMAIN_USER)))

    # -- the checks ---------------------------------------------------------------------------------------
    def owned(self, text: str, allowed: set[tuple[str, str]], what: str) -> None:
        for m in MARK.findall(text):
            assert self.marker_owner[m] in allowed, f"{what} returned {m} of {self.marker_owner[m]!a}"

    def check(self, app: str, user: str, world: World) -> None:
        """Every read path for (app, user) returns only that user's rows (and the app's own app-wide facts)."""
        me, domain = (app, user), (app, memlab.DOMAIN_USER)
        ask = f"{what_is(me)} ({world.granularity}, {world.settings})"
        mem = self.memories[world.granularity]
        hits = mem.search(app, user, world.query, world.settings)
        for h in hits:
            assert self.session_owner[h.session_id] == me, f"search for {ask} returned {h}"
            self.owned(h.text, {me}, f"search for {ask}")
        count = mem.count(app, user)
        assert len(hits) <= count

        plan = mem.explain(app, user, world.query, world.settings).plan
        rows = float(re.search(r"actual time=\S+ rows=([\d.]+)", plan).group(1))
        assert rows <= min(world.settings.top_k, count), f"explain for {ask} read rows of others:\n{plan}"
        for column, want in (("app_name", app), ("user_id", user)):
            found = {v.replace("''", "'") for v in re.findall(column + r" = '((?:[^']|'')*)'::text", plan, re.S)}
            assert found == {want}, f"explain for {ask} filtered on {column} {found}:\n{plan}"

        for f in self.facts.current(app, user):
            assert self.marker_owner[f.value] == me, f"current() of {ask} returned {f}"
        for h in self.facts.search(app, user, world.query):
            assert h.user_id in (user, memlab.DOMAIN_USER), f"facts.search for {ask} returned {h}"
            assert self.marker_owner[h.fact.value] == (app, h.user_id), f"facts.search for {ask} returned {h}"
        self.owned(self.facts.preload_block(app, user, world.query), {me, domain}, f"preload_block for {ask}")
        for p in self.facts.why(app, user, "user", PREDICATE):
            assert self.marker_owner[p.value] == me and self.session_owner[p.session_id] == me, (ask, p)
        assert not self.facts.why(app, user, "team:core", DOMAIN_PREDICATE), "a user's why() shows only the user's"

        if not self.services:
            return
        entries = asyncio.run(self.services[world.granularity].search_memory(app_name=app, user_id=user,
                                                                             query=world.query)).memories  # fmt: skip
        for e in entries:
            assert self.session_owner[e.custom_metadata["session_id"]] == me, f"ADK events for {ask}: {e}"
            self.owned(e.content.parts[0].text, {me}, f"ADK event search for {ask}")
        entries = asyncio.run(self.fact_service.search_memory(app_name=app, user_id=user, query=world.query)).memories
        for e in entries:
            owner = memlab.parse_fact_id(e.id)[0]
            assert owner in (user, memlab.DOMAIN_USER), f"ADK facts for {ask}: {e}"
            self.owned(e.content.parts[0].text, {(app, owner)}, f"ADK fact search for {ask}")


def what_is(pair: tuple[str, str]) -> str:
    return f"app {pair[0]!a} user {pair[1]!a}"  # ascii: NFD and NFC forms look different


@pytest.fixture(scope="module")
def env(store, embedder):
    """One scratch database for the whole module: examples add to it, so look-alikes accumulate."""
    with memlab.scratch_store(store, prefix="isolation") as db:
        yield Env(db, embedder)


@settings(max_examples=examples(10), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(world=worlds())
def test_no_read_path_returns_a_row_of_another_app_or_user(env, world):
    env.ingest(world)
    for app, user in world.pairs + world.probes:
        env.check(app, user, world)


MATRIX_USERS = sorted({u for base in ("café", "Dan", "a%b", "a_b", "_domain") for u in look_alikes(base)}
                      - {memlab.DOMAIN_USER})  # fmt: skip
MATRIX_APPS = ["app", "App", "app "]


def test_every_look_alike_of_every_user_sees_only_its_own_rows(env):
    """The systematic half: every look-alike of a few ids, in look-alike apps, each with its own rows; each one
    asked with exact and HNSW searches (event and chunk layers) and every other read path."""
    pairs = [(app, user) for app in MATRIX_APPS for user in MATRIX_USERS]
    texts = {pair: [TOPICS[i % len(TOPICS)], TOPICS[(i + 1) % len(TOPICS)]] for i, pair in enumerate(pairs)}
    base = World(pairs, [], texts, MATRIX_APPS, memlab.SearchSettings(), "event", TOPICS[0])
    env.ingest(base)
    looks = [
        (memlab.SearchSettings(top_k=5, strategy="exact"), "event"),
        (memlab.SearchSettings(top_k=5, strategy="hnsw", exact_below=0, iterative_scan="relaxed_order"), "chunk"),
        (memlab.SearchSettings(top_k=3, strategy="planner", iterative_scan="strict_order"), "event"),
    ]
    for i, (app, user) in enumerate(pairs):
        look, granularity = looks[i % len(looks)]
        env.check(app, user, World(pairs, [], texts, MATRIX_APPS, look, granularity, TOPICS[i % len(TOPICS)]))


def test_the_look_alikes_are_distinct_ids_that_a_sloppy_comparison_would_merge():
    ids = look_alikes("café")
    assert unicodedata.normalize("NFD", "café") in ids and "café" in ids and "CAFÉ" in ids and " café" in ids
    assert "caf_" in ids and "café%" in ids and len(set(ids)) == len(ids)
    assert "%" in USER_BASES and "_" in USER_BASES and "a/b" in USER_BASES and "a:b" in USER_BASES
