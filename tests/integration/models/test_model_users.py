"""The model client's users: the LLM extractor built from a configured model (the cache serves a rerun, a reply
that does not parse is not cached) and the model assessor on a ChatClient with several requests in flight."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

import memlab
from memlab import lab
from memlab.models import ModelSpec, open_chat, parse_models
from tests.integration.lab.datasets.test_judged_set import APP, write_pool
from tests.integration.lab.judging.test_pool import write_sessions

EVENTS = [memlab.Event("s1-e0", "user", datetime(2026, 3, 1, tzinfo=UTC), "I'm vegetarian now.")]
FACTS = {"facts": [{"subject": "user", "predicate": "diet", "value": "vegetarian", "quote": "I'm vegetarian",
                    "event_id": "s1-e0", "negated": False}]}  # fmt: skip


def test_the_extractor_from_a_spec_caches_good_replies_only(model_server, tmp_path, monkeypatch):
    monkeypatch.setenv("MODEL_USERS_KEY", "sk-users-0123456789")
    spec = parse_models([{"name": "extractor", "kind": "openai-chat", "base_url": model_server.base_url,
                          "model": "tiny", "api_key_env": "MODEL_USERS_KEY", "retries": 0}], "t")["extractor"]
    model_server.chat_reply = lambda body: "not json at all"
    extractor = memlab.LlmExtractor.from_spec(spec, cache_dir=tmp_path)
    with pytest.raises(memlab.facts.ExtractionError, match="not valid JSON"):
        extractor.extract(EVENTS, session_id="s1", registry=memlab.facts.default_registry())
    model_server.chat_reply = lambda body: json.dumps(FACTS)
    found = extractor.extract(EVENTS, session_id="s1", registry=memlab.facts.default_registry())
    assert [(c.predicate, c.value) for c in found] == [("diet", "vegetarian")], "the bad reply was not cached"
    assert extractor.extract(EVENTS, session_id="s1", registry=memlab.facts.default_registry()) == found
    assert extractor.client.requests_sent == 2 and extractor.usage["cached"] == 1, "the good reply was cached"
    rerun = memlab.LlmExtractor.from_spec(spec, cache_dir=tmp_path)
    for _ in range(2):  # a new client's first call learns which model answers; the second is served
        assert rerun.extract(EVENTS, session_id="s1", registry=memlab.facts.default_registry()) == found
    assert rerun.client.requests_sent == 1 and rerun.usage["cached"] == 1 and len(model_server.requests) == 3
    assert model_server.authorizations[-1] == "Bearer sk-users-0123456789"
    assert extractor.usage["calls"] == 3 and extractor.usage["prompt_tokens"] > 0 and extractor.usage["seconds"] > 0
    with pytest.raises(memlab.ConfigError, match="needs kind openai-chat"):
        memlab.LlmExtractor.from_spec(ModelSpec("rr", "openai-rerank", model_server.base_url, "r"))


def test_the_model_assessor_judges_through_a_chat_client_with_requests_in_flight(model_server, tmp_path):
    pool = lab.datasets.read_pool(write_pool(tmp_path / "pool.json", write_sessions(tmp_path / "logs.jsonl", APP)))
    model_server.chat_reply = lambda body: json.dumps({"relevant": "cat" in body["messages"][1]["content"]})
    client = open_chat(ModelSpec("judge", "openai-chat", model_server.base_url, "tiny-judge", concurrency=3),
                       tmp_path / "cache")
    lines = lab.judging.model_judgments(pool, client)
    hits = [(q, h) for q in pool.queries for h in q["hits"]]
    assert [(line["query"], line["event_id"]) for line in lines] == [(q["query_id"], h["event_id"]) for q, h in hits]
    assert [line["relevance"] for line in lines] == [int("cat" in h["text"]) for _, h in hits]
    assert {line["assessor"] for line in lines} == {"model:tiny-judge"} and client.requests_sent == len(hits)
