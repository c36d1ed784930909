"""Renderings, lexical and hybrid search, time-aware re-ranking: on the real store and model."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

import memlab
from memlab.events.fusion import apply_time, cap_per_session, fuse, prefer_author
from memlab.events.renderings import render_units, rendered_layer
from memlab.events.units import chunk_units, event_units
from tests.conftest import T0, make_session

TEXTS = [
    "We adopted a beagle puppy called Biscuit from the shelter.",
    "That sounds lovely, beagles are friendly dogs.",
    "My sister Jolene flies in from Reykjavik on Thursday.",
    "Have a good time with her visit.",
    "I switched my phone plan to Mint Mobile to save money.",
    "Good call, prepaid plans are cheaper.",
]


def test_renderings_change_what_is_embedded_not_the_body():
    session = make_session("a", "u", "s1", TEXTS[:3])
    kept = list(session.events)
    plain = event_units(session, kept)
    for rendering, expect in [
        ("text", None),
        ("speaker", "user: We adopted a beagle"),
        ("speaker_date", "[2026-03-02 Mon] user: We adopted"),
    ]:
        units = render_units(rendering, plain, kept)
        assert [u.body for u in units] == [u.body for u in plain]
        first = units[0].rendered
        assert (first is None) if expect is None else first.startswith(expect)
    context = render_units("context", plain, kept)
    assert context[0].rendered == "user: " + TEXTS[0]  # nothing before the first event
    assert context[1].rendered == f"user: {TEXTS[0]}\nmodel: {TEXTS[1]}"
    chunks = render_units("speaker_date", chunk_units(session, kept, 2, 0), kept, chunk=True)
    assert chunks[0].rendered == "[2026-03-02 Mon] " + chunks[0].body
    facts = render_units("text", plain, kept, {"s1-e0": ["user pet: beagle"]})
    assert facts[0].rendered == TEXTS[0] + "\n[facts: user pet: beagle]" and facts[1].rendered is None


def test_rendered_layer_names_keep_renderings_apart():
    assert rendered_layer("event", "text") == "event"
    assert rendered_layer("chunk:4:1", "speaker_date") == "chunk:4:1+speaker_date"
    assert rendered_layer("event", "speaker", "rules") == "event+speaker+facts:rules"
    with pytest.raises(memlab.ConfigError, match="rendering 'shouting' is unknown"):
        rendered_layer("event", "shouting")


def test_renderings_coexist_in_one_table_and_are_searched_apart(store, embedder, app_name):
    session = make_session(app_name, "u", "s1", TEXTS)
    plain = memlab.EventMemory(store, embedder)
    dated = memlab.EventMemory(store, embedder, rendering="speaker_date")
    assert plain.add_session(session).added == dated.add_session(session).added == 6
    assert dated.add_session(session).added == 0, "re-ingest of a rendering is a no-op"
    assert plain.layer == "event" and dated.layer == "event+speaker_date"
    hit = dated.search(app_name, "u", "what dog did we adopt?")[0]
    assert hit.text == TEXTS[0], "the body is returned, not the rendered text"
    assert plain.count(app_name, "u") == dated.count(app_name, "u") == 6
    assert hit.distance != pytest.approx(plain.search(app_name, "u", "what dog did we adopt?")[0].distance)


def test_lexical_search_matches_words_the_vector_misses_and_is_scoped(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    mem.add_session(make_session(app_name, "u", "s1", TEXTS))
    mem.add_session(make_session(app_name, "other", "s9", ["Jolene from Reykjavik is my cousin, not my sister."]))
    lexical = memlab.SearchSettings(mode="lexical")
    hits = mem.search(app_name, "u", "When does Jolene fly in from Reykjavik?", lexical)
    assert hits[0].text == TEXTS[2] and hits[0].lexical > 0, "every content word matched ranks first"
    assert all(h.session_id == "s1" for h in hits), "another user's row never comes back"
    some = mem.search(app_name, "u", "Which phone carrier do I use, Mint or another?", lexical)
    assert some and some[0].text == TEXTS[4] and some[0].lexical > 0, "a partial match still ranks (OR)"
    assert mem.search(app_name, "u", "what is it?", lexical) == [], "a stop-word-only query finds nothing"
    tight = memlab.SearchSettings(mode="lexical", max_distance=0.01)
    near = mem.search(app_name, "u", "When does Jolene arrive?", tight)
    assert near == [] and near.dropped_by_cutoff == 1, "max_distance is the cosine distance in every mode"


def test_lexical_ranking_weighs_rare_words_over_common_ones(store, embedder, app_name):
    """BM25 over the user's own units: a word most units share says little, a rare one a lot."""
    mem = memlab.EventMemory(store, embedder)
    common = [f"The dog park was busy again on day {i} of the holidays." for i in range(6)]
    mem.add_session(make_session(app_name, "u", "s1", [*common, "Our neighbour's terrier is called Pickles."]))
    hits = mem.search(app_name, "u", "Is the dog called Pickles?", memlab.SearchSettings(mode="lexical"))
    assert hits[0].text.endswith("called Pickles.") and hits[0].lexical > hits[1].lexical > 0


def test_hybrid_fuses_both_lists(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    mem.add_session(make_session(app_name, "u", "s1", TEXTS))
    hybrid = mem.search(app_name, "u", "Biscuit", memlab.SearchSettings(mode="hybrid", top_k=3))
    assert hybrid[0].text == TEXTS[0] and hybrid[0].score > hybrid[1].score > 0
    assert hybrid[0].lexical is not None and hybrid[1].lexical is None
    with pytest.raises(memlab.ConfigError, match="mode 'fuzzy' is unknown"):
        memlab.SearchSettings(mode="fuzzy")


def _hit(uid: str, when: datetime, distance: float = 0.5) -> memlab.Hit:
    return memlab.Hit(unit_id=uid, text=uid, distance=distance, timestamp=when, session_id="s")


class _Window:
    def __init__(self, start, end, kind="window"):
        self.start, self.end, self.kind = start, end, kind


def test_fusion_and_time_handling_are_pure_rank_arithmetic():
    a, b, c = (_hit(x, T0 + timedelta(days=i)) for i, x in enumerate("abc"))
    fused = fuse([([a, b, c], 1.0), ([c, b], 1.0)], rrf_k=60)
    assert [h.unit_id for h in fused] == ["c", "b", "a"]  # c: 1/63+1/61 > b: 2/62 > a: 1/61
    may = _Window(T0 + timedelta(days=2), T0 + timedelta(days=3))
    assert [h.unit_id for h in apply_time([a, b, c], may, "filter", 1.0, 60)] == ["c"]
    assert next(h.unit_id for h in apply_time([a, b, c], may, "boost", 1.0, 60)) == "c"
    nowhere = _Window(T0 - timedelta(days=9), T0 - timedelta(days=8))
    assert [h.unit_id for h in apply_time([a, b, c], nowhere, "filter", 1.0, 60)] == ["a", "b", "c"]
    latest = _Window(None, None, "recency")
    assert next(h.unit_id for h in apply_time([a, b, c], latest, "boost", 2.0, 60)) == "c"
    # within the top 2 only: the newer of the two ranks first, the newest candidate beyond does not push in
    assert [h.unit_id for h in apply_time([a, b, c], latest, "boost", 2.0, 60, top_k=2)] == ["b", "a", "c"]
    assert apply_time([a, b, c], None, "boost", 1.0, 60) == [a, b, c]


def test_per_session_cap_spreads_the_top_k_and_never_shortens_it():
    t = T0
    hits = [memlab.Hit(unit_id=f"{s}{i}", text="", distance=0.1 * n, timestamp=t, session_id=s)
            for n, (s, i) in enumerate([("a", 1), ("a", 2), ("a", 3), ("b", 1), ("a", 4), ("c", 1)])]  # fmt: skip
    ids = lambda found: [h.unit_id for h in found]  # noqa: E731
    assert ids(cap_per_session(hits, 2, 4)) == ["a1", "a2", "b1", "c1"]
    assert ids(cap_per_session(hits, 1, 4)) == ["a1", "b1", "c1", "a2"]  # too few sessions: capped hits fill in
    assert ids(cap_per_session(hits, None, 3)) == ["a1", "a2", "a3"]
    assert ids(cap_per_session(hits, 1, 10)) == ["a1", "b1", "c1", "a2", "a3", "a4"]
    for bad in (0, -1, True):
        with pytest.raises(memlab.ConfigError, match="per_session"):
            memlab.SearchSettings(per_session=bad)


def test_per_session_cap_reaches_the_second_conversation(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    first = ["I ran 5 km on Monday morning.", "I ran 8 km along the river on Wednesday.", "I ran 10 km on Friday.",
             "Running in the rain on Sunday was hard, 6 km."]  # fmt: skip
    mem.add_session(make_session(app_name, "u", "march", first))
    mem.add_session(make_session(app_name, "u", "april", ["Today I did a 12 km trail run.", *TEXTS[1:4]],
                                 start=T0 + timedelta(days=30)))  # fmt: skip
    question = "How many km did I run on each day?"
    every = mem.search(app_name, "u", question, memlab.SearchSettings(top_k=8))
    k = next(n for n, h in enumerate(every) if h.session_id != every[0].session_id)
    assert k >= 2, [h.session_id for h in every]  # the nearest conversation fills the first k places
    capped = mem.search(app_name, "u", question, memlab.SearchSettings(top_k=k, per_session=k - 1))
    assert [h.unit_id for h in capped] == [h.unit_id for h in every[: k - 1]] + [every[k].unit_id]


def test_prefer_author_moves_that_authors_hits_by_the_margin_and_keeps_true_distances():
    hits = [memlab.Hit(unit_id=u, text="", distance=d, author=a)
            for u, d, a in [("m1", 0.30, "model"), ("u1", 0.33, "user"), ("m2", 0.36, "model"), ("u2", 0.45, "user")]]
    ids = lambda found: [h.unit_id for h in found]  # noqa: E731
    assert ids(prefer_author(hits, "user", 0.05)) == ["u1", "m1", "m2", "u2"]  # 0.28 < 0.30; 0.40 > 0.36
    assert ids(prefer_author(hits, "user", 0.0)) == ids(hits) == ids(prefer_author(hits, None, 0.5))
    assert ids(prefer_author(hits, "model", 0.2)) == ["m1", "m2", "u1", "u2"]
    assert [h.distance for h in prefer_author(hits, "user", 0.05)] == [0.33, 0.30, 0.36, 0.45]
    for bad in ({"prefer_author": ""}, {"prefer_author": 3}, {"author_margin": -0.1}, {"author_margin": 2.5}):
        with pytest.raises(memlab.ConfigError, match=r"prefer_author|author_margin"):
            memlab.SearchSettings(**bad)


def test_prefer_author_on_the_store_ranks_the_users_turns_first_and_cuts_by_true_distance(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    mem.add_session(make_session(app_name, "u", "s1", TEXTS))  # user and model turns alternate
    question = "Tell me about the dog, the phone plan and my sister."
    plain = mem.search(app_name, "u", question, memlab.SearchSettings(top_k=6, strategy="exact"))
    assert {h.author for h in plain[:3]} != {"user"}, "the check needs a model reply among the nearest three"
    for mode, weight in (("vector", 1.0), ("hybrid", 0.0)):  # hybrid: the fused order is the vector list's
        settings = memlab.SearchSettings(top_k=6, strategy="exact", mode=mode, lexical_weight=weight,
                                         prefer_author="user", author_margin=2.0)  # fmt: skip
        assert [h.author for h in mem.search(app_name, "u", question, settings)[:3]] == ["user"] * 3, mode
    same = mem.search(app_name, "u", question, memlab.SearchSettings(top_k=6, strategy="exact", prefer_author="user",
                                                                     author_margin=0.0))
    assert [h.unit_id for h in same] == [h.unit_id for h in plain]
    true = {h.unit_id: h.distance for h in plain}
    cut = plain[2].distance
    kept = mem.search(app_name, "u", question, memlab.SearchSettings(top_k=6, strategy="exact", prefer_author="user",
                                                                     author_margin=2.0, max_distance=cut))
    assert kept and all(h.distance == pytest.approx(true[h.unit_id]) and h.distance <= cut for h in kept)
    assert kept.dropped_by_cutoff == 6 - len(kept)


def test_time_aware_search_prefers_the_newer_of_two_conflicting_memories(store, embedder, app_name):
    mem = memlab.EventMemory(store, embedder)
    old = make_session(app_name, "u", "old", ["My gym membership is at Planet Fitness."], start=T0)
    new = make_session(app_name, "u", "new", ["My gym membership is at Gold's Gym now."], start=T0 + timedelta(days=40))
    mem.add_session(old)
    mem.add_session(new)
    asked = T0 + timedelta(days=60)
    settings = memlab.SearchSettings(time="boost", time_weight=3.0)
    hits = mem.search(app_name, "u", "Which gym am I currently a member of?", settings, asked_at=asked)
    assert hits[0].session_id == "new" and hits.window is not None
    with pytest.raises(memlab.ConfigError, match="timezone-aware"):
        mem.search(app_name, "u", "which gym?", settings, asked_at=datetime(2026, 1, 1))


def test_an_event_the_question_names_sets_its_time_boundary(store, embedder, app_name):
    event_anchor = memlab.events.event_anchor
    assert event_anchor("What did I buy before I moved to Lisbon?").kind == "before"
    assert event_anchor("How often did I swim after my knee surgery?").event == "my knee surgery"
    assert event_anchor("What did I read before May?") is None, "a month is resolve_time's"
    assert event_anchor("Did it get better after a while?") is None, "no event to find"
    mem = memlab.EventMemory(store, embedder)
    for day, text in ((5, "I bought a red road bike today."), (30, "We finally moved to Lisbon this weekend!"),
                      (50, "I bought an electric scooter for the hills here.")):  # fmt: skip
        mem.add_session(make_session(app_name, "u", f"d{day}", [text], start=T0 + timedelta(days=day)))
    asked = T0 + timedelta(days=80)
    question = "What did I buy before I moved to Lisbon?"
    hits = mem.search(app_name, "u", question, memlab.SearchSettings(time="filter"), asked_at=asked)
    assert hits.window is not None and hits.window.kind == "before"
    assert hits.window.end == T0 + timedelta(days=30), "the boundary is the move's own time"
    assert [h.session_id for h in hits] == ["d5"]
    later = mem.search(app_name, "u", "What did I buy after I moved to Lisbon?", memlab.SearchSettings(time="filter"),
                       asked_at=asked)  # fmt: skip
    assert "d5" not in {h.session_id for h in later} and "d50" in {h.session_id for h in later}


def test_first_person_query_rendering_meets_the_memory_in_its_own_words(store, embedder, app_name):
    from memlab.events.renderings import render_query

    assert render_query("What is the user's son called?", "first_person") == "What is my son called?"
    assert render_query("Which diet does the user follow?", "first_person") == "Which diet do I follow?"
    assert render_query("Who employs the user now?", "first_person") == "Who employs me now?"
    assert render_query("What did I buy in May?", "first_person") == "What did I buy in May?"
    assert render_query("What did the user buy?", "as_is") == "What did the user buy?"
    with pytest.raises(memlab.ConfigError, match="query_rendering 'shout' is unknown"):
        memlab.SearchSettings(query_rendering="shout")
    mem = memlab.EventMemory(store, embedder)
    mem.add_session(make_session(app_name, "u", "s1", ["My son Theo turns seven next week.", *TEXTS[1:4]]))
    asked = "How old is the user's son turning?"
    plain = mem.search(app_name, "u", asked)
    turned = mem.search(app_name, "u", asked, memlab.SearchSettings(query_rendering="first_person"))
    assert turned[0].text.startswith("My son Theo") and turned[0].distance < plain[0].distance
