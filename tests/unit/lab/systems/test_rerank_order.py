"""The re-rank stage's pure logic (memlab.lab.systems.rerank): the order it keeps, what it asks the memory for, how a
model error falls back, and the `rerank:` option's checks. A tiny in-test re-ranker (the Reranker protocol)
gives chosen scores; the real CrossEncoder and the HTTP re-ranker run in test_rerank_runs.py."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import memlab
from memlab import lab
from memlab.lab.systems.rerank import RerankSpec, parse_rerank, reorder, rerank_search
from memlab.models import ModelError, ModelSpec, RerankReply

SPEC = ModelSpec(name="table", kind="cross-encoder", path="/nowhere")


class TableReranker:
    """Scores from a table by document text; raises or answers short when told to."""

    def __init__(self, scores: dict[str, float], *, fail: str | None = None, short: bool = False) -> None:
        self.spec, self.scores, self.fail, self.short, self.calls = SPEC, scores, fail, short, []

    def rerank(self, query: str, documents: Sequence[str]) -> RerankReply:
        self.calls.append((query, list(documents)))
        if self.fail:
            raise ModelError(self.fail, "unreachable")
        scores = [self.scores[d] for d in documents]
        return RerankReply(scores=scores[:-1] if self.short else scores, seconds=0.0, cached=False, tokens=7)


def _hits(n: int) -> memlab.Hits:
    return memlab.Hits([memlab.Hit(f"u{i}", f"t{i}", 0.1 * (i + 1)) for i in range(n)], plan="exact")


def test_reorder_sorts_by_score_ties_keep_the_embedding_order_and_distances_stay():
    hits = _hits(5)
    kept = reorder(hits, [0.2, 0.9, 0.2, 0.5, 0.9], 3)
    assert [h.unit_id for h in kept] == ["u1", "u4", "u3"]
    assert [h.rerank for h in kept] == [0.9, 0.9, 0.5]
    assert [h.distance for h in kept] == [hits[1].distance, hits[4].distance, hits[3].distance]


def test_the_memory_is_asked_for_depth_or_k_candidates_and_the_reranker_reads_their_texts():
    asked: list[int] = []

    def candidates(depth: int) -> memlab.Hits:
        asked.append(depth)
        return _hits(min(depth, 6))

    model = TableReranker({f"t{i}": float(i) for i in range(6)})
    found = rerank_search(candidates, model, RerankSpec("table", depth=6), "q?", 2)
    assert asked == [6] and model.calls == [("q?", [f"t{i}" for i in range(6)])]
    assert found.unit_ids == ["u5", "u4"] and found.plan == "exact"
    assert found.rerank.error is None and found.rerank.tokens == 7
    rerank_search(candidates, model, RerankSpec("table", depth=1), "q?", 4)
    assert asked[-1] == 4, "never fewer candidates than k"


def test_a_model_error_keeps_the_embedding_order_and_records_the_error():
    failing = TableReranker({}, fail="connection refused")
    found = rerank_search(lambda d: _hits(d), failing, RerankSpec("table", depth=5), "q?", 3)
    assert found.unit_ids == ["u0", "u1", "u2"] and all(h.rerank is None for h in found)
    assert "table" in found.rerank.error and "connection refused" in found.rerank.error
    short = TableReranker({f"t{i}": 1.0 for i in range(5)}, short=True)
    found = rerank_search(lambda d: _hits(d), short, RerankSpec("table", depth=5), "q?", 3)
    assert found.unit_ids == ["u0", "u1", "u2"] and "4 scores for 5 candidates" in found.rerank.error
    nothing = TableReranker({})
    found = rerank_search(lambda d: memlab.Hits([]), nothing, RerankSpec("table"), "q?", 3)
    assert list(found) == [] and nothing.calls == [] and found.rerank.error is None


@pytest.mark.parametrize(("raw", "message"), [
    ("my-reranker", "must be a mapping"),
    ({"depth": 50}, "needs `model:`"),
    ({"model": "", "depth": 50}, "needs `model:`"),
    ({"model": "m", "depth": 5}, "depth=5 is refused.*k is 10"),
    ({"model": "m", "depth": "50"}, "depth='50' is refused"),
    ({"model": "m", "depth": True}, "depth=True is refused"),
    ({"model": "m", "depht": 50}, "depht"),
])  # fmt: skip
def test_the_rerank_option_is_checked(raw, message):
    with pytest.raises(memlab.ConfigError, match=message):
        parse_rerank(raw, "sys", k=10)
    assert parse_rerank({"model": "m"}, "sys", k=10) == RerankSpec("m", 50)


def _config(rerank: object) -> dict:
    url = "http://127.0.0.1:8080/v1"
    models = [{"name": "rr", "kind": "openai-rerank", "base_url": url, "model": "m"},
              {"name": "chat", "kind": "openai-chat", "base_url": url, "model": "m"}]  # fmt: skip
    return {"name": "rerank-config", "k": 10, "models": models,
            "datasets": [{"name": "mine", "format": "memlab", "path": "fixtures/jsonl/example.jsonl"}],
            "systems": [{"name": "event"}, {"name": "event+rr", "strategy": "exact", "rerank": rerank}]}  # fmt: skip


@pytest.mark.parametrize(("rerank", "message"), [
    ({"model": "rr", "depth": 5}, r"system 'event\+rr': rerank.depth=5 is refused"),
    ({"model": "rr", "top": 5}, "unknown key"),
    ({"model": "nope"}, "rerank.model 'nope' is not in the models: section.*configured: \\['rr'\\]"),
    ({"model": "chat"}, "rerank.model 'chat' is an openai-chat model"),
])  # fmt: skip
def test_a_config_naming_a_bad_reranker_is_refused_before_any_work(rerank, message):
    with pytest.raises(memlab.ConfigError, match=message):
        lab.parse_config(_config(rerank), source="rerank.yaml")


def test_a_reranked_system_keeps_its_name_and_its_twins_build():
    config = lab.parse_config(_config({"model": "rr", "depth": 30}), source="rerank.yaml")
    assert [s["name"] for s in config.resolved["systems"]] == ["event", "event+rr"]
    twin = lab.systems.EventSystem("event", settings=memlab.SearchSettings(strategy="exact"))
    reranked = lab.systems.EventSystem("event+rr", settings=twin.settings, rerank=lab.systems.RerankSpec("rr", 30))
    assert reranked.build_key() == twin.build_key() and reranked.reference().name == twin.reference().name
    assert reranked.reference().over.rerank is None, "FAISS exact over the same units, never re-ranked"
    assert reranked.describe()["rerank"] == {"model": "rr", "depth": 30}
