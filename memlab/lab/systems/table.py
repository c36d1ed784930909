"""Systems over a table store: the user's own pgvector table searched where it is, read-only, and FAISS exact over
the vectors read back from it (the ground truth of recall_vs_exact). Nothing is ingested or copied: a table
system's "build" opens the table and checks that the run's embedder is the model that wrote it.

    systems:
      - {name: hnsw40, store: agent, strategy: hnsw, ef_search: 40, iterative_scan: relaxed_order}
      - {name: exact, store: agent, strategy: exact, max_distance: 0.6, k: 5}

Query settings (each SET LOCAL in the search's own read-only transaction): `strategy` (auto, exact, hnsw,
ivfflat), `ef_search`, `iterative_scan`, `max_scan_tuples`, `probes`, `distance` (cosine, l2, inner_product, l1;
default: what the table's index serves), `max_distance`, `k` (rows asked of the table; default the experiment's)
and `embedder`. A table system runs only on the data sets read from its store, and those data sets only on the
systems of that store (memlab.lab.datasets.stores)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import faiss
import numpy as np

from memlab.embedding.base import Embedder
from memlab.errors import ConfigError
from memlab.lab.base.suggest import did_you_mean, unknown_keys
from memlab.lab.datasets.model import Dataset, Question
from memlab.lab.datasets.stores import NO_SESSION, StoreSpec, session_of
from memlab.table_store import ModelMismatchError, TableHits, TableStore
from memlab.table_store.catalog import DISTANCES
from memlab.table_store.store import HNSW_MAX_EF_SEARCH, ITERATIVE_SCANS, STRATEGIES
from memlab.types import Hit, Hits, check_number

TABLE_KEYS = {"name", "store", "strategy", "ef_search", "iterative_scan", "max_scan_tuples", "probes", "distance",
              "max_distance", "k", "embedder"}  # fmt: skip
MAX_K = 1000  # rows one search asks of the table (the experiment's own k is bounded the same)
MAX_SCAN_TUPLES = 1_000_000


@dataclass(frozen=True)
class TableSystem:
    """The table of store `store`, searched by its own index (or exactly) with these query settings."""

    name: str
    store: str
    strategy: str = "auto"
    ef_search: int = 40
    iterative_scan: str = "relaxed_order"
    max_scan_tuples: int | None = None
    probes: int | None = None
    distance: str | None = None
    max_distance: float | None = None
    k: int | None = None
    embedder: str = "default"
    rerank: None = None  # no re-rank stage on a table system (yet)
    grid_of: str | None = None  # the table sweep's grid point: the system whose settings it varies

    def __post_init__(self) -> None:
        where = f"system {self.name!r} (store {self.store!r})"
        _one_of(f"{where}: strategy", self.strategy, STRATEGIES)
        _one_of(f"{where}: iterative_scan", self.iterative_scan, ITERATIVE_SCANS)
        if self.distance is not None:
            _one_of(f"{where}: distance", self.distance, tuple(DISTANCES))
        check_number(self.ef_search, f"{where}: ef_search", low=1, high=HNSW_MAX_EF_SEARCH, integer=True,
                     why=f"pgvector's hnsw.ef_search range is 1..{HNSW_MAX_EF_SEARCH}")  # fmt: skip
        for key, high in (("max_scan_tuples", MAX_SCAN_TUPLES), ("probes", 100_000), ("k", MAX_K)):
            if getattr(self, key) is not None:
                check_number(getattr(self, key), f"{where}: {key}", low=1, high=high, integer=True)
        if self.max_distance is not None:
            check_number(self.max_distance, f"{where}: max_distance", low=-1e12, high=1e12, integer=False)
        if not isinstance(self.embedder, str) or not self.embedder:
            raise ConfigError(f"{where}: embedder must be the name of a configured embedder, got {self.embedder!r}")

    def build_key(self) -> tuple:
        return ("table", self.store, self.embedder)

    def build(self, env: Any, dataset: Dataset) -> TableHandle:
        """The opened table, once its model check passed (no search runs before it)."""
        prefix = f"{dataset.name}/"
        apps = {q.app_name.removeprefix(prefix) for q in dataset.questions}
        table = tables_of(env).checked(self.store, env.embedder(self.embedder), self.embedder, apps)
        return TableHandle(table, prefix)

    def search(self, handle: TableHandle, question: Question, vector: np.ndarray, k: int) -> Hits:
        found = handle.table.search(handle.app(question), question.user_id, vector, k=self.k or k,
                                    strategy=self.strategy, distance=self.distance, ef_search=self.ef_search,
                                    iterative_scan=self.iterative_scan, max_scan_tuples=self.max_scan_tuples,
                                    probes=self.probes, max_distance=self.max_distance)  # fmt: skip
        hits = [Hit(unit_id=h.event_id, text=h.text or "", distance=float(h.distance or 0.0), author=h.author,
                    session_id=session_of(h), event_ids=(h.event_id,)) for h in found]  # fmt: skip
        return Hits(hits, plan=plan_name(found), dropped_by_cutoff=found.dropped_by_cutoff)

    def reference(self) -> TableExactSystem:
        return TableExactSystem(reference_name(self), self.store, self.distance, self.embedder)

    def search_settings(self) -> dict[str, Any]:
        """What `TableStore.search` and `explain` are given besides the query (k aside)."""
        return {"strategy": self.strategy, "distance": self.distance, "ef_search": self.ef_search,
                "iterative_scan": self.iterative_scan, "max_scan_tuples": self.max_scan_tuples, "probes": self.probes}

    def describe(self) -> dict[str, Any]:
        return {"kind": "table", "store": self.store, "embedder": self.embedder, "k": self.k,
                "max_distance": self.max_distance, **self.search_settings(),
                **({"grid_of": self.grid_of} if self.grid_of else {})}  # fmt: skip


def plan_name(found: TableHits) -> str:
    """How a search ran: `exact`, the index method walked, or `<method>-scan` where no index of that method
    serves the distance (the planner scanned the user's rows)."""
    if found.strategy == "exact" or found.index is not None:
        return found.strategy
    return f"{found.strategy}-scan"


def reference_name(system: TableSystem) -> str:
    suffix = "" if system.embedder == "default" else f"[{system.embedder}]"
    return f"faiss-exact-{system.store}" + (f"-{system.distance}" if system.distance else "") + suffix


@dataclass
class TableHandle:
    """An opened table and the data set's app prefix (a run namespaces every app by the data set's name)."""

    table: TableStore
    prefix: str

    def app(self, question: Question) -> str:
        return question.app_name.removeprefix(self.prefix)


@dataclass(frozen=True)
class TableExactSystem:
    """FAISS exact over the vectors read back from the table, per user, by the distance the table system
    measures: no re-embedding, so it differs from the table's search only by the index."""

    name: str
    store: str
    distance: str | None = None
    embedder: str = "default"
    rerank: None = None

    def build_key(self) -> tuple:
        return ("table-faiss", self.store, self.distance, self.embedder)

    def build(self, env: Any, dataset: Dataset) -> ExactRows:
        prefix = f"{dataset.name}/"
        apps = {u.app_name.removeprefix(prefix) for u in dataset.users}
        table = tables_of(env).checked(self.store, env.embedder(self.embedder), self.embedder, apps)
        exact = ExactRows(self.distance or table.catalog.default_distance)
        for user in dataset.users:
            ids, matrix = table.vectors(user.app_name.removeprefix(prefix), user.user_id)
            rows = {e.id: (s.id, e.text or "") for s in user.sessions for e in s.events}
            exact.add(user.app_name, user.user_id, ids, matrix, rows)
        return exact

    def search(self, handle: ExactRows, question: Question, vector: np.ndarray, k: int) -> Hits:
        return handle.search(question.app_name, question.user_id, vector, k)

    def reference(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"kind": "table-faiss-exact", "store": self.store, "distance": self.distance, "embedder": self.embedder}


_METRICS = {"cosine": faiss.METRIC_INNER_PRODUCT, "inner_product": faiss.METRIC_INNER_PRODUCT,
            "l2": faiss.METRIC_L2, "l1": faiss.METRIC_L1}  # fmt: skip


@dataclass
class _Rows:
    index: faiss.Index
    ids: list[str]
    sessions: list[str]
    texts: list[str]


class ExactRows:
    """One flat FAISS index per (app, user) over the table's vectors, ranking by `distance` as pgvector's operator
    does and returning its value: cosine distance (vectors normalised, 1 - inner product), the negative inner
    product, L2 or L1 distance."""

    def __init__(self, distance: str) -> None:
        if distance not in _METRICS:
            raise ConfigError(f"distance {distance!r} is unknown; use one of {', '.join(_METRICS)}")
        self.distance = distance
        self._users: dict[tuple[str, str], _Rows] = {}

    def _prepared(self, vectors: np.ndarray) -> np.ndarray:
        out = np.ascontiguousarray(vectors, dtype=np.float32).copy()
        if self.distance == "cosine":
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out /= np.where(norms > 0, norms, 1.0)
        return out

    def add(self, app: str, user: str, ids: list[str], vectors: np.ndarray,
            rows: Mapping[str, tuple[str, str]]) -> None:  # fmt: skip
        """`user`'s vectors (`ids` their event ids); `rows` maps an event id to its (session, text)."""
        matrix = self._prepared(vectors)
        index = faiss.IndexFlat(matrix.shape[1], _METRICS[self.distance])
        if len(matrix):
            index.add(matrix)
        found = [rows.get(i, (NO_SESSION, "")) for i in ids]
        self._users[(app, user)] = _Rows(index, list(ids), [s for s, _ in found], [t for _, t in found])

    def search(self, app: str, user: str, vector: np.ndarray, k: int) -> Hits:
        entry = self._users.get((app, user))
        if entry is None or entry.index.ntotal == 0:
            return Hits(plan="faiss_exact")
        query = self._prepared(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        scores, idx = entry.index.search(query, min(k, entry.index.ntotal))
        hits = [Hit(unit_id=entry.ids[i], text=entry.texts[i], distance=self._distance(float(s)),
                    session_id=entry.sessions[i], event_ids=(entry.ids[i],))
                for s, i in zip(scores[0], idx[0], strict=True) if i >= 0]  # fmt: skip
        return Hits(hits, plan="faiss_exact")

    def _distance(self, score: float) -> float:
        if self.distance == "cosine":
            return 1.0 - score
        if self.distance == "inner_product":
            return -score
        return float(np.sqrt(max(score, 0.0))) if self.distance == "l2" else score


class TableStores:
    """The config's table stores for one run: each opened once, on first use, and each embedder's model checked
    against each app's stored vectors before that embedder's first search of it. Close when the run ends."""

    def __init__(self, specs: Mapping[str, StoreSpec]) -> None:
        self.specs = dict(specs)
        self._open: dict[str, TableStore] = {}
        self._checks: dict[tuple[str, str, str], list] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> TableStores:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for table in self._open.values():
            table.close()
        self._open.clear()

    def table(self, name: str) -> TableStore:
        if name not in self.specs:
            raise ConfigError(f"no store named {name!r}; the config's stores: {sorted(self.specs) or 'none'}"
                              f"{did_you_mean(name, self.specs)}")  # fmt: skip
        with self._lock:
            if name not in self._open:
                self._open[name] = self.specs[name].open()
            return self._open[name]

    def checked(self, name: str, embedder: Embedder, embedder_name: str, apps: Iterable[str]) -> TableStore:
        """The table of store `name`, after `embedder` reproduced the stored vectors of each of `apps`
        (ModelMismatchError, naming the store, otherwise)."""
        table = self.table(name)
        spec = self.specs[name]
        for app in sorted(apps):
            key = (name, embedder_name, app)
            if key in self._checks:
                continue
            try:
                checks = table.check_model(embedder, app)
            except ModelMismatchError as exc:
                raise ModelMismatchError(f"store {name!r}, app {app!r}, embedder {embedder_name!r}: {exc}") from None
            values = [c.model for c in checks]
            if spec.model is None and len(values) > 1:  # rows of several models in one scope: searches mix them
                good = [c.model for c in checks if c.matches]
                raise ConfigError(f"store {name!r}: app {app!r} holds rows of {len(values)} embedding models "
                                  f"({', '.join(map(str, values))}) and a search would rank them together; set "
                                  f"`model: {good[0]}` in stores.{name} (the one embedder {embedder_name!r} "
                                  "reproduces)")  # fmt: skip
            self._checks[key] = checks
        return table

    def summary(self) -> dict[str, Any]:
        """What was opened, for the manifest and the report: each table's catalog facts (indexes, the distance
        each serves) and each model check."""
        out: dict[str, Any] = {}
        for name, table in self._open.items():
            catalog = table.catalog
            spec = self.specs[name]
            out[name] = {
                "table": catalog.qualified, "where": spec.where, "app": spec.app, "model": spec.model,
                "embedding_type": catalog.embedding_type, "dimension": catalog.dimension,
                "estimated_rows": catalog.estimated_rows, "vector_version": catalog.vector_version,
                "default_distance": catalog.default_distance,
                "index_used_for": {d: catalog.index_used_for(d) for d in DISTANCES},
                "indexes": [{"name": i.name, "method": i.method, "opclass": i.opclass, "distance": i.distance,
                             "params": i.params, "valid": i.valid, "partial": i.predicate is not None,
                             "size_bytes": i.size_bytes} for i in catalog.indexes],
                "model_checks": [{"app": app, "embedder": embedder, "model": c.model, "sample": c.sample,
                                  "mean_cosine": round(c.mean_cosine, 6), "min_cosine": round(c.min_cosine, 6),
                                  "matches": c.matches}
                                 for (store, embedder, app), checks in self._checks.items() if store == name
                                 for c in checks],
            }  # fmt: skip
        return out


def tables_of(env: Any) -> TableStores:
    """The run's table stores (Env.tables); a clear error where a system of a store runs outside an experiment
    that opened them."""
    tables = getattr(env, "tables", None)
    if tables is None:
        raise ConfigError("a table-store system ran without the config's stores: run it through an experiment "
                          "config with a `stores:` section (memlab eval --config FILE)")  # fmt: skip
    return tables


def _one_of(where: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{where} {value!r} is unknown{did_you_mean(value, allowed)}; use one of "
                          f"{', '.join(allowed)}")  # fmt: skip


def table_system_from_config(raw: dict[str, Any]) -> TableSystem:
    """A table system from its config entry (`store:` names an entry of `stores:`); unknown keys are refused with
    the nearest known one (a build key of memlab's own systems, such as granularity, does not apply here)."""
    name = str(raw["name"])
    extra = set(raw) - TABLE_KEYS
    if extra:
        raise ConfigError(f"system {name!r}: {unknown_keys(extra, TABLE_KEYS)} for a table-store system (it searches "
                          f"the table as it is: no granularity, rendering or extractor); keys: {sorted(TABLE_KEYS)}")
    if not isinstance(raw.get("store"), str) or not raw["store"]:
        raise ConfigError(f"system {name!r}: `store` must name an entry of the config's stores:, got "
                          f"{raw.get('store')!r}")  # fmt: skip
    values = {key: raw[key] for key in TABLE_KEYS - {"name"} if key in raw and raw[key] is not None}
    return TableSystem(name, **values)


def is_table_entry(raw: object) -> bool:
    """Whether a `systems:` entry is a table-store system (it names a `store`)."""
    return isinstance(raw, dict) and "store" in raw


def store_of_dataset(config: Mapping[str, Any], dataset: str) -> str | None:
    """The store a configured data set's sessions are read from (None: its own file)."""
    for entry in config.get("datasets") or []:
        if isinstance(entry, dict) and entry.get("name") == dataset:
            return entry.get("store")
    return None


def fits(system: object, store: str | None, chosen: Iterable[object] = ()) -> bool:
    """Whether `system` runs on a data set read from `store` (None: one of its own): a table system only on its
    store's data sets, memlab's own systems only on data sets they ingest (nothing is copied out of a table), a
    cut only where its parent runs."""
    parent = getattr(system, "parent", None)
    if isinstance(parent, str) and hasattr(system, "max_distance"):
        return parent in {getattr(s, "name", None) for s in chosen}
    if isinstance(system, TableSystem | TableExactSystem):
        return system.store == store
    return store is None


__all__ = ["TABLE_KEYS", "ExactRows", "TableExactSystem", "TableStores", "TableSystem", "fits", "is_table_entry",
           "store_of_dataset", "table_system_from_config"]  # fmt: skip
