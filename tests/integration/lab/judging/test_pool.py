"""Pooling: `memlab judge pool` runs every system of a tiny experiment (two systems over fixture
sessions) on a query file and writes the union of their first d events per query, recording systems and depth."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app
from tests.conftest import make_session

DEPTH = 2
U1 = [["I adopted a grey cat called Miso last spring.", "Lovely, cats are great company.",
       "My sister lives in Porto and teaches piano.", "Porto is a beautiful city."],
      ["I started training for a half marathon in October.", "Good luck with the training!",
       "My favourite food is mushroom risotto.", "Risotto takes patience."]]  # fmt: skip
U2 = [["I work as a nurse on night shifts at the city hospital.", "Night shifts are hard.",
       "I drive a small red hatchback to work.", "Red cars are easy to find."]]  # fmt: skip


def write_sessions(path: Path, app_name: str) -> list[memlab.Session]:
    """Sessions of two users as a memlab JSONL file (no questions: a user's logs before anything is labelled)."""
    sessions = [make_session(app_name, "u1", f"s{i}", texts) for i, texts in enumerate(U1)]
    sessions += [make_session(app_name, "u2", "s9", U2[0])]
    users = [lab.datasets.UserHistory(app_name, u, [s for s in sessions if s.user_id == u]) for u in ("u1", "u2")]
    lab.datasets.write_jsonl(lab.Dataset("logs", users, []), path)
    return sessions


def write_queries(path: Path, app_name: str, rows: list[tuple[str, str, str]]) -> Path:
    at = datetime(2026, 12, 1, 10, 0, tzinfo=UTC).isoformat()
    path.write_text("".join(json.dumps({"query_id": qid, "app": app_name, "user": user, "text": text,
                                        "asked_at": at, "origin": "file"}) + "\n"
                            for qid, user, text in rows))  # fmt: skip
    return path


def write_config(path: Path, sessions: Path, systems: list[dict] | None = None) -> Path:
    systems = systems or [{"name": "event", "granularity": "event", "strategy": "exact"},
                          {"name": "chunk3", "granularity": "chunk", "chunk_size": 3, "chunk_overlap": 0,
                           "strategy": "exact"}]  # fmt: skip
    path.write_text(json.dumps({"name": "tiny-pool", "datasets": [{"name": "logs", "format": "memlab",
                                                                    "path": str(sessions)}],
                                "systems": systems}))  # fmt: skip
    return path


QUERIES = [("q-cat", "u1", "What pet do I have?"), ("q-sister", "u1", "Where does my sister live?"),
           ("q-car", "u2", "What car do I drive?")]  # fmt: skip


@pytest.fixture(scope="module")
def pooled(tmp_path_factory, memlab_home) -> tuple[dict, list[memlab.Session], str]:
    folder = tmp_path_factory.mktemp("pool")
    app_name = "pool-test"
    sessions = write_sessions(folder / "logs.jsonl", app_name)
    config = write_config(folder / "exp.yaml", folder / "logs.jsonl")
    queries = write_queries(folder / "queries.jsonl", app_name, QUERIES)
    out = folder / "pool.json"
    result = CliRunner().invoke(app, ["judge", "pool", "--config", str(config), "--queries", str(queries),
                                      "--depth", str(DEPTH), "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text()), sessions, app_name


def test_the_pool_records_its_systems_depth_config_and_time(pooled):
    pool, _, _ = pooled
    assert [s["name"] for s in pool["systems"]] == ["event", "chunk3"]
    assert pool["depth"] == DEPTH and pool["depth_unit"] == "events"
    assert pool["config"] == "tiny-pool" and pool["dataset"] == "logs"
    assert datetime.fromisoformat(pool["created_at"]).tzinfo is not None
    assert [q["query_id"] for q in pool["queries"]] == [q for q, _, _ in QUERIES]


def test_each_hit_is_an_event_with_its_text_session_time_and_author(pooled):
    pool, sessions, _ = pooled
    events = {(s.user_id, s.id, e.id): e for s in sessions for e in s.events}
    for query in pool["queries"]:
        assert query["hits"], query["query_id"]
        for hit in query["hits"]:
            event = events[(query["user"], hit["session"], hit["event_id"])]  # never another user's event
            assert hit["text"] == event.text and hit["author"] == event.author
            assert datetime.fromisoformat(hit["at"]) == event.timestamp


def test_the_pool_is_the_union_of_each_systems_first_d_events(pooled, store, embedder):
    """Each system contributes exactly its first d events (a chunk of three events is cut at d), and the event
    system's share is what plain event search returns at top d."""
    pool, sessions, app_name = pooled
    memory = memlab.EventMemory(store, embedder)
    memory.add_sessions(sessions)
    for query in pool["queries"]:
        by_system: dict[str, set] = {"event": set(), "chunk3": set()}
        for hit in query["hits"]:
            for found in hit["found_by"]:
                assert 1 <= found["rank"] <= DEPTH
                by_system[found["system"]].add((hit["session"], hit["event_id"]))
        assert all(len(found) == DEPTH for found in by_system.values()), by_system
        assert {(h["session"], h["event_id"]) for h in query["hits"]} == by_system["event"] | by_system["chunk3"]
        expected = memory.search(app_name, query["user"], query["text"],
                                 memlab.SearchSettings(top_k=DEPTH, strategy="exact"))  # fmt: skip
        assert by_system["event"] == {(h.session_id, h.unit_id) for h in expected}


def test_a_query_of_a_user_without_sessions_is_refused_naming_the_user(tmp_path, store, embedder):
    sessions = tmp_path / "logs.jsonl"
    write_sessions(sessions, "pool-test")
    config = lab.load_config(write_config(tmp_path / "exp.yaml", sessions))
    queries = write_queries(tmp_path / "q.jsonl", "pool-test", [("q1", "nobody", "Where do I live?")])
    with pytest.raises(memlab.MemlabError, match=r"pool-test/nobody.*add their sessions"):
        lab.judging.pool_queries(config, queries, 5, store, embedders={"default": embedder})
