"""`memlab eval` on the design article's `agent_memory` table, where it is, as a role that may only SELECT it: 12
users of 6 to 120 rows written by the packaged model (and, for the largest user, rows of a second model id), a
JSONL file of questions whose labels name the table's event ids, and systems that search the table through its
own HNSW index and exactly, beside FAISS exact over the vectors read back. The figures equal a brute-force recount
from the table's rows, the run folder is a run folder like any other (report, gate, compare, export), and the
database is left exactly as it was: nothing of memlab's is created there."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pandas as pd
import psycopg
import pytest
import yaml
from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from tests.conftest import ROOT
from tests.integration.table_store.test_agent_memory import ARTICLE_DDL, INSERT
from tests.support.scores import labelled
from tests.support.table_store import brute_force, catalog_snapshot, drop_role, own_database, select_only_role, settle

OTHER_MODEL = "other-model@v2"
DATASET = "agent-q"
K = 10
QUESTIONS_PER_USER = 3
BRUTE = "SELECT event_id, embedding FROM agent_memory WHERE app_name = %s AND user_id = %s AND embed_model = %s"
SYSTEMS = [
    {"name": "hnsw10-off", "store": "agent", "strategy": "hnsw", "ef_search": 10, "iterative_scan": "off"},
    {"name": "hnsw40", "store": "agent", "strategy": "hnsw", "ef_search": 40, "iterative_scan": "relaxed_order"},
    {"name": "exact", "store": "agent", "strategy": "exact"},
]
REFERENCE = "faiss-exact-agent"
EXAMPLE_JSONL = ROOT / "fixtures" / "jsonl" / "example.jsonl"


def _text(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


@pytest.fixture(scope="module")
def agent(store, embedder, tmp_path_factory):
    """The agent_memory database filled from a synthetic set, its SELECT-only DSN and a questions file whose
    labels name the rows that were written."""
    data = lab.generate_synth(seed=5, users=12, min_events=6, max_events=120)
    rows, seen = [], set()
    for session in data.sessions():
        for event in session.events:
            if (session.user_id, event.text) in seen:  # one row per text and user: no two rows tie on distance
                continue
            seen.add((session.user_id, event.text))
            rows.append((session.app_name, session.user_id, session.id, event.id, event.author, event.timestamp,
                         event.text))  # fmt: skip
    vectors = embedder.embed_documents([r[6] for r in rows])
    sizes: dict[str, int] = defaultdict(int)
    for r in rows:
        sizes[r[1]] += 1
    largest = max(sizes, key=sizes.get)
    held = {(r[1], r[3]) for r in rows}
    questions, per_user = [], defaultdict(int)
    for q in data.questions:
        kept = [e for e in q.relevant if (q.user_id, e) in held]
        if (q.relevant and not kept) or per_user[q.user_id] >= QUESTIONS_PER_USER:
            continue  # a label whose row was not written would make it another question
        per_user[q.user_id] += 1
        questions.append({"type": "question", "id": q.id, "user": q.user_id, "text": q.text, "relevant": kept})
    folder = tmp_path_factory.mktemp("agent-eval")
    path = folder / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in questions))
    with own_database(store.dsn, "ts_eval") as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(ARTICLE_DDL.replace("vector(768)", f"vector({embedder.dimension})"))
            with conn.cursor() as cur:
                cur.executemany(INSERT, [(*r, embedder.model_id, _text(v)) for r, v in zip(rows, vectors, strict=True)])
                others = [(r, v) for r, v in zip(rows, vectors, strict=True) if r[1] == largest][:8]
                cur.executemany(INSERT, [(*r, OTHER_MODEL, _text(-v)) for r, v in others])
        settle(dsn)
        role, ro_dsn = select_only_role(dsn, ["agent_memory"])
        try:
            yield {"dsn": dsn, "ro_dsn": ro_dsn, "app": rows[0][0], "model": embedder.model_id, "sizes": dict(sizes),
                   "questions": questions, "path": path, "folder": folder}  # fmt: skip
        finally:
            drop_role(dsn, role)


def config(agent, **store) -> dict:
    return {
        "name": "agent-table", "k": K, "plots": False,
        "stores": [{"name": "agent", "dsn_env": "AGENT_TABLE_DSN", "layout": "agent-memory", "app": agent["app"],
                    "model": agent["model"], "limits": {"max_qps": None}, **store}],
        "datasets": [{"name": DATASET, "format": "memlab", "path": str(agent["path"]), "store": "agent"}],
        "systems": [dict(s) for s in SYSTEMS],
        "sweeps": ["cutoff", "table"],
        "options": {"cutoff": {"grid": [0.5, 0.8]},
                    "table": {"systems": ["hnsw40"], "ef_search": [20, 80],
                              "iterative_scan": ["off", "relaxed_order"]}},
    }  # fmt: skip


@pytest.fixture(scope="module")
def run(agent, memlab_home):
    """One `memlab eval --config FILE --store agent` over the table (the file also names a data set and a system
    of memlab's own, which --store leaves out), with the catalog read before and after."""
    before = catalog_snapshot(agent["dsn"])
    path = agent["folder"] / "experiment.yaml"
    cfg = config(agent)
    cfg["datasets"].append({"name": "own", "format": "memlab", "path": str(EXAMPLE_JSONL)})
    cfg["systems"].append({"name": "event", "granularity": "event"})
    path.write_text(yaml.safe_dump(cfg))
    out = agent["folder"] / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_TABLE_DSN", agent["ro_dsn"])
        result = CliRunner().invoke(app, ["eval", "--config", str(path), "--store", "agent", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return {"out": out, "before": before, "after": catalog_snapshot(agent["dsn"]), "output": result.output}


def _recount(agent, embedder) -> dict[str, tuple[list[str], set[str]]]:
    """question id -> (the table's true top k by a brute-force scan of its rows, the labels)."""
    out = {}
    for q in agent["questions"]:
        truth = brute_force(agent["dsn"], BRUTE, [agent["app"], q["user"], agent["model"]],
                            embedder.embed_query(q["text"]))  # fmt: skip
        out[q["id"]] = ([i for i, _ in truth[:K]], set(q["relevant"]))
    return out


def _hits(out, system: str) -> dict[str, list[str]]:
    frame = lab.RunFolder(out).runs(DATASET)[system].frame
    frame = frame[(frame["rank"] > 0) & (frame["rank"] <= K)].sort_values("rank")
    return {qid: list(group.unit_id) for qid, group in frame.groupby("question_id")}


def test_recall_and_recall_vs_exact_equal_a_recount_from_the_table_rows(run, agent, embedder):
    metrics = json.loads((run["out"] / "metrics.json").read_text())
    truth = _recount(agent, embedder)
    answerable = [qid for qid, (_, labels) in truth.items() if labels]
    assert len(answerable) >= 20
    # recall@k of the exact search, and of FAISS over the vectors read back: the labels found in the true top k
    recall = np.mean([len(truth[q][1] & set(truth[q][0])) / len(truth[q][1]) for q in answerable])
    for system in ("exact", REFERENCE):
        assert metrics[f"{DATASET}/{system}/recall@{K}"] == pytest.approx(recall, abs=1e-9), system
    assert metrics[f"{DATASET}/exact/recall_vs_exact"] == pytest.approx(1.0)
    # each index search: its own hits against the labels, and against the true top k of the table's rows
    for system in ("hnsw10-off", "hnsw40", "hnsw40@ef20-off", "hnsw40@ef80-relaxed_order"):
        hits = _hits(run["out"], system)
        found = np.mean([len(truth[q][1] & set(hits.get(q, []))) / len(truth[q][1]) for q in answerable])
        overlap = np.mean([len(set(truth[q][0]) & set(hits.get(q, []))) / len(truth[q][0]) for q in answerable])
        assert metrics[f"{DATASET}/{system}/recall@{K}"] == pytest.approx(found, abs=1e-9), system
        assert metrics[f"{DATASET}/{system}/recall_vs_exact"] == pytest.approx(overlap, abs=1e-9), system
    # the filtered-search trap: one HNSW index shared by 12 users, ef_search 10 and no iterative scan
    assert metrics[f"{DATASET}/hnsw10-off/recall_vs_exact"] < metrics[f"{DATASET}/hnsw40/recall_vs_exact"]


def test_recall_and_empty_rate_by_memory_size_and_the_cutoff_on_table_distances(run, agent):
    scores = labelled(pd.read_csv(run["out"] / "scores.csv"))
    exact = scores[(scores.dataset == DATASET) & (scores.system == "exact")].set_index("metric")
    buckets = {"<=50" if n <= 50 else "51-500" for n in agent["sizes"].values()}
    assert buckets == {"<=50", "51-500"}
    for bucket in buckets:
        assert f"recall@{K}[size={bucket}]" in exact.index and f"empty_rate[size={bucket}]" in exact.index
    folder = lab.RunFolder(run["out"])
    cut = folder.scores[(folder.scores.role == "cut") & (folder.scores.parent == "hnsw40")]
    assert set(cut.system) >= {"hnsw40@cut0.5", "hnsw40@cut0.8"}, "cut-offs are derived runs of their parent"
    assert {folder.described(DATASET, s)["max_distance"] for s in cut.system} >= {0.5, 0.8}
    assert (scores[(scores.system == "exact")].metric == "recommended_max_distance").any()
    events = lab.RunFolder(run["out"]).events(DATASET)
    assert events.groupby("user_id").size().to_dict() == {u: n for u, n in agent["sizes"].items()
                                                          if u in {q["user"] for q in agent["questions"]}}


def test_the_plans_say_whether_the_index_was_used(run):
    metrics = json.loads((run["out"] / "metrics.json").read_text())
    assert metrics[f"{DATASET}/hnsw40/index_used[user=largest]"] == 1.0
    assert metrics[f"{DATASET}/exact/index_used[user=largest]"] == 0.0
    assert metrics[f"{DATASET}/exact/explain_ms[user=smallest]"] > 0
    plans = lab.RunFolder(run["out"]).table("table", DATASET)
    assert set(plans.user_size) == {"smallest", "largest"} and set(plans.system) == {s["name"] for s in SYSTEMS}


def test_the_run_folder_is_a_run_folder_like_any_other(run, tmp_path):
    out = run["out"]
    report = (out / "report.md").read_text()
    assert (out / "report.html").exists()
    assert "### table (agent-q)" in report and "vector_cosine_ops" in report and "EXPLAIN" in report
    assert f"recall@{K} by memory size" in report
    manifest = json.loads((out / "manifest.json").read_text())
    assert [d["name"] for d in manifest["datasets"]] == [DATASET], "--store agent: the store's data set only"
    assert "event" not in set(pd.read_csv(out / "scores.csv").system)
    facts = manifest["stores"]["agent"]
    assert facts["table"] == "public.agent_memory" and facts["index_used_for"]["cosine"]
    assert not facts["index_used_for"]["l2"]
    assert all(c["matches"] for c in facts["model_checks"]) and facts["model_checks"]
    assert "Pw-4471-xq" not in (out / "manifest.json").read_text()  # the DSN's password is never written
    runner = CliRunner()
    baseline = tmp_path / "baseline.json"
    assert runner.invoke(app, ["baseline", "--run", str(out), "--out", str(baseline)]).exit_code == 0
    gated = runner.invoke(app, ["report", "--baseline", str(baseline), "--run", str(out)])
    assert gated.exit_code == 0 and "no regression" in gated.output, gated.output
    compared = runner.invoke(app, ["report", "--run", str(out), "--against", str(out), "--out",
                                   str(tmp_path / "compare.md")])  # fmt: skip
    assert compared.exit_code == 0 and (tmp_path / "compare.md").exists(), compared.output
    exported = runner.invoke(app, ["export", "--run", str(out), "--out", str(tmp_path / "trec")])
    assert exported.exit_code == 0, exported.output
    assert (tmp_path / "trec" / "export.json").exists()


def test_the_database_is_left_as_it_was(run, agent):
    assert run["after"] == run["before"]
    relations = {name for _, name, _, _ in run["after"]["relations"]}
    assert relations == {"agent_memory", "agent_memory_id_seq", "agent_memory_pkey", "agent_memory_hnsw",
                         "agent_memory_scope", "agent_memory_app_name_user_id_event_id_embed_model_key"}
    assert {schema for schema, *_ in run["after"]["relations"]} == {"public"}


def _refused(agent, tmp_path, name: str, cfg: dict) -> tuple[str, object]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_TABLE_DSN", agent["ro_dsn"])
        result = CliRunner().invoke(app, ["eval", "--config", str(path), "--out", str(tmp_path / name)])
    return " ".join(result.output.split()), result


def test_an_embedder_that_is_not_the_tables_model_is_refused_before_any_search(agent, memlab_home, model_server,
                                                                               tmp_path):  # fmt: skip
    """Another model of the same size behind an OpenAI-compatible endpoint: the stored texts it re-embeds point
    elsewhere than the stored vectors, so the run stops with one error before a question is embedded or asked."""
    model_server.embedding_dim = 384
    cfg = config(agent)
    cfg["embedders"] = [{"name": "default", "kind": "openai", "base_url": model_server.base_url, "model": "other"}]
    text, result = _refused(agent, tmp_path, "swapped", cfg)
    assert result.exit_code == 2, result.output
    assert text.count("error:") == 1 and "store 'agent', app 'memlab-synth', embedder 'default'" in text
    assert "does not reproduce the vectors stored in public.agent_memory" in text and "another model" in text
    assert not list((tmp_path / "swapped").glob("runs/*")), "no system was asked anything"
    embedded = [t for path, body in model_server.requests if path == "/v1/embeddings" for t in body["input"]]
    assert embedded and not {q["text"] for q in agent["questions"]} & set(embedded), "no question was embedded"


def test_rows_of_two_models_need_the_store_scoped_to_one(agent, memlab_home, tmp_path):
    cfg = config(agent)
    del cfg["stores"][0]["model"]
    text, result = _refused(agent, tmp_path, "two-models", cfg)
    assert result.exit_code == 2
    assert f"has rows of 2 embedding models in public.agent_memory ({agent['model']}, {OTHER_MODEL})" in text
    assert "set `model: NAME` in stores.agent" in text
    assert not list((tmp_path / "two-models").glob("runs/*"))


def test_labels_must_name_rows_of_the_table(agent, memlab_home, tmp_path):
    bad = tmp_path / "bad.jsonl"
    first = agent["questions"][0]
    bad.write_text(json.dumps({**first, "relevant": ["no-such-row"]}) + "\n")
    cfg = config(agent)
    cfg["datasets"][0]["path"] = str(bad)
    text, result = _refused(agent, tmp_path, "bad-labels", cfg)
    assert result.exit_code == 2
    assert f"relevant event id(s) ['no-such-row'] are not rows of user '{first['user']}'" in text
    assert "column event_id" in text
