"""Shared by the table_store tests: a database of their own, the catalog snapshot that proves nothing changed, a
brute-force k-NN over a table's rows read directly, and embedders that differ from the real one in one way."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.adapt import AdaptersMap


@contextmanager
def own_database(admin_dsn: str, prefix: str, *, vector: bool = True) -> Iterator[str]:
    """A new database on the test server (with the vector extension unless `vector` is False), dropped after."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = psycopg.conninfo.make_conninfo(admin_dsn, dbname=name)
    try:
        if vector:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION vector")
        yield dsn
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def select_only_role(dsn: str, tables: list[str], *, password: str = "Pw-4471-xq") -> tuple[str, str]:
    """(role, its DSN): a login role with CONNECT on the database, USAGE on schema public and SELECT on `tables`,
    nothing else (PUBLIC loses its default database rights, so not even a temp table)."""
    role = f"ts_reader_{uuid.uuid4().hex[:8]}"
    dbname = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        conn.execute(f'REVOKE ALL ON DATABASE "{dbname}" FROM PUBLIC')
        conn.execute(f'GRANT CONNECT ON DATABASE "{dbname}" TO {role}')
        conn.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        for table in tables:
            conn.execute(f"GRANT SELECT ON {table} TO {role}")
    return role, psycopg.conninfo.make_conninfo(dsn, user=role, password=password)


def drop_role(dsn: str, role: str) -> None:
    """Drop `role` and its grants, from the database (`dsn`) it was granted rights in."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {role}")
        conn.execute(f"DROP ROLE {role}")


def settle(dsn: str) -> None:
    """Turn autovacuum off for every user table (as their owner would for a test) and vacuum and analyse them
    once: a late flush of the writes' statistics cannot make the daemon analyse a table between two catalog
    snapshots, while a manual ANALYZE or VACUUM by memlab still shows. Call it after the writing connections
    are closed."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for schema, table in conn.execute("SELECT schemaname, relname FROM pg_stat_user_tables").fetchall():
            conn.execute(f'ALTER TABLE "{schema}"."{table}" SET (autovacuum_enabled = false)')
        conn.execute("VACUUM ANALYZE")


SNAPSHOT_QUERIES = {
    "relations": "SELECT n.nspname, c.relname, c.relkind, c.relpersistence FROM pg_class c JOIN pg_namespace n ON "
                 "n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') "
                 "AND n.nspname NOT LIKE 'pg_toast%' ORDER BY 1, 2",
    "indexes": "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid), indisvalid FROM pg_index i "
               "JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
               "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1",
    "extensions": "SELECT extname, extversion FROM pg_extension ORDER BY 1",
    "settings": "SELECT name, setting FROM pg_settings WHERE context NOT IN ('user', 'superuser') ORDER BY 1",
    "database_settings": "SELECT setdatabase, setrole, setconfig FROM pg_db_role_setting ORDER BY 1, 2",
    # writes, analyses and vacuums; not n_live_tup/n_dead_tup, estimates the owner's own writes update whenever
    # their backend flushes its statistics (late on a loaded server)
    "stats": "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del, last_analyze, last_vacuum, "
             "last_autoanalyze, last_autovacuum, analyze_count, vacuum_count, autoanalyze_count, autovacuum_count "
             "FROM pg_stat_user_tables ORDER BY 1",
    "roles": "SELECT rolname, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles ORDER BY 1",
}


# the other sessions of the snapshot's own role (the table's owner) connected to its database
OWNER_SESSIONS = ("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND usename = current_user "
                  "AND backend_type = 'client backend' AND pid <> pg_backend_pid()")


def catalog_snapshot(dsn: str) -> dict[str, list[tuple]]:
    """What must not change: relations (temp ones included), indexes, extensions, server-wide settings, database
    settings, table statistics (writes, analyses, vacuums) and roles.

    Read once every session of the owner (the DSN's role) but this one has left the database: a session's server
    process flushes its statistics before it leaves pg_stat_activity, so the writes of every closed session are in
    (a closed session is gone almost at once). Sessions of other roles are not waited for: here they are
    SELECT-only readers, which write none of the statistics compared. An owner's session that stays connected has
    its writes read until two reads 0.3 s apart agree."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        def read() -> dict[str, list[tuple]]:
            return {name: conn.execute(query).fetchall() for name, query in SNAPSHOT_QUERIES.items()}

        deadline = time.monotonic() + 5.0
        while (others := conn.execute(OWNER_SESSIONS).fetchone()[0]) and time.monotonic() < deadline:
            time.sleep(0.01)
        last = read()
        for _ in range(20 if others else 0):
            time.sleep(0.3)
            now = read()
            if now == last:
                break
            last = now
        return last


_VECTOR_ADAPTERS: dict[str, AdaptersMap] = {}


def vector_connection(dsn: str) -> psycopg.Connection:
    """An autocommit connection that reads pgvector's types, their catalog entries looked up once per database
    (register_vector looks up four types on every connection; each database here has a name of its own)."""
    adapters = _VECTOR_ADAPTERS.get(dsn)
    if adapters is not None:
        return psycopg.connect(dsn, autocommit=True, context=adapters)
    conn = psycopg.connect(dsn, autocommit=True)
    register_vector(conn)
    _VECTOR_ADAPTERS[dsn] = conn.adapters
    return conn


def brute_force(dsn: str, sql: str, params: list, query: np.ndarray, distance: str = "cosine",
                cast: Callable[[np.ndarray], np.ndarray] = lambda v: v) -> list[tuple[str, float]]:  # fmt: skip
    """(id, distance) of every row `sql` returns (id, vector), nearest first, computed in float64 in Python."""
    with vector_connection(dsn) as conn:
        rows = conn.execute(sql, params, binary=True).fetchall()  # vectors as sent, not printed and parsed
    out = []
    q = np.asarray(query, dtype=np.float64)
    for row_id, vec in rows:
        v = cast(np.asarray(vec.to_numpy() if hasattr(vec, "to_numpy") else vec, dtype=np.float64))
        if distance == "cosine":
            d = 1.0 - float(v @ q) / (np.linalg.norm(v) * np.linalg.norm(q))
        elif distance == "l2":
            d = float(np.linalg.norm(v - q))
        elif distance == "inner_product":  # pgvector's <#> is the negative inner product
            d = -float(v @ q)
        else:
            raise ValueError(distance)
        out.append((str(row_id), d))
    return sorted(out, key=lambda x: (x[1], x[0]))


def assert_same_top_k(found_ids: list[str], found_distances: list[float], truth: list[tuple[str, float]], k: int,
                      tolerance: float = 1e-5) -> None:  # fmt: skip
    """The found top k is the true top k: the same distances rank by rank, and the same ids except where two true
    distances are within `tolerance` of each other (float32 in the server against float64 here)."""
    top = truth[:k]
    assert len(found_ids) == len(top), (found_ids, top)
    assert np.allclose(found_distances, [d for _, d in top], atol=tolerance), (found_distances, top)
    truth_distance = dict(truth)
    for rank, (found, (expected, d)) in enumerate(zip(found_ids, top, strict=True)):
        assert abs(truth_distance[found] - d) <= tolerance, (rank, found, expected)
    boundary = top[-1][1] if top else 0.0
    assert {i for i, d in top if d < boundary - tolerance} <= set(found_ids)


class Altered:
    """The real embedder changed in one way: `texts` rewrites each text before embedding (a prefix), `vectors`
    maps the vectors it returns (a rotation: another model; a scale: another normalisation; a cut: another size)."""

    def __init__(self, inner, model_id: str, *, texts: Callable[[str], str] = lambda t: t,
                 vectors: Callable[[np.ndarray], np.ndarray] = lambda v: v) -> None:  # fmt: skip
        self.inner, self._model_id, self._texts, self._vectors = inner, model_id, texts, vectors

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return int(self._vectors(np.zeros((1, self.inner.dimension), dtype=np.float32)).shape[1])

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._vectors(self.inner.embed_documents([self._texts(t) for t in texts])), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def rotation(dimension: int, seed: int = 7) -> np.ndarray:
    """A random orthogonal matrix: rotated vectors keep their lengths and lose any relation to the originals."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(dimension, dimension)))
    return q.astype(np.float32)
