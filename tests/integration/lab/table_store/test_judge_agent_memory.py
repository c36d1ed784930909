"""Labelling a user's own pgvector table where it is, as a role that may only SELECT it: `memlab questions generate
--store` writes questions from the texts the `agent_memory` table holds (in the table's sessions, or one session per
user where the layout maps none), `memlab judge pool` pools the systems that search the table, and the generated
set, loaded as a judged set whose sessions are the table's rows (`store:` instead of `sessions:`), runs through
`memlab eval` with recall equal to a brute-force recount. Every pooled hit and every evidence event is a row of the
asking user, and the database is left exactly as it was."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace

import numpy as np
import psycopg
import pytest
import yaml
from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app
from tests.integration.table_store.test_agent_memory import ARTICLE_DDL, INSERT
from tests.support.table_store import brute_force, catalog_snapshot, drop_role, own_database, select_only_role, settle

K = 10
DEPTH = 5
DSN_ENV = "AGENT_JUDGE_DSN"
BRUTE = "SELECT event_id, embedding FROM agent_memory WHERE app_name = %s AND user_id = %s AND embed_model = %s"
SYSTEMS = [{"name": "hnsw40", "store": "agent", "strategy": "hnsw", "ef_search": 40},
           {"name": "exact", "store": "agent", "strategy": "exact"}]  # fmt: skip


def _text(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


@pytest.fixture(scope="module")
def agent(store, embedder, tmp_path_factory):
    """The agent_memory table filled from a synthetic set (one row per text and user), its SELECT-only DSN, the
    rows by (user, event id), and the set's own questions (to pool)."""
    data = lab.generate_synth(seed=5, users=12, min_events=6, max_events=120)
    rows, seen = [], set()
    for session in data.sessions():
        for event in session.events:
            if (session.user_id, event.text) in seen:  # no two rows of a user tie on distance
                continue
            seen.add((session.user_id, event.text))
            rows.append((session.app_name, session.user_id, session.id, event.id, event.author, event.timestamp,
                         event.text))  # fmt: skip
    vectors = embedder.embed_documents([r[6] for r in rows])
    with own_database(store.dsn, "ts_judge") as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(ARTICLE_DDL.replace("vector(768)", f"vector({embedder.dimension})"))
            with conn.cursor() as cur:
                cur.executemany(INSERT, [(*r, embedder.model_id, _text(v)) for r, v in zip(rows, vectors, strict=True)])
        settle(dsn)
        role, ro_dsn = select_only_role(dsn, ["agent_memory"])
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv(DSN_ENV, ro_dsn)
                yield {"dsn": dsn, "app": rows[0][0], "model": embedder.model_id, "data": data,
                       "rows": {(r[1], r[3]): {"session": r[2], "author": r[4], "text": r[6]} for r in rows},
                       "folder": tmp_path_factory.mktemp("agent-judge")}  # fmt: skip
        finally:
            drop_role(dsn, role)


def config(agent, name: str = "agent", **store) -> dict:
    """An experiment on the table: one store, its systems and the generated judged set read from its rows."""
    folder = agent["folder"]
    return {
        "name": f"judge-{name}", "k": K, "plots": False, "sweeps": [],
        "stores": [{"name": name, "dsn_env": DSN_ENV, "layout": "agent-memory", "app": agent["app"],
                    "model": agent["model"], "limits": {"max_qps": None}, **store}],
        "datasets": [{"name": "generated", "format": "judged", "store": name, "queries": str(folder / f"{name}.jsonl"),
                      "pool": str(folder / f"{name}.pool.json"),
                      "judgments": str(folder / f"{name}.judgments.jsonl")}],
        "systems": [{**s, "store": name} for s in SYSTEMS],
    }  # fmt: skip


def write_config(agent, name: str = "agent", **store):
    path = agent["folder"] / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config(agent, name, **store)))
    return path


def generate(agent, name: str = "agent", **store) -> dict:
    """`memlab questions generate --config FILE --store NAME`, with the catalog read before and after."""
    path = write_config(agent, name, **store)
    before = catalog_snapshot(agent["dsn"])
    result = CliRunner().invoke(app, ["questions", "generate", "--config", str(path), "--store", name, "--out",
                                      str(agent["folder"] / f"{name}.jsonl")])  # fmt: skip
    assert result.exit_code == 0, result.output
    read = {kind: agent["folder"] / f"{name}{suffix}" for kind, suffix in (
        ("queries", ".jsonl"), ("judgments", ".judgments.jsonl"), ("pool", ".pool.json"))}  # fmt: skip
    return {"config": path, "before": before, "after": catalog_snapshot(agent["dsn"]), "output": result.output,
            "queries": [json.loads(line) for line in read["queries"].read_text().splitlines()],
            "judgments": [json.loads(line) for line in read["judgments"].read_text().splitlines()],
            "pool": json.loads(read["pool"].read_text())}  # fmt: skip


@pytest.fixture(scope="module")
def generated(agent, memlab_home):
    return generate(agent)


def test_questions_are_generated_from_the_table_rows_and_name_them(agent, generated):
    assert generated["after"] == generated["before"], "generating questions changed nothing in the database"
    queries = generated["queries"]
    assert len(queries) >= 8 and {q["app"] for q in queries} == {agent["app"]}
    assert '"store": "agent"' in generated["output"]  # the printed data set entry reads the store, not a file
    by_id = {q["query_id"]: q for q in queries}
    for query in generated["pool"]["queries"]:
        assert query["hits"]
        for hit in query["hits"]:
            row = agent["rows"][(query["user"], hit["event_id"])]  # a row of the asking user
            assert (hit["session"], hit["text"], hit["author"]) == (row["session"], row["text"], row["author"])
    judged = {(j["query"], j["event_id"]) for j in generated["judgments"]}
    assert {j["relevance"] for j in generated["judgments"]} == {1} and {q for q, _ in judged} == set(by_id)
    assert all((by_id[q]["user"], e) in agent["rows"] for q, e in judged)


def test_the_questions_are_those_of_the_same_sessions_read_from_a_file(agent, generated):
    """The table holds the synthetic set's sessions (one row per text): the rule generator finds the same facts."""
    users = [lab.datasets.UserHistory(u.app_name, u.user_id,
                                      [replace(s, events=[e for e in s.events if (s.user_id, e.id) in agent["rows"]])
                                       for s in u.sessions])
             for u in agent["data"].users]  # fmt: skip
    from_file = lab.datasets.template_questions(lab.Dataset("synth", users, []))
    assert sorted((q["user"], q["text"]) for q in from_file.queries) == sorted(
        (q["user"], q["text"]) for q in generated["queries"])


def test_a_table_without_sessions_gives_one_session_per_user(agent, generated, memlab_home):
    flat = generate(agent, "flat", columns={"session": None})
    assert flat["after"] == flat["before"]
    source = lab.config.store_sessions(lab.load_config(flat["config"]), "flat")
    per_user = defaultdict(int)
    for user, _ in agent["rows"]:
        per_user[user] += 1
    assert {u.user_id: [len(s.events) for s in u.sessions] for u in source.users} == {u: [n] for u, n in
                                                                                       per_user.items()}  # fmt: skip
    assert {s.id for s in source.sessions()} == {"-"}
    for query in flat["pool"]["queries"]:
        for hit in query["hits"]:
            assert hit["session"] == "-" and (query["user"], hit["event_id"]) in agent["rows"]
    assert sorted(q["text"] for q in flat["queries"]) == sorted(q["text"] for q in generated["queries"])


def test_the_pool_of_the_table_systems_names_table_rows(agent, generated, embedder):
    """The synthetic set's questions of four users (asked of app `default`: the store's app), pooled at depth 5
    by the systems that search the table: every hit a row of the asking user, the exact system's share the
    brute-force top 5 of the user's rows."""
    asked = [q for q in agent["data"].questions if q.user_id in {"u000", "u003", "u005", "u007"}][:12]
    queries = agent["folder"] / "pool-queries.jsonl"
    queries.write_text("".join(json.dumps({"query_id": q.id, "app": "default", "user": q.user_id, "text": q.text,
                                           "asked_at": "2027-01-01T00:00:00+00:00", "origin": "file"}) + "\n"
                               for q in asked))  # fmt: skip
    out = agent["folder"] / "pool.json"
    before = catalog_snapshot(agent["dsn"])
    result = CliRunner().invoke(app, ["judge", "pool", "--config", str(generated["config"]), "--queries", str(queries),
                                      "--depth", str(DEPTH), "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert catalog_snapshot(agent["dsn"]) == before, "pooling changed nothing in the database"
    pool = json.loads(out.read_text())
    assert pool["store"] == "agent" and [s["name"] for s in pool["systems"]] == ["hnsw40", "exact"]
    assert [q["query_id"] for q in pool["queries"]] == [q.id for q in asked]
    for query in pool["queries"]:
        by_system = defaultdict(set)
        for hit in query["hits"]:
            row = agent["rows"][(query["user"], hit["event_id"])]
            assert (hit["session"], hit["text"], hit["author"]) == (row["session"], row["text"], row["author"])
            for found in hit["found_by"]:
                by_system[found["system"]].add(hit["event_id"])
        truth = brute_force(agent["dsn"], BRUTE, [agent["app"], query["user"], agent["model"]],
                            embedder.embed_query(query["text"]))  # fmt: skip
        assert by_system["exact"] == {i for i, _ in truth[:DEPTH]}
        assert len(by_system["hnsw40"]) == DEPTH


def test_the_generated_set_read_from_the_table_runs_through_eval(agent, generated, embedder):
    """`store: agent` in place of `sessions:`: the judged set's sessions are the table's rows of its users, the
    systems search the table, and recall@10 of each equals a recount (the exact one: from a brute-force scan)."""
    out = agent["folder"] / "run"
    before = catalog_snapshot(agent["dsn"])
    result = CliRunner().invoke(app, ["eval", "--config", str(generated["config"]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert catalog_snapshot(agent["dsn"]) == before
    metrics = json.loads((out / "metrics.json").read_text())
    evidence = defaultdict(set)
    for line in generated["judgments"]:
        evidence[line["query"]].add(line["event_id"])
    users = {q["query_id"]: q["user"] for q in generated["queries"]}
    truth = {qid: [i for i, _ in brute_force(agent["dsn"], BRUTE, [agent["app"], users[qid], agent["model"]],
                                             embedder.embed_query(q["text"]))[:K]]
             for q in generated["queries"] if (qid := q["query_id"])}  # fmt: skip
    recount = np.mean([len(evidence[q] & set(truth[q])) / len(evidence[q]) for q in users])
    assert metrics[f"generated/exact/recall@{K}"] == pytest.approx(recount, abs=1e-9)
    frame = lab.RunFolder(out).runs("generated")["hnsw40"].frame
    frame = frame[(frame["rank"] > 0) & (frame["rank"] <= K)]
    hits = {qid: set(group.unit_id) for qid, group in frame.groupby("question_id")}
    found = np.mean([len(evidence[q] & hits.get(q, set())) / len(evidence[q]) for q in users])
    assert metrics[f"generated/hnsw40/recall@{K}"] == pytest.approx(found, abs=1e-9)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["datasets"][0]["questions"] == len(users) and manifest["stores"]["agent"]["model_checks"]
    events = lab.RunFolder(out).events("generated")
    assert {(u, e) for u, e in zip(events.user_id, events.event_id, strict=True)} == {
        key for key in agent["rows"] if key[0] in set(users.values())}  # every row of the asking users, no more


def test_a_judged_set_names_one_source_of_sessions(agent, generated, tmp_path):
    cfg = config(agent)
    cfg["datasets"][0]["sessions"] = str(tmp_path / "logs.jsonl")
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(cfg))
    result = CliRunner().invoke(app, ["eval", "--config", str(path), "--out", str(tmp_path / "two")])
    assert result.exit_code == 2
    assert "give exactly one, got `sessions`, `store`" in " ".join(result.output.split())
    alone = CliRunner().invoke(app, ["check-dataset", str(agent["folder"] / "agent.jsonl"), "--format", "judged",
                                     "--pool", str(agent["folder"] / "agent.pool.json"), "--judgments",
                                     str(agent["folder"] / "agent.judgments.jsonl")])  # fmt: skip
    assert alone.exit_code == 2 and "give exactly one, got none" in " ".join(alone.output.split())


def _refused(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 2, result.output
    return " ".join(result.output.split())


def test_bad_sources_of_questions_and_queries_are_refused_naming_the_fix(agent, generated, tmp_path):
    cfg, out = str(generated["config"]), str(tmp_path / "q.jsonl")
    assert "exactly one" in _refused("questions", "generate", "--out", out)
    assert "exactly one" in _refused("questions", "generate", "--out", out, "--sessions", cfg, "--config", cfg,
                                     "--store", "agent")  # fmt: skip
    assert "--store NAME goes with --config FILE" in _refused("questions", "generate", "--out", out, "--store", "agent")
    assert "--app goes with --store" in _refused("questions", "generate", "--out", out, "--sessions", cfg, "--app", "a")
    assert "has no store of that name (did you mean 'agent'?)" in _refused(
        "questions", "generate", "--out", out, "--config", cfg, "--store", "agnet")
    several = write_config(agent, "several", app=None)  # the table's app column holds the apps: name one
    text = _refused("questions", "generate", "--out", out, "--config", str(several), "--store", "several")
    assert "holds the rows of several apps (column app_name); name the app to read with --app" in text
    nobody = tmp_path / "nobody.jsonl"
    nobody.write_text(json.dumps({"query_id": "q1", "app": "default", "user": "nobody", "text": "Where do I live?",
                                  "asked_at": "2027-01-01T00:00:00+00:00", "origin": "file"}) + "\n")  # fmt: skip
    text = _refused("judge", "pool", "--config", cfg, "--queries", str(nobody), "--out", str(tmp_path / "p.json"))
    assert f"user 'nobody' of app '{agent['app']}' has no row in public.agent_memory (store 'agent')" in text
    assert not (tmp_path / "q.jsonl").exists() and not (tmp_path / "p.json").exists()
