"""Vectors computed while an erasure runs are not cached after it: embedding a user's texts takes seconds (here a
remote endpoint on 127.0.0.1 holds each reply), and an erasure that runs meanwhile finds nothing to delete yet.
The computation registers what it derives from (its texts, and the user and session it embeds for), the erasure
cancels it, and the vectors that arrive afterwards are not stored: not by an add, a migration, a caller embedding
the user's texts, nor (in this process's transient store) a search's query."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memlab
from memlab.embedding import CachedEmbedder, EmbeddingCache, OpenAICompatibleEmbedder
from memlab.models import deriving_from, scope_refs
from tests.conftest import make_session

HOLD = 0.6  # seconds the server holds each embeddings reply while the erasure runs


class WatchedCache(EmbeddingCache):
    """An embedding cache that notes, for every store after `erased` is set, the texts it then holds."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.erased = False
        self.held_after: list[str] = []

    def put_many(self, model_id: str, texts: list[str], vectors: np.ndarray, *args: Any, **kwargs: Any) -> Any:
        stored = super().put_many(model_id, texts, vectors, *args, **kwargs)
        if self.erased:
            held = super().get_many(model_id, list(texts))
            self.held_after += [texts[i] for i in sorted(held)]
        return stored


def remote(server, **kwargs: Any) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(server.base_url, "embed-small", api_key_env=None, retries=0,
                                    model_id="remote-embed-8d", **kwargs)  # fmt: skip


def in_flight(server, call: Callable[[], Any], wanted: str) -> tuple[threading.Thread, list]:
    """Run `call` in a thread; return once an embeddings request holding `wanted` reached the server (which holds
    it HOLD seconds), with the list the call's result or error lands in."""
    out: list = []

    def run() -> None:
        try:
            out.append(call())
        except Exception as exc:  # the test reads it
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    until = time.monotonic() + 10
    while time.monotonic() < until and not any(wanted in str(body.get("input")) for _, body in server.requests):
        time.sleep(0.01)
    assert any(wanted in str(body.get("input")) for _, body in server.requests), "the request never reached the server"
    return thread, out


def words() -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [f"My locker code at the {tag} gym is kept in my blue notebook.", f"I walk my dog {tag} every evening."]


ERASURES = {
    "EventMemory.forget_user": lambda store, events, facts, app: events.forget_user(app, "gone"),
    "EventMemory.forget_session": lambda store, events, facts, app: events.forget_session(app, "gone", "s-gone"),
    "FactMemory.forget_user": lambda store, events, facts, app: facts.forget_user(app, "gone"),
    # an erasure through a memory of another embedder (the packaged model) reaches the add's cache too
    "FactMemory.forget_user, another embedder": lambda store, events, facts, app: memlab.FactMemory(
        store, memlab.default_embedder(), extractor=memlab.RuleExtractor()).forget_user(app, "gone"),
}


@pytest.mark.parametrize("erase", sorted(ERASURES))
def test_an_add_embedding_during_an_erasure_caches_nothing_after_it(store, model_server, app_name, tmp_path, erase):
    cache = WatchedCache(tmp_path / "embeddings.sqlite")
    embedder = CachedEmbedder(remote(model_server), cache)
    events = memlab.EventMemory(store, embedder)
    facts = memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor())
    events.add_session(make_session(app_name, "kept", "s-kept", words()))  # the model is known: no probe later
    texts = words()
    model_server.hold_seconds = HOLD
    thread, out = in_flight(model_server, lambda: events.add_session(make_session(app_name, "gone", "s-gone", texts)),
                            texts[0])  # fmt: skip
    ERASURES[erase](store, events, facts, app_name)
    cache.erased = True
    thread.join(timeout=30)
    assert not thread.is_alive() and isinstance(out[0], memlab.IngestReport), out
    assert out[0].added == 0 and out[0].skipped["erased_during_ingest"] == 2, "the erasure won over the add"
    assert cache.held_after == [], "no vector of the erased texts was cached after the erasure, not even a moment"
    assert not cache.get_many(embedder.model_id, texts)
    assert not list((tmp_path / "embeddings.inflight" / "flights").glob("*.json")), "no registration outlives its call"
    model_server.hold_seconds = 0.0
    events.add_session(make_session(app_name, "gone", "s-again", texts))
    assert len(cache.get_many(embedder.model_id, texts)) == 2, "an add no erasure met is cached as before"


@pytest.mark.parametrize("on_disk", [True, False])
def test_a_caller_embedding_a_users_texts_in_flight_during_forget_user_caches_nothing(store, model_server, app_name,
                                                                                     tmp_path, on_disk):  # fmt: skip
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite" if on_disk else None)
    embedder = CachedEmbedder(remote(model_server), cache)
    events = memlab.EventMemory(store, embedder)
    model_server.hold_seconds = HOLD
    results = {}
    for user, erased in (("gone", "gone"), ("kept", "someone-else")):
        texts = words()

        def embed(user: str = user, texts: list[str] = texts) -> np.ndarray:
            with deriving_from(scope_refs(app_name, user)):  # whose texts these are
                return embedder.embed_documents(texts)

        thread, out = in_flight(model_server, embed, texts[0])
        events.forget_user(app_name, erased)
        thread.join(timeout=30)
        assert isinstance(out[0], np.ndarray) and out[0].shape == (2, 8), "the caller gets its vectors either way"
        results[user] = len(cache.get_many(embedder.model_id, texts))
    assert results == {"gone": 0, "kept": 2}, "the erased user's vectors were not cached; another erasure's were"


def test_a_migration_in_flight_during_forget_user_caches_no_vector_of_the_user(scratch_store, embedder, model_server,
                                                                             app_name):  # fmt: skip
    events = memlab.EventMemory(scratch_store, embedder)
    texts = {user: words() for user in ("gone", "kept")}
    for user in texts:
        events.add_session(make_session(app_name, user, f"s-{user}", texts[user]))
    new = memlab.make_embedder({"kind": "openai", "base_url": model_server.base_url, "model": "embed-small",
                                "api_key_env": None, "retries": 0, "dimension": 8,
                                "model_id": f"remote-{uuid.uuid4().hex[:8]}"})  # the shared cache, as usual
    model_server.hold_seconds = HOLD
    thread, out = in_flight(model_server, lambda: events.migrate_embeddings(events.model.model_id, new),
                            texts["gone"][0])  # fmt: skip
    events.forget_user(app_name, "gone")
    thread.join(timeout=30)
    assert isinstance(out[0], memlab.events.MigrationReport) and out[0].rows_added == 2, "only the kept user moved"
    assert not new.cache.get_many(new.model_id, texts["gone"]), "no vector of the erased user under the new model"


def test_a_search_in_flight_during_forget_user_keeps_no_query_vector(store, model_server, app_name, tmp_path):
    embedder = CachedEmbedder(remote(model_server), EmbeddingCache(tmp_path / "embeddings.sqlite"))
    events = memlab.EventMemory(store, embedder)
    events.add_session(make_session(app_name, "gone", "s-gone", words()))
    query = f"which gym is the {uuid.uuid4().hex[:8]} locker in?"
    model_server.hold_seconds = HOLD
    thread, out = in_flight(model_server, lambda: events.search(app_name, "gone", query), query)
    events.forget_user(app_name, "gone")
    thread.join(timeout=30)
    assert isinstance(out[0], memlab.Hits), out
    model_server.hold_seconds = 0.0
    sent = len(model_server.requests)
    embedder.embed_query(query, remember=False)
    assert len(model_server.requests) == sent + 1, "the query's vector was not kept after the erasure"
