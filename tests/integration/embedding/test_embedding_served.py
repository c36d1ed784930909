"""A cached vector is served only for the model that computed it: an endpoint behind the same name and URL may swap
its weights (the reply's `model`, or its `system_fingerprint`, says so), and a local model folder is known by the
bytes of its files, not by its path or model id. A remote client learns which model answers from a live reply
(one small probe when everything it is asked for was embedded before); the local model asks no server."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np

import memlab
from memlab.embedding import CachedEmbedder, EmbeddingCache, OpenAICompatibleEmbedder, SentenceTransformerEmbedder

TEXTS = [f"note {i}: the backup job of service {i} runs at {i} am" for i in range(6)]
PROBE = "memlab dimension probe"


def remote(server) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(server.base_url, "embed-small", api_key_env=None, retries=0, batch_size=4)


def live(server, texts: list[str]) -> np.ndarray:
    """What the model answering now computes for `texts` (no cache)."""
    return remote(server).embed_documents(texts)


def embeddings_sent(server) -> list[list[str]]:
    return [body["input"] for path, body in server.requests if path == "/v1/embeddings"]


def test_a_rerun_after_the_endpoints_model_changed_gets_the_new_models_vectors(model_server, tmp_path):
    path = tmp_path / "embeddings.sqlite"
    model_server.reported_model = "embed-v1"
    old = CachedEmbedder(remote(model_server), EmbeddingCache(path)).embed_documents(TEXTS)
    np.testing.assert_allclose(old, live(model_server, TEXTS), atol=1e-6)

    model_server.reported_model = "embed-v2"  # same name, same URL, other weights
    new = live(model_server, TEXTS)
    assert not np.allclose(old, new), "the two models' vectors differ"
    rerun = CachedEmbedder(remote(model_server), EmbeddingCache(path))  # as a new process would
    for _ in range(2):
        np.testing.assert_allclose(rerun.embed_documents(TEXTS), new, atol=1e-6, err_msg="never the old vectors")
    assert rerun.computed == len(TEXTS), "the new model's vectors were computed once, then cached in turn"

    model_server.fingerprint = "fp-b"  # same name again, another fingerprint: another model
    other = CachedEmbedder(remote(model_server), EmbeddingCache(path))
    np.testing.assert_allclose(other.embed_documents(TEXTS), live(model_server, TEXTS), atol=1e-6)
    assert other.computed == len(TEXTS)


def test_a_client_that_learns_of_a_swap_mid_run_stops_serving_the_old_models_vectors(model_server, tmp_path):
    model_server.reported_model = "embed-v1"
    client = CachedEmbedder(remote(model_server), EmbeddingCache(tmp_path / "embeddings.sqlite"))
    client.embed_documents(TEXTS)
    model_server.reported_model = "embed-v2"
    mixed = client.embed_documents([*TEXTS, "a text no model embedded yet"])  # its live reply says v2 answers
    np.testing.assert_allclose(mixed, live(model_server, [*TEXTS, "a text no model embedded yet"]), atol=1e-6,
                               err_msg="the texts cached under v1 were embedded again by v2")  # fmt: skip
    np.testing.assert_allclose(client.embed_documents(TEXTS), live(model_server, TEXTS), atol=1e-6)

    query = "when does the backup job run?"  # a search's query: kept in the transient store, never written
    client.embed_query(query, remember=False)
    model_server.reported_model = "embed-v3"
    client.embed_query("another question", remember=False)  # a live reply: v3 answers now
    np.testing.assert_allclose(client.embed_query(query, remember=False), live(model_server, [query])[0], atol=1e-6,
                               err_msg="the transient store keys by the model too")  # fmt: skip


def test_the_first_call_learns_the_model_from_one_probe_or_from_its_own_new_texts(model_server, tmp_path):
    path = tmp_path / "embeddings.sqlite"
    CachedEmbedder(remote(model_server), EmbeddingCache(path)).embed_documents(TEXTS)
    assert embeddings_sent(model_server) == [TEXTS[:4], TEXTS[4:]], "new texts teach the model: no probe"

    model_server.requests.clear()
    rerun = CachedEmbedder(remote(model_server), EmbeddingCache(path))
    threads = [threading.Thread(target=rerun.embed_documents, args=(TEXTS,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert embeddings_sent(model_server) == [[PROBE]], "one probe for all threads, and no user's text in it"
    rerun.embed_documents(TEXTS)
    assert len(model_server.requests) == 1 and rerun.computed == 0, "then everything comes from the cache"


def test_a_local_model_is_known_by_its_content_and_asks_no_server(embedder, tmp_path):
    query = "Where do I keep the spare key?"
    cache = EmbeddingCache()
    seeded = CachedEmbedder(embedder.inner, cache)  # the packaged model, loaded once for the session
    vector = seeded.embed_query(query)
    assert seeded.computed == 1
    packaged = memlab.embedding.packaged_minilm_path()
    copy = tmp_path / "minilm"
    shutil.copytree(packaged, copy, copy_function=_link_large)
    same = CachedEmbedder(SentenceTransformerEmbedder(copy, model_id=memlab.embedding.DEFAULT_MODEL_ID), cache)
    np.testing.assert_array_equal(same.embed_query(query), vector)
    assert same.computed == 0, "the same bytes under another path are the same model"

    (copy / "README.md").write_text((packaged / "README.md").read_text() + "\nretrained\n")  # other bytes, same id
    changed = CachedEmbedder(SentenceTransformerEmbedder(copy, model_id=memlab.embedding.DEFAULT_MODEL_ID), cache)
    changed.embed_query(query)
    assert changed.computed == 1, "a vector of the folder's former content is not served"
    assert changed.embed_query(query) is not None and changed.computed == 1, "its own vector is cached in turn"

    for local in (seeded, changed):  # the local path never waits for, or sends, a request to learn its model
        served = local.served_model()
        assert served is not None and served.begin() == (served.identity, False) and served.identity


def _link_large(src: str, dst: str) -> None:
    """Copy small files, symlink the weights (the test changes a small file)."""
    if Path(src).stat().st_size > 1 << 20:
        Path(dst).symlink_to(src)
    else:
        shutil.copy2(src, dst)
