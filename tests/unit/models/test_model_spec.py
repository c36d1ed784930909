"""The `models:` entries are checked when the config loads: each mistake is a ConfigError naming the entry, the
key and the fix, and a key never sits in the config."""

from __future__ import annotations

import pytest

import memlab
from memlab.models import MODEL_KINDS, ModelSpec, open_chat, parse_models

CHAT = {"name": "reader", "kind": "openai-chat", "base_url": "http://127.0.0.1:8080/v1/", "model": "m"}


def test_entries_become_specs_with_defaults(tmp_path):
    (tmp_path / "ce").mkdir()
    specs = parse_models([CHAT, {"name": "ce", "kind": "cross-encoder", "path": "ce", "concurrency": 1},
                          {"name": "rr", "kind": "openai-rerank", "base_url": "https://h.example/v1", "model": "r",
                           "timeout": 5, "retries": 0, "max_tokens": 10}], "c.yaml", root=tmp_path)  # fmt: skip
    assert specs["reader"] == ModelSpec("reader", "openai-chat", "http://127.0.0.1:8080/v1", "m")
    assert specs["ce"].path == str((tmp_path / "ce").resolve()) and specs["ce"].concurrency == 1
    assert (specs["rr"].timeout, specs["rr"].retries, specs["rr"].max_tokens) == (5.0, 0, 10)
    assert parse_models(None, "c.yaml") == {} and MODEL_KINDS == ("openai-chat", "openai-rerank", "cross-encoder")


@pytest.mark.parametrize(("entry", "message"), [
    ({**CHAT, "kind": "gpt"}, r"models\[0\] \(reader\): unknown kind 'gpt'; use one of openai-chat, openai-rerank, "
                              "cross-encoder"),
    ({"name": "reader", "kind": "openai-chat", "model": "m"}, "needs base_url"),
    ({"name": "reader", "kind": "openai-rerank", "base_url": "http://h/v1"}, "needs model"),
    ({**CHAT, "base_url": "http://bob:hunter2secret@h/v1"}, "must not hold a user:password@"),
    ({**CHAT, "base_url": "127.0.0.1:8080"}, "not an http"),
    ({"name": "ce", "kind": "cross-encoder"}, "needs path"),
    ({"name": "ce", "kind": "cross-encoder", "path": "/no/such/folder"}, "does not exist"),
    ({**CHAT, "api_key_env": "MEMLAB_TEST_UNSET_KEY"}, "environment variable MEMLAB_TEST_UNSET_KEY, which is not set"),
    ({**CHAT, "timeout": -1}, "timeout must be a positive number"),
    ({**CHAT, "timeout": 0}, "timeout must be a positive number"),
    ({**CHAT, "retries": -1}, "retries must be a whole number >= 0"),
    ({**CHAT, "concurrency": 0}, "concurrency must be a whole number >= 1"),
    ({**CHAT, "backoff": -0.5}, "backoff must be a non-negative"),
    ({**CHAT, "api_key": "sk-123"}, "unknown key.*api_key;"),
    ({**CHAT, "cache": "yes"}, "cache must be true or false"),
    ({"kind": "openai-chat"}, "give the model a name"),
])  # fmt: skip
def test_each_mistake_is_a_config_error_naming_it(entry, message, monkeypatch):
    monkeypatch.delenv("MEMLAB_TEST_UNSET_KEY", raising=False)
    with pytest.raises(memlab.ConfigError, match=message) as err:
        parse_models([entry], "c.yaml")
    assert "hunter2secret" not in str(err.value)


def test_a_file_is_not_a_folder_and_names_must_be_unique(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(memlab.ConfigError, match="is not a folder"):
        parse_models([{"name": "ce", "kind": "cross-encoder", "path": str(tmp_path / "f")}], "c.yaml")
    with pytest.raises(memlab.ConfigError, match="'reader' is used twice"):
        parse_models([CHAT, CHAT], "c.yaml")
    with pytest.raises(memlab.ConfigError, match="models must be a list"):
        parse_models("reader", "c.yaml")


def test_a_set_key_variable_is_accepted_and_a_chat_client_needs_a_chat_model(monkeypatch):
    monkeypatch.setenv("MEMLAB_TEST_KEY", "k")
    spec = parse_models({"reader": {**CHAT, "api_key_env": "MEMLAB_TEST_KEY"}}, "c.yaml")["reader"]
    assert spec.api_key_env == "MEMLAB_TEST_KEY"
    with pytest.raises(memlab.ConfigError, match="needs kind openai-chat"):
        open_chat(ModelSpec("rr", "openai-rerank", "http://h/v1", "m"))
