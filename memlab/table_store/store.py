"""`TableStore`: memlab's reads of a user's own pgvector table, where it is, read-only.

Every read is one READ ONLY transaction on a `ReadOnlyConnection` (timeouts, rate limit) and is scoped in SQL by
app and user (and by model, when the store is opened for one); search settings are SET LOCAL in that transaction,
so they end with it. Nothing is created, altered, analysed or vacuumed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from psycopg import sql

from memlab.embedding import Embedder
from memlab.errors import ConfigError
from memlab.inputs import check_text
from memlab.table_store import queries as q
from memlab.table_store.catalog import TableCatalog, VectorIndex, bind, check_distance, count_rows
from memlab.table_store.catalog import read_catalog as _read_catalog
from memlab.table_store.connection import ReadOnlyConnection, ReadOnlyLimits
from memlab.table_store.layout import Layout
from memlab.table_store.model_check import MIN_COSINE, ModelCheck, compare, mismatch
from memlab.types import AutoPolicy, check_number

STRATEGIES = ("auto", "exact", "hnsw", "ivfflat")
ITERATIVE_SCANS = ("off", "relaxed_order", "strict_order")
EXACT_BELOW = AutoPolicy().exact_below  # `auto`: an exact scan for users with at most this many rows
ITERATIVE_SINCE = (0, 8, 0)  # pgvector added iterative index scans in 0.8.0
HNSW_MAX_EF_SEARCH = 1000
MAX_MODEL_VALUES = 8  # model values compared when the store is not scoped to one (the most frequent first)


@dataclass(frozen=True)
class TableHit:
    """One row of the table: its event id, text, session, author and time as stored (None where the layout
    has no such field; a time kept as text comes as a datetime, None where it is not a time), and its `distance`
    to the query (the operator's value: cosine distance, L2 distance, negative inner product or L1; None for rows
    read without a query)."""

    event_id: str
    text: str | None
    session: str | None = None
    author: str | None = None
    time: datetime | str | None = None
    distance: float | None = None


class TableHits(list[TableHit]):
    """The hits of one search, nearest first, and how they were found: `strategy` run (exact, hnsw, ivfflat),
    `distance` measured, `index` the index of that method serving that distance (None for exact; None for hnsw or
    ivfflat means no such index serves the distance, so the search scanned the scope: an operator that does not
    match the index's class), `dropped_by_cutoff` hits of the top k beyond `max_distance`."""

    def __init__(self, hits: list[TableHit], *, strategy: str, distance: str, index: str | None,
                 dropped_by_cutoff: int = 0) -> None:  # fmt: skip
        super().__init__(hits)
        self.strategy = strategy
        self.distance = distance
        self.index = index
        self.dropped_by_cutoff = dropped_by_cutoff

    @property
    def event_ids(self) -> list[str]:
        return [h.event_id for h in self]


@dataclass(frozen=True)
class TableExplain:
    """EXPLAIN (ANALYZE, BUFFERS) of one search: `index_used` whether the plan walked the vector index serving the
    distance, `access` the first access path of the plan (an index name, seq_scan ...), times in milliseconds,
    shared buffers hit and read, and the JSON `plan`."""

    strategy: str
    distance: str
    index: str | None
    index_used: bool
    access: str
    rows: int
    planning_ms: float
    execution_ms: float
    shared_hit: int
    shared_read: int
    plan: dict


@dataclass(frozen=True)
class _SearchPlan:
    strategy: str
    distance: str
    index: VectorIndex | None
    knobs: list[tuple[str, str]]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int("".join(c for c in part if c.isdigit()) or 0) for part in text.split(".")[:3])


class TableStore:
    """Read-only access to one table through a `Layout` (open it with `open_table`). `model` scopes every read to
    rows of that model value (the layout must map `model`); `catalog` is what the catalog said at opening."""

    def __init__(self, connection: ReadOnlyConnection, layout: Layout, catalog: TableCatalog, *,
                 model: str | None = None) -> None:  # fmt: skip
        self.connection = connection
        self.layout = layout
        self.catalog = catalog
        self.bound = bind(layout, catalog)
        if model is not None and "model" not in self.bound.present:
            raise ConfigError(f"model={model!r} was given, but the layout maps no model column for "
                              f"{catalog.qualified}; map columns.model or leave model out.")  # fmt: skip
        self.model = None if model is None else check_text(model, "model")
        self._counts: dict[tuple[str, str], int] = {}
        self._searches: dict[tuple[str, str, str | None], sql.Composed] = {}  # composed once per plan shape

    # -- context -------------------------------------------------------------------------------------------------
    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> TableStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _params(self, app: str, user: str | None = None, **more: object) -> dict:
        params: dict[str, object] = {"app": check_text(app, "app"), **more}
        if user is not None:
            params["user"] = check_text(user, "user")
        if self.model is not None:
            params["model"] = self.model
        return params

    # -- catalog -------------------------------------------------------------------------------------------------
    def count_rows(self) -> TableCatalog:
        """The catalog with its row counts read: rows, NULL embeddings, rows per dimension (a full scan of the
        table, bounded by statement_timeout)."""
        with self.connection.work() as work:
            count_rows(work, self.bound)  # type: ignore[arg-type]
        return self.catalog

    # -- reads ---------------------------------------------------------------------------------------------------
    def users(self, app: str) -> dict[str, int]:
        """Each user of `app` and their row count, largest first."""
        with self.connection.work() as work:
            rows = work.execute(q.users_sql(self.bound, model=self.model is not None), self._params(app)).fetchall()
        counts = {str(u): int(n) for u, n in rows if u is not None}
        self._counts.update({(app, u): n for u, n in counts.items()})
        return counts

    def count(self, app: str, user: str) -> int:
        """How many rows `user` of `app` has (kept for this store's lifetime once read)."""
        if (app, user) not in self._counts:
            with self.connection.work() as work:
                row = work.execute(q.count_sql(self.bound, model=self.model is not None),
                                   self._params(app, user)).fetchone()  # fmt: skip
            self._counts[(app, user)] = int(row[0])
        return self._counts[(app, user)]

    def texts(self, app: str, user: str, *, limit: int | None = None) -> list[TableHit]:
        """The rows of `user` (event id, text, session, author, time; oldest first), e.g. to write questions."""
        if limit is not None:
            check_number(limit, "limit", low=1, high=2**31 - 1, integer=True)
        with self.connection.work() as work:
            rows = work.execute(q.texts_sql(self.bound, model=self.model is not None, limit=limit is not None),
                                self._params(app, user, limit=limit)).fetchall()  # fmt: skip
        return [TableHit(*r) for r in rows]

    def vectors(self, app: str, user: str, *, dimension: int | None = None) -> tuple[list[str], np.ndarray]:
        """Every (event id, vector) of `user` with a vector, in event-id order: ids and a float32 matrix (n, dim)
        for an exact search outside PostgreSQL (FAISS). A column without a declared dimension gives the rows of
        `dimension` (default: the catalog's, which `count_rows` finds)."""
        dimension = dimension or self.catalog.dimension
        if dimension is None:
            raise ConfigError(f"{self.catalog.qualified}.{self.layout.columns.embedding} declares no dimension, so its "
                              "rows may differ in size: pass vectors(..., dimension=N), or call count_rows() first "
                              "to take the most common one.")  # fmt: skip
        with self.connection.work() as work:
            rows = work.execute(q.vectors_sql(self.bound, model=self.model is not None),
                                self._params(app, user, dim=dimension)).fetchall()  # fmt: skip
        ids = [str(r[0]) for r in rows]
        if not rows:
            return ids, np.zeros((0, dimension), dtype=np.float32)
        return ids, np.vstack([_as_array(r[1]) for r in rows])

    def models(self, app: str, user: str | None = None) -> dict[str, int]:
        """Rows per model value in `app` (and `user`), most first; {} when the layout maps no model."""
        if "model" not in self.bound.present:
            return {}
        with self.connection.work() as work:
            rows = work.execute(q.models_sql(self.bound, user=user is not None), self._params(app, user)).fetchall()
        return {str(m): int(n) for m, n in rows}

    # -- model check ---------------------------------------------------------------------------------------------
    def check_model(self, embedder: Embedder, app: str, *, user: str | None = None, sample: int = 16,
                    min_cosine: float = MIN_COSINE) -> list[ModelCheck]:  # fmt: skip
        """Re-embed up to `sample` stored texts of `app` (and `user`) with `embedder` and compare with their stored
        vectors, per model value where the layout maps a model column (only the store's own model when it was
        opened for one). Returns the checks; raises ModelMismatchError when the store's model, or every model
        value of the table, fails (the message names what differs and the fix)."""
        check_number(sample, "sample", low=1, high=10_000, integer=True)
        values: list[str | None] = [self.model]
        if self.model is None and "model" in self.bound.present:
            values = list(self.models(app, user))[:MAX_MODEL_VALUES]
        checks = []
        for value in values:
            scoped = value is not None
            statement = q.sample_sql(self.bound, user=user is not None, model=scoped)
            params = self._params(app, user, limit=sample, dim=self.catalog.dimension or embedder.dimension)
            if scoped:
                params["model"] = value
            with self.connection.work() as work:
                rows = work.execute(statement, params).fetchall()
            if not rows:
                continue
            ids, texts = [str(r[0]) for r in rows], [str(r[1]) for r in rows]
            stored = np.vstack([_as_array(r[2]) for r in rows])
            fresh = np.asarray(embedder.embed_documents(texts), dtype=np.float32).reshape(len(texts), -1)
            checks.append(compare(value, embedder.model_id, ids, stored, fresh, min_cosine=min_cosine))
        if not checks:
            raise ConfigError(f"no rows of app {app!r}" + (f", user {user!r}" if user else "") + " in "
                              f"{self.catalog.qualified} have both a text and a vector to compare; check the app "
                              "(and user) names, or the layout's text and embedding columns.")  # fmt: skip
        if not any(c.matches for c in checks):
            raise mismatch(checks, self.catalog.qualified)
        return checks

    # -- search --------------------------------------------------------------------------------------------------
    def search(self, app: str, user: str, vector: np.ndarray, *, k: int = 10, strategy: str = "auto",
               distance: str | None = None, ef_search: int = 40, iterative_scan: str = "relaxed_order",
               max_scan_tuples: int | None = None, probes: int | None = None,
               max_distance: float | None = None) -> TableHits:  # fmt: skip
        """The `k` rows of `user` nearest `vector`. `strategy`: `exact` scores every row of the scope, `hnsw` /
        `ivfflat` walk that index with `ef_search` (hnsw) or `probes` (ivfflat) and `iterative_scan`, `auto` is
        exact up to memlab's exact threshold of rows and the table's index above it. `distance` (cosine, l2,
        inner_product, l1) defaults to what the index serves; `max_distance` drops hits of the top k beyond it."""
        if max_distance is not None:
            check_number(max_distance, "max_distance", low=-1e12, high=1e12, integer=False)
        plan, statement, params = self._statement(app, user, vector, k=k, strategy=strategy, distance=distance,
                                                  ef_search=ef_search, iterative_scan=iterative_scan,
                                                  max_scan_tuples=max_scan_tuples, probes=probes)  # fmt: skip
        with self.connection.work(plan.knobs) as work:
            found = work.execute(statement, params)  # read after COMMIT: the whole search is one round trip
        rows = found.fetchall()
        hits = [TableHit(*r[:5], distance=float(r[5])) for r in rows]
        kept = hits if max_distance is None else [h for h in hits if h.distance <= max_distance]
        return TableHits(kept, strategy=plan.strategy, distance=plan.distance,
                         index=plan.index.name if plan.index else None, dropped_by_cutoff=len(hits) - len(kept))

    def search_statement(self, app: str, user: str, vector: np.ndarray, *, k: int = 10, strategy: str = "auto",
                         distance: str | None = None, ef_search: int = 40, iterative_scan: str = "relaxed_order",
                         max_scan_tuples: int | None = None,
                         probes: int | None = None) -> tuple[sql.Composed, dict, list[tuple[str, str]]]:  # fmt: skip
        """What `search` runs with the same arguments, to run it elsewhere (a bare connection, to time memlab's
        overhead against it): the SELECT, its parameters, and the settings SET LOCAL before it as (name, value)."""
        plan, statement, params = self._statement(app, user, vector, k=k, strategy=strategy, distance=distance,
                                                  ef_search=ef_search, iterative_scan=iterative_scan,
                                                  max_scan_tuples=max_scan_tuples, probes=probes)  # fmt: skip
        return statement, params, list(plan.knobs)

    def explain(self, app: str, user: str, vector: np.ndarray, *, k: int = 10, strategy: str = "auto",
                distance: str | None = None, ef_search: int = 40, iterative_scan: str = "relaxed_order",
                max_scan_tuples: int | None = None, probes: int | None = None) -> TableExplain:  # fmt: skip
        """EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) of `search` with the same arguments (ANALYZE runs the SELECT, in
        the same read-only transaction and settings) and whether its plan used the vector index."""
        plan, statement, params = self._statement(app, user, vector, k=k, strategy=strategy, distance=distance,
                                                  ef_search=ef_search, iterative_scan=iterative_scan,
                                                  max_scan_tuples=max_scan_tuples, probes=probes)  # fmt: skip
        with self.connection.work(plan.knobs) as work:
            raw = work.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + statement, params).fetchone()[0]
        doc = (raw if isinstance(raw, list) else json.loads(raw))[0]
        top = doc["Plan"]
        names = {i.name for i in self.catalog.indexes if i.distance == plan.distance}
        used, access = q.plan_uses_index(top, names)
        return TableExplain(strategy=plan.strategy, distance=plan.distance,
                            index=plan.index.name if plan.index else None, index_used=used, access=access,
                            rows=int(top.get("Actual Rows", 0)), planning_ms=float(doc.get("Planning Time", 0.0)),
                            execution_ms=float(doc.get("Execution Time", 0.0)),
                            shared_hit=int(top.get("Shared Hit Blocks", 0)),
                            shared_read=int(top.get("Shared Read Blocks", 0)), plan=doc)  # fmt: skip

    def bare_seconds(self, app: str, user: str, vector: np.ndarray, *, k: int = 10, strategy: str = "auto",
                     distance: str | None = None, ef_search: int = 40, iterative_scan: str = "relaxed_order",
                     max_scan_tuples: int | None = None, probes: int | None = None) -> float:  # fmt: skip
        """Seconds the statement `search` runs with the same arguments takes alone: sent and every row fetched on
        the same connection, after its read-only transaction and settings are in place (those and the rate limit
        are not counted, nor is making hits of the rows). What `search` takes beyond it is memlab's own cost."""
        plan, statement, params = self._statement(app, user, vector, k=k, strategy=strategy, distance=distance,
                                                  ef_search=ef_search, iterative_scan=iterative_scan,
                                                  max_scan_tuples=max_scan_tuples, probes=probes)  # fmt: skip
        with self.connection.work(plan.knobs) as work:
            _, seconds = work.timed(statement, params, shown=self.connection.shown)
        return seconds

    def _statement(self, app: str, user: str, vector: np.ndarray, **settings) -> tuple[_SearchPlan, sql.Composed, dict]:
        """The plan, statement and parameters of one search (shared by `search` and `explain`)."""
        plan = self._plan(app, user, **settings)
        dimension = self.catalog.dimension
        if plan.index is not None and plan.index.cast is not None:
            dimension = int(plan.index.cast.split("(")[1].rstrip(")"))
        key = (plan.distance, plan.strategy, plan.index.name if plan.index else None)
        statement = self._searches.get(key)
        if statement is None:
            statement = self._searches[key] = q.search_sql(self.bound, plan.distance, plan.strategy, plan.index,
                                                           model=self.model is not None)  # fmt: skip
        params = self._params(app, user, q=q.vector_param(vector, dimension), k=settings["k"], dim=np.size(vector))
        return plan, statement, params

    def _plan(self, app: str, user: str, *, k: int, strategy: str, distance: str | None, ef_search: int,
              iterative_scan: str, max_scan_tuples: int | None, probes: int | None) -> _SearchPlan:  # fmt: skip
        if strategy not in STRATEGIES:
            raise ConfigError(f"strategy {strategy!r} is unknown; use one of {', '.join(STRATEGIES)}.")
        if iterative_scan not in ITERATIVE_SCANS:
            raise ConfigError(f"iterative_scan {iterative_scan!r} is unknown; use one of {', '.join(ITERATIVE_SCANS)}.")
        check_number(k, "k", low=1, high=2**31 - 1, integer=True)
        check_number(ef_search, "ef_search", low=1, high=HNSW_MAX_EF_SEARCH, integer=True,
                     why=f"pgvector's hnsw.ef_search range is 1..{HNSW_MAX_EF_SEARCH}")  # fmt: skip
        for name, value in (("max_scan_tuples", max_scan_tuples), ("probes", probes)):
            if value is not None:
                check_number(value, name, low=1, high=2**31 - 1, integer=True)
        distance = check_distance(distance) if distance is not None else self.catalog.default_distance
        index = self.catalog.index_for(distance)
        if strategy == "auto":
            big = index is not None and self.count(app, user) > EXACT_BELOW
            strategy = index.method if big and index is not None else "exact"
        if strategy == "exact":
            return _SearchPlan("exact", distance, None, [])  # the column itself, at its own precision
        if index is not None and index.method != strategy:
            index = None  # the index that serves this distance is of the other method
        iterative = _version(self.catalog.vector_version) >= ITERATIVE_SINCE
        if iterative_scan != "off" and not iterative:
            raise ConfigError(f"iterative_scan={iterative_scan!r} needs pgvector 0.8.0 or later; this database has "
                              f"{self.catalog.vector_version}. Use iterative_scan='off'.")  # fmt: skip
        knobs = [("enable_sort", "off")]
        if strategy == "hnsw":
            knobs.append(("hnsw.ef_search", str(ef_search)))
            if iterative:
                knobs.append(("hnsw.iterative_scan", iterative_scan))
            if max_scan_tuples is not None:
                knobs.append(("hnsw.max_scan_tuples", str(max_scan_tuples)))
        else:
            if iterative_scan == "strict_order":
                raise ConfigError("ivfflat has no strict_order iterative scan; use 'relaxed_order' or 'off'.")
            if probes is not None:
                knobs.append(("ivfflat.probes", str(probes)))
            if iterative:
                knobs.append(("ivfflat.iterative_scan", iterative_scan))
        return _SearchPlan(strategy, distance, index, knobs)


def _as_array(value: object) -> np.ndarray:
    """A vector or halfvec value as float32 (pgvector returns numpy for vector, HalfVector for halfvec)."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if callable(to_numpy) else value, dtype=np.float32).reshape(-1)


def open_table(dsn: str | None, layout: Layout | str, *, table: str | None = None, model: str | None = None,
               limits: ReadOnlyLimits | None = None, **columns: str | None) -> TableStore:  # fmt: skip
    """A read-only `TableStore` on the table `layout` describes (a Layout, or a preset's name with `table` and
    single `columns` overridden) in the database at `dsn` (None: MEMLAB_DSN). Checks at once that the server
    answers, that the vector extension is there, that the table and every mapped column exist and that the
    role may read the table; raises DatabaseUnavailableError, ExtensionError or ConfigError naming the fix."""
    if isinstance(layout, str):
        layout = Layout.preset(layout, table=table, **columns)
    elif table is not None or columns:
        layout = layout.with_table(table).with_columns(**columns)
    connection = ReadOnlyConnection(dsn, limits)
    try:
        with connection.once() as work:
            catalog, _ = _read_catalog(work, layout, connection.shown)  # type: ignore[arg-type]
        store = TableStore(connection, layout, catalog, model=model)
        connection.open()
        return store
    except BaseException:
        connection.close()
        raise

