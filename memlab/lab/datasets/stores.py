"""A table store as the workbench names it, and a data set whose events are that table's rows.

A `StoreSpec` is one entry of a config's `stores:` section, checked (memlab.lab.config.stores): where the table is
(its DSN, never shown), how its columns map to memlab's fields (a `Layout`), which app and embedding model its
rows are read for, and how hard memlab may lean on the database (`ReadOnlyLimits`).

A data set entry with `store: NAME` (format memlab, a JSONL file of questions only) takes its users, sessions and
events from the table, read-only: exactly the users its questions ask, every row of each, oldest first. A
question's labels must name event ids of the asking user's rows. Nothing is copied into memlab's own store: the
table is searched where it is (memlab.lab.systems.table)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError, FixtureError, MemlabError
from memlab.lab.base.problems import SHOWN_PROBLEMS
from memlab.lab.datasets.formats.jsonl import load_questions
from memlab.lab.datasets.model import DEFAULT_APP, Dataset, Question, UserHistory
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


def table_dataset(name: str, questions: list[Question], table: TableStore, store: StoreSpec,
                  source: str) -> Dataset:  # fmt: skip
    """The data set of `questions` over `table`'s rows: the users they ask, every row of each as events; every
    question must ask a user with rows, and every label name one of that user's event ids (all wrong ones are
    listed in one error)."""
    asked = [replace(q, app_name=store.app_of(q.app_name)) for q in questions]
    if store.app is not None:
        other = sorted({q.app_name for q in asked} - {store.app})
        if other:
            raise ConfigError(f"data set {name!r}: questions ask app(s) {other}, but store {store.name!r} is read for "
                              f"app {store.app!r}; leave `app` out of the questions or give the store's app")
    users: dict[tuple[str, str], UserHistory] = {}
    bad: list[str] = []
    for q in asked:
        key = (q.app_name, q.user_id)
        if key not in users:
            rows = table.texts(*key)
            repeated = _repeated_ids(rows)
            models = table.models(*key) if repeated and store.model is None else {}
            if len(models) > 1:  # one row per event and model, as a migration between models leaves them
                raise ConfigError(f"data set {name!r}: user {q.user_id!r} of app {q.app_name!r} has rows of "
                                  f"{len(models)} embedding models in {table.catalog.qualified} ({', '.join(models)}), "
                                  f"each event once per model; set `model: NAME` in stores.{store.name} to the model "
                                  "the run's embedder is (memlab checks it before any search)")  # fmt: skip
            if repeated:
                raise ConfigError(f"data set {name!r}: user {q.user_id!r} of app {q.app_name!r} has event id(s) "
                                  f"{sorted(set(repeated))[:5]} on several rows of {table.catalog.qualified}; memlab "
                                  f"names a row by its event id, so map columns.event_id of store {store.name!r} to a "
                                  "column unique per user (the primary key)")  # fmt: skip
            users[key] = _history(*key, rows, source)
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


def load_table_dataset(spec: dict[str, Any], path: Path, store: StoreSpec) -> Dataset:
    """The data set entry `spec` (a questions file at `path`, `store: NAME`) over the store's table."""
    name = str(spec["name"])
    questions = load_questions(path)  # questions only: a session record there is skipped (the table holds them)
    with store.open() as table:
        return table_dataset(name, questions, table, store, str(path))


__all__ = ["NO_SESSION", "StoreSpec", "load_table_dataset", "row_time", "session_of", "table_dataset"]
