"""A table store as the workbench names it, and a data set whose events are that table's rows.

A `StoreSpec` is one entry of a config's `stores:` section, checked (memlab.lab.config.stores): where the table is
(its DSN, never shown), how its columns map to memlab's fields (a `Layout`), which app and embedding model its
rows are read for, and how hard memlab may lean on the database (`ReadOnlyLimits`).

A data set entry with `store: NAME` (format memlab, a JSONL file of questions only; or a judged set, format
judged) takes its users, sessions and events from the table, read-only: exactly the users its questions ask,
every row of each, oldest first, in sessions by the layout's session field (one session per user where it maps
none). A question's labels must name event ids of the asking user's rows. Nothing is copied into memlab's own
store: the table is searched where it is (memlab.lab.systems.table). `table_sessions` reads every user of an app
instead, with no questions: what `memlab questions generate --store` writes questions from."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError, FixtureError, MemlabError
from memlab.lab.base.problems import SHOWN_PROBLEMS
from memlab.lab.datasets.formats.jsonl import load_questions
from memlab.lab.datasets.formats.judged import load_judged, sessions_source
from memlab.lab.datasets.formats.registry import JudgedOptions, entry_options, judged_files
from memlab.lab.datasets.judged.queries import Query
from memlab.lab.datasets.loaders import checked
from memlab.lab.datasets.model import DEFAULT_APP, Dataset, Question, UserHistory
from memlab.lab.datasets.paths import resolve_path
from memlab.table_store import Layout, ReadOnlyLimits, TableHit, TableStore, open_table
from memlab.types import Event, Session

NO_SESSION = "-"  # the session of every row of a table whose layout maps no session column
NO_TIME = datetime(1970, 1, 1, tzinfo=UTC)  # the time of a row whose layout maps no time column
NO_AUTHOR = "user"  # the author of a row whose layout maps no author column


@dataclass(frozen=True)
class StoreSpec:
    """One table store of a config: `name`, `layout` (table and columns), `dsn` (None: MEMLAB_DSN; never shown),
    `where` (where the DSN came from, for messages: `dsn_env AGENT_DSN`), `app` (the table's app every question
    asks, where given), `model` (the embedding-model value its rows are read for, where the layout maps one)
    and `limits`."""

    name: str
    layout: Layout
    dsn: str | None = field(default=None, repr=False)
    where: str = "dsn"
    app: str | None = None
    model: str | None = None
    limits: ReadOnlyLimits = field(default_factory=ReadOnlyLimits)

    def open(self) -> TableStore:
        """The table, opened read-only (catalog checked); an error names this store and its fix."""
        try:
            return open_table(self.dsn, self.layout, model=self.model, limits=self.limits)
        except MemlabError as exc:
            raise type(exc)(f"store {self.name!r} ({self.where}): {exc}") from None

    def app_of(self, asked: str) -> str:
        """The table's app for a question's app: a question that names none (`default`) asks the store's `app`."""
        return self.app if self.app is not None and asked == DEFAULT_APP else asked


def session_of(hit: TableHit) -> str:
    """A row's session as memlab keys events (a layout without sessions: one session, NO_SESSION)."""
    return NO_SESSION if hit.session is None else str(hit.session)


def row_time(hit: TableHit) -> datetime:
    """A row's time as an aware datetime (a timestamp without zone is read as UTC; text as ISO 8601)."""
    at = hit.time
    if isinstance(at, str):
        try:
            at = datetime.fromisoformat(at.replace("Z", "+00:00"))
        except ValueError:
            return NO_TIME
    if not isinstance(at, datetime):
        return NO_TIME
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _history(app: str, user: str, rows: list[TableHit], source: str) -> UserHistory:
    """One user's rows as sessions of events, in the table's order (oldest first). A row without text keeps its
    place: it can be found and labelled, as in the table."""
    sessions: dict[str, list[Event]] = defaultdict(list)
    for row in rows:
        sessions[session_of(row)].append(Event(id=row.event_id, author=row.author or NO_AUTHOR,
                                               timestamp=row_time(row), text=row.text))  # fmt: skip
    made = [Session(app_name=app, user_id=user, id=sid, events=events) for sid, events in sessions.items()]
    return UserHistory(app, user, made, source=source, replay=[s.id for s in made])


def _repeated_ids(rows: list[TableHit]) -> list[str]:
    seen: set[str] = set()
    repeated = []
    for row in rows:
        if row.event_id in seen:
            repeated.append(row.event_id)
        seen.add(row.event_id)
    return repeated


def user_history(table: TableStore, store: StoreSpec, app: str, user: str, name: str, source: str) -> UserHistory:
    """Every row of `user` of the table's `app` as sessions of events (none: a user without rows). Event ids must
    be unique per user (memlab names a row by its event id), which rows of several models are not unless the
    store is read for one."""
    rows = table.texts(app, user)
    repeated = _repeated_ids(rows)
    models = table.models(app, user) if repeated and store.model is None else {}
    if len(models) > 1:  # one row per event and model, as a migration between models leaves them
        raise ConfigError(f"data set {name!r}: user {user!r} of app {app!r} has rows of {len(models)} embedding "
                          f"models in {table.catalog.qualified} ({', '.join(models)}), each event once per model; "
                          f"set `model: NAME` in stores.{store.name} to the model the run's embedder is (memlab "
                          "checks it before any search)")  # fmt: skip
    if repeated:
        raise ConfigError(f"data set {name!r}: user {user!r} of app {app!r} has event id(s) "
                          f"{sorted(set(repeated))[:5]} on several rows of {table.catalog.qualified}; memlab names a "
                          f"row by its event id, so map columns.event_id of store {store.name!r} to a column unique "
                          "per user (the primary key)")  # fmt: skip
    return _history(app, user, rows, source)


def check_apps(name: str, store: StoreSpec, apps: Iterable[str]) -> None:
    """Every app asked (each already through `store.app_of`) is the store's, where the store is read for one."""
    if store.app is not None:
        other = sorted(set(apps) - {store.app})
        if other:
            raise ConfigError(f"data set {name!r}: questions ask app(s) {other}, but store {store.name!r} is read for "
                              f"app {store.app!r}; leave `app` out of the questions or give the store's app")


def table_dataset(name: str, questions: list[Question], table: TableStore, store: StoreSpec,
                  source: str) -> Dataset:  # fmt: skip
    """The data set of `questions` over `table`'s rows: the users they ask, every row of each as events; every
    question must ask a user with rows, and every label name one of that user's event ids (all wrong ones are
    listed in one error)."""
    asked = [replace(q, app_name=store.app_of(q.app_name)) for q in questions]
    check_apps(name, store, (q.app_name for q in asked))
    users: dict[tuple[str, str], UserHistory] = {}
    bad: list[str] = []
    for q in asked:
        key = (q.app_name, q.user_id)
        if key not in users:
            users[key] = user_history(table, store, *key, name, source)
        held = {e.id for s in users[key].sessions for e in s.events}
        if not held:
            bad.append(f"question {q.id!r} asks user {q.user_id!r} of app {q.app_name!r}, who has no row in "
                       f"{table.catalog.qualified}")
            continue
        missing = [e for e in q.relevant if e not in held]
        if missing:
            bad.append(f"question {q.id!r}: relevant event id(s) {missing[:5]} are not rows of user {q.user_id!r} "
                       f"in {table.catalog.qualified}")
    if bad:
        more = f"; and {len(bad) - SHOWN_PROBLEMS} more" if len(bad) > SHOWN_PROBLEMS else ""
        raise FixtureError(f"{source}: {len(bad)} bad reference(s) ({'; '.join(bad[:SHOWN_PROBLEMS])}{more}). A "
                           f"question's `relevant` must name event ids (column {store.layout.columns.event_id}) of "
                           f"the asking user's rows in store {store.name!r}")  # fmt: skip
    return Dataset(name, list(users.values()), asked)


def store_app(store: StoreSpec, app: str | None = None) -> str:
    """The app whose rows are read when no question names one: `app`, else the store's; a table of one app (no
    app column) needs none, a constant app is that constant, and a table of several apps needs one named."""
    if app is not None or store.app is not None:
        return str(app if app is not None else store.app)
    source = store.layout.columns.source("app")
    if source.is_column:
        raise ConfigError(f"store {store.name!r}: {store.layout.table} holds the rows of several apps (column "
                          f"{source}); name the app to read with --app, or `app:` in stores.{store.name}")
    return DEFAULT_APP if source.constant is None else source.constant


def table_sessions(store: StoreSpec, *, app: str | None = None, name: str | None = None) -> Dataset:
    """Every user of `app` (default: `store_app`) in the store's table with their rows as sessions (grouped by the
    layout's session field; one session per user where it maps none), and no questions: what questions are
    generated from. Read-only, as every read of a table store."""
    app = store_app(store, app)
    name = name or store.name
    source = f"store {store.name!r}"
    with store.open() as table:
        users = [user_history(table, store, app, user, name, source) for user in sorted(table.users(app))]
    if not users:
        raise ConfigError(f"store {store.name!r}: {store.layout.table} holds no rows of app {app!r}"
                          f"{' for model ' + repr(store.model) if store.model else ''}; check the store's `app` "
                          "(or --app) and `model`")  # fmt: skip
    return Dataset(name, users, [])


def query_users(name: str, table: TableStore, store: StoreSpec, asked: Iterable[tuple[str, str]],
                source: str) -> dict[tuple[str, str], UserHistory]:  # fmt: skip
    """The users `asked` ((app, user) as a query file names them; `default` is the store's app) with their rows,
    keyed as asked; a user without rows is refused, naming the table."""
    asked = list(dict.fromkeys(asked))
    check_apps(name, store, (store.app_of(a) for a, _ in asked))
    out: dict[tuple[str, str], UserHistory] = {}
    for app, user in asked:
        history = user_history(table, store, store.app_of(app), user, name, source)
        if not history.sessions:
            raise FixtureError(f"data set {name!r}: user {user!r} of app {store.app_of(app)!r} has no row in "
                               f"{table.catalog.qualified} (store {store.name!r}), but a query names them; check "
                               "the query file's app and user, and the store's `app` and `model`")  # fmt: skip
        out[(app, user)] = history
    return out


def load_table_judged(name: str, options: JudgedOptions, base_dirs: list[Path], store: StoreSpec) -> Dataset:
    """A judged set (`format: judged`, `store: NAME`) whose sessions are the table's rows of the judged queries'
    users; its files resolved as any judged set's."""
    sessions_source(name, {k: v for k, v in asdict(options).items() if v is not None})  # one source, no app/layer
    queries, judgments, pool = judged_files(name, options, base_dirs)
    source = f"store {store.name!r}"
    with store.open() as table:
        def users(asked: list[Query]) -> dict[tuple[str, str], UserHistory]:
            return query_users(name, table, store, [(q.app, q.user) for q in asked], source)

        return checked(name, load_judged(name, queries, users, judgments, pool, assessor=options.assessor))


def load_store_dataset(spec: dict[str, Any], base_dirs: list[Path], store: StoreSpec) -> Dataset:
    """A configured data set with `store: NAME`: a questions file (format memlab) or a judged set, its events the
    rows of the store's table."""
    name = str(spec["name"])
    fmt, options = entry_options(spec, f"data set {name!r}")
    if fmt.name == "judged":
        return load_table_judged(name, options, base_dirs, store)
    if not spec.get("path"):
        raise ConfigError(f"data set {name!r}: `path` (the JSONL file of questions) is required with `store`")
    return load_table_dataset(spec, resolve_path(spec["path"], base_dirs, f"data set {name!r}"), store)


def load_table_dataset(spec: dict[str, Any], path: Path, store: StoreSpec) -> Dataset:
    """The data set entry `spec` (a questions file at `path`, `store: NAME`) over the store's table."""
    name = str(spec["name"])
    questions = load_questions(path)  # questions only: a session record there is skipped (the table holds them)
    with store.open() as table:
        return table_dataset(name, questions, table, store, str(path))


__all__ = ["NO_SESSION", "StoreSpec", "load_store_dataset", "load_table_dataset", "load_table_judged", "query_users",
           "row_time", "session_of", "store_app", "table_dataset", "table_sessions", "user_history"]  # fmt: skip
