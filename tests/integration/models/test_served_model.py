"""A cached reply is served only for the model that gave it: the server behind the same name and URL may swap its
weights (the reply's `model`, or its `system_fingerprint`, says so), and a cross-encoder folder is known by the
bytes of its files, not by their sizes and dates."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from sentence_transformers import CrossEncoder

import memlab
from memlab.models import ChatRequest, ModelSpec, open_chat, open_reranker

QUESTION = [{"role": "user", "content": "What is my cat called?"}]


def chat(server, cache: Path):
    return open_chat(ModelSpec("reader", "openai-chat", server.base_url, "tiny", retries=0), cache)


def answered_by(server, name: str) -> None:
    server.reported_model = name
    server.chat_reply = lambda body: f"{name} says Miso"


def test_a_rerun_after_the_model_behind_the_url_changed_gets_the_new_models_reply(model_server, tmp_path):
    answered_by(model_server, "cat-model-v1")
    first = chat(model_server, tmp_path).complete(ChatRequest(QUESTION))
    assert first.text == "cat-model-v1 says Miso"
    entry = json.loads(next(tmp_path.glob("??/*.json")).read_text())
    assert entry["served"] == {"model": "cat-model-v1", "system_fingerprint": None}, "what answered is recorded"

    answered_by(model_server, "cat-model-v2")  # same name, same URL, other weights
    rerun = chat(model_server, tmp_path)
    for _ in range(2):
        reply = rerun.complete(ChatRequest(QUESTION))
        assert reply.text == "cat-model-v2 says Miso", "never the old model's reply"
    assert reply.cached and rerun.requests_sent == 1, "the new model's reply is cached in turn"

    answered_by(model_server, "cat-model-v1")  # swapped back: its own replies are still there
    back = chat(model_server, tmp_path)
    back.complete(ChatRequest([{"role": "user", "content": "another question"}]))  # learns v1 answers now
    assert back.complete(ChatRequest(QUESTION)).text == "cat-model-v1 says Miso"
    assert back.requests_sent == 1


def test_a_client_that_learns_of_a_swap_mid_run_stops_serving_the_old_models_replies(model_server, tmp_path):
    answered_by(model_server, "m1")
    client = chat(model_server, tmp_path)
    assert client.complete(ChatRequest(QUESTION)).text == "m1 says Miso"
    assert client.complete(ChatRequest(QUESTION)).cached
    answered_by(model_server, "m2")
    client.complete(ChatRequest([{"role": "user", "content": "something new"}]))  # a live reply from m2
    again = client.complete(ChatRequest(QUESTION))
    assert again.text == "m2 says Miso" and not again.cached


def test_another_system_fingerprint_is_another_model(model_server, tmp_path):
    answered_by(model_server, "gpt-x")
    model_server.fingerprint = "fp_a"
    chat(model_server, tmp_path).complete(ChatRequest(QUESTION))
    model_server.fingerprint = "fp_b"
    model_server.chat_reply = lambda body: "fp_b says Tom"
    rerun = chat(model_server, tmp_path)
    assert [rerun.complete(ChatRequest(QUESTION)).text for _ in range(2)] == ["fp_b says Tom"] * 2


def test_complete_many_on_a_fresh_client_asks_the_server_once_before_serving_the_cache(model_server, tmp_path):
    answered_by(model_server, "m1")
    asks = [ChatRequest([{"role": "user", "content": f"question {i}"}]) for i in range(6)]
    chat(model_server, tmp_path).complete_many(asks)
    rerun = open_chat(ModelSpec("reader", "openai-chat", model_server.base_url, "tiny", retries=0, concurrency=4),
                      tmp_path)  # fmt: skip
    replies = rerun.complete_many(asks)
    assert rerun.requests_sent == 1 and sum(r.cached for r in replies) == 5


def test_a_rerank_endpoint_that_swapped_its_model_is_asked_again(model_server, tmp_path):
    spec = ModelSpec("rr", "openai-rerank", model_server.base_url, "tiny-rr", retries=0)
    model_server.reported_model = "rr-v1"
    first = open_reranker(spec, tmp_path).rerank("a cat", ["a cat", "a dog"])
    model_server.reported_model = "rr-v2"
    model_server.rerank_reply = lambda body: {"model": "rr-v2", "results": [
        {"index": 0, "relevance_score": 0.0}, {"index": 1, "relevance_score": 1.0}]}  # fmt: skip
    rerun = open_reranker(spec, tmp_path)
    scores = [rerun.rerank("a cat", ["a cat", "a dog"]).scores for _ in range(2)]
    assert scores == [[0.0, 1.0]] * 2 and scores[0] != first.scores


@pytest.fixture(scope="module")
def twin_folders(tmp_path_factory) -> tuple[Path, Path]:
    """Two CrossEncoder folders with the same file names, sizes and modification times, but other weights."""
    folders = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        folder = tmp_path_factory.mktemp(f"ce-{seed}")
        CrossEncoder(str(memlab.embedding.packaged_minilm_path()), num_labels=1, device="cpu").save(str(folder))
        folders.append(folder)
    a, b = folders
    shutil.copy(a / "README.md", b / "README.md")  # the model card differs by a line: only the weights may
    for path in a.rglob("*"):
        twin = b / path.relative_to(a)
        if path.is_file():
            assert twin.stat().st_size == path.stat().st_size
            assert path.name == "model.safetensors" or twin.read_bytes() == path.read_bytes()
            os.utime(twin, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    return a, b


def test_two_cross_encoder_folders_alike_but_for_their_weights_never_share_scores(twin_folders, tmp_path):
    a, b = twin_folders
    first = open_reranker(ModelSpec("ce", "cross-encoder", path=str(a)), tmp_path).rerank("a cat", ["a cat", "dog"])
    other = open_reranker(ModelSpec("ce", "cross-encoder", path=str(b)), tmp_path).rerank("a cat", ["a cat", "dog"])
    assert not other.cached and other.scores != first.scores, "the other weights scored, not the cache"
    copy = tmp_path / "copy"
    shutil.copytree(a, copy)
    same = open_reranker(ModelSpec("ce", "cross-encoder", path=str(copy)), tmp_path).rerank("a cat", ["a cat", "dog"])
    assert same.cached and same.scores == first.scores, "the same bytes elsewhere are the same model"
