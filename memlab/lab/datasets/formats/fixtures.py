"""Load event fixtures (YAML or JSON, one user per file; see fixtures/events/README.md) into a Dataset.

Parsing is pure and strict: a malformed file raises FixtureError naming the file, the line, the key and the
fix, and nothing is ingested from a set that did not load completely.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from memlab.errors import FixtureError
from memlab.events.filters import SKIP_REASONS
from memlab.facts.types import Candidate
from memlab.lab.base.problems import listed
from memlab.lab.base.suggest import did_you_mean
from memlab.lab.base.yaml_bounds import MAX_DEPTH, BoundedLoader
from memlab.lab.datasets.model import SERVED, Dataset, Question, ServingCheck, UserHistory
from memlab.types import Event, FunctionCall, FunctionResponse, Session

_TOP_KEYS = {"app", "user", "description", "sessions", "queries", "replay", "expected", "serving"}
_SESSION_KEYS = {"id", "events", "candidates"}
_CANDIDATE_KEYS = {"subject", "predicate", "value", "quote", "event", "basis", "negated"}
_EXPECTED_KEYS = {"subject", "predicate", "value", "basis"}
_SERVING_KEYS = {"at", "subject", "predicate", "value", "served"}
_EVENT_KEYS = {"id", "author", "at", "text", "partial", "function_call", "function_response", "skip"}
_QUERY_KEYS = {"id", "text", "relevant", "asked_at", "type", "fact_key"}


class _Map(dict):
    """A YAML mapping that remembers where it and each of its keys were written."""

    line: int = 0
    key_lines: dict[str, int]


class _LineLoader(BoundedLoader):
    """A config's bounds (aliases, nesting), plus each mapping's line for error messages."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _Map:
    result = _Map()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[str(key)] = key_node.start_mark.line + 1
    return result


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _Ctx:
    """Where we are in a file, for error messages."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, line: int, problem: str) -> FixtureError:
        return FixtureError(f"{self.path}:{line}: {where}: {problem}")

    def mapping(self, value: Any, where: str, line: int, allowed: set[str]) -> _Map:
        if not isinstance(value, _Map):
            raise self.fail(where, line, f"expected a mapping, got {type(value).__name__}")
        unknown = sorted(set(map(str, value)) - allowed)
        if unknown:
            key = unknown[0]
            raise self.fail(
                f"{where}.{key}",
                value.key_lines.get(key, value.line),
                f"unknown key {key!r}{did_you_mean(key, allowed)}; allowed keys are {sorted(allowed)}",
            )
        return value

    def required(self, m: _Map, key: str, where: str) -> Any:
        if key not in m or m[key] is None:
            raise self.fail(where, m.line, f"required key {key!r} is missing")
        return m[key]

    def string(self, m: _Map, key: str, where: str, *, required: bool = True) -> str | None:
        value = self.required(m, key, where) if required else m.get(key)
        if value is None:
            return None
        if not isinstance(value, str | int) or isinstance(value, bool) or str(value).strip() == "":
            raise self.fail(
                f"{where}.{key}", m.key_lines.get(key, m.line), f"expected a non-empty string, got {value!r}"
            )
        return str(value)

    def when(self, m: _Map, key: str, where: str, *, required: bool = True) -> datetime | None:
        value = self.required(m, key, where) if required else m.get(key)
        if value is None:
            return None
        line = m.key_lines.get(key, m.line)
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value)
            except ValueError:
                raise self.fail(f"{where}.{key}", line, f"{value!r} is not an ISO 8601 timestamp") from None
        if not isinstance(value, datetime):
            raise self.fail(f"{where}.{key}", line, f"expected an ISO 8601 timestamp, got {value!r}")
        if value.tzinfo is None:
            raise self.fail(
                f"{where}.{key}",
                line,
                f"{value.isoformat()} has no timezone offset; write e.g. {value.isoformat()}+00:00",
            )
        return value

    def seq(self, m: _Map, key: str, where: str) -> list:
        value = self.required(m, key, where)
        if not isinstance(value, list):
            raise self.fail(
                f"{where}.{key}", m.key_lines.get(key, m.line), f"expected a list, got {type(value).__name__}"
            )
        return value


def _event(ctx: _Ctx, raw: Any, where: str, line: int) -> tuple[Event, str | None]:
    m = ctx.mapping(raw, where, line, _EVENT_KEYS)
    calls, responses = (), ()
    if "function_call" in m:
        fc = ctx.mapping(m["function_call"], f"{where}.function_call", m.line, {"name", "args"})
        calls = (FunctionCall(ctx.string(fc, "name", f"{where}.function_call"), dict(fc.get("args") or {})),)
    if "function_response" in m:
        fr = ctx.mapping(m["function_response"], f"{where}.function_response", m.line, {"name", "response"})
        responses = (
            FunctionResponse(ctx.string(fr, "name", f"{where}.function_response"), dict(fr.get("response") or {})),
        )
    text = m.get("text")
    if text is not None and not isinstance(text, str):
        raise ctx.fail(f"{where}.text", m.key_lines.get("text", m.line), f"expected a string, got {text!r}")
    if text is None and not calls and not responses:
        raise ctx.fail(where, m.line, "an event needs 'text', 'function_call' or 'function_response'")
    partial = m.get("partial", False)
    if not isinstance(partial, bool):
        raise ctx.fail(
            f"{where}.partial", m.key_lines.get("partial", m.line), f"expected true or false, got {partial!r}"
        )
    skip = ctx.string(m, "skip", where, required=False)
    if skip is not None and skip not in SKIP_REASONS:
        raise ctx.fail(f"{where}.skip", m.key_lines["skip"], f"unknown skip reason {skip!r}; use one of {SKIP_REASONS}")
    event = Event(
        id=ctx.string(m, "id", where),
        author=ctx.string(m, "author", where),
        timestamp=ctx.when(m, "at", where),
        text=text,
        function_calls=calls,
        function_responses=responses,
        partial=partial,
    )
    return event, skip


def _candidate(ctx: _Ctx, raw: Any, where: str, line: int, events: dict[str, Event], session_id: str) -> Candidate:
    m = ctx.mapping(raw, where, line, _CANDIDATE_KEYS)
    event_id = ctx.string(m, "event", where)
    event = events.get(event_id)
    if event is None:
        raise ctx.fail(f"{where}.event", m.key_lines["event"], f"event {event_id!r} is not in this session")
    quote = ctx.string(m, "quote", where)
    if quote not in (event.text or ""):
        raise ctx.fail(f"{where}.quote", m.key_lines["quote"], f"quote {quote!r} is not in the text of {event_id!r}")
    basis = m.get("basis", "stated")
    if basis not in ("stated", "inferred"):
        raise ctx.fail(f"{where}.basis", m.key_lines["basis"], f"basis must be stated or inferred, got {basis!r}")
    negated = m.get("negated", False)
    if not isinstance(negated, bool):
        raise ctx.fail(f"{where}.negated", m.key_lines["negated"], f"expected true or false, got {negated!r}")
    return Candidate(
        subject=ctx.string(m, "subject", where),
        predicate=ctx.string(m, "predicate", where),
        value=ctx.string(m, "value", where),
        quote=quote,
        basis=basis,
        negated=negated,
        event_id=event_id,
        event_time=event.timestamp,
        session_id=session_id,
    )


def _serving(ctx: _Ctx, raw: Any, where: str, line: int) -> ServingCheck:
    """One `serving` check: at a time, a value of a key is served current, stale or hidden."""
    m = ctx.mapping(raw, where, line, _SERVING_KEYS)
    served = ctx.string(m, "served", where)
    if served not in SERVED:
        raise ctx.fail(f"{where}.served", m.key_lines["served"], f"must be one of {', '.join(SERVED)}, got {served!r}")
    return ServingCheck(at=ctx.when(m, "at", where), subject=ctx.string(m, "subject", where, required=False) or "user",
                        predicate=ctx.string(m, "predicate", where), value=ctx.string(m, "value", where),
                        served=served)  # fmt: skip


def parse_fixture(path: Path, data: Any) -> tuple[UserHistory, list[Question]]:
    """Validate one loaded fixture document and build its user history and questions."""
    ctx = _Ctx(path)
    top = ctx.mapping(data, "(top)", 1, _TOP_KEYS)
    app = ctx.string(top, "app", "(top)")
    user = ctx.string(top, "user", "(top)")
    sessions: list[Session] = []
    gold: dict[str, list[Candidate]] = {}
    skips: dict[str, str] = {}
    event_ids: set[str] = set()
    for si, raw_session in enumerate(ctx.seq(top, "sessions", "(top)")):
        where = f"sessions[{si}]"
        sm = ctx.mapping(raw_session, where, top.key_lines["sessions"], _SESSION_KEYS)
        events = []
        last: datetime | None = None
        for ei, raw_event in enumerate(ctx.seq(sm, "events", where)):
            ewhere = f"{where}.events[{ei}]"
            event, skip = _event(ctx, raw_event, ewhere, sm.line)
            if event.id in event_ids:
                raise ctx.fail(f"{ewhere}.id", raw_event.line, f"event id {event.id!r} is used twice")
            if last is not None and event.timestamp < last:
                raise ctx.fail(
                    f"{ewhere}.at", raw_event.key_lines["at"], "events must be in time order within a session"
                )
            event_ids.add(event.id)
            last = event.timestamp
            if skip:
                skips[event.id] = skip
            events.append(event)
        session_id = ctx.string(sm, "id", where)
        sessions.append(Session(app_name=app, user_id=user, id=session_id, events=events))
        if "candidates" in sm:
            by_id = {e.id: e for e in events}
            gold[session_id] = [
                _candidate(ctx, raw, f"{where}.candidates[{ci}]", sm.key_lines["candidates"], by_id, session_id)
                for ci, raw in enumerate(ctx.seq(sm, "candidates", where))
            ]
    session_ids = [s.id for s in sessions]
    replay = [str(x) for x in ctx.seq(top, "replay", "(top)")] if "replay" in top else session_ids
    for sid in replay:
        if sid not in session_ids:
            raise ctx.fail("replay", top.key_lines["replay"], f"session {sid!r} is not in this file")
    expected = None
    if "expected" in top:
        expected = []
        for xi, raw in enumerate(ctx.seq(top, "expected", "(top)")):
            xm = ctx.mapping(raw, f"expected[{xi}]", top.key_lines["expected"], _EXPECTED_KEYS)
            expected.append(
                (
                    ctx.string(xm, "subject", f"expected[{xi}]"),
                    ctx.string(xm, "predicate", f"expected[{xi}]"),
                    ctx.string(xm, "value", f"expected[{xi}]"),
                    str(xm.get("basis", "stated")),
                )
            )
    serving = [_serving(ctx, raw, f"serving[{i}]", top.key_lines["serving"])
               for i, raw in enumerate(ctx.seq(top, "serving", "(top)") if "serving" in top else [])]  # fmt: skip
    questions = []
    bad: list[tuple[int, str]] = []  # every bad reference, so one check lists them all
    for qi, raw_query in enumerate(ctx.seq(top, "queries", "(top)") if "queries" in top else []):
        where = f"queries[{qi}]"
        qm = ctx.mapping(raw_query, where, top.key_lines["queries"], _QUERY_KEYS)
        relevant = ctx.seq(qm, "relevant", where) if "relevant" in qm else None
        if relevant is None:
            raise ctx.fail(where, qm.line, "required key 'relevant' is missing (use [] for a no-answer question)")
        for rid in relevant:
            if rid not in event_ids:
                bad.append((qm.key_lines["relevant"], f"{where}.relevant: event id {rid!r} is not in this file"))
            elif rid in skips:
                bad.append((qm.key_lines["relevant"], f"{where}.relevant: event {rid!r} is expected to be skipped "
                                                      f"({skips[rid]}), so it can never be found"))  # fmt: skip
        questions.append(
            Question(
                id=ctx.string(qm, "id", where),
                app_name=app,
                user_id=user,
                text=ctx.string(qm, "text", where),
                relevant=tuple(str(r) for r in relevant),
                asked_at=ctx.when(qm, "asked_at", where, required=False),
                qtype=ctx.string(qm, "type", where, required=False) or "default",
                fact_key=ctx.string(qm, "fact_key", where, required=False),
            )
        )
    if bad:
        raise listed(path, bad, "bad references", "A query's `relevant` must name events of this file that the "
                     "ingest filter keeps")  # fmt: skip
    history = UserHistory(
        app_name=app,
        user_id=user,
        sessions=sessions,
        description=str(top.get("description") or ""),
        expected_skips=skips,
        source=str(path),
        gold_candidates=gold,
        replay=replay,
        expected_facts=expected,
        serving=serving,
    )
    return history, questions


def load_fixture_file(path: str | Path) -> tuple[UserHistory, list[Question]]:
    path = Path(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LineLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        raise FixtureError(f"{path}:{line}: not valid YAML/JSON: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:  # refused by the bounds: aliases that expand too far, nesting too deep
        raise FixtureError(f"{path}: refused: {exc}; write the values out flat") from None
    except RecursionError:  # block nesting is composed recursively before the bounds can measure it
        raise FixtureError(f"{path}: refused: nested deeper than {MAX_DEPTH} levels; write the values out "
                           "flat") from None  # fmt: skip
    except OSError as exc:
        raise FixtureError(f"{path}: cannot read fixture: {exc}") from None
    return parse_fixture(path, data)


def load_event_fixtures(folder: str | Path, name: str | None = None) -> Dataset:
    """Every *.yaml / *.yml / *.json file of `folder`, checked for ids unique across files."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.suffix in {".yaml", ".yml", ".json"})
    if not files:
        raise FixtureError(f"{folder}: no fixture files (*.yaml, *.yml, *.json) found")
    users, questions = [], []
    seen_events: dict[str, Path] = {}
    seen_sessions: dict[str, Path] = {}
    seen_users: dict[tuple[str, str], Path] = {}
    for path in files:
        history, qs = load_fixture_file(path)
        key = (history.app_name, history.user_id)
        if key in seen_users:
            raise FixtureError(f"{path}: user {key[1]!r} of app {key[0]!r} is also defined in {seen_users[key]}")
        seen_users[key] = path
        for session in history.sessions:
            if session.id in seen_sessions:
                raise FixtureError(f"{path}: session id {session.id!r} is also used in {seen_sessions[session.id]}")
            seen_sessions[session.id] = path
            for event in session.events:
                if event.id in seen_events:
                    raise FixtureError(f"{path}: event id {event.id!r} is also used in {seen_events[event.id]}")
                seen_events[event.id] = path
        users.append(history)
        questions.extend(qs)
    return Dataset(name=name or folder.name, users=users, questions=questions)
