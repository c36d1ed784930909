"""Labelling end to end: unlabelled sessions, queries recorded by `EventMemory.search` with the query log on, a
stratified sample of them, a pool of two systems, a simulated assessor's judgments, and an experiment on the
judged set that reports judged@k and bpref; erasing the user removes their logged queries."""

from __future__ import annotations

import json

import memlab
from memlab import lab
from tests.integration.lab.judging.test_pool import QUERIES, write_config, write_sessions
from tests.support.scores import labelled

# what answers each query: the simulated assessor judges a pooled event relevant when it is listed here
GOLD = {"What pet do I have?": {"s0-e0"}, "Where does my sister live?": {"s0-e2"},
        "What car do I drive?": {"s9-e2"}}  # fmt: skip


def test_from_a_query_log_to_judged_metrics(tmp_path, store, embedder, app_name):
    sessions = write_sessions(tmp_path / "logs.jsonl", app_name)
    memory = memlab.EventMemory(store, embedder, query_log=memlab.QueryLog(enabled=True))
    memory.add_sessions(sessions)
    for _, user, text in QUERIES:
        memory.search(app_name, user, text)
    sample = lab.datasets.sample_logged_queries(store, n=10, app=app_name)
    queries = lab.datasets.write_query_file(tmp_path / "queries.jsonl", sample.queries)
    assert sorted(q["text"] for q in sample.queries) == sorted(GOLD)

    config = lab.load_config(write_config(tmp_path / "exp.yaml", tmp_path / "logs.jsonl"))
    pool = lab.judging.pool_queries(config, queries, 2, store, embedders={"default": embedder})
    lab.datasets.write_pool(pool, tmp_path / "pool.json")
    assert [s["name"] for s in pool["systems"]] == ["event", "chunk3"]
    lines = [{"query": q["query_id"], "event_id": h["event_id"], "relevance": int(h["event_id"] in GOLD[q["text"]]),
              "assessor": "simulated", "time": "2026-12-01T10:00:00+00:00"}
             for q in pool["queries"] for h in q["hits"]]  # fmt: skip
    (tmp_path / "judgments.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert sum(line["relevance"] for line in lines) == 3  # each answer was pooled

    raw = json.loads((tmp_path / "exp.yaml").read_text())
    raw.update(k=5, datasets=[{"name": "mine", "format": "judged", "queries": str(queries),
                               "sessions": str(tmp_path / "logs.jsonl"), "pool": str(tmp_path / "pool.json"),
                               "judgments": str(tmp_path / "judgments.jsonl")}])  # fmt: skip
    out = lab.run_experiment(lab.parse_config(raw, source="e2e"), tmp_path / "run", dsn=store.dsn,
                             log=lambda *a: None)  # fmt: skip
    scores = labelled(lab.RunFolder(out).scores).set_index(["system", "metric"]).value
    for system in ("event", "chunk3"):
        assert scores[(system, "recall@5")] == 1.0  # the pooled systems find every judged answer
        assert 0.0 < scores[(system, "judged@5")] <= 1.0 and 0.0 < scores[(system, "bpref")] <= 1.0
    assert "**Not in the pool**: `faiss-exact" in (out / "report.md").read_text()

    assert memlab.events.logged_queries(store, app_name, "u1")
    memory.forget_user(app_name, "u1")
    assert memlab.events.logged_queries(store, app_name, "u1") == []
    assert [q.text for q in memlab.events.logged_queries(store, app_name, "u2")] == ["What car do I drive?"]
