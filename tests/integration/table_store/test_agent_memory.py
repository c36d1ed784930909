"""memlab reading the design article's `agent_memory` table where it is, as a role that may only SELECT it: 12
users of 6 to 120 rows embedded with the packaged model (and, for the largest user, a few rows of a second model
id, as a migration leaves them). Search agrees with a brute-force recount of the table's own rows, the catalog is
read right, nothing in the database changes, and a model that is not the table's is caught."""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
import psycopg
import pytest

import memlab
from memlab import lab
from memlab.table_store import Layout, ModelMismatchError, ReadOnlyLimits, TableHit, open_table
from tests.support.table_store import (
    Altered,
    assert_same_top_k,
    brute_force,
    catalog_snapshot,
    drop_role,
    own_database,
    rotation,
    select_only_role,
    settle,
)

# The article's DDL as printed there, the dimension set to the packaged model's ("must equal your model's dimension").
ARTICLE_DDL = """
CREATE TABLE agent_memory (
    id           bigserial    PRIMARY KEY,
    app_name     text         NOT NULL,
    user_id      text         NOT NULL,
    session_id   text         NOT NULL,
    event_id     text         NOT NULL,
    author       text,
    occurred_at  timestamptz  NOT NULL,
    body         text         NOT NULL,
    embed_model  text         NOT NULL,
    embedding    vector(768)  NOT NULL,          -- must equal your model's dimension
    UNIQUE (app_name, user_id, event_id, embed_model)
);

CREATE INDEX agent_memory_hnsw ON agent_memory
    USING hnsw (embedding vector_cosine_ops);
CREATE INDEX agent_memory_scope ON agent_memory (app_name, user_id, occurred_at DESC);
"""
OTHER_MODEL = "other-model@v2"
OTHER_ROWS = 8
FAST = ReadOnlyLimits(max_qps=None)
INSERT = ("INSERT INTO agent_memory (app_name, user_id, session_id, event_id, author, occurred_at, body, embed_model,"
          " embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::vector)")  # fmt: skip
BRUTE = "SELECT event_id, embedding FROM agent_memory WHERE app_name = %s AND user_id = %s AND embed_model = %s"


@pytest.fixture(scope="module")
def agent(store, embedder):
    """The agent_memory database: rows, the questions per user (their query vectors), and a SELECT-only DSN."""
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
    sizes = defaultdict(int)
    for r in rows:
        sizes[r[1]] += 1
    largest = max(sizes, key=sizes.get)
    turn = rotation(embedder.dimension)
    with own_database(store.dsn, "ts_agent") as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(ARTICLE_DDL.replace("vector(768)", f"vector({embedder.dimension})"))
            with conn.cursor() as cur:
                cur.executemany(INSERT, [(*r, embedder.model_id, _text(v)) for r, v in zip(rows, vectors, strict=True)])
                others = [(r, v) for r, v in zip(rows, vectors, strict=True) if r[1] == largest][:OTHER_ROWS]
                cur.executemany(INSERT, [(*r, OTHER_MODEL, _text(v @ turn)) for r, v in others])
        settle(dsn)
        role, ro_dsn = select_only_role(dsn, ["agent_memory"])
        questions = defaultdict(list)
        for question in data.questions:
            questions[question.user_id].append(question.text)
        users = sorted(sizes, key=lambda u: (sizes[u], u))
        queries = {u: embedder.embed_query(questions[u][0]) for u in users}
        try:
            yield {"dsn": dsn, "ro_dsn": ro_dsn, "role": role, "app": rows[0][0], "sizes": dict(sizes),
                   "users": users, "largest": largest, "queries": queries, "rows": len(rows),
                   "model": embedder.model_id}  # fmt: skip
        finally:
            drop_role(dsn, role)


def _text(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


@pytest.fixture(scope="module")
def table(agent):
    with open_table(agent["ro_dsn"], "agent-memory", model=agent["model"], limits=FAST) as t:
        yield t


def test_the_catalog_reads_the_article_table(agent, table):
    catalog = table.catalog
    assert (catalog.schema, catalog.table, catalog.embedding_type, catalog.dimension) == (
        "public", "agent_memory", "vector", 384)
    [index] = catalog.indexes
    assert (index.name, index.method, index.opclass, index.distance) == (
        "agent_memory_hnsw", "hnsw", "vector_cosine_ops", "cosine")
    assert index.params == {"m": 16, "ef_construction": 64} and index.valid and index.cast is None
    assert index.size_bytes > 0
    assert catalog.estimated_rows == agent["rows"] + OTHER_ROWS  # analysed: the estimate is the count
    assert catalog.index_used_for("cosine") and not catalog.index_used_for("l2")
    assert not catalog.index_used_for("inner_product")
    counted = table.count_rows()
    assert (counted.rows, counted.null_embeddings, counted.other_dimension) == (agent["rows"] + OTHER_ROWS, 0, 0)
    assert counted.dimensions == {384: agent["rows"] + OTHER_ROWS}


def test_users_and_models_are_counted_in_sql_per_scope(agent, table):
    counts = table.users(agent["app"])
    assert counts == agent["sizes"]  # the store is scoped to the packaged model: the other model's rows are not here
    assert list(counts.values()) == sorted(counts.values(), reverse=True)
    assert table.users("no-such-app") == {}
    with open_table(agent["ro_dsn"], "agent-memory", limits=FAST) as every_model:
        assert every_model.users(agent["app"])[agent["largest"]] == agent["sizes"][agent["largest"]] + OTHER_ROWS
        assert every_model.models(agent["app"]) == {agent["model"]: agent["rows"], OTHER_MODEL: OTHER_ROWS}


def test_exact_search_is_the_brute_force_top_k_of_the_table_rows(agent, table):
    for user in agent["users"]:
        query = agent["queries"][user]
        truth = brute_force(agent["dsn"], BRUTE, [agent["app"], user, agent["model"]], query)
        hits = table.search(agent["app"], user, query, k=10, strategy="exact")
        assert hits.strategy == "exact" and hits.distance == "cosine"
        assert_same_top_k(hits.event_ids, [h.distance for h in hits], truth, 10)
        assert all(isinstance(h, TableHit) and h.text and h.session and h.time for h in hits)


def test_recall_against_the_read_back_vectors_equals_a_recount_from_the_table(agent, table):
    """The recall memlab reports for the index (against its exact baseline from `vectors`, as FAISS will compute
    it) is the recall a brute-force recount of the table's rows gives."""
    k, found_memlab, found_recount, total, trapped = 10, 0, 0, 0, 0
    for user in agent["users"]:
        query = agent["queries"][user]
        ids, matrix = table.vectors(agent["app"], user)
        truth = brute_force(agent["dsn"], BRUTE, [agent["app"], user, agent["model"]], query)
        assert sorted(ids) == sorted(i for i, _ in truth) and matrix.shape == (len(ids), 384)
        scores = matrix @ (query / np.linalg.norm(query)) / np.linalg.norm(matrix, axis=1)
        baseline = {ids[i] for i in np.argsort(-scores, kind="stable")[:k]}
        hits = table.search(agent["app"], user, query, k=k, strategy="hnsw", ef_search=40,
                            iterative_scan="relaxed_order")  # fmt: skip
        assert hits.strategy == "hnsw" and hits.index == "agent_memory_hnsw"
        found_memlab += len(baseline & set(hits.event_ids))
        found_recount += len({i for i, _ in truth[:k]} & set(hits.event_ids))
        total += min(k, len(truth))
        plain = table.search(agent["app"], user, query, k=k, strategy="hnsw", ef_search=10, iterative_scan="off")
        trapped += len({i for i, _ in truth[:k]} & set(plain.event_ids))
    assert found_memlab == found_recount
    assert found_recount / total >= 0.9  # iterative scans keep a small user's recall up in a shared index
    assert trapped / total < 0.7  # without them, the article's filtered-search trap: other users' rows fill ef_search


def test_auto_and_the_cutoff(agent, table):
    user = agent["largest"]
    query = agent["queries"][user]
    exact = table.search(agent["app"], user, query, k=10, strategy="exact")
    auto = table.search(agent["app"], user, query, k=10)
    assert auto.strategy == "exact" and auto.event_ids == exact.event_ids  # 120 rows: below memlab's exact threshold
    cut = exact[4].distance
    kept = table.search(agent["app"], user, query, k=10, strategy="exact", max_distance=cut)
    assert kept.event_ids == exact.event_ids[:5] and kept.dropped_by_cutoff == 5


def test_explain_says_whether_the_index_served_the_search(agent, table):
    user, app = agent["largest"], agent["app"]
    query = agent["queries"][user]
    walked = table.explain(app, user, query, strategy="hnsw")
    assert walked.index_used and walked.access == "agent_memory_hnsw" and walked.execution_ms > 0
    assert walked.shared_hit + walked.shared_read > 0 and walked.rows == 10
    scanned = table.explain(app, user, query, strategy="exact")
    assert not scanned.index_used and scanned.access != "agent_memory_hnsw"
    # The operator does not match the index's class: the index is ignored, which the catalog and the plan both say.
    mismatched = table.explain(app, user, query, strategy="hnsw", distance="l2")
    assert mismatched.index is None and not mismatched.index_used
    hits = table.search(app, user, query, strategy="hnsw", distance="l2")
    assert hits.index is None and hits.distance == "l2"


def test_texts_read_back_a_users_rows_oldest_first(agent, table):
    user = agent["users"][0]
    rows = table.texts(agent["app"], user)
    assert len(rows) == agent["sizes"][user]
    assert [r.time for r in rows] == sorted(r.time for r in rows)
    assert all(r.distance is None and r.text and r.author in ("user", "model") for r in rows)
    assert table.texts(agent["app"], user, limit=2) == rows[:2]


def test_the_model_check_per_model_value(agent, embedder):
    with open_table(agent["ro_dsn"], "agent-memory", limits=FAST) as every_model:
        checks = {c.model: c for c in every_model.check_model(embedder, agent["app"])}
    assert set(checks) == {agent["model"], OTHER_MODEL}
    assert checks[agent["model"]].matches and checks[agent["model"]].min_cosine > 0.999
    assert not checks[OTHER_MODEL].matches and "another model" in checks[OTHER_MODEL].problem
    with open_table(agent["ro_dsn"], "agent-memory", model=OTHER_MODEL, limits=FAST) as other, \
            pytest.raises(ModelMismatchError) as err:  # fmt: skip
        other.check_model(embedder, agent["app"])
    assert f"rows of model {OTHER_MODEL!r}" in str(err.value) and "another model" in str(err.value)


@pytest.mark.parametrize(("altered", "says"), [
    ({"vectors": lambda v: v @ rotation(384)}, "another model wrote them"),
    ({"texts": lambda t: "search_document: " + t}, "instruction prefix"),
    ({"vectors": lambda v: 2.0 * v}, "normalises differently"),
    ({"vectors": lambda v: v[:, :128] / np.linalg.norm(v[:, :128], axis=1, keepdims=True)}, "gives 128: another"),
])  # fmt: skip
def test_a_swapped_embedder_fails_the_model_check_with_what_and_the_fix(agent, table, embedder, altered, says):
    swapped = Altered(embedder, "swapped-model", **altered)
    with pytest.raises(ModelMismatchError) as err:
        table.check_model(swapped, agent["app"], user=agent["largest"], sample=12)
    message = str(err.value)
    assert says in message and "swapped-model" in message and "agent_memory" in message and "Fix:" in message


def test_every_transaction_is_read_only_with_the_timeouts(agent, table):
    with table.connection.work() as work:
        settings = work.execute("SELECT current_setting('transaction_read_only'), current_setting('statement_timeout'),"
                                " current_setting('lock_timeout'), current_setting('default_transaction_read_only'),"
                                " current_user").fetchone()  # fmt: skip
    assert settings == ("on", "30s", "1s", "on", agent["role"])
    with pytest.raises(memlab.ConfigError, match="refused"), table.connection.work() as work:
        work.execute("CREATE TEMP TABLE scratch (a int)")


def test_a_lock_or_a_long_statement_ends_the_read_not_the_application(agent):
    """DDL holding the table: the read gives up after lock_timeout (or statement_timeout, whichever is shorter),
    and so does opening the table (its index size needs the lock too)."""
    for limits, setting in ((ReadOnlyLimits(lock_timeout=0.2, max_qps=None), "lock_timeout=0.2 s"),
                            (ReadOnlyLimits(statement_timeout=0.3, lock_timeout=30, max_qps=None),
                             "statement_timeout=0.3 s")):  # fmt: skip
        with open_table(agent["ro_dsn"], "agent-memory", limits=limits) as t, psycopg.connect(agent["dsn"]) as holder:
            holder.execute("LOCK TABLE agent_memory IN ACCESS EXCLUSIVE MODE")
            started = time.monotonic()
            with pytest.raises(memlab.ConfigError, match=setting):
                t.users(agent["app"])
            with pytest.raises(memlab.ConfigError, match=setting):
                open_table(agent["ro_dsn"], "agent-memory", limits=limits)
            assert time.monotonic() - started < 5
            holder.rollback()
        assert t.users(agent["app"])  # the lock is gone: the same store reads again


def test_statements_are_spaced_by_max_qps(agent):
    with open_table(agent["ro_dsn"], "agent-memory", limits=ReadOnlyLimits(max_qps=10)) as t:
        t.users(agent["app"])
        started = time.monotonic()
        for _ in range(5):  # two statements each: the settings, then the read
            t.users(agent["app"])
        assert time.monotonic() - started >= 0.9


def test_nothing_in_the_database_changes(agent, embedder):
    """Every operation, as the SELECT-only role: the relations (temp ones too, checked while the session is
    open), indexes, extensions, server settings, table statistics and roles are the same afterwards."""
    before = catalog_snapshot(agent["dsn"])
    app, user = agent["app"], agent["largest"]
    query = agent["queries"][user]
    with open_table(agent["ro_dsn"], "agent-memory", limits=FAST) as t:
        t.count_rows()
        t.users(app)
        t.models(app)
        for strategy in ("exact", "hnsw", "auto"):
            t.search(app, user, query, strategy=strategy, iterative_scan="strict_order", max_distance=0.8)
            t.explain(app, user, query, strategy=strategy)
        t.vectors(app, user)
        t.texts(app, user)
        t.check_model(embedder, app, user=user)
        during = catalog_snapshot(agent["dsn"])
    after = catalog_snapshot(agent["dsn"])
    assert during["relations"] == before["relations"]
    assert after == before


def test_a_role_without_select_or_connect_is_told_the_grant(agent):
    role, dsn = select_only_role(agent["dsn"], [])
    try:
        with pytest.raises(memlab.ConfigError, match=f"GRANT SELECT ON public.agent_memory TO {role}"):
            open_table(dsn, "agent-memory")
        with psycopg.connect(agent["dsn"], autocommit=True) as conn:
            conn.execute(f"REVOKE CONNECT ON DATABASE {conn.info.dbname} FROM {role}")
        with pytest.raises(memlab.DatabaseUnavailableError, match="GRANT CONNECT ON DATABASE"):
            open_table(dsn, "agent-memory")
    finally:
        drop_role(agent["dsn"], role)


@pytest.mark.parametrize(("overrides", "says"), [
    ({"user": "user_idd"}, "has no column 'user_idd' (did you mean 'user_id'?)"),
    ({"session": "Session_Id"}, "has no column 'Session_Id' (did you mean 'session_id'?)"),
    ({"session": "session_id->>'id'"}, "session_id is of type text, not json or jsonb"),
    ({"embedding": "body"}, "is of type text in public.agent_memory"),
    ({"table": "agent_memories"}, "Near names: public.agent_memory"),
    ({"table": "other.agent_memory"}, "is not in schema 'other'"),
])  # fmt: skip
def test_a_layout_that_does_not_fit_the_table_is_refused_before_any_read(agent, overrides, says):
    with pytest.raises(memlab.ConfigError) as err:
        open_table(agent["ro_dsn"], "agent-memory", **overrides)
    assert says in str(err.value)


def test_a_model_scope_needs_a_model_column(agent):
    layout = Layout.preset("agent-memory", model=None)
    with pytest.raises(memlab.ConfigError, match="maps no model column"):
        open_table(agent["ro_dsn"], layout, model="x")
