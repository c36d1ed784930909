"""`memlab probe --store` on the design article's `agent_memory` table, where it is, as a role that may only SELECT
it: 12 users of 6 to 120 rows written by the packaged model, a config whose store names no system (so it is
searched by `agent-hnsw` and `agent-exact`), and a questions file whose labels name the table's event ids.

Two probes with a row deleted by the table's owner between them: the second counts the lost label, fires the
built-in alert and says so in its Prometheus textfile (read back with prometheus_client's parser). The exact
system's recall equals a brute-force recount from the rows, the index health names the index, its operator class
and build parameters, the rows no search finds and the users whose plan scanned their rows exactly, the manifest
holds the probe's time per question against the bare SQL of the same searches, a swapped query embedder is
refused with one error before any question is embedded, and the database's catalog is the same after each probe."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict

import numpy as np
import psycopg
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from memlab import lab
from memlab.cli import app as cli
from tests.integration.table_store.test_agent_memory import ARTICLE_DDL, INSERT
from tests.support.table_store import brute_force, catalog_snapshot, drop_role, own_database, select_only_role, settle

DATASET = "agent-q"
K = 10
QUESTIONS_PER_USER = 3
PROBED, EXACT = "agent-hnsw", "agent-exact"
BRUTE = "SELECT event_id, embedding FROM agent_memory WHERE app_name = %s AND user_id = %s"
VARIABLE = "AGENT_PROBE_DSN"


def _text(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


@pytest.fixture(scope="module")
def agent(store, embedder, tmp_path_factory):
    """The agent_memory database filled from a synthetic set of 12 users, its SELECT-only DSN, a questions file
    whose labels name the rows written, and a config whose store names no system."""
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
    held = {(r[1], r[3]) for r in rows}
    questions, per_user = [], defaultdict(int)
    for q in data.questions:
        kept = [e for e in q.relevant if (q.user_id, e) in held]
        if not kept or per_user[q.user_id] >= QUESTIONS_PER_USER:
            continue
        per_user[q.user_id] += 1
        questions.append({"type": "question", "id": q.id, "user": q.user_id, "text": q.text, "relevant": kept})
    folder = tmp_path_factory.mktemp("agent-probe")
    path = folder / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in questions))
    with own_database(store.dsn, "ts_probe") as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(ARTICLE_DDL.replace("vector(768)", f"vector({embedder.dimension})"))
            with conn.cursor() as cur:
                cur.executemany(INSERT, [(*r, embedder.model_id, _text(v)) for r, v in zip(rows, vectors, strict=True)])
        settle(dsn)
        role, ro_dsn = select_only_role(dsn, ["agent_memory"])
        try:
            yield {"dsn": dsn, "ro_dsn": ro_dsn, "app": rows[0][0], "model": embedder.model_id, "sizes": dict(sizes),
                   "questions": questions, "path": path, "folder": folder, "rows": len(rows)}  # fmt: skip
        finally:
            drop_role(dsn, role)


def write_config(agent, name: str, *, max_qps: float | None = None, **extra) -> str:
    cfg = {"name": "agent-probe", "k": K,
           "stores": [{"name": "agent", "dsn_env": VARIABLE, "layout": "agent-memory", "app": agent["app"],
                       "model": agent["model"], "limits": {"max_qps": max_qps}}],
           "datasets": [{"name": DATASET, "format": "memlab", "path": str(agent["path"]), "store": "agent"}],
           **extra}  # fmt: skip
    path = agent["folder"] / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def probe(agent, *args: str, store: str = "agent"):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(VARIABLE, agent["ro_dsn"])
        return CliRunner().invoke(cli, ["probe", "--store", store, *args])


def samples(path) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(path.read_text()) for s in f.samples}  # fmt: skip


def _deleted(agent) -> dict:
    """The label the owner deletes between the probes: one of a question with two labels or more."""
    question = next(q for q in agent["questions"] if len(q["relevant"]) >= 2)
    return {"question": question["id"], "user": question["user"], "event": question["relevant"][0]}


@pytest.fixture(scope="module")
def probes(agent, memlab_home):
    """Two probes of the table through the CLI, the second after the owner deleted one labelled row, with the
    catalog read before and after each."""
    folder, config = agent["folder"], write_config(agent, "probe")
    snapshots = [catalog_snapshot(agent["dsn"])]
    first = probe(agent, "--config", config, "--out", str(folder / "first"), "--textfile", str(folder / "first.prom"))
    assert first.exit_code == 0, first.output
    snapshots.append(catalog_snapshot(agent["dsn"]))
    gone = _deleted(agent)
    with psycopg.connect(agent["dsn"], autocommit=True) as conn:  # the table's owner, not memlab
        deleted = conn.execute("DELETE FROM agent_memory WHERE app_name = %s AND user_id = %s AND event_id = %s",
                               [agent["app"], gone["user"], gone["event"]]).rowcount  # fmt: skip
    assert deleted == 1
    snapshots.append(catalog_snapshot(agent["dsn"]))
    prom = folder / "memlab.prom"
    second = probe(agent, "--config", config, "--out", str(folder / "second"), "--against", str(folder / "first"),
                   "--textfile", str(prom), "--alert", "recall@10<0.05")  # fmt: skip
    snapshots.append(catalog_snapshot(agent["dsn"]))
    return {"first": folder / "first", "second": folder / "second", "output": second.output, "code": second.exit_code,
            "prom": prom, "snapshots": snapshots, "gone": gone}  # fmt: skip


def test_a_row_deleted_between_two_probes_is_a_stale_label_and_fires_the_built_in_alert(probes, agent):
    assert probes["code"] == 3, probes["output"]
    assert "FIRING new_lost_labels>0" in " ".join(probes["output"].split())
    manifest = lab.RunFolder(probes["second"]).manifest
    entry = manifest["probe"]
    assert manifest["status"] == "complete" and entry["memory"] == "table" and entry["system"] == PROBED
    assert entry["table"] == "public.agent_memory" and entry["store"] == "agent"
    assert entry["metrics"]["lost_labels"] == 1 and entry["metrics"]["new_lost_labels"] == 1
    assert entry["stale_labels"] == 1 and entry["left_out"] == 0
    gone = probes["gone"]
    assert [(s["question_id"], s["user_id"], s["event_id"]) for s in entry["stale"]] == [
        (gone["question"], gone["user"], gone["event"])]
    fired = {a["alert"]: a["fired"] for a in entry["alerts"]}
    assert fired == {"recall@10<0.05": False, "new_lost_labels>0": True}
    assert entry["metrics"]["drift_p"] is not None and 0 <= entry["metrics"]["drift_p"] <= 1
    assert lab.RunFolder(probes["first"]).manifest["probe"]["metrics"]["lost_labels"] == 0
    report = (probes["second"] / "report.md").read_text()
    assert "Read-only probe of table `public.agent_memory` (store `agent`)" in report
    assert "lost_labels = 1" in report and f"| {gone['question']} " in report


def test_the_textfile_says_what_the_probe_found(probes, agent):
    found = samples(probes["prom"])
    assert found[("memlab_probe_success", ())] == 1
    assert found[("memlab_probe_stale_labels", ())] == 1 and found[("memlab_probe_new_lost_labels", ())] == 1
    assert found[("memlab_probe_alert_firing", (("alert", "new_lost_labels>0"),))] == 1
    assert found[("memlab_probe_alert_firing", (("alert", "recall@10<0.05"),))] == 0
    assert found[("memlab_probe_questions", ())] == len(agent["questions"])
    metrics = json.loads((probes["second"] / "metrics.json").read_text())
    recall = found[("memlab_probe_metric", (("app", agent["app"]), ("metric", f"recall@{K}")))]
    assert recall == pytest.approx(metrics[f"{DATASET}/{PROBED}/recall@{K}"])
    assert found[("memlab_probe_metric", (("app", agent["app"]), ("metric", "lost_labels")))] == 1
    first = samples(agent["folder"] / "first.prom")
    assert first[("memlab_probe_stale_labels", ())] == 0 and first[("memlab_probe_alert_firing",
                                                                     (("alert", "new_lost_labels>0"),))] == 0


def test_the_exact_systems_recall_equals_a_recount_from_the_rows(probes, agent, embedder):
    """Recounted after the deletion, as the second probe saw the table: the deleted label left its question's
    relevant set (a stale label is never a miss)."""
    metrics = json.loads((probes["second"] / "metrics.json").read_text())
    gone, found = probes["gone"], []
    for q in agent["questions"]:
        truth = brute_force(agent["dsn"], BRUTE, [agent["app"], q["user"]], embedder.embed_query(q["text"]))
        labels = set(q["relevant"]) - ({gone["event"]} if q["id"] == gone["question"] else set())
        found.append(len(labels & {i for i, _ in truth[:K]}) / len(labels))
    assert len(found) >= 30
    assert metrics[f"{DATASET}/{EXACT}/recall@{K}"] == pytest.approx(np.mean(found), abs=1e-9)
    assert metrics[f"{DATASET}/{PROBED}/recall_vs_exact"] > 0.5, "the probed system is compared with the exact one"
    assert f"{DATASET}/{EXACT}/recall_vs_exact" not in metrics


def test_index_health_names_the_index_the_rows_and_the_users_scanned_exactly(probes, agent):
    folder = lab.RunFolder(probes["second"])
    health = folder.manifest["probe"]["table_health"]
    assert health["table"] == "public.agent_memory" and health["system"] == PROBED and health["distance"] == "cosine"
    indexes = folder.table("probe_table_indexes", DATASET)
    hnsw = indexes.set_index("index").loc["agent_memory_hnsw"]
    assert hnsw.method == "hnsw" and hnsw.opclass == "vector_cosine_ops" and hnsw.params == "ef_construction=64, m=16"
    assert bool(hnsw.valid) and hnsw.index_bytes > 0 and hnsw.table_bytes > 0 and hnsw.ratio > 0
    rows = folder.table("probe_table_rows", DATASET).iloc[0]
    assert rows.rows == agent["rows"] - 1 and rows.null_embeddings == 0 and rows.other_dimension == 0
    users = folder.table("probe_table_users", DATASET)
    assert len(users) == len(agent["sizes"]) >= 10
    assert dict(zip(users.user, users.rows, strict=True)) == {
        u: n - (u == probes["gone"]["user"]) for u, n in agent["sizes"].items()}
    assert (users.scans_exactly == ~users.index_used.astype(bool)).all()
    assert health["exact_users"] == [f"{a}/{u}" for a, u, e in zip(users.app, users.user, users.scans_exactly,
                                                                     strict=True) if e]  # fmt: skip
    largest = max(agent["sizes"], key=agent["sizes"].get)
    assert bool(users.set_index("user").loc[largest].index_used), "the largest user's plan walks the HNSW index"
    report = (probes["second"] / "report.md").read_text()
    assert "## Index health" in report and "vector_cosine_ops" in report and "### Plan per labelled user" in report


def test_the_manifest_holds_the_time_per_question_against_the_bare_sql(probes):
    entry = lab.RunFolder(probes["second"]).manifest["probe"]
    timing = entry["timing"]
    assert timing["seconds_per_question"] == pytest.approx(entry["seconds_per_question"])  # the run's own latency
    for mean in ("", "p50_"):
        probe_s, bare_s = timing[f"{mean}seconds_per_question"], timing[f"bare_sql_{mean}seconds_per_question"]
        assert probe_s > 0 and bare_s > 0 and timing[f"{mean}ratio_to_bare_sql"] == pytest.approx(probe_s / bare_s)
    assert timing["max_qps"] is None and timing["rate_limit_seconds_per_question"] == 0
    assert "### Time per question" in (probes["second"] / "report.md").read_text()
    assert "the bare SQL" in probes["output"] and "x; p50s" in probes["output"]


def test_the_report_is_redone_from_the_folder_alone(probes, agent, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(probes["second"], folder)
    (folder / "report.md").unlink()
    result = CliRunner().invoke(cli, ["report", "--run", str(folder)])
    assert result.exit_code == 0, result.output
    redone = (folder / "report.md").read_text()
    assert "## Index health" in redone and "### Plan per labelled user" in redone and "lost_labels = 1" in redone


def test_the_database_is_left_as_it_was_by_each_probe(probes):
    before_first, after_first, before_second, after_second = probes["snapshots"]
    assert after_first == before_first
    assert after_second == before_second
    relations = {name for _, name, _, _ in after_second["relations"]}
    assert relations == {"agent_memory", "agent_memory_id_seq", "agent_memory_pkey", "agent_memory_hnsw",
                         "agent_memory_scope", "agent_memory_app_name_user_id_event_id_embed_model_key"}


def test_an_exact_system_scans_every_user_and_the_store_limits_hold(probes, agent, memlab_home, tmp_path):
    """`--system` picks the exact one; the store's max_qps spaces the probe's statements. Against the probe that
    saw the deleted row's loss, the loss is acknowledged."""
    config = write_config(agent, "limited", max_qps=200)
    result = probe(agent, "--config", config, "--system", EXACT, "--out", str(tmp_path / "exact"), "--against",
                   str(probes["second"]))  # fmt: skip
    assert result.exit_code == 0, result.output
    folder = lab.RunFolder(tmp_path / "exact")
    entry = folder.manifest["probe"]
    assert entry["system"] == EXACT and entry["limits"]["max_qps"] == 200
    users = folder.table("probe_table_users", DATASET)
    assert users.scans_exactly.all() and len(entry["table_health"]["exact_users"]) == len(agent["sizes"])
    assert entry["timing"]["max_qps"] == 200 and entry["timing"]["rate_limit_seconds_per_question"] > 0


def test_a_swapped_query_embedder_is_refused_before_any_question(agent, memlab_home, model_server, tmp_path):
    """Another model of the same size behind an OpenAI-compatible endpoint: the stored texts it re-embeds point
    elsewhere than the stored vectors, so the probe stops with one error before a question is embedded."""
    model_server.embedding_dim = 384
    config = write_config(agent, "swapped", embedders=[{"name": "default", "kind": "openai",
                                                         "base_url": model_server.base_url, "model": "other"}])
    prom = tmp_path / "memlab.prom"
    result = probe(agent, "--config", config, "--out", str(tmp_path / "swapped"), "--textfile", str(prom))
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert text.count("error:") == 1 and "store 'agent', app 'memlab-synth', embedder 'default'" in text
    assert "does not reproduce the vectors stored in public.agent_memory" in text and "another model" in text
    assert not list((tmp_path / "swapped").glob("runs/*")), "no system was asked anything"
    embedded = [t for path, body in model_server.requests if path == "/v1/embeddings" for t in body["input"]]
    assert embedded and not {q["text"] for q in agent["questions"]} & set(embedded), "no question was embedded"
    found = samples(prom)  # a failed probe: its textfile says so and holds no figure
    assert found[("memlab_probe_success", ())] == 0
    assert set(found) == {("memlab_probe_success", ()), ("memlab_probe_run_timestamp_seconds", ())}


def test_bad_store_arguments_are_named(agent, memlab_home, tmp_path):
    config = write_config(agent, "plain")
    text = " ".join(probe(agent, "--config", config, "--system", "hnsw40", "--out", str(tmp_path / "x")).output.split())
    assert "--system 'hnsw40': store 'agent' has no system of that name" in text and PROBED in text
    result = probe(agent, "--config", config, "--out", str(tmp_path / "y"), store="agnet")
    assert result.exit_code == 2 and "--store agnet" in result.output and "did you mean 'agent'" in result.output
    result = CliRunner().invoke(cli, ["probe", "--store", "agent", "--out", str(tmp_path / "z")])
    assert result.exit_code == 2 and "give that config as --config FILE" in " ".join(result.output.split())
    result = probe(agent, "--config", config, "--dsn", agent["ro_dsn"], "--out", str(tmp_path / "w"))
    assert result.exit_code == 2 and "drop --dsn and --layer" in " ".join(result.output.split())


BARE_DDL = """
CREATE TABLE agent_memory (
    id bigserial PRIMARY KEY, app_name text NOT NULL, user_id text NOT NULL, session_id text NOT NULL,
    event_id text NOT NULL, author text, occurred_at timestamptz NOT NULL, body text NOT NULL,
    embed_model text NOT NULL, embedding vector
)"""
TEXTS = ["I moved to Lyon last spring.", "My sister Ana plays the cello.", "I am allergic to peanuts.",
         "Our dog Rex is a border collie.", "I work as a nurse at night."]  # fmt: skip


def test_index_health_warns_of_a_missing_index_and_rows_no_search_finds(store, embedder, memlab_home, tmp_path):
    """A table without a vector index, with a NULL embedding and a row of another dimension: the probe (its labels
    given as --labels) names each problem, and its hnsw searches scanned every user's rows."""
    with own_database(store.dsn, "ts_probe_bare") as dsn:
        rows = [("bot", f"u{u}", "s1", f"e{i}", "user", f"2024-01-0{i + 1}", text)
                for u in range(3) for i, text in enumerate(TEXTS)]  # fmt: skip
        vectors = embedder.embed_documents([r[6] for r in rows])
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(BARE_DDL)
            with conn.cursor() as cur:
                cur.executemany(INSERT, [(*r, embedder.model_id, _text(v)) for r, v in zip(rows, vectors, strict=True)])
                cur.execute(INSERT.replace("%s::vector)", "NULL)"), ("bot", "u0", "s2", "e-null", "user",
                                                                    "2024-02-01", "Not embedded yet.", "m"))
                cur.execute(INSERT, ("bot", "u1", "s2", "e-small", "user", "2024-02-01", "A tiny vector.", "m",
                                     "[1,0,0]"))  # fmt: skip
        settle(dsn)
        role, ro_dsn = select_only_role(dsn, ["agent_memory"])
        try:
            labels = tmp_path / "labels.jsonl"
            labels.write_text("".join(json.dumps({"type": "question", "id": f"q{u}", "user": f"u{u}",
                                                  "text": "Which city did I move to?", "relevant": ["e0"]}) + "\n"
                                      for u in range(3)))  # fmt: skip
            config = tmp_path / "bare.yaml"
            config.write_text(yaml.safe_dump({
                "name": "bare", "k": 3, "stores": [{"name": "agent", "dsn_env": VARIABLE, "layout": "agent-memory",
                                                    "app": "bot", "limits": {"max_qps": None}}],
                "datasets": [{"name": "bare-q", "format": "memlab", "path": str(labels), "store": "agent"}]}))
            result = probe({"ro_dsn": ro_dsn}, "--config", str(config), "--labels", str(labels), "--out",
                           str(tmp_path / "out"))  # fmt: skip
        finally:
            drop_role(dsn, role)
    assert result.exit_code == 0, result.output
    entry = lab.RunFolder(tmp_path / "out").manifest["probe"]
    warnings = " ".join(entry["table_health"]["warnings"])
    assert "no valid vector index of public.agent_memory serves cosine distance" in warnings
    assert "1 of 17 rows have a NULL embedding" in warnings
    assert "1 rows have embeddings of another dimension than 384 (3: 1, 384: 15)" in warnings
    assert "strategy hnsw was asked for, but the plan scanned the rows of 3 of 3 users exactly" in warnings
    assert entry["table_health"]["exact_users"] == ["bot/u0", "bot/u1", "bot/u2"]
    assert entry["plans"] == {"hnsw-scan": 3} and "(plan hnsw-scan)" in " ".join(entry["plan_notes"])
    assert entry["metrics"]["lost_labels"] == 0 and entry["dataset"] == "labels"
    report = (tmp_path / "out" / "report.md").read_text()
    assert "No vector index: every search scans the user's rows." in report and "Not embedded yet" not in report
