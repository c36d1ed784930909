"""Tables that are not the article's, mapped by hand: ids and metadata in a jsonb column (an L2 index, one app as a
constant, a quoted mixed-case text column), integer user ids with a halfvec expression index and no app or
session, and a plain `vector` column with NULLs and rows of another size. Plus the databases memlab cannot read:
no vector extension, no server."""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import numpy as np
import psycopg
import pytest

import memlab
from memlab import lab
from memlab.table_store import Columns, Layout, ReadOnlyLimits, open_table
from tests.support.table_store import assert_same_top_k, brute_force, drop_role, own_database, select_only_role

APP = "support-bot"
FAST = ReadOnlyLimits(max_qps=None)
USERS = 6
JSON_LAYOUT = Layout("lc_store", Columns(
    app=f"'{APP}'", user="cmetadata->>'user_id'", session="cmetadata->'conversation'->>'id'", event_id="id",
    author="cmetadata->>'role'", time="cmetadata->>'at'", text='"Doc Text"', embedding="embedding"))  # fmt: skip
HALF_LAYOUT = Layout("half_store", Columns(user="user_id", event_id="id", text="body", embedding="embedding"))
MESSY_LAYOUT = Layout("messy", Columns(app="app", user="user_id", event_id="id", text="body", embedding="embedding"))
NULL_ROWS, SMALL_ROWS = 3, 2


def _text(vector) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


@pytest.fixture(scope="module")
def mapped(store, embedder):
    data = lab.generate_synth(seed=5, users=12, min_events=6, max_events=120)
    rows, seen = [], set()
    for session in data.sessions():
        if int(session.user_id[1:]) >= USERS:
            continue
        for event in session.events:
            if (session.user_id, event.text) not in seen:
                seen.add((session.user_id, event.text))
                rows.append((session.user_id, session.id, event.id, event.author, event.timestamp, event.text))
    vectors = embedder.embed_documents([r[5] for r in rows])
    sizes = defaultdict(int)
    for r in rows:
        sizes[r[0]] += 1
    with own_database(store.dsn, "ts_mapped") as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute('CREATE TABLE lc_store (id uuid PRIMARY KEY, "Doc Text" text, embedding vector(384), '
                         "cmetadata jsonb)")  # fmt: skip
            conn.execute("CREATE TABLE half_store (id bigserial PRIMARY KEY, user_id bigint NOT NULL, body text, "
                         "embedding vector(384) NOT NULL)")  # fmt: skip
            conn.execute("CREATE TABLE messy (id text PRIMARY KEY, app text, user_id text, body text, "
                         "embedding vector)")  # no dimension: rows of any size
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO lc_store VALUES (%s, %s, %s::vector, %s)", [
                    (uuid.uuid5(uuid.NAMESPACE_URL, f"{r[1]}/{r[2]}"), r[5], _text(v),
                     json.dumps({"user_id": r[0], "conversation": {"id": r[1]}, "role": r[3],
                                 "at": r[4].isoformat()})) for r, v in zip(rows, vectors, strict=True)])  # fmt: skip
                cur.executemany("INSERT INTO half_store (user_id, body, embedding) VALUES (%s, %s, %s::vector)",
                                [(int(r[0][1:]), r[5], _text(v)) for r, v in zip(rows, vectors, strict=True)])
                cur.executemany("INSERT INTO messy VALUES (%s, %s, %s, %s, %s::vector)",
                                [(r[2], APP, r[0], r[5], _text(v)) for r, v in zip(rows, vectors, strict=True)])
                cur.executemany("INSERT INTO messy VALUES (%s, %s, %s, %s, %s)",
                                [(f"null-{i}", APP, "u000", "no vector yet", None) for i in range(NULL_ROWS)])
                cur.executemany("INSERT INTO messy VALUES (%s, %s, %s, %s, %s::vector)",
                                [(f"small-{i}", APP, "u000", "a test row", "[1,0,0]") for i in range(SMALL_ROWS)])
            conn.execute("CREATE INDEX lc_store_l2 ON lc_store USING hnsw (embedding vector_l2_ops) "
                         "WITH (m = 8, ef_construction = 32)")  # fmt: skip
            conn.execute("CREATE INDEX half_store_hnsw ON half_store USING hnsw ((embedding::halfvec(384)) "
                         "halfvec_cosine_ops)")  # fmt: skip
            conn.execute("CREATE TABLE ivf_store AS SELECT id, user_id, body, embedding FROM half_store")
            conn.execute("CREATE INDEX ivf_store_ip ON ivf_store USING ivfflat (embedding vector_ip_ops) "
                         "WITH (lists = 4)")  # fmt: skip
            conn.execute("ANALYZE")
        role, ro_dsn = select_only_role(dsn, ["lc_store", "half_store", "messy", "ivf_store"])
        queries = {}
        for question in data.questions:
            queries.setdefault(question.user_id, question.text)
        try:
            yield {"dsn": dsn, "ro_dsn": ro_dsn, "sizes": dict(sizes), "users": sorted(sizes),
                   "queries": {u: embedder.embed_query(queries[u]) for u in sizes}}  # fmt: skip
        finally:
            drop_role(dsn, role)


def test_json_metadata_with_a_constant_app_and_an_l2_index(mapped):
    with open_table(mapped["ro_dsn"], JSON_LAYOUT, limits=FAST) as table:
        catalog = table.catalog
        [index] = catalog.indexes
        assert (index.opclass, index.distance, index.params) == ("vector_l2_ops", "l2", {"m": 8, "ef_construction": 32})
        assert catalog.default_distance == "l2"
        assert catalog.index_used_for("l2") and not catalog.index_used_for("cosine")
        assert table.users(APP) == mapped["sizes"] and table.users("another-app") == {}
        for user in mapped["users"]:
            query = mapped["queries"][user]
            truth = brute_force(mapped["dsn"], "SELECT id, embedding FROM lc_store WHERE cmetadata->>'user_id' = %s",
                                [user], query, distance="l2")  # fmt: skip
            hits = table.search(APP, user, query, k=8, strategy="exact")
            assert hits.distance == "l2"
            assert_same_top_k(hits.event_ids, [h.distance for h in hits], truth, 8)
            assert all(h.session.startswith(f"{user}-s") and isinstance(h.time, datetime) for h in hits)
            assert table.search("another-app", user, query, strategy="exact") == []


def test_a_search_whose_operator_is_not_the_index_class_is_detected(mapped):
    user = max(mapped["sizes"], key=mapped["sizes"].get)
    with open_table(mapped["ro_dsn"], JSON_LAYOUT, limits=FAST) as table:
        query = mapped["queries"][user]
        served = table.explain(APP, user, query, strategy="hnsw")
        assert served.distance == "l2" and served.index == "lc_store_l2" and served.index_used
        ignored = table.explain(APP, user, query, strategy="hnsw", distance="cosine")
        assert ignored.index is None and not ignored.index_used and ignored.access != "lc_store_l2"


def test_a_halfvec_expression_index_on_integer_user_ids_without_app_or_session(mapped):
    with open_table(mapped["ro_dsn"], HALF_LAYOUT, limits=FAST) as table:
        [index] = table.catalog.indexes
        assert (index.opclass, index.distance, index.cast) == ("halfvec_cosine_ops", "cosine", "halfvec(384)")
        counts = table.users("any-app")  # no app column: the app asked for is a label
        assert counts == {str(int(u[1:])): n for u, n in mapped["sizes"].items()}
        user = max(mapped["sizes"], key=mapped["sizes"].get)
        query = mapped["queries"][user]
        walked = table.explain("any-app", str(int(user[1:])), query, strategy="hnsw")
        assert walked.index_used and walked.access == "half_store_hnsw"
        exact = table.search("any-app", str(int(user[1:])), query, k=10, strategy="exact")
        hnsw = table.search("any-app", str(int(user[1:])), query, k=10, strategy="hnsw")
        assert hnsw.index == "half_store_hnsw" and len(set(exact.event_ids) & set(hnsw.event_ids)) >= 8
        distances = {h.event_id: h.distance for h in exact}
        assert all(abs(h.distance - distances[h.event_id]) < 2e-3 for h in hnsw if h.event_id in distances)
        assert all(h.session is None and h.author is None for h in exact)


def test_an_ivfflat_inner_product_index_on_two_connections(mapped):
    user = max(mapped["sizes"], key=mapped["sizes"].get)
    query, uid = mapped["queries"][user], str(int(user[1:]))
    limits = ReadOnlyLimits(max_qps=None, connections=2)
    with open_table(mapped["ro_dsn"], Layout("ivf_store", HALF_LAYOUT.columns), limits=limits) as table:
        [index] = table.catalog.indexes
        assert (index.method, index.distance, index.params) == ("ivfflat", "inner_product", {"lists": 4})
        assert table.catalog.index_used_for("inner_product") and not table.catalog.index_used_for("cosine")
        walked = table.explain("x", uid, query, strategy="ivfflat", probes=4)
        assert walked.index_used and walked.access == "ivf_store_ip"
        assert table.explain("x", uid, query, strategy="hnsw").index is None  # no hnsw index serves it
        with pytest.raises(memlab.ConfigError, match="ivfflat has no strict_order"):
            table.search("x", uid, query, strategy="ivfflat", iterative_scan="strict_order")
        truth = brute_force(mapped["dsn"], "SELECT id, embedding FROM ivf_store WHERE user_id = %s", [int(uid)], query,
                            distance="inner_product")  # fmt: skip
        with ThreadPoolExecutor(4) as pool:  # every list probed: the index returns the exact top k
            found = list(pool.map(lambda _: table.search("x", uid, query, k=10, strategy="ivfflat", probes=4),
                                  range(8)))  # fmt: skip
        for hits in found:
            assert hits.index == "ivf_store_ip"
            assert_same_top_k(hits.event_ids, [h.distance for h in hits], truth, 10)


def test_a_vector_column_without_a_dimension_reports_nulls_and_other_sizes(mapped, embedder):
    with open_table(mapped["ro_dsn"], MESSY_LAYOUT, limits=FAST) as table:
        assert table.catalog.declared_dimension is None and table.catalog.indexes == []
        with pytest.raises(memlab.ConfigError, match="declares no dimension"):
            table.vectors(APP, "u000")
        counted = table.count_rows()
        total = sum(mapped["sizes"].values())
        assert (counted.dimension, counted.null_embeddings, counted.other_dimension) == (384, NULL_ROWS, SMALL_ROWS)
        assert counted.dimensions == {384: total, 3: SMALL_ROWS} and counted.rows == total + NULL_ROWS + SMALL_ROWS
        ids, matrix = table.vectors(APP, "u000")
        assert len(ids) == mapped["sizes"]["u000"] and matrix.shape == (len(ids), 384)
        hits = table.search(APP, "u000", mapped["queries"]["u000"], k=500, strategy="hnsw")
        assert hits.index is None and len(hits) == mapped["sizes"]["u000"]  # no index; only rows of the query's size
        assert table.check_model(embedder, APP, user="u000")[0].matches


def test_a_database_without_the_vector_extension_is_named(store):
    with own_database(store.dsn, "ts_novector", vector=False) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE notes (id text, user_id text, body text)")
        with pytest.raises(memlab.errors.ExtensionError) as err:
            open_table(dsn, Layout("notes", Columns(user="user_id", event_id="id", text="body", embedding="body")))
        message = str(err.value)
        assert "'vector' is not installed" in message and "ts_novector" in message and "CREATE EXTENSION" in message
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone()[0] == 0


def test_a_server_that_is_down_is_named_without_its_password():
    dsn = "postgresql://reader:Hx7-pw-91kq@127.0.0.1:1/memory"
    with pytest.raises(memlab.DatabaseUnavailableError) as err:
        open_table(dsn, "agent-memory", limits=ReadOnlyLimits(connect_timeout=2))
    message = str(err.value)
    assert "127.0.0.1" in message and "memory" in message and "Fix:" in message
    assert "Hx7-pw-91kq" not in message


def test_no_dsn_is_a_config_error(monkeypatch):
    monkeypatch.delenv("MEMLAB_DSN", raising=False)
    with pytest.raises(memlab.ConfigError, match="pass the DSN of the database that holds your table"):
        open_table(None, "agent-memory")
