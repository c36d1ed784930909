"""make_embedder: every kind of embedder from one spec, built and cached the same way."""

from __future__ import annotations

import json

import numpy as np
import pytest

import memlab
from memlab import make_embedder
from memlab.embedding import (
    DEFAULT_MODEL_ID,
    CachedEmbedder,
    OpenAICompatibleEmbedder,
    SentenceTransformerEmbedder,
    packaged_minilm_path,
    shared_cache,
)


@pytest.mark.parametrize("spec", [None, "default", "packaged", {"kind": "packaged"}, '{"kind": "packaged"}'])
def test_packaged_specs_are_exactly_the_default_embedder(spec, memlab_home, embedder):
    assert make_embedder(spec, home=memlab_home) is embedder
    assert make_embedder(spec, home=memlab_home) is memlab.default_embedder(home=memlab_home)


def test_packaged_without_cache_is_the_bare_model(tmp_path):
    bare = make_embedder("default", home=tmp_path, cache=False)
    assert isinstance(bare, SentenceTransformerEmbedder) and bare.model_id == DEFAULT_MODEL_ID


def test_a_local_sentence_transformers_folder(tmp_path, embedder):
    spec = {"kind": "sentence-transformers", "path": str(packaged_minilm_path()), "truncate_dim": 64}
    emb = make_embedder(spec, home=tmp_path)
    assert isinstance(emb, CachedEmbedder) and isinstance(emb.inner, SentenceTransformerEmbedder)
    assert emb.cache is shared_cache(tmp_path), "every kind goes through the one cache of its home"
    assert emb.model_id == "model@64" and emb.dimension == 64
    vector = emb.embed_query("We deploy with Argo CD.")
    full = embedder.embed_query("We deploy with Argo CD.")
    np.testing.assert_allclose(vector, full[:64] / np.linalg.norm(full[:64]), atol=1e-5)


def test_known_names_and_plain_strings_are_sentence_transformers(tmp_path):
    by_name = make_embedder({"kind": "sentence-transformers", "path": "all-MiniLM-L6-v2"}, home=tmp_path, cache=False)
    assert isinstance(by_name, SentenceTransformerEmbedder) and by_name.model_id == DEFAULT_MODEL_ID
    tuned = make_embedder(
        {"kind": "sentence-transformers", "path": DEFAULT_MODEL_ID, "batch_size": 8}, home=tmp_path, cache=False
    )
    assert isinstance(tuned, SentenceTransformerEmbedder)
    assert tuned.model_id == DEFAULT_MODEL_ID and tuned.batch_size == 8
    by_path = make_embedder(str(packaged_minilm_path()), home=tmp_path, cache=False)
    assert isinstance(by_path, SentenceTransformerEmbedder) and by_path.path == packaged_minilm_path()
    with pytest.raises(memlab.ConfigError, match="make models"):
        make_embedder({"kind": "sentence-transformers", "path": "all-mpnet-base-v2"}, home=tmp_path)


def test_sentence_transformers_folders_that_cannot_be_models(tmp_path):
    with pytest.raises(memlab.ConfigError, match=r"does not exist .*'path'"):
        make_embedder({"kind": "sentence-transformers", "path": str(tmp_path / "nowhere")}, home=tmp_path)
    (tmp_path / "file.bin").write_bytes(b"x")
    with pytest.raises(memlab.ConfigError, match="is a file"):
        make_embedder({"kind": "sentence-transformers", "path": str(tmp_path / "file.bin")}, home=tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(memlab.ConfigError, match="not a sentence-transformers model folder"):
        make_embedder({"kind": "sentence-transformers", "path": str(tmp_path / "empty")}, home=tmp_path)


def test_openai_spec_builds_the_endpoint_embedder(tmp_path):
    spec = {
        "kind": "openai",
        "base_url": "http://127.0.0.1:8000/v1/",
        "model": "bge-m3",
        "api_key_env": "MY_KEY",
        "batch_size": 16,
        "dimension": 1024,
        "timeout": 5,
    }
    cached = make_embedder(spec, home=tmp_path)
    assert isinstance(cached, CachedEmbedder) and cached.cache is shared_cache(tmp_path)
    emb = make_embedder(json.dumps(spec), home=tmp_path, cache=False)
    assert isinstance(emb, OpenAICompatibleEmbedder)
    assert (emb.url, emb.model, emb.api_key_env, emb.batch_size, emb.timeout) == (
        "http://127.0.0.1:8000/v1/embeddings", "bge-m3", "MY_KEY", 16, 5.0,
    )  # fmt: skip
    assert emb.model_id == cached.model_id == "openai:bge-m3@127.0.0.1:8000"
    assert emb.dimension == 1024, "a given dimension needs no probe request"


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"kind": "onnx"}, r"unknown kind 'onnx'; allowed kinds: openai, packaged, sentence-transformers"),
        ({"path": "/models/x"}, "has no 'kind'"),
        (
            {"kind": "openai", "base_url": "http://h/v1", "model": "m", "api_key": "sk-1"},
            r"unknown key 'api_key'; allowed keys: api_key_env, base_url, batch_size, .*model_id",
        ),
        ({"kind": "packaged", "path": "/x"}, r"unknown key 'path'; allowed keys: kind\."),
        ({"kind": "sentence-transformers", "path": "/x", "device": "cpu", "pooling": "cls"}, "unknown key 'pooling'"),
        ({"kind": "openai", "model": "m"}, "missing 'base_url'"),
        ({"kind": "openai", "base_url": "http://h/v1", "model": ""}, "missing 'model'"),
        ({"kind": "sentence-transformers"}, "missing 'path'"),
        ({"kind": "openai", "base_url": "localhost:8000", "model": "m"}, r"not an http\(s\) URL"),
        ({"kind": "openai", "base_url": "http://h/v1", "model": "m", "batch_size": 0}, "batch_size must be"),
        ({"kind": "openai", "base_url": "http://h/v1", "model": "m", "dimension": "384"}, "dimension must be"),
        ({"kind": "openai", "base_url": "http://h/v1", "model": "m", "api_key_env": ""}, "api_key_env must"),
        (42, "must be None, a string or a dict, not int"),
        ("{not json", "not valid JSON"),
        ("  ", "empty string"),
    ],
)
def test_bad_specs_are_refused_with_the_reason(spec, match, tmp_path):
    with pytest.raises(memlab.ConfigError, match=match):
        make_embedder(spec, home=tmp_path)
