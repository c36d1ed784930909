"""A judged set is a data set (`format: judged`): queries, the sessions they were asked against, the pool and the
judgments made on it become the usual Dataset. A query's gold evidence is the events judged relevant; every
judged event (relevant or not) is kept on the question (`Question.judged`), so scoring adds judged@k and bpref,
which count unjudged hits as unknown rather than wrong. A query nobody judged is left out; a query whose pooled
hits were all judged not relevant is a no-answer question (by the pooling assumption nothing else answers it).
A judged event the sessions do not hold (erased since, or another sessions file than the pool's) is dropped and
counted in `Dataset.dropped`, never scored as a miss; a query left without its relevant events is dropped too.

    {name: mine, format: judged, queries: queries.jsonl, sessions: logs.jsonl, pool: pool.json,
     judgments: judgments.jsonl}       (optional `assessor: ana`: only that assessor's judgments count)

`judgments` may list several files (a person's and the model's), read as one. The sessions are a memlab JSONL
file, or the agent's own event memory: `dsn: postgresql://...` (or `dsn_env: VAR` naming the environment variable
that holds it, the way config names secrets; `dsn: default` is MEMLAB_DSN, else the embedded server), with
optional `app` (every query must be of it) and `layer` (an event layer, default `event`). Then exactly the users
of the judged queries are read, read-only, through `memlab.events.read_stored_sessions`; the DSN's password never
reaches an error line (memlab's redactor) or a run folder (which passes the same redactor).

Or `store: NAME`, a table store of the experiment config's `stores:` (memlab.lab.datasets.stores): the sessions
are the table's rows of the judged queries' users, read-only, and the set loads in an experiment with that store
(its systems search the table where it is)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlab.config import configured_dsn
from memlab.errors import ConfigError, FixtureError
from memlab.events.stored_sessions import read_stored_sessions, stored_layers
from memlab.events.units import EVENT_LAYER
from memlab.lab.base.identity import EventKey
from memlab.lab.datasets.formats.jsonl import load_jsonl
from memlab.lab.datasets.judged.agreement import agreement
from memlab.lab.datasets.judged.judgments import read_judgments
from memlab.lab.datasets.judged.origins import origin_info
from memlab.lab.datasets.judged.pools import read_pool
from memlab.lab.datasets.judged.queries import Query, read_queries
from memlab.lab.datasets.model import Dataset, Question, UserHistory

MISSING = "relevant judgments of events not in the sessions"  # labels lost: the pool's events are gone (erased,
# or another sessions file than the pool was made from)
MISSING_NOT_RELEVANT = "not-relevant judgments of events not in the sessions"
ALL_MISSING = "queries whose relevant judged events are all missing from the sessions"
PATHS = ("queries", "sessions", "judgments", "pool")  # the files a judged set may name (`sessions`, a DSN or a store)
SOURCES = ("sessions", "dsn", "dsn_env", "store")  # where a judged set's sessions come from: exactly one
DEFAULT_DSN = "default"  # `dsn: default`: what memlab.open_store() opens (MEMLAB_DSN, else the embedded server)


@dataclass(frozen=True)
class StoredSessions:
    """The sessions of a judged set read from the agent's event memory instead of a file."""

    dsn: str | None = field(repr=False)  # None: MEMLAB_DSN, else the embedded server; never shown (a password)
    app: str | None = None  # when given, every judged query must be of this app
    layer: str = EVENT_LAYER


@dataclass(frozen=True)
class TableSessions:
    """The sessions of a judged set read from a table store of the config (`store: NAME`)."""

    store: str


# A reader of the judged queries' users: (app, user) as the query file names them -> their sessions
UsersReader = Callable[[list[Query]], dict[tuple[str, str], UserHistory]]


def sessions_source(name: str, spec: dict[str, Any]) -> StoredSessions | TableSessions | None:
    """Where a judged set entry's sessions come from: None for a `sessions` file, the agent's memory its `dsn` or
    `dsn_env` names, or the table store `store` names. Exactly one must be given; `app` and `layer` go with a DSN
    only."""
    given = [key for key in SOURCES if spec.get(key)]
    if len(given) != 1:
        raise ConfigError(f"data set {name!r}: format judged reads its sessions from `sessions` (a memlab JSONL "
                          f"file), `dsn` or `dsn_env` (the agent's memory) or `store` (a table of the config's "
                          f"stores:); give exactly one, got {', '.join(f'`{k}`' for k in given) or 'none'}")
    if given in (["sessions"], ["store"]):
        extra = [key for key in ("app", "layer") if key in spec]
        if extra:
            whose = "a sessions file names its own apps" if given == ["sessions"] else \
                "a store's app is `app:` in its stores: entry"  # fmt: skip
            raise ConfigError(f"data set {name!r}: {', '.join(f'`{k}`' for k in extra)} go(es) with `dsn` or "
                              f"`dsn_env` (reading the agent's memory); {whose}")
        return TableSessions(str(spec["store"])) if given == ["store"] else None
    if given == ["dsn_env"]:
        raw = os.environ.get(str(spec["dsn_env"]))
        if not raw:
            raise ConfigError(f"data set {name!r}: `dsn_env` names {spec['dsn_env']}, which is not set; export the "
                              "DSN of the agent's database in it")  # fmt: skip
        where = f"data set {name!r} `dsn_env` ({spec['dsn_env']})"
    else:
        raw, where = str(spec["dsn"]), f"data set {name!r} `dsn`"
    dsn = None
    if raw != DEFAULT_DSN:
        try:
            dsn = configured_dsn(raw)
        except ConfigError as exc:  # its message holds no part of the value
            raise ConfigError(f"{where}: {exc}") from None
    return StoredSessions(dsn, spec.get("app"), spec.get("layer") or EVENT_LAYER)


def load_judged(name: str, queries: Path, sessions: Path | StoredSessions | UsersReader,
                judgments: Path | Sequence[Path], pool: Path, *, assessor: str | None = None) -> Dataset:  # fmt: skip
    """The judged set as a Dataset whose `pool` names the systems and depth its labels come from; its sessions
    from a memlab JSONL file, (StoredSessions) read-only from the agent's event memory, or from a reader of the
    judged queries' users (a table store's rows: memlab.lab.datasets.stores). A question is of its user's app as
    the sessions name it (a table store's app for a query of app `default`)."""
    asked = {q.query_id: q for q in read_queries(queries)}
    made = read_pool(pool)
    outside = [q["query_id"] for q in made.queries if q["query_id"] not in asked]
    if outside:
        raise FixtureError(f"data set {name!r}: the pool {pool} holds queries {outside[:5]} that {queries} does not; "
                           "give the query file the pool was made from")  # fmt: skip
    pooled: dict[str, dict[str, list[str | None]]] = {}
    for q in made.queries:
        for hit in q["hits"]:
            pooled.setdefault(q["query_id"], {}).setdefault(hit["event_id"], []).append(hit["session"])
    judged = read_judgments(judgments, pooled, assessor=assessor)
    if isinstance(sessions, StoredSessions):
        users = _stored_users(name, sessions, [asked[qid] for qid in judged])
    elif callable(sessions):
        users = sessions([asked[qid] for qid in asked if qid in judged])
    else:
        users = {(u.app_name, u.user_id): u for u in load_jsonl(sessions, name).users}
    questions = []
    dropped: dict[str, list[str]] = {}
    given = 0
    holds: dict[tuple[str, str], Callable[[EventKey], bool]] = {}
    for qid in (qid for qid in asked if qid in judged):  # query-file order, whatever the judgments' order
        q, verdicts = asked[qid], judged[qid]
        if (q.app, q.user) not in users:
            raise FixtureError(f"data set {name!r}: {sessions} has no sessions of {q.app}/{q.user}, who asked "
                               f"query {qid!r}; give the sessions file the pool was made from")  # fmt: skip
        if (q.app, q.user) not in holds:
            holds[(q.app, q.user)] = _held(users[(q.app, q.user)])
        held = holds[(q.app, q.user)]
        relevant = tuple(key for key, j in verdicts.items() if j.relevance == 1)
        given += len(relevant)
        for key, j in verdicts.items():
            if not held(key):
                dropped.setdefault(MISSING if j.relevance else MISSING_NOT_RELEVANT, []).append(
                    f"{qid}: {key[0]}/{key[1]}")  # fmt: skip
        found = tuple(key for key in relevant if held(key))
        if relevant and not found:  # never a no-answer question: its answers were judged, then lost
            dropped.setdefault(ALL_MISSING, []).append(qid)
            continue
        questions.append(Question(qid, users[(q.app, q.user)].app_name, q.user, q.text, tuple(e for _, e in found),
                                  asked_at=q.asked_at, qtype=q.origin, evidence=found,
                                  judged=tuple(key for key in verdicts if held(key))))  # fmt: skip
    kept: dict[tuple[str, str], UserHistory] = {}  # by the sessions' app: two apps of a query file may be one
    for q in questions:
        kept.setdefault((q.app_name, q.user_id), users[(asked[q.id].app, q.user_id)])
    pool_info = made.describe()
    pool_info |= origin_info([asked[q.id].origin for q in questions], [asked[q.id].generator for q in questions])
    files = [judgments] if isinstance(judgments, str | Path) else list(judgments)
    pairs = agreement(*files)  # a person and the model (or two people) on the same events: Cohen's kappa
    if pairs:
        pool_info["agreement"] = pairs
    return Dataset(name, [UserHistory(u.app_name, u.user_id, u.sessions) for u in kept.values()], questions,
                   pool=pool_info, dropped=dropped, label_kinds=(MISSING,), labels_given=given)  # fmt: skip


def _held(user: UserHistory) -> Callable[[EventKey], bool]:
    """Whether the user's sessions hold a judged event (a pooled hit without its session matches on the id)."""
    keys = {(s.id, e.id) for s in user.sessions for e in s.events}
    ids = {e for _, e in keys}
    return lambda key: key in keys or (key[0] is None and key[1] in ids)


def _stored_users(name: str, source: StoredSessions, queries: list[Query]) -> dict[tuple[str, str], UserHistory]:
    """The sessions of exactly the users who asked the judged queries, read from the agent's memory; a user with
    nothing stored in the layer is refused, naming the layers they do have (a wrong app, layer or database)."""
    wrong = [q for q in queries if source.app is not None and q.app != source.app]
    if wrong:
        raise ConfigError(f"data set {name!r}: query {wrong[0].query_id!r} was asked in app {wrong[0].app!r}, not "
                          f"{source.app!r} as `app` says; fix `app` (or the query file)")  # fmt: skip
    users: dict[tuple[str, str], UserHistory] = {}
    for app in dict.fromkeys(q.app for q in queries):
        asking = list(dict.fromkeys(q.user for q in queries if q.app == app))
        for user, found in read_stored_sessions(source.dsn, app, asking, layer=source.layer).items():
            if not found:
                layers = stored_layers(source.dsn, app, user)
                have = f"their memory has layers {layers}" if layers else "it holds nothing of them in any layer"
                raise ConfigError(f"data set {name!r}: the database `dsn` names holds no events of {app}/{user} in "
                                  f"layer {source.layer!r} ({have}); check `dsn`, `app` and `layer`")  # fmt: skip
            users[(app, user)] = UserHistory(app, user, found)
    return users


def judged_summary(data: Dataset) -> str:
    """What `memlab check-dataset` says of a judged set beyond its counts: the judged events and the pool (and
    the assessors' agreement where two judged the same events)."""
    relevant = sum(len(q.evidence) for q in data.questions)
    judged = sum(len(q.judged) for q in data.questions)
    pool = data.pool or {}
    text = (f"judged: {len(data.questions)} queries, {judged} judged events ({relevant} relevant); pool "
            f"{pool.get('path')}: systems {', '.join(pool.get('systems', []))} at depth {pool.get('depth')}")
    for pair in pool.get("agreement", []):
        kappa = "undefined" if pair["kappa"] != pair["kappa"] else f"{pair['kappa']:.2f}"
        text += f"; {' and '.join(pair['assessors'])}: Cohen's kappa {kappa} on {pair['items']} events"
    return text
