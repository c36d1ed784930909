"""`time="boost"` on a "currently"/"latest" question puts the newer of two conflicting memories first, as
docs/explanation/retrieval.md says, with the real model and the real store: fused scores that tie (the newer one a
place lower by relevance) go to the newer memory."""

from __future__ import annotations

from datetime import timedelta

import pytest

import memlab
from tests.conftest import T0, make_session

CONFLICTS = [  # (older, newer, question): the older one is nearer the question by relevance
    ("I live in Berlin.", "I live in Munich now.", "Where do I live currently?"),
    ("I drive a Toyota Corolla.", "I drive a Honda Civic now.", "What car do I currently drive?"),
    ("I work as a nurse.", "I work as a teacher now.", "What is my latest job?"),
]
OLDER_STILL = ["My sister Ines teaches chemistry in Lisbon.", "I am allergic to peanuts."]  # older than both


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
@pytest.mark.parametrize("older,newer,question", CONFLICTS)
def test_currently_puts_the_newer_of_two_conflicting_memories_first(store, embedder, app_name, mode, older, newer,
                                                                    question):  # fmt: skip
    mem = memlab.EventMemory(store, embedder)
    for n, text in enumerate(OLDER_STILL):
        mem.add_session(make_session(app_name, "u", f"before{n}", [text], start=T0 - timedelta(days=30 - n)))
    mem.add_session(make_session(app_name, "u", "old", [older]))
    mem.add_session(make_session(app_name, "u", "new", [newer], start=T0 + timedelta(days=60)))
    asked = T0 + timedelta(days=90)
    plain = mem.search(app_name, "u", question, memlab.SearchSettings(mode=mode, top_k=4))
    assert [h.text for h in plain[:2]] == [older, newer]  # the case the docs speak of: relevance alone errs
    for top_k in (2, 4):
        hits = mem.search(app_name, "u", question, memlab.SearchSettings(mode=mode, time="boost", top_k=top_k),
                          asked_at=asked)  # fmt: skip
        order = [h.text for h in hits if h.text in (older, newer)]
        assert order == [newer, older], [(h.text, h.score) for h in hits]
