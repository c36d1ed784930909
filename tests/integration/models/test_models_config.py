"""The `models:` section of an experiment config: checked when the config loads (a relative cross-encoder path
found from the config's folder, --set reaching an entry by name, llm.model_ref naming a chat model), and Env
handing out one client per configured model with a clear error for a name that is not configured."""

from __future__ import annotations

import pytest
import yaml

import memlab
from memlab import lab
from memlab.lab.systems.kinds import make_extractor
from memlab.models import ChatClient, ModelSpec

BASE = {"name": "m", "datasets": [{"name": "fx", "format": "fixtures", "path": "fixtures/events"}]}
MODELS = [{"name": "reader", "kind": "openai-chat", "base_url": "http://127.0.0.1:8080/v1", "model": "tiny"},
          {"name": "ce", "kind": "cross-encoder", "path": "models/ce"}]  # fmt: skip


def write(tmp_path, **extra):
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({**BASE, "models": MODELS, **extra}))
    return path


def test_a_config_with_models_loads_with_paths_from_its_folder_and_set_reaches_an_entry(tmp_path):
    (tmp_path / "models" / "ce").mkdir(parents=True)
    config = lab.load_config(write(tmp_path, llm={"model_ref": "reader"}), ["models.reader.timeout=5"])
    assert config.models["reader"] == ModelSpec("reader", "openai-chat", "http://127.0.0.1:8080/v1", "tiny",
                                                timeout=5.0)  # fmt: skip
    assert config.models["ce"].path == str((tmp_path / "models" / "ce").resolve())
    assert [m["name"] for m in config.resolved["models"]] == ["reader", "ce"]
    assert lab.load_config(write(tmp_path, models=[])).models == {}


@pytest.mark.parametrize(("extra", "overrides", "message"), [
    ({}, [], "path .*models/ce.* does not exist"),
    ({"llm": {"model_ref": "ce"}}, ["models.ce.path=."], "llm.model_ref 'ce' is not an openai-chat model.*"
                                                         r"configured: \['reader'\]"),
    ({"llm": {"model_ref": "reader", "model": "x"}}, ["models.ce.path=."], "drop model from llm"),
    ({}, ["models.reader.kind=gpt"], "--set models.reader.kind=gpt: models.* unknown kind 'gpt'"),
])  # fmt: skip
def test_a_bad_models_section_is_a_config_error(tmp_path, extra, overrides, message):
    with pytest.raises(memlab.ConfigError, match=message):
        lab.load_config(write(tmp_path, **extra), overrides)


def test_env_gives_one_client_per_model_and_names_the_configured_ones_for_an_unknown_name(store, tmp_path):
    (tmp_path / "models" / "ce").mkdir(parents=True)
    config = lab.load_config(write(tmp_path))
    env = lab.systems.Env(store, {}, models=config.models, model_cache=tmp_path / "cache")
    reader = env.chat("reader")
    assert isinstance(reader, ChatClient) and env.chat("reader") is reader
    with pytest.raises(memlab.ConfigError, match=r"no model named 'judge'.*configured: \['ce', 'reader'\]"):
        env.chat("judge")
    with pytest.raises(memlab.ConfigError, match=r"'reader' is of kind openai-chat; this needs openai-rerank or "
                                                 "cross-encoder"):  # fmt: skip
        env.reranker("reader")
    with pytest.raises(memlab.ConfigError, match="needs openai-chat"):
        env.chat("ce")
    with pytest.raises(memlab.ConfigError, match="configured: none"):
        lab.systems.Env(store, {}).reranker("ce")


def test_the_llm_extractor_is_the_configured_model_named_by_model_ref_and_the_old_llm_block_still_works(tmp_path):
    (tmp_path / "models" / "ce").mkdir(parents=True)
    config = lab.load_config(write(tmp_path, llm={"model_ref": "reader"}))
    options = {"llm": config.resolved["llm"], "models": config.models, "model_cache": tmp_path / "cache"}
    extractor = make_extractor("llm", None, options)
    assert extractor.client.spec is config.models["reader"] and extractor.client.cache.folder == tmp_path / "cache"
    old = make_extractor("llm", None, {"llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m2"}})
    assert (old.base_url, old.model, old.client.spec.retries) == ("http://127.0.0.1:9/v1", "m2", 0)
    with pytest.raises(memlab.ConfigError, match="model_ref"):
        make_extractor("llm", None, {})
