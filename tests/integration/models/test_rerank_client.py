"""Re-rankers: a real local CrossEncoder folder (built once per module from the packaged MiniLM with an untrained,
seeded head: this tests the path, not quality) and the openai-rerank shape against the fake server."""

from __future__ import annotations

import pytest
import torch
from sentence_transformers import CrossEncoder

import memlab
from memlab.models import ModelError, ModelSpec, RerankReply, open_reranker, parse_models

DOCS = ["I adopted a cat named Miso last spring.", "The weather was rainy in Lisbon.", "My cat Miso likes tuna."]
QUERY = "What is my cat called?"


@pytest.fixture(scope="module")
def cross_encoder_folder(tmp_path_factory):
    torch.manual_seed(0)  # the classification head is new and random: seeded, so every build scores alike
    folder = tmp_path_factory.mktemp("cross-encoder")
    CrossEncoder(str(memlab.embedding.packaged_minilm_path()), num_labels=1, device="cpu").save(str(folder))
    return folder


def test_a_cross_encoder_scores_each_document_deterministically_and_the_cache_serves_the_rerun(
        cross_encoder_folder, tmp_path):  # fmt: skip
    spec = parse_models([{"name": "ce", "kind": "cross-encoder", "path": str(cross_encoder_folder)}], "t")["ce"]
    first = open_reranker(spec, cache_dir=tmp_path).rerank(QUERY, DOCS)
    assert len(first.scores) == len(DOCS) and all(isinstance(s, float) for s in first.scores)
    assert not first.cached and first.seconds > 0 and first.tokens is None
    uncached = open_reranker(ModelSpec("ce", "cross-encoder", path=spec.path, cache=False), tmp_path / "none")
    assert uncached.rerank(QUERY, DOCS).scores == pytest.approx(first.scores, abs=1e-6), "deterministic"
    assert uncached.rerank(QUERY, DOCS[::-1]).scores == pytest.approx(first.scores[::-1], abs=1e-6), "input order"
    assert not (tmp_path / "none").exists()
    again = open_reranker(spec, cache_dir=tmp_path).rerank(QUERY, DOCS)
    assert again == RerankReply(first.scores, 0.0, True, None)
    (cross_encoder_folder / "extra.txt").write_text("a changed folder is another model")
    assert not open_reranker(spec, cache_dir=tmp_path).rerank(QUERY, DOCS).cached, "the fingerprint is in the key"
    (cross_encoder_folder / "extra.txt").unlink()


def test_a_folder_that_is_not_a_cross_encoder_is_a_config_error(tmp_path):
    (tmp_path / "empty").mkdir()
    reranker = open_reranker(ModelSpec("ce", "cross-encoder", path=str(tmp_path / "empty")), tmp_path / "cache")
    with pytest.raises(memlab.ConfigError, match="not a sentence-transformers CrossEncoder folder"):
        reranker.rerank(QUERY, DOCS)


def rerank_spec(url: str, **kw) -> ModelSpec:
    return ModelSpec(**{"name": "rr", "kind": "openai-rerank", "base_url": url, "model": "tiny-rerank",
                        "backoff": 0.01, **kw})  # fmt: skip


def test_openai_rerank_reads_results_in_any_order_and_caches(model_server, tmp_path):
    reranker = open_reranker(rerank_spec(model_server.base_url), cache_dir=tmp_path)
    reply = reranker.rerank(QUERY, DOCS)
    assert reply.scores == pytest.approx([0.2, 0.0, 0.4]) and reply.tokens == 19 and not reply.cached
    path, body = model_server.requests[0]
    assert path == "/v1/rerank" and body == {"model": "tiny-rerank", "query": QUERY, "documents": DOCS}
    assert reranker.rerank(QUERY, DOCS) == RerankReply(reply.scores, 0.0, True, 19) and reranker.requests_sent == 1
    again = open_reranker(rerank_spec(model_server.base_url), cache_dir=tmp_path)
    assert not again.rerank(QUERY, DOCS).cached, "a new client's first call learns which model answers"
    assert again.rerank(QUERY, DOCS) == RerankReply(reply.scores, 0.0, True, 19) and again.requests_sent == 1
    assert open_reranker(rerank_spec(model_server.base_url), tmp_path).rerank(QUERY, []).scores == []
    assert len(model_server.requests) == 2


@pytest.mark.parametrize(("setup", "message"), [
    ({"rerank_top_n": 2}, "scores came back for 2 of 3 documents"),
    ({"rerank_reply": lambda body: {"results": [{"index": 0, "relevance_score": 1}] * 3}}, "used once"),
    ({"rerank_reply": lambda body: {"results": [{"index": 7, "relevance_score": 1}]}}, "index < 3"),
    ({"rerank_reply": lambda body: {"results": [{"index": 0, "relevance_score": "high"}]}}, "a number"),
    ({"rerank_reply": lambda body: {"data": []}}, "no results list"),
    ({"mode": "malformed"}, "not JSON"),
])  # fmt: skip
def test_a_bad_rerank_reply_is_malformed_and_not_cached(model_server, tmp_path, setup, message):
    for name, value in setup.items():
        setattr(model_server, name, value)
    reranker = open_reranker(rerank_spec(model_server.base_url), cache_dir=tmp_path)
    with pytest.raises(ModelError, match=message) as err:
        reranker.rerank(QUERY, DOCS)
    assert err.value.kind == "malformed" and str(err.value).startswith("rr (http://127.0.0.1:")
    assert not list(tmp_path.rglob("*.json"))


def test_open_reranker_refuses_a_chat_model():
    with pytest.raises(memlab.ConfigError, match="needs kind openai-rerank or cross-encoder"):
        open_reranker(ModelSpec("reader", "openai-chat", "http://h/v1", "m"))
