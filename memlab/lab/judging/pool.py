"""Pooling (TREC style): every system of an experiment answers the queries, and the union of each system's top-d
hits per query is what a person judges. The pool file records which systems and depth made it, when, and from
which config, so a report can say which systems its labels are fair to.

Judgments are per event: a chunk or a fact holds several events, and the judged set's labels name events, as
every memlab label does. So depth counts events in rank order (each event at the rank of the first unit holding
it, as scoring ranks them): a system contributes its first d events, whatever its granularity.

    {"memlab": "pool", "version": 1, "config": ..., "dataset": ..., "depth": 10, "created_at": ...,
     "systems": [{"name": ..., "kind": ...}], "queries": [{"query_id": ..., "text": ..., "hits":
       [{"event_id": ..., "session": ..., "text": ..., "at": ..., "author": ..., "found_by": [{"system": ...,
         "rank": 1}]}]}]}"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.embedding.base import Embedder
from memlab.errors import ConfigError, FixtureError
from memlab.lab.config.parse import ExperimentConfig
from memlab.lab.config.stores import open_stores, store_spec
from memlab.lab.datasets.formats.jsonl import load_jsonl
from memlab.lab.datasets.judged.pools import POOL_KIND, POOL_VERSION
from memlab.lab.datasets.judged.queries import Query, read_queries
from memlab.lab.datasets.loaders import check_spec, load_dataset, resolve_path
from memlab.lab.datasets.model import Dataset, Question, UserHistory
from memlab.lab.datasets.stores import query_users
from memlab.lab.experiment.run import make_embedders, model_env
from memlab.lab.runs.asking import QueryVectors, ask
from memlab.lab.systems.table import TableSystem, fits
from memlab.storage.servers import Server, open_server, scratch_store
from memlab.storage.store import Store
from memlab.types import Event

MAX_POOL_DEPTH = 1000  # events per system per query: each is to be judged, and pgvector's HNSW walk stops there


def _source_spec(config: ExperimentConfig, dataset: str | None) -> dict[str, Any]:
    """The experiment's data set entry whose sessions the queries' users have: the one named, or the only one."""
    specs = config.resolved["datasets"]
    names = [str(s.get("name")) for s in specs]
    if dataset is None and len(specs) > 1:
        raise ConfigError(f"{config.source}: the config has {len(specs)} data sets ({', '.join(names)}); name the "
                          "one holding the queries' sessions with --dataset")  # fmt: skip
    spec = specs[0] if dataset is None else next((s for s in specs if s.get("name") == dataset), None)
    if spec is None:
        raise ConfigError(f"--dataset {dataset!r} is not in {config.source}; its data sets: {', '.join(names)}")
    return spec


def session_source(config: ExperimentConfig, dataset: str | None) -> tuple[str, Dataset]:
    """The experiment's data set whose sessions the queries' users have: the one named, or the only one. A memlab
    JSONL file of sessions alone is fine here (pooling needs no questions)."""
    spec = _source_spec(config, dataset)
    if check_spec(spec, f"data set {spec['name']!r}") == "memlab":
        return str(spec["name"]), load_jsonl(resolve_path(spec["path"], config.base_dirs, f"data set "
                                                                                          f"{spec['name']!r}"))
    return str(spec["name"]), load_dataset(spec, config.base_dirs)


def queries_dataset(name: str, source: Dataset, queries: list[Query]) -> Dataset:
    """The asking users' sessions with the queries as unlabelled questions; a query of a user the data set does
    not hold is refused (its pool would be empty, silently)."""
    users = {(u.app_name, u.user_id): u for u in source.users}
    missing = sorted({(q.app, q.user) for q in queries} - set(users))
    if missing:
        raise FixtureError(f"{name}: no sessions for user(s) {', '.join(f'{a}/{u}' for a, u in missing[:5])} that "
                           f"the queries name; add their sessions to the data set or drop those queries (known "
                           f"users: {', '.join(f'{a}/{u}' for a, u in list(users)[:5])})")  # fmt: skip
    asked = list(dict.fromkeys((q.app, q.user) for q in queries))
    kept = [UserHistory(users[key].app_name, users[key].user_id, users[key].sessions) for key in asked]
    return Dataset(name, kept, as_questions(queries))


def as_questions(queries: list[Query]) -> list[Question]:
    return [Question(q.query_id, q.app, q.user, q.text, (), asked_at=q.asked_at, qtype=q.origin) for q in queries]


def pool_source(config: ExperimentConfig, dataset: str | None, queries: list[Query]) -> tuple[Dataset, str | None]:
    """The queries over their users' sessions, and the table store they are read from (None: a file). A data set
    that reads a table store (`store: NAME`: a questions file or a judged set) gives the queries' users' rows of
    that table, read-only; its own questions and labels are not read (pooling needs none)."""
    spec = _source_spec(config, dataset)
    name, store = str(spec["name"]), spec.get("store")
    if store is None:
        return queries_dataset(name, session_source(config, dataset)[1], queries), None
    table_store = store_spec(config, store, f"data set {name!r}: store")
    with table_store.open() as table:
        users = query_users(name, table, table_store, [(q.app, q.user) for q in queries], f"store {store!r}")
    held = {(u.app_name, u.user_id): u for u in users.values()}  # apps as the table names them
    asked = [replace(q, app_name=table_store.app_of(q.app_name)) for q in as_questions(queries)]
    return Dataset(name, list(held.values()), asked), store


def _event_index(dataset: Dataset) -> dict[tuple[str, str, str | None, str], Event]:
    return {(s.app_name, s.user_id, s.id, e.id): e for s in dataset.sessions() for e in s.events}


def _ranked_events(hits: pd.DataFrame, depth: int) -> list[tuple[str | None, str]]:
    """The first `depth` distinct (session, event id) of one question's ranked hits (a run frame's rows in rank
    order), each at its first unit's rank."""
    seen: dict[tuple[str | None, str], None] = {}
    for sessions, event_ids in zip(hits["event_sessions"], hits["event_ids"], strict=True):
        for key in zip(sessions, event_ids, strict=True):
            seen.setdefault(key, None)
    return list(seen)[:depth]


@contextmanager
def _memory(systems: list, store: Store | Server | None, dsn: str | None,
            home: str | Path | None) -> Iterator[Store | None]:  # fmt: skip
    """A scratch database for the systems that ingest the sessions into memlab's own memory (on `store`'s server,
    else `dsn`'s, else the embedded one); None when every system searches a table where it is, so pooling a table
    touches no other database."""
    if all(isinstance(s, TableSystem) for s in systems):
        yield None
        return
    with ExitStack() as stack:
        server = store if store is not None else stack.enter_context(open_server(dsn, home=home))
        yield stack.enter_context(scratch_store(server, prefix="memlab_pool"))


def pool_queries(config: ExperimentConfig, queries_path: str | Path, depth: int, store: Store | Server | None = None,
                 *, dataset: str | None = None, embedders: dict[str, Embedder] | None = None,
                 home: str | Path | None = None, dsn: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Run every configured system of `config` that can search the data set's sessions on the queries and return
    the pool: per query the union of each system's first `depth` events, with who found each. memlab's own systems
    ingest the sessions into a fresh scratch database of `store`'s server (else `dsn`'s, else the embedded one);
    a data set read from a table store is pooled by that store's systems, searching the table where it is, and
    its hits are the table's rows."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_POOL_DEPTH:
        raise ConfigError(f"--depth must be a whole number in 1..{MAX_POOL_DEPTH} (events each system contributes "
                          f"per query, every one to be judged), got {depth!r}")  # fmt: skip
    queries = read_queries(queries_path)
    cfg = config.resolved
    data, table = pool_source(config, dataset, queries)
    if embedders is None:
        embedders, _ = make_embedders(cfg["embedders"], home=home)
    # parsed with the config; a table's data set is pooled by its store's systems only, a file's by memlab's own
    systems = [s for s in config.systems if s.embedder in embedders and fits(s, table, config.systems)]
    if not systems:
        where = f"store {table!r} (a system with `store: {table}`)" if table else "the data set's sessions"
        raise ConfigError(f"{config.source}: no system to pool; list at least one under `systems` that searches "
                          f"{where}")  # fmt: skip
    events = _event_index(data)
    asked = {q.id: q for q in data.questions}  # a table's app for a query of app `default`
    found: dict[str, dict[tuple[str | None, str], list[dict[str, Any]]]] = {q.query_id: {} for q in queries}
    with _memory(systems, store, dsn, home) as fresh, open_stores(config) as tables:
        env = model_env(fresh, embedders, config, k=depth, home=home)
        env.tables = tables
        vectors = QueryVectors(env)
        for system in systems:
            frame = ask(env, system, data, vectors, depth)
            for question_id, hits in frame[frame["rank"] > 0].sort_values("rank").groupby("question_id", sort=False):
                for rank, key in enumerate(_ranked_events(hits, depth), start=1):
                    found[question_id].setdefault(key, []).append({"system": system.name, "rank": rank})
    pooled = []
    for query in queries:
        hits = []
        scope = asked[query.query_id]
        for (session, event_id), by in sorted(found[query.query_id].items(),
                                              key=lambda item: min(f["rank"] for f in item[1])):  # fmt: skip
            event = events.get((scope.app_name, scope.user_id, session, event_id))
            hits.append({"event_id": event_id, "session": session, "text": (event.text or "") if event else "",
                         "at": event.timestamp.isoformat() if event else None,
                         "author": event.author if event else None, "found_by": by})  # fmt: skip
        pooled.append({**query.record(), "hits": hits})
    return {"memlab": POOL_KIND, "version": POOL_VERSION, "config": config.name, "config_source": config.source,
            "dataset": data.name, "depth": depth, "depth_unit": "events",
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"), "queries_file": str(queries_path),
            **({"store": table} if table else {}),
            "systems": [{"name": s.name, **s.describe()} for s in systems], "queries": pooled}  # fmt: skip
