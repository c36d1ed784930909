"""FAISS exact is the ground truth: pgvector's exact strategy must return the same ids (ties aside)."""

from __future__ import annotations

import numpy as np

import memlab
from memlab import lab


def test_pgvector_exact_matches_faiss_exact_on_every_fixture_question(store, embedder, fixture_set):
    mem = memlab.EventMemory(store, embedder)
    mem.add_sessions(fixture_set.sessions())
    exact = lab.FaissExact.from_memory(mem)
    assert {u for _, u in exact.users()} >= {u.user_id for u in fixture_set.users}
    compared = 0
    for q in fixture_set.questions:
        vector = embedder.embed_query(q.text)
        pg = mem.search_vector(q.app_name, q.user_id, vector, memlab.SearchSettings(strategy="exact", top_k=5))
        fx = exact.search_vector(q.app_name, q.user_id, vector, 5)
        np.testing.assert_allclose([h.distance for h in pg], [h.distance for h in fx], atol=1e-5)
        for a, b in zip(pg, fx, strict=True):
            if a.unit_id != b.unit_id:  # allowed only for a tie in distance
                assert abs(a.distance - b.distance) < 1e-6, (q.id, a.unit_id, b.unit_id)
        compared += 1
    assert compared == len(fixture_set.questions)


def test_faiss_search_is_scoped_by_user(store, embedder, fixture_set):
    mem = memlab.EventMemory(store, embedder)
    mem.add_sessions(fixture_set.sessions())
    maya = fixture_set.users[0]
    exact = lab.FaissExact.from_memory(mem, app_name=maya.app_name, user_id=maya.user_id)
    assert exact.users() == [(maya.app_name, maya.user_id)]
    own = {e.id for s in maya.sessions for e in s.events}
    assert set(exact.search(maya.app_name, maya.user_id, "trip dates", top_k=50).unit_ids) <= own
    assert exact.search(maya.app_name, "nobody", "trip dates") == []
