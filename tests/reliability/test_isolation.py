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

import unicodedata
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memlab
from memlab.lab.reliability.probes.isolation import (
    APP_BASES,
    TOPICS,
    USER_BASES,
    IsolationCheck,
    isolation_figures,
    look_alike_matrix,
    look_alikes,
)
from tests.conftest import examples

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
    user_pool = [u for u in look_alikes(draw(st.sampled_from(USER_BASES))) if u != memlab.facts.DOMAIN_USER]
    app_pool = look_alikes(draw(st.sampled_from(APP_BASES)))
    users = draw(st.lists(st.sampled_from(user_pool), min_size=2, max_size=4, unique=True))
    users += [u for u in draw(st.lists(RANDOM_ID, max_size=1)) if u not in users and u != memlab.facts.DOMAIN_USER]
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


@pytest.fixture(scope="module")
def iso(store, embedder):
    """One scratch database for the whole module: examples add to it, so look-alikes accumulate. The checker is
    the isolation family's of `memlab check reliability`: every read path, every row traced to its owner."""
    with memlab.scratch_store(store, prefix="isolation") as db:
        yield IsolationCheck(db, embedder, isolation_figures())


@settings(max_examples=examples(10), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(world=worlds())
def test_no_read_path_returns_a_row_of_another_app_or_user(iso, world):
    iso.family = isolation_figures()  # this example's figures
    iso.ingest(world.texts, world.domain_apps)
    for app, user in world.pairs + world.probes:
        iso.check(app, user, world.settings, world.granularity, world.query)
    assert iso.family.failures() == [], iso.family.found
    assert iso.family.figures["reads"] >= 6 * len(world.pairs + world.probes), "every read path was asked"


MATRIX_BASES = ("café", "a%b", "a_b", "_domain")  # accents, LIKE wildcards, the reserved user's prefix
MATRIX_APPS = ("app", "App")  # the users hold the whitespace look-alikes; `make reliability` asks more apps


def test_every_look_alike_of_every_user_sees_only_its_own_rows(iso):
    """The systematic half: every look-alike of a few ids, in look-alike apps, each with its own rows; each one
    asked with exact and HNSW searches (event and chunk layers) and every other read path."""
    iso.family = isolation_figures()
    users = look_alike_matrix(iso, MATRIX_BASES, MATRIX_APPS)
    assert iso.family.failures() == [], iso.family.found
    assert iso.family.figures["cases"] == len(users) * len(MATRIX_APPS) and len(users) > 40
    assert iso.family.figures["rows_checked"] > iso.family.figures["cases"]


def test_the_look_alikes_are_distinct_ids_that_a_sloppy_comparison_would_merge():
    ids = look_alikes("café")
    assert unicodedata.normalize("NFD", "café") in ids and "café" in ids and "CAFÉ" in ids and " café" in ids
    assert "caf_" in ids and "café%" in ids and len(set(ids)) == len(ids)
    assert "%" in USER_BASES and "_" in USER_BASES and "a/b" in USER_BASES and "a:b" in USER_BASES
