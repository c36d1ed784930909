"""`memlab eval --config` end to end, as a user would run it: their own JSONL conversations and a LongMemEval-format
file, every sweep, one run folder that honours the output contract."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app
from tests.conftest import ROOT
from tests.support.scores import labelled

EXAMPLE_JSONL = ROOT / "fixtures" / "jsonl" / "example.jsonl"


def _lme_date(at: datetime) -> str:
    return at.strftime("%Y/%m/%d (%a) %H:%M")


def write_longmemeval_file(path) -> None:
    """Two questions in LongMemEval's own layout (as distributed): a knowledge update and an abstention."""
    t0 = datetime(2023, 4, 1, 10, 0, tzinfo=UTC)
    chatter = [
        [{"role": "user", "content": "Can you suggest a recipe for a quick weeknight pasta dinner?"},
         {"role": "assistant", "content": "Garlic, chili flakes, olive oil and spaghetti: fifteen minutes."}],
        [{"role": "user", "content": "What is a good stretching routine after a long run?"},
         {"role": "assistant", "content": "Hamstrings, calves and hip flexors, thirty seconds each side."}],
        [{"role": "user", "content": "Help me write a polite email declining a meeting invitation."},
         {"role": "assistant", "content": "Thank you for the invitation; unfortunately I cannot attend this week."}],
    ]  # fmt: skip
    old = [{"role": "user", "content": "I just joined a gym, my membership costs 40 dollars a month.",
            "has_answer": True},
           {"role": "assistant", "content": "Great, 40 dollars a month is a fair price for a gym."}]  # fmt: skip
    new = [{"role": "user", "content": "I switched gyms, the new membership is 55 dollars a month but has a pool.",
            "has_answer": True},
           {"role": "assistant", "content": "A pool is worth the extra 15 dollars for many people."}]  # fmt: skip
    sessions = [*chatter, old, new]
    ids = ["c1", "c2", "c3", "ans_old", "ans_new"]
    dates = [_lme_date(t0 + timedelta(days=3 * i)) for i in range(len(sessions))]
    questions = [
        {"question_id": "ku1", "question_type": "knowledge-update", "question": "How much do I pay for my gym?",
         "answer": "55 dollars a month", "question_date": _lme_date(t0 + timedelta(days=30)),
         "haystack_session_ids": ids, "haystack_dates": dates, "haystack_sessions": sessions,
         "answer_session_ids": ["ans_old", "ans_new"]},
        {"question_id": "ku2_abs", "question_type": "knowledge-update", "question": "What is my cat's name?",
         "answer": "You did not mention a cat", "question_date": _lme_date(t0 + timedelta(days=30)),
         "haystack_session_ids": ids, "haystack_dates": dates, "haystack_sessions": sessions,
         "answer_session_ids": []},
    ]  # fmt: skip
    path.write_text(json.dumps(questions))


@pytest.fixture(scope="module")
def user_run(tmp_path_factory, memlab_home, store):
    """One `memlab eval --config` with both data sets and every sweep, at test size."""
    folder = tmp_path_factory.mktemp("user-experiment")
    lme = folder / "my_longmemeval.json"
    write_longmemeval_file(lme)
    config = {
        "name": "my-experiment",
        "k": 10,
        "plots": False,  # no figures: no test reads them here (test_sweeps.py and test_progress.py draw them)
        "datasets": [
            {"name": "mine", "format": "memlab", "path": str(EXAMPLE_JSONL)},
            {"name": "lme-format", "format": "longmemeval", "path": str(lme)},
        ],
        "systems": [{"name": "event-exact", "granularity": "event", "strategy": "exact"}],
        "sweeps": [s for s in lab.SWEEPS if s != "answer"],  # it needs a model server:
                                                             # tests/integration/lab/sweeps/test_answer_e2e.py
        # every sweep on a small grid (what each adds is asserted below; the grids themselves are tested in
        # test_sweeps.py, test_filtered.py and test_headline_cutoff.py): fewer runs to ask, score and report
        "options": {"granularity": {"chunks": [[4, 1]]},
                    "retrieval": {"renderings": ["text"], "modes": ["vector", "hybrid"], "fact_keys": [],
                                  "time": ["boost"], "time_rendering": "text", "query_renderings": ["as_is"]},
                    "filtered": {"total_rows": 400, "ef_search": [40], "iterative": ["off", "relaxed_order"],
                                 "relations": ["on_topic"], "queries": 2, "background_tenants": 5,
                                 "shares": [0.01, 0.1]},
                    "cutoff": {"grid": [0.5, 0.9]},
                    "labels": {"systems": ["event-exact", "chunk4o1"], "depths": [5], "pool_sizes": [2]}},
    }  # fmt: skip
    path = folder / "experiment.yaml"
    path.write_text(yaml.safe_dump(config))
    out = folder / "run"
    result = CliRunner().invoke(app, ["eval", "--config", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_output_contract(user_run):
    for name in ("runs", "scores.csv", "scores.parquet", "manifest.json", "metrics.json", "report.md"):
        assert (user_run / name).exists(), name
    assert not list(user_run.glob("*.png")) and "![" not in (user_run / "report.md").read_text(), "plots: false"
    scores = labelled(pd.read_csv(user_run / "scores.csv"))
    assert list(scores.columns) == ["dataset", "system", "metric", "group", "group_value", "value", "questions"]
    assert set(scores.dataset) == {"mine", "lme-format"}, "the dataset name is the one given in the config"
    for dataset in ("mine", "lme-format"):
        mine = scores[(scores.dataset == dataset) & (scores.system == "event-exact")].set_index("metric").value
        for metric in ("recall@10", "mrr@10", "ndcg@10", "hit@10", "empty_rate", "recall_vs_exact", "context_chars",
                       "latency_ms_p50", "latency_ms_p95"):  # fmt: skip
            assert metric in mine.index, (dataset, metric)
        assert mine["recall_vs_exact"] == 1.0, "pgvector exact agrees with FAISS exact"
    metrics = json.loads((user_run / "metrics.json").read_text())
    assert metrics["mine/event-exact/recall@10"] == pytest.approx(
        scores[(scores.dataset == "mine") & (scores.system == "event-exact") & (scores.metric == "recall@10")]
        .value.iloc[0])  # fmt: skip
    assert len(metrics) == len(scores), "one flat key per long-form row"
    manifest = json.loads((user_run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["config"]["given"]["name"] == "my-experiment" and manifest["config"]["resolved"]["k"] == 10
    assert manifest["embedders"]["default"].endswith("all-MiniLM-L6-v2")
    assert {d["name"]: len(d["checksum"]) for d in manifest["datasets"]} == {"mine": 64, "lme-format": 64}
    assert manifest["versions"]["pgvector"] >= "0.8"


def test_every_sweep_appears_for_both_data_sets(user_run):
    scores = pd.read_csv(user_run / "scores.csv")
    for dataset in ("mine", "lme-format"):
        s = scores[scores.dataset == dataset]
        systems = set(s.system)
        assert {"event", "chunk4o1", "session", "facts-rules"} <= systems, "granularity"
        assert any(x.startswith("event@cut") for x in systems), "cutoff grid"
        assert (s.metric == "recommended_max_distance").any(), "cutoff recommendation"
        assert any(x.startswith("filtered:") for x in systems), "filtered search"
        assert "event[default]" in systems, "models"
        assert "extractor:rules" in systems, "facts"
        assert ((s.system == "ingest") & (s.metric == "ratio")).any(), "ingest"


def test_labels_are_scored_as_written(user_run):
    scores = labelled(pd.read_csv(user_run / "scores.csv"))
    s = scores[(scores.dataset == "lme-format") & (scores.system == "event-exact")].set_index("metric")
    assert s.loc["recall@10", "questions"] == 1, "the abstention question is not answerable"
    assert s.loc["correct_empty_rate", "questions"] == 1
    assert "session_recall@10" in s.index, "LongMemEval's answer sessions give session-level recall"
    assert "recall@10[qtype=knowledge-update]" in s.index
    mine = scores[(scores.dataset == "mine") & (scores.system == "event-exact")].set_index("metric")
    assert mine.loc["recall@10", "questions"] == 6 and mine.loc["correct_empty_rate", "questions"] == 2


def test_a_folder_derives_each_result_once_and_per_key(user_run):
    folder = lab.RunFolder(user_run)
    calls: list[str] = []
    assert folder.memo("t", "a", lambda: calls.append("a") or 1) == 1
    assert folder.memo("t", "a", lambda: calls.append("again") or 2) == 1, "kept, not computed again"
    assert folder.memo("t", "b", lambda: calls.append("b") or 3) == 3 and calls == ["a", "b"]
    assert folder.questions("mine") is folder.questions("mine"), "the labels are read once per folder"
    assert lab.RunFolder(user_run).memo("t", "a", lambda: 4) == 4, "memos belong to one folder object"


def test_a_folder_keeps_everything_it_read_in_its_one_memo(user_run):
    """One caching mechanism: the manifest, runs, scores and question tables are memos like the derived
    results, so what a folder object holds is in one place (and `forget` drops all of it at once)."""
    folder = lab.RunFolder(user_run)
    read = {name: getattr(folder, name) for name in
            ("manifest", "datasets", "all_runs", "scores", "question_scores", "question_table")}  # fmt: skip
    for name, value in read.items():
        assert folder.memo(name, None, lambda: "computed again") is value, name
    folder.forget()
    assert folder.memo("scores", None, lambda: "read again") == "read again"


def test_report_is_rebuilt_from_the_saved_runs_alone(user_run, tmp_path):
    """Scores and the report come from the folder: a copy scored again gives the same numbers."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(user_run, copy)
    for name in ("scores.csv", "scores.parquet", "metrics.json", "report.md"):
        (copy / name).unlink()
    again = lab.score_folder(copy)
    lab.write_report(copy)
    before = pd.read_parquet(user_run / "scores.parquet")
    volatile = before.metric.str.startswith("latency") | (before.system == "ingest")
    pd.testing.assert_frame_equal(before[~volatile].reset_index(drop=True),
                                  again[~volatile.values].reset_index(drop=True))  # fmt: skip
    assert "## mine" in (copy / "report.md").read_text() and not list(copy.glob("*.png")), "the saved config's plots"
    run = lab.runs.Run.load(user_run / "runs" / "mine__event-exact.parquet")
    assert run.dataset == "mine" and run.system == "event-exact" and run.reference == "faiss-exact-event"
    assert set(run.to_dataframe().question_id) == {q.id for q in lab.load_jsonl(EXAMPLE_JSONL).questions}


def test_set_overrides_and_bad_configs_fail_clearly(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "datasets": [{"name": "d", "format": "memlab",
                                                               "path": str(EXAMPLE_JSONL)}], "sweeps": []}))
    cfg = lab.load_config(path, ["k=5", "datasets.0.name=renamed"])
    assert cfg.k == 5 and cfg.resolved["datasets"][0]["name"] == "renamed"
    assert cfg.resolved["plots"] is True
    with pytest.raises(memlab.ConfigError, match="plots must be true or false"):
        lab.load_config(path, ["plots=maybe"])
    runner = CliRunner()
    bad = runner.invoke(app, ["eval", "--config", str(path), "--set", "sweeps=[nope]", "--out", str(tmp_path / "o")])
    assert bad.exit_code == 2 and "sweeps must be a list of" in bad.output and "Traceback" not in bad.output
    missing = tmp_path / "m.yaml"
    missing.write_text(yaml.safe_dump({"name": "m", "datasets": [{"name": "d", "format": "longmemeval",
                                                                  "path": "no/such/file.json"}]}))  # fmt: skip
    res = runner.invoke(app, ["eval", "--config", str(missing), "--out", str(tmp_path / "o2")])
    assert res.exit_code == 2 and "not found (looked in" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o2").exists(), "nothing is written when the input is bad"
    unknown = runner.invoke(app, ["eval", "--suite", "nightly"])
    assert unknown.exit_code == 2 and "unknown suite 'nightly'" in unknown.output


def test_shipped_suites_parse_and_name_files_in_the_checkout():
    for name in lab.config.suite_names():
        cfg = lab.load_suite(name)
        for spec in cfg.resolved["datasets"]:
            if "path" in spec:
                assert (ROOT / spec["path"]).exists(), (name, spec["path"])
    assert {"ci", "full", "fixtures"} <= set(lab.config.suite_names())


def test_an_openai_compatible_embedder_runs_from_the_config(tmp_path, embedder, memlab_home, store, monkeypatch):
    """An `embedders:` entry of kind openai, served by a local HTTP server that answers with the packaged model's
    vectors: the models sweep scores it beside the packaged model, and the two agree."""
    import threading
    from http.server import ThreadingHTTPServer

    from tests.integration.embedding.test_openai_compat import Endpoint, make_handler

    ep = Endpoint(vectorize=lambda texts: embedder.embed_documents(list(texts)), scale=1.0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(ep))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    monkeypatch.setenv("MEMLAB_TEST_API_KEY", "sk-test")
    try:
        config = lab.parse_config({
            "name": "endpoint",
            "embedders": [{"name": "default", "kind": "packaged"},
                          {"name": "api", "kind": "openai", "base_url": f"http://127.0.0.1:{server.server_address[1]}/v1",
                           "model": "minilm-behind-http", "api_key_env": "MEMLAB_TEST_API_KEY", "batch_size": 16}],
            "datasets": [{"name": "mine", "format": "memlab", "path": str(EXAMPLE_JSONL)}],
            "systems": [{"name": "event-api-exact", "strategy": "exact", "embedder": "api"}],
            "sweeps": ["models"],
        })  # fmt: skip
        out = lab.run_experiment(config, tmp_path / "run")
    finally:
        server.shutdown()
        server.server_close()
    folder = lab.RunFolder(out)
    by = labelled(folder.scores).pivot_table(index="system", columns="metric", values="value")
    assert by.loc["event[api]", "recall@10"] == pytest.approx(by.loc["event[default]", "recall@10"])
    assert by.loc["event-api-exact", "recall_vs_exact"] == 1.0
    assert folder.manifest["embedders"]["api"].startswith("openai:minilm-behind-http@127.0.0.1")
    assert ep.requests and all(r["headers"]["authorization"] == "Bearer sk-test" for r in ep.requests)
    assert max(len(batch) for batch in ep.inputs) <= 16, "texts are sent in batches"
