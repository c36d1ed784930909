"""A judged set reads its sessions from the agent's own event memory by DSN (instead of a sessions file): sessions
ingested through EventMemory come back with the event ids the judgments name, the same
questions and sessions as the JSONL route; only the users of the judged queries are read, read-only; a wrong DSN,
app or layer is one line naming the fix, without the DSN's password."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg
import pytest

import memlab
from memlab import lab
from memlab.storage import unit_housekeeping
from tests.conftest import make_session
from tests.integration.lab.datasets.test_judged_set import APP, JUDGED, judgment, write_judgments, write_pool
from tests.integration.lab.judging.test_pool import QUERIES, write_queries, write_sessions

PASSWORD = "Zq8vTx3mKp2w"  # the embedded server trusts local connections: any password connects


@pytest.fixture
def stored(scratch_store, embedder, tmp_path) -> dict:
    """u1 and u2's sessions (the JSONL route's too) ingested through EventMemory, plus rows that must never be
    read: u3 of the same app (same session and event ids as u1) and u1 of another app."""
    sessions = write_sessions(tmp_path / "logs.jsonl", APP)
    memory = memlab.EventMemory(scratch_store, embedder)
    memory.add_sessions(sessions)
    memory.add_sessions([make_session(APP, "u3", "s0", ["u3 keeps bees on the roof of her flat."] * 2),
                         make_session("other-app", "u1", "s0", ["In the other app I live in Oslo, not Porto."])])
    files = {"queries": write_queries(tmp_path / "queries.jsonl", APP, QUERIES),
             "pool": write_pool(tmp_path / "pool.json", sessions),
             "judgments": write_judgments(tmp_path / "j.jsonl", [judgment(*row) for row in JUDGED])}  # fmt: skip
    return {"files": files, "sessions": tmp_path / "logs.jsonl", "dsn": scratch_store.dsn}


def load(files: dict[str, Path], **extra) -> lab.Dataset:
    return lab.load_dataset({"name": "mine", "format": "judged", **{k: str(v) for k, v in files.items()}, **extra})


def _shape(data: lab.Dataset) -> tuple:
    questions = [(q.id, q.app_name, q.user_id, q.text, q.evidence, q.judged, q.answerable) for q in data.questions]
    users = [(u.app_name, u.user_id, [(s.id, [(e.id, e.author, e.timestamp, e.text) for e in s.events])
                                      for s in u.sessions]) for u in data.users]  # fmt: skip
    return questions, users


def test_sessions_read_by_dsn_match_the_jsonl_route_and_only_the_asking_users_are_read(stored, monkeypatch):
    read = []
    original = unit_housekeeping.stored_units

    def spy(conn, app_name, user_id, layer):  # the real read, recording whose rows it asked for
        read.append((app_name, user_id, layer))
        return original(conn, app_name, user_id, layer)

    monkeypatch.setattr(unit_housekeeping, "stored_units", spy)
    from_file = load({**stored["files"], "sessions": stored["sessions"]})
    from_store = load(stored["files"], dsn=stored["dsn"], app=APP)
    assert _shape(from_store) == _shape(from_file)
    assert [u.user_id for u in from_store.users] == ["u1"] and len(from_store.users[0].sessions) == 2
    assert read == [(APP, "u1", "event")]  # u2 asked no judged query; u3 and the other app's u1 never
    assert from_store.pool == from_file.pool


def test_the_dsn_may_come_from_an_environment_variable(stored, monkeypatch):
    monkeypatch.setenv("AGENT_DSN", stored["dsn"])
    data = load(stored["files"], dsn_env="AGENT_DSN")
    assert {q.id: q.evidence for q in data.questions}["q-cat"] == (("s0", "s0-e0"),)
    monkeypatch.delenv("AGENT_DSN")
    with pytest.raises(memlab.ConfigError, match="`dsn_env` names AGENT_DSN, which is not set"):
        load(stored["files"], dsn_env="AGENT_DSN")


def test_dsn_default_reads_the_embedded_server_like_open_store(store, embedder, tmp_path, app_name):
    """`dsn: default` is MEMLAB_DSN, else the embedded server under MEMLAB_HOME (where an agent on memlab's
    defaults keeps its memory)."""
    sessions = [make_session(app_name, "u1", f"s{i}", texts) for i, texts in enumerate(
        [["I adopted a grey cat called Miso last spring.", "Lovely, cats are great company."]])]  # fmt: skip
    memlab.EventMemory(store, embedder).add_sessions(sessions)
    pool = json.loads(write_pool(tmp_path / "pool.json", sessions).read_text())
    pool["queries"] = [dict(q, app=app_name) for q in pool["queries"] if q["query_id"] == "q-cat"]
    (tmp_path / "pool.json").write_text(json.dumps(pool))
    files = {"queries": write_queries(tmp_path / "q.jsonl", app_name, QUERIES[:1]), "pool": tmp_path / "pool.json",
             "judgments": write_judgments(tmp_path / "j.jsonl", [judgment("q-cat", "s0-e0", 1)])}  # fmt: skip
    (question,) = load(files, dsn="default").questions
    assert question.evidence == (("s0", "s0-e0"),) and question.app_name == app_name


def _url(dsn: str, **change) -> str:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    return psycopg.conninfo.make_conninfo(**{**info, "password": PASSWORD, **change})


@pytest.mark.parametrize(("change", "error", "message"), [
    ({"app": "wrong-app"}, memlab.ConfigError, r"asked in app 'judged-test', not 'wrong-app'.*fix `app`"),
    ({"layer": "chunk:4:1"}, memlab.ConfigError, r"no events of judged-test/u1 in layer 'chunk:4:1' \(their "
                                                 r"memory has layers \['event'\]\); check `dsn`, `app` and `layer`"),
    ({"port": "1"}, memlab.DatabaseUnavailableError, r"cannot read stored sessions from PostgreSQL at .*fix the DSN"),
    ({"dbname": "no_such_db"}, memlab.DatabaseUnavailableError, r"no_such_db.*fix the DSN"),
    ({"dsn": "postgresql://me:" + PASSWORD + "@[bad"}, memlab.ConfigError, r"`dsn`: the dsn given is not a"),
])  # fmt: skip
def test_a_wrong_dsn_app_or_layer_is_one_line_without_the_password(stored, change, error, message):
    """Every DSN here carries a password; none of it may reach the error line."""
    entry = {"dsn": _url(stored["dsn"], **{k: v for k, v in change.items() if k in ("port", "dbname")}),
             **{k: v for k, v in change.items() if k not in ("port", "dbname")}}  # fmt: skip
    with pytest.raises(error, match=message) as caught:
        load(stored["files"], **entry)
    text = str(caught.value)
    assert PASSWORD not in text and "Zq8vTx3" not in text and len(text.strip().splitlines()) == 1


def test_a_database_without_event_memory_is_refused_and_left_as_it_was(stored):
    """Read-only: pointing the set at a database that is not memlab's creates nothing in it."""
    name = f"empty_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(stored["dsn"], autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        empty = _url(stored["dsn"], dbname=name)
        with pytest.raises(memlab.ConfigError, match="holds no event memory") as caught:
            load(stored["files"], dsn=empty)
        assert PASSWORD not in str(caught.value)
        with psycopg.connect(empty) as conn:
            tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0]
            extensions = conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        assert (tables, extensions) == (0, 0)
    finally:
        with psycopg.connect(stored["dsn"], autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_a_judged_entry_names_sessions_or_a_dsn_not_both(stored):
    with pytest.raises(memlab.ConfigError, match=r"give exactly one, got `sessions`, `dsn`"):
        load({**stored["files"], "sessions": stored["sessions"]}, dsn=stored["dsn"])
    with pytest.raises(memlab.ConfigError, match=r"`app` go\(es\) with `dsn`"):
        load({**stored["files"], "sessions": stored["sessions"]}, app=APP)


def test_a_run_on_a_judged_set_read_by_dsn_keeps_the_password_out_of_the_run_folder(stored, tmp_path, memlab_home):
    config = {"name": "by-dsn", "k": 5, "sweeps": [], "systems": [{"name": "event", "granularity": "event",
                                                                    "strategy": "exact"}],
              "datasets": [{"name": "mine", "format": "judged", "dsn": _url(stored["dsn"]), "app": APP,
                            **{k: str(v) for k, v in stored["files"].items()}}]}  # fmt: skip
    out = lab.run_experiment(lab.parse_config(config, source="by-dsn"), tmp_path / "run", home=memlab_home,
                             log=lambda *a: None)  # fmt: skip
    scores = lab.RunFolder(out).scores
    assert {"judged@5", "bpref"} <= set(scores.metric)
    for path in out.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
