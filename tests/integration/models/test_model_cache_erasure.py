"""Erasure reaches the model cache: a cached model reply derived from a user's stored words (the LLM extractor's
facts, a reader's answer, a re-ranker's scores) is deleted by every erasure of those words, at every level, and
another user's entries stay. The checks read MEMLAB_HOME/cache/models itself, byte for byte."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

import memlab
from memlab.lab.systems.rerank import RerankSpec, rerank_search
from memlab.models import (
    ChatRequest,
    ModelSpec,
    model_cache_dir,
    open_chat,
    open_reranker,
    parse_models,
    text_refs,
)
from tests.conftest import T0, make_session

LEVELS = (False, True, "full", "wal")
TURN = re.compile(r"\[(?P<id>[^\]]+)\] user: I'm (?P<word>\w+) now\.")


def marker() -> str:
    """A word unique to the test, letters only: a run of hex digits can read as a secret and be dropped at ingest."""
    return "zq" + "".join(chr(ord("a") + int(c, 16)) for c in uuid.uuid4().hex[:10])


def cached_with(marker: str) -> list[Path]:
    """The files under MEMLAB_HOME/cache/models whose bytes hold `marker`."""
    root = model_cache_dir()
    return [p for p in root.rglob("*") if p.is_file() and marker.encode() in p.read_bytes()]


def entries() -> set[Path]:
    return set(model_cache_dir().glob("??/*.json"))


def facts_reply(body: dict) -> str:
    """The extractor's reply quotes the user's words: the fact is the marker the user said."""
    found = TURN.search(body["messages"][-1]["content"])
    assert found, body["messages"][-1]["content"]
    return json.dumps({"facts": [{"subject": "user", "predicate": "diet", "value": found["word"],
                                  "quote": f"I'm {found['word']}", "event_id": found["id"], "negated": False}]})


@pytest.fixture
def extractor(model_server):
    spec = parse_models([{"name": "x", "kind": "openai-chat", "base_url": model_server.base_url, "model": "tiny",
                          "retries": 0}], "t")["x"]  # fmt: skip
    assert spec.cache
    model_server.chat_reply = facts_reply
    return memlab.LlmExtractor.from_spec(spec)  # the cache in MEMLAB_HOME/cache/models


@pytest.mark.parametrize("level", LEVELS)
def test_fact_memory_forget_user_deletes_the_extractors_cached_reply(store, embedder, extractor, app_name, level):
    facts = memlab.FactMemory(store, embedder, extractor)
    gone, kept = marker(), marker()
    for user, word in (("gone", gone), ("kept", kept)):
        report = facts.add_session(make_session(app_name, user, f"s-{user}", [f"I'm {word} now."]))
        assert [c.value for c in report.accepted] == [word]
    assert cached_with(gone) and cached_with(kept), "the replies were cached, quoting the users' words"
    counts = facts.forget_user(app_name, "gone", vacuum=level)
    assert counts["model_replies"] == 1
    assert cached_with(gone) == [], "no file of the model cache holds the erased user's words"
    assert cached_with(kept), "another user's cached reply stays"


def test_fact_memory_forget_session_and_events_delete_the_replies_read_from_them(store, embedder, extractor,
                                                                                  app_name):  # fmt: skip
    facts = memlab.FactMemory(store, embedder, extractor)
    words = {sid: marker() for sid in ("s1", "s2", "s3")}
    for i, (sid, word) in enumerate(words.items()):
        facts.add_session(make_session(app_name, "u", sid, [f"I'm {word} now."], start=T0 + timedelta(days=i)))
    assert facts.forget_session(app_name, "u", "s1").model_replies == 1 and cached_with(words["s1"]) == []
    assert facts.forget_events(app_name, "u", ["s2-e0"], session_id="s2").model_replies == 1
    assert cached_with(words["s2"]) == [] and cached_with(words["s3"])
    assert facts.delete_fact(app_name, "u", "user", "diet", words["s3"]) == 1
    assert cached_with(words["s3"]) == [], "the value's reply went with it"


@pytest.fixture
def clients(model_server):
    chat = open_chat(ModelSpec("reader", "openai-chat", model_server.base_url, "tiny-reader", retries=0))
    reranker = open_reranker(ModelSpec("rr", "openai-rerank", model_server.base_url, "tiny-rr", retries=0))
    return chat, reranker


def indexed(texts: list[str]) -> bool:
    """Whether the cache's refs index still names any of these texts (by hash)."""
    return any(list((model_cache_dir() / "refs" / r[:2]).glob(f"{r}.*")) for r in text_refs(texts))


def _read_and_rerank(memory, clients, app: str, user: str, word: str) -> set[Path]:
    """Search the user's memory, send the hits to the re-ranker and the reader with their refs; the entries made."""
    chat, reranker = clients
    before = entries()
    texts = [h.text for h in memory.search(app, user, f"what is {word}?", memlab.SearchSettings(top_k=3))]
    assert any(word in t for t in texts)
    reranker.rerank(f"what is {word}?", texts, refs=text_refs(texts))
    chat.complete(ChatRequest([{"role": "user", "content": "Memories:\n" + "\n".join(texts)}], refs=text_refs(texts)))
    made = entries() - before
    assert len(made) == 2 and cached_with(word) and indexed(texts), "the reader's reply (an echo) quotes the hits"
    return made


ERASURES = {
    "forget_session": lambda m, app, user: m.forget_session(app, user, f"s-{user}").model_replies,
    "forget_user": lambda m, app, user: m.forget_user(app, user),
    "delete_memory": lambda m, app, user: m.delete_memory(app, user, f"s-{user}-e0"),
    "purge_before": lambda m, app, user: m.purge_before(T0 + timedelta(days=1), app_name=app, user_id=user),
}


@pytest.mark.parametrize("erase", sorted(ERASURES))
def test_event_memory_erasure_deletes_reader_and_reranker_replies_of_the_erased_texts(event_memory, clients,
                                                                                      app_name, erase):  # fmt: skip
    made = {}
    for user in ("gone", "kept"):
        word = marker()
        event_memory.add_session(make_session(app_name, user, f"s-{user}", [f"I'm {word} now."]))
        made[user] = (word, _read_and_rerank(event_memory, clients, app_name, user, word))
    assert ERASURES[erase](event_memory, app_name, "gone") >= 1
    (word, files), (kept_word, kept_files) = made["gone"], made["kept"]
    assert cached_with(word) == [] and not files & entries(), "the reader's and the re-ranker's entries are gone"
    assert not indexed([f"I'm {word} now."]), "and the index names no erased text"
    assert cached_with(kept_word) and kept_files <= entries(), "another user's entries stay"


def test_the_rerank_stage_records_its_hits_so_erasing_the_session_deletes_the_scores(event_memory, clients, app_name):
    """The workbench's re-rank stage (no refs from its caller's code: it derives them from the hits it sends)."""
    _, reranker = clients
    made = {}
    for user in ("gone", "kept"):
        word = marker()
        event_memory.add_session(make_session(app_name, user, f"s-{user}", [f"I'm {word} now.", "Noted."]))
        before = entries()
        hits = rerank_search(lambda depth, user=user: event_memory.search(
            app_name, user, "what am I?", memlab.SearchSettings(top_k=depth)), reranker, RerankSpec("rr", 5),
            "what am I?", 2, (app_name, user))  # fmt: skip
        assert hits.rerank.error is None and not hits.rerank.cached
        made[user] = entries() - before
        assert len(made[user]) == 1
    assert event_memory.forget_session(app_name, "gone", "s-gone").model_replies == 1
    assert not made["gone"] & entries() and made["kept"] <= entries()


def _when_in_flight(server, call) -> threading.Thread:
    """Run `call` in a thread and return once its request reached the server (which holds it a while)."""
    seen = len(server.requests)
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while len(server.requests) == seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(server.requests) > seen, "the request never reached the server"
    return thread


def test_a_reply_in_flight_during_forget_user_is_not_cached_afterwards(store, embedder, extractor, model_server,
                                                                      app_name):  # fmt: skip
    facts = memlab.FactMemory(store, embedder, extractor)
    gone, kept = marker(), marker()
    model_server.hold_seconds = 1.0  # the extractor's reply is in flight for a second
    thread = _when_in_flight(model_server, lambda: facts.add_session(
        make_session(app_name, "gone", "s-gone", [f"I'm {gone} now."])))
    facts.forget_user(app_name, "gone")
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert cached_with(gone) == [], "the reply that arrived after the erasure was not stored"
    assert not list((model_cache_dir() / "flights").glob("*.json")), "no registration outlives its call"
    model_server.hold_seconds = 0.0
    facts.add_session(make_session(app_name, "kept", "s-kept", [f"I'm {kept} now."]))
    assert cached_with(kept), "a call no erasure met is cached as before"


@pytest.mark.parametrize("erase", ["forget_user", "forget_session"])
def test_a_reader_reply_in_flight_during_an_event_memory_erasure_is_not_cached(event_memory, clients, model_server,
                                                                              app_name, erase):  # fmt: skip
    chat, _ = clients
    word = marker()
    event_memory.add_session(make_session(app_name, "gone", "s-gone", [f"I'm {word} now."]))
    texts = [h.text for h in event_memory.search(app_name, "gone", f"what is {word}?", memlab.SearchSettings(top_k=3))]
    model_server.hold_seconds = 1.0
    thread = _when_in_flight(model_server, lambda: chat.complete(ChatRequest(
        [{"role": "user", "content": "Memories:\n" + "\n".join(texts)}], refs=text_refs(texts))))
    ERASURES[erase](event_memory, app_name, "gone")
    thread.join(timeout=30)
    assert not thread.is_alive() and model_server.requests, "the reply came back after the erasure"
    assert cached_with(word) == [] and not indexed(texts)
