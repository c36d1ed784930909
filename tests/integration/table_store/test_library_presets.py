"""memlab's presets read the tables LangChain, LlamaIndex and mem0 write, built through each library's own API
(tests/support/library_tables.py) with the packaged model: 12 users of 4 to 28 memories, read as a role that may
only SELECT them. Users and their row counts are the rows the library wrote, an exact search is the brute-force
top k of the table's own vectors, times come back as times, the packaged model passes the model check and a
swapped one fails it, and nothing in the database changes.

The same tables, built once for the module, are first checked against the builders themselves: each holds every
memlab field where tests/support/library_tables.py says, one row per record written, and its vectors are the
packaged model's embeddings of the texts."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import psycopg
import pytest
import yaml
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app
from memlab.table_store import AppNames, Layout, ModelMismatchError, ReadOnlyLimits, open_table
from memlab.table_store.catalog import bind
from tests.support import library_tables as lt
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
    vector_connection,
)

FAST = ReadOnlyLimits(max_qps=None)
K = 8
OTHER_COLLECTION = "other-bot"  # a second LangChain collection in the same table, not to be mixed in
OTHER_PER_USER = 3


@dataclass(frozen=True)
class Case:
    """How one library's table is opened with its preset, which app to ask for, and the plain SQL (id, vector) of
    one user's rows (the user is %s) for the brute-force recount."""

    preset: str
    table: str
    app: str
    brute: str
    options: dict[str, str | None] = field(default_factory=dict)
    index: str | None = None  # the vector index the library made


CASES = {
    "langchain-postgres": Case(
        "langchain-postgres", "langchain_pg_embedding", lt.LANGCHAIN_COLLECTION,
        "SELECT e.id, e.embedding FROM langchain_pg_embedding e JOIN langchain_pg_collection c ON c.uuid = "
        f"e.collection_id WHERE c.name = '{lt.LANGCHAIN_COLLECTION}' AND e.cmetadata->>'user_id' = %s"),
    "langchain-pgvectorstore": Case(
        "langchain-pgvectorstore", lt.LANGCHAIN_V2_TABLE, "any-label",
        f"SELECT langchain_id, embedding FROM {lt.LANGCHAIN_V2_TABLE} WHERE langchain_metadata->>'user_id' = %s",
        {"table": lt.LANGCHAIN_V2_TABLE}, index=f"{lt.LANGCHAIN_V2_TABLE}langchainvectorindex"),
    "langchain-pgvectorstore-columns": Case(  # metadata_columns: the keys are columns of their own
        "langchain-pgvectorstore", "memlab_langchain_columns", "any-label",
        "SELECT langchain_id, embedding FROM memlab_langchain_columns WHERE user_id = %s",
        {"table": "memlab_langchain_columns", "user": "user_id", "session": "session_id", "author": "role",
         "time": "created_at"}, index="memlab_langchain_columnslangchainvectorindex"),
    "llamaindex": Case(
        "llamaindex", "data_llamaindex", "any-label",
        "SELECT node_id, embedding FROM data_llamaindex WHERE metadata_->>'user_id' = %s",
        index="data_llamaindex_embedding_idx"),
    "mem0": Case("mem0", "mem0", "any-label", "SELECT id, vector FROM mem0 WHERE payload->>'user_id' = %s",
                 index="mem0_hnsw_idx"),
    "mem0-by-agent": Case(
        "mem0", "mem0", lt.MEM0_APP,
        f"SELECT id, vector FROM mem0 WHERE payload->>'agent_id' = '{lt.MEM0_APP}' AND payload->>'user_id' = %s",
        {"app": "payload->>'agent_id'"}, index="mem0_hnsw_idx"),
}  # fmt: skip


def _records() -> tuple[list[lt.Record], dict[str, str]]:
    """Every user's turns (one row per text and user, so no two rows of a user tie on distance) and a question
    per user."""
    data = lab.generate_synth(seed=11, users=12, min_events=4, max_events=28)
    records, seen = [], set()
    for session in data.sessions():
        for event in session.events:
            if (session.user_id, event.text) not in seen:
                seen.add((session.user_id, event.text))
                role = "user" if event.author == "user" else "assistant"
                records.append(lt.Record(session.user_id, session.id, event.text, event.timestamp, role))
    questions: dict[str, str] = {}
    for question in data.questions:
        questions.setdefault(question.user_id, question.text)
    return records, questions


@pytest.fixture(scope="module")
def built(store, embedder, tmp_path_factory):
    """One database holding each library's table, a second LangChain collection beside the first, and a role
    that may only SELECT them. The database starts without the vector extension: the first library creates it."""
    records, questions = _records()
    other = [r for u in sorted({r.user for r in records})[:4] for r in [x for x in records if x.user == u][:3]]
    with own_database(store.dsn, "ts_presets", vector=False) as dsn:
        tables = {"langchain_pgvector": lt.langchain_pgvector(dsn, records, embedder)}
        lt.langchain_pgvector(dsn, other, embedder, collection=OTHER_COLLECTION)
        tables["langchain_pgvectorstore"] = lt.langchain_pgvectorstore(dsn, records, embedder)
        tables["langchain_pgvectorstore_columns"] = lt.langchain_pgvectorstore(
            dsn, records, embedder, table="memlab_langchain_columns", metadata_columns=True)
        tables["llamaindex"] = lt.llamaindex_pgvectorstore(dsn, records, embedder)
        tables["mem0"] = lt.mem0_memories(dsn, records, tmp_path_factory.mktemp("mem0"))
        settle(dsn)
        role, ro_dsn = select_only_role(dsn, sorted({c.table for c in CASES.values()} | {"langchain_pg_collection"}))
        try:
            yield {"dsn": dsn, "ro_dsn": ro_dsn, "records": records, "other": other, "tables": tables,
                   "sizes": dict(Counter(r.user for r in records)),
                   "questions": questions,
                   "queries": {u: embedder.embed_query(q) for u, q in questions.items()}}  # fmt: skip
        finally:
            drop_role(dsn, role)


# -- the builders: where each library keeps memlab's fields ---------------------------------------------------
LIBRARIES = ["langchain_pgvector", "langchain_pgvectorstore", "langchain_pgvectorstore_columns", "llamaindex", "mem0"]


def _select(dsn: str, table: lt.LibraryTable, *fields: str) -> list[tuple]:
    columns = ", ".join(f"({table.fields[f]})" for f in fields)
    with vector_connection(dsn) as conn:
        return conn.execute(f'SELECT {columns} FROM "{table.table}"').fetchall()


def _written(built, library: str) -> list[lt.Record]:
    """The records in the library's table: PGVector keeps the second collection in the same table."""
    return built["records"] + (built["other"] if library == "langchain_pgvector" else [])


@pytest.mark.parametrize("library", LIBRARIES)
def test_every_field_of_memlab_is_placed(built, library):
    table = built["tables"][library]
    assert set(table.fields) == set(lt.FIELDS), table.fields
    assert all(table.fields[f] for f in ("user", "session", "event_id", "time", "text", "embedding", "author"))


@pytest.mark.parametrize("library", LIBRARIES)
def test_each_record_is_one_row_with_its_user_session_text_time_and_role(built, library):
    table = built["tables"][library]
    time = table.fields["time"]
    fields = {**table.fields, "time": f"({time})::timestamptz"}
    rows = _select(built["dsn"], table._replace(fields=fields), "user", "session", "text", "time", "author")
    expected = [(r.user, r.session, r.text, r.time, r.role) for r in _written(built, library)]
    assert sorted(rows) == sorted(expected)


@pytest.mark.parametrize("library", LIBRARIES)
def test_stored_vectors_are_the_packaged_models_embeddings_of_the_texts(built, embedder, library):
    rows = _select(built["dsn"], built["tables"][library], "text", "embedding")
    written = len(_written(built, library))
    assert len(rows) == written
    stored = np.vstack([np.asarray(vector.to_numpy(), dtype=np.float32) for _, vector in rows])
    ours = embedder.embed_documents([text for text, _ in rows])
    assert stored.shape == ours.shape == (written, 384)
    cosine = np.sum(stored * ours, axis=1) / (np.linalg.norm(stored, axis=1) * np.linalg.norm(ours, axis=1))
    assert cosine.min() > 0.999, dict(zip([t for t, _ in rows], cosine.round(4), strict=True))


@pytest.mark.parametrize("library", LIBRARIES)
def test_event_ids_are_unique_and_the_vector_index_is_the_librarys(built, library):
    table = built["tables"][library]
    ids = [str(i) for (i,) in _select(built["dsn"], table, "event_id")]
    assert len(set(ids)) == len(_written(built, library)) and all(ids)
    with psycopg.connect(built["dsn"]) as conn:
        vector_indexes = [d for (d,) in conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s AND indexdef ~ 'USING (hnsw|ivfflat|diskann)'",
            (table.table,))]  # fmt: skip
    if table.index is None:
        assert vector_indexes == []
    else:
        assert len(vector_indexes) == 1 and f"USING {table.index}" in vector_indexes[0], vector_indexes


def test_langchain_pgvector_keeps_the_collection_as_collection_id(built):
    apps = Counter(a for (a,) in _select(built["dsn"], built["tables"]["langchain_pgvector"], "app"))
    with psycopg.connect(built["dsn"]) as conn:
        named = dict(conn.execute("SELECT name, uuid FROM langchain_pg_collection").fetchall())
    assert apps == {named[lt.LANGCHAIN_COLLECTION]: len(built["records"]), named[OTHER_COLLECTION]: len(built["other"])}


def test_mem0_keeps_the_app_as_agent_id_and_no_model(built):
    assert {a for (a,) in _select(built["dsn"], built["tables"]["mem0"], "app")} == {lt.MEM0_APP}
    assert built["tables"]["mem0"].fields["model"] is None


def test_the_default_table_names(built):
    assert {name: t.table for name, t in built["tables"].items()} == {
        "langchain_pgvector": "langchain_pg_embedding", "langchain_pgvectorstore": "memlab_langchain",
        "langchain_pgvectorstore_columns": "memlab_langchain_columns", "llamaindex": "data_llamaindex", "mem0": "mem0"}


# -- the presets: memlab reading the tables ------------------------------------------------------------------
def _open(built, case: Case, dsn: str | None = None):
    options = dict(case.options)
    return open_table(dsn or built["ro_dsn"], case.preset, table=options.pop("table", None), limits=FAST, **options)


@pytest.mark.parametrize("name", CASES)
def test_users_and_their_row_counts_are_the_rows_the_library_wrote(built, name):
    case = CASES[name]
    with _open(built, case) as table, psycopg.connect(built["dsn"]) as conn:
        users = table.users(case.app)
        assert users == built["sizes"] and len(users) == 12 and len(set(users.values())) > 8
        counted = {u: len(conn.execute(case.brute, [u]).fetchall()) for u in users}
        assert counted == users  # the table's own rows, read with plain SQL
        assert table.catalog.dimension == 384 and table.catalog.embedding_type == "vector"
        assert [i.name for i in table.catalog.indexes] == ([case.index] if case.index else [])


@pytest.mark.parametrize("name", CASES)
def test_exact_search_is_the_brute_force_top_k_of_the_table_rows(built, name):
    case = CASES[name]
    by_text = {(r.user, r.text): r for r in built["records"]}
    with _open(built, case) as table:
        for user, query in built["queries"].items():
            truth = brute_force(built["dsn"], case.brute, [user], query)
            hits = table.search(case.app, user, query, k=K, strategy="exact")
            assert hits.distance == "cosine" and hits.strategy == "exact"
            assert_same_top_k(hits.event_ids, [h.distance for h in hits], truth, K)
            for hit in hits:  # each hit carries the session, role and time the application wrote
                record = by_text[(user, hit.text)]
                assert (hit.session, hit.author, hit.time) == (record.session, record.role, record.time)


@pytest.mark.parametrize("name", CASES)
def test_texts_come_back_oldest_first_with_times_as_times(built, name):
    case = CASES[name]
    user = min(built["sizes"], key=built["sizes"].get)
    with _open(built, case) as table:
        rows = table.texts(case.app, user)
    mine = [r for r in built["records"] if r.user == user]
    assert [r.time for r in rows] == sorted(r.time for r in mine)
    assert sorted(r.text for r in rows) == sorted(r.text for r in mine)


@pytest.mark.parametrize("name", CASES)
def test_the_packaged_model_passes_the_model_check_and_a_swapped_one_fails(built, embedder, name):
    case = CASES[name]
    with _open(built, case) as table:
        [check] = table.check_model(embedder, case.app)
        assert check.matches and check.model is None and check.min_cosine > 0.999 and check.sample == 16
        swapped = Altered(embedder, "swapped-model", vectors=lambda v: v @ rotation(384))
        with pytest.raises(ModelMismatchError) as err:
            table.check_model(swapped, case.app, user=max(built["sizes"], key=built["sizes"].get))
    assert "another model wrote them" in str(err.value) and case.table in str(err.value)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.index])
def test_the_librarys_index_serves_a_search(built, name):
    case = CASES[name]
    user = max(built["sizes"], key=built["sizes"].get)
    query = built["queries"][user]
    with _open(built, case) as table:
        walked = table.explain(case.app, user, query, k=K, strategy="hnsw", ef_search=100)
        assert walked.index == case.index and walked.index_used and walked.rows == K
        hits = table.search(case.app, user, query, k=K, strategy="hnsw", ef_search=100)
        exact = table.search(case.app, user, query, k=K, strategy="exact")
        assert len(set(hits.event_ids) & set(exact.event_ids)) >= K - 1


@pytest.mark.parametrize("name", CASES)
def test_nothing_in_the_database_changes(built, embedder, name):
    case = CASES[name]
    before = catalog_snapshot(built["dsn"])
    user = max(built["sizes"], key=built["sizes"].get)
    query = built["queries"][user]
    with _open(built, case) as table:
        table.count_rows()
        table.users(case.app)
        for strategy in ("exact", "auto", "hnsw"):
            table.search(case.app, user, query, strategy=strategy)
            table.explain(case.app, user, query, strategy=strategy)
        table.vectors(case.app, user)
        table.texts(case.app, user)
        table.check_model(embedder, case.app, user=user)
        during = catalog_snapshot(built["dsn"])
    after = catalog_snapshot(built["dsn"])
    assert during["relations"] == before["relations"]
    assert after == before


def test_langchain_apps_are_collections_by_name_or_uuid(built):
    """The table holds two collections: each app is one of them, asked for by name or by uuid."""
    with psycopg.connect(built["dsn"]) as conn:
        uuids = dict(conn.execute("SELECT name, uuid::text FROM langchain_pg_collection").fetchall())
    assert set(uuids) == {lt.LANGCHAIN_COLLECTION, OTHER_COLLECTION}
    with open_table(built["ro_dsn"], "langchain-postgres", limits=FAST) as table:
        assert table.users(lt.LANGCHAIN_COLLECTION) == built["sizes"]
        assert table.users(uuids[lt.LANGCHAIN_COLLECTION]) == built["sizes"]
        assert table.users(OTHER_COLLECTION) == dict(Counter(r.user for r in built["other"]))
        assert table.users("langchain") == {}  # LangChain's default collection is not in this table
        user = built["other"][0].user
        hits = table.search(OTHER_COLLECTION, user, built["queries"][user], k=50, strategy="exact")
        assert sorted(h.text for h in hits) == sorted(r.text for r in built["other"] if r.user == user)
        assert table.count_rows().rows == len(built["records"]) + len(built["other"])
    with open_table(built["ro_dsn"], "langchain-postgres", app="collection_id", limits=FAST) as by_uuid:
        assert by_uuid.layout.app_names is None
        assert by_uuid.users(uuids[OTHER_COLLECTION]) == dict(Counter(r.user for r in built["other"]))
        with pytest.raises(memlab.ConfigError, match=r"not of its column's type .* ask for a value the column holds"):
            by_uuid.users(OTHER_COLLECTION)  # a name is not a uuid


def test_langchain_collection_names_need_select_on_the_collection_table(built):
    role, dsn = select_only_role(built["dsn"], ["langchain_pg_embedding"])
    try:
        with pytest.raises(memlab.ConfigError) as err:
            open_table(dsn, "langchain-postgres", limits=FAST)
        message = str(err.value)
        assert f"GRANT SELECT ON public.langchain_pg_collection TO {role}" in message and "app_names" in message
        with open_table(dsn, "langchain-postgres", app="collection_id", limits=FAST) as by_uuid:
            assert sum(by_uuid.users("00000000-0000-0000-0000-000000000000").values()) == 0
    finally:
        drop_role(built["dsn"], role)


@pytest.mark.parametrize(("names", "says"), [
    (AppNames("langchain_pg_collection", "name", "cmetadata"), "app_names.key 'cmetadata' of "
     "public.langchain_pg_collection is of type json and the table's app column of type uuid"),
    (AppNames("langchain_pg_collection", "title", "uuid"), "app_names.name = 'title': public.langchain_pg_collection "
     "has no column 'title'"),
    (AppNames("langchain_pg_collections", "name", "uuid"), "Near names: public.langchain_pg_collection"),
])  # fmt: skip
def test_app_names_that_do_not_fit_are_refused_before_any_read(built, names, says):
    layout = Layout("langchain_pg_embedding", Layout.preset("langchain-postgres").columns, names)
    with pytest.raises(memlab.ConfigError) as err:
        open_table(built["ro_dsn"], layout, limits=FAST)
    assert says in str(err.value)


def test_mem0_reads_every_agent_unless_scoped_to_one(built):
    with open_table(built["ro_dsn"], "mem0", limits=FAST) as table:
        assert table.users("whatever") == built["sizes"]  # no app: the app asked for is a label
    with open_table(built["ro_dsn"], "mem0", app="payload->>'agent_id'", limits=FAST) as table:
        assert table.users(lt.MEM0_APP) == built["sizes"] and table.users("another-agent") == {}


# JSON times an application may write, and what memlab reads (UTC), None where PostgreSQL reads no time.
TIMES = {"2025-11-03T08:30:00+01:00": "2025-11-03T07:30:00+00:00", "2025-11-03 08:30": "2025-11-03T08:30:00+00:00",
         "2025-11-03T08:30:00.250Z": "2025-11-03T08:30:00.250000+00:00", "": None, "1730622600": None,
         "next tuesday": None}  # fmt: skip
IMPOSSIBLE = "2025-02-30T10:00:00Z"  # ISO-8601 in shape, no such day


@pytest.fixture(scope="module")
def odd_times(store):
    """A LlamaIndex-shaped table whose user u1 has the times of TIMES and user u2 an impossible date."""
    with own_database(store.dsn, "ts_times") as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE data_llamaindex (id bigserial PRIMARY KEY, text varchar NOT NULL, metadata_ "
                         "json, node_id varchar, embedding vector(3))")  # fmt: skip
            rows = [("u1", value) for value in TIMES] + [("u2", IMPOSSIBLE)]
            conn.cursor().executemany(
                "INSERT INTO data_llamaindex (text, metadata_, node_id, embedding) VALUES (%s, "
                "json_build_object('user_id', %s::text, 'created_at', %s::text), %s, '[1,2,3]')",
                [(f"t{i}", user, value, f"n{i}") for i, (user, value) in enumerate(rows)])  # fmt: skip
            conn.execute(f'ALTER DATABASE "{conn.info.dbname}" SET timezone = \'UTC\'')
        yield dsn


def _read_times(table, user: str) -> list[str | None]:
    rows = {r.text: r.time for r in table.texts("x", user)}
    return [None if rows[f"t{i}"] is None else rows[f"t{i}"].isoformat() for i in range(len(rows))]


def test_a_time_that_is_not_a_time_reads_as_none_and_the_rest_still_read(odd_times):
    """A JSON time written badly (empty, an epoch number, words, a day that does not exist) is no reason to fail
    every read: it reads as None."""
    with open_table(odd_times, "llamaindex", limits=FAST) as table:
        assert table.catalog.server_version >= 160000  # pg_input_is_valid tells a time from anything else
        assert _read_times(table, "u1") == list(TIMES.values())
        assert [r.time for r in table.texts("x", "u2")] == [None]
        hits = table.search("x", "u1", np.array([1.0, 2.0, 3.0]), k=10, strategy="exact")
        assert len(hits) == len(TIMES) and [h.time is None for h in hits].count(True) == 3


def test_before_postgresql_16_only_iso_times_are_cast(odd_times):
    """Without pg_input_is_valid, ISO-8601 shapes are cast and anything else reads as None; a day that does not
    exist then fails the read with what to do."""
    with open_table(odd_times, "llamaindex", limits=FAST) as table:
        table.catalog.server_version = 150000
        table.bound = bind(table.layout, table.catalog)
        assert "pg_input_is_valid" not in table.bound.expr("time").as_string(None)
        assert _read_times(table, "u1") == list(TIMES.values())
        with pytest.raises(memlab.ConfigError) as err:
            table.texts("x", "u2")
    assert "out of range" in str(err.value) and "map that field, such as time, to None" in str(err.value)


EVAL_CASES = ("langchain-postgres", "langchain-pgvectorstore", "llamaindex", "mem0")


def test_memlab_eval_runs_on_each_librarys_table(built, embedder, tmp_path, memlab_home, monkeypatch):
    """One `memlab eval` over a store per library's table (as a SELECT-only role): each store's data set is read
    from its table, its exact system finds the labelled rows (the brute-force top 3 of each user's rows for the
    user's question) and equals FAISS exact over the table's own vectors, and the report names every system."""
    stores, datasets, systems = [], [], []
    for name in EVAL_CASES:
        case = CASES[name]
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({
            "type": "question", "id": f"{name}-{user}", "user": user, "text": built["questions"][user],
            "relevant": [row for row, _ in brute_force(built["dsn"], case.brute, [user], vector)[:3]],
        }) + "\n" for user, vector in built["queries"].items()))  # fmt: skip
        table = {"table": case.options["table"]} if "table" in case.options else {}
        stores.append({"name": name, "dsn_env": "LIBRARY_TABLES_DSN", "layout": case.preset, "app": case.app,
                       "limits": {"max_qps": None}, **table})  # no model column: the model check compares texts
        datasets.append({"name": f"{name}-set", "format": "memlab", "path": str(path), "store": name})
        systems.append({"name": f"{name}-exact", "store": name, "strategy": "exact"})
    config = tmp_path / "libraries.yaml"
    config.write_text(yaml.safe_dump({"name": "libraries", "k": K, "plots": False, "sweeps": [], "stores": stores,
                                      "datasets": datasets, "systems": systems}))  # fmt: skip
    monkeypatch.setenv("LIBRARY_TABLES_DSN", built["ro_dsn"])
    result = CliRunner().invoke(app, ["eval", "--config", str(config), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    scores = lab.RunFolder(tmp_path / "run").scores
    overall = scores[scores.group == ""]
    for name in EVAL_CASES:
        mine = overall[(overall.dataset == f"{name}-set") & (overall.system == f"{name}-exact")]
        by_metric = dict(zip(mine.metric, mine.value, strict=True))
        assert by_metric[f"recall@{K}"] == 1.0, (name, by_metric)
        assert by_metric["recall_vs_exact"] == 1.0, (name, by_metric)
    report = (tmp_path / "run" / "report.md").read_text()
    assert all(f"{name}-exact" in report for name in EVAL_CASES)
