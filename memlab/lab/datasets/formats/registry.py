"""The data set formats a config's `datasets:` entry may name, one entry each: its reader, its typed options (the
keys the entry may have besides `name`, `format` and `optional`, with types, defaults and what they do) and a
description. The loader (memlab.lab.datasets.loaders) reads this table only: a new format is one entry here.
Relative paths resolve as memlab.lab.datasets.paths says (the config's folder, the working folder, the memlab
checkout, the data packaged with memlab).

    {name: mydata, format: memlab, path: conversations.jsonl}     (format: jsonl is the same)
    {name: lme-s, format: longmemeval, path: longmemeval_s_knowledge_update.json.gz, limit: 20}
    {name: locomo, format: locomo, path: locomo10.json, conversations: 2, per_category: 20}
    {name: scifact, format: beir, path: scifact, split: test, limit: 100}   (a folder: corpus, queries, qrels/)
    {name: fixtures, format: fixtures, path: fixtures/events}
    {name: synth, format: synth, users: 16, max_events: 300, seed: 0}
    {name: mine, format: judged, queries: queries.jsonl, sessions: logs.jsonl, pool: pool.json, judgments: j.jsonl}

An entry is checked against its format's options when the config is read (`entry_options`), before anything is
loaded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from memlab.errors import ConfigError
from memlab.lab.base.options import PATH_CHARS, OptionRow, check_options, check_value, option, option_rows
from memlab.lab.base.suggest import did_you_mean
from memlab.lab.datasets.formats.beir import load_beir
from memlab.lab.datasets.formats.fixtures import load_event_fixtures, load_fixture_file
from memlab.lab.datasets.formats.jsonl import load_jsonl
from memlab.lab.datasets.formats.judged import TableSessions, load_judged, sessions_source
from memlab.lab.datasets.formats.locomo import load_locomo
from memlab.lab.datasets.formats.longmemeval import load_longmemeval
from memlab.lab.datasets.model import Dataset
from memlab.lab.datasets.paths import extract_problem, resolve_path
from memlab.lab.datasets.synth import generate

ENTRY_KEYS = ("name", "format", "optional")  # every entry's own keys, read by the config, not by a format
MAX_SYNTH_EVENTS = 2_000_000  # users x max_events of a memlab-synth data set (the full suite asks for a few percent)
COUNT = 1_000_000  # the largest count of questions or conversations an option keeps


@dataclass(frozen=True)
class Format:
    """One data set format: `read(name, options, base_dirs)` loads an entry whose options (an instance of
    `options`) are checked already; relative paths start from `base_dirs`, then the memlab checkout,
    then the packaged data (memlab.lab.datasets.paths)."""

    name: str
    options: type
    read: Callable[[str, Any, list[Path]], Dataset]
    description: str
    aliases: tuple[str, ...] = ()


def _path(name: str, options: Any, base_dirs: list[Path]) -> Path:
    return resolve_path(options.path, base_dirs, f"data set {name!r}")


@dataclass(frozen=True)
class JsonlOptions:
    path: str = option(doc="the memlab JSON Lines file (sessions and questions, one record per line)",
                       chars=PATH_CHARS)  # fmt: skip
    store: str | None = option(None, "a table store of the config's stores: whose rows are the events (the file "
                                     "then holds questions only; memlab.lab.datasets.stores)")  # fmt: skip


@dataclass(frozen=True)
class LongMemEvalOptions:
    path: str = option(doc="the LongMemEval file (.json or .json.gz)", chars=PATH_CHARS)
    limit: int | None = option(None, "keep the first N questions (after per_type)", low=1, high=COUNT)
    per_type: int | None = option(None, "keep the first N questions of each question type (abstention counts as "
                                        "a type)", low=1, high=COUNT)  # fmt: skip
    question_types: list[str] | None = option(None, "keep only these question types (LongMemEval's names)")
    include_abstention: bool = option(True, "keep the abstention (no-answer) questions")


@dataclass(frozen=True)
class LocomoOptions:
    path: str = option(doc="the LoCoMo file (.json or .json.gz)", chars=PATH_CHARS)
    conversations: int | None = option(None, "keep the first N conversations", low=1, high=COUNT)
    per_category: int | None = option(None, "keep the first N questions of each category in each conversation",
                                      low=1, high=COUNT)  # fmt: skip


@dataclass(frozen=True)
class BeirOptions:
    path: str = option(doc="the BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)", chars=PATH_CHARS)
    split: str = option("test", "the qrels file that labels the queries: qrels/<split>.tsv", chars=200)
    limit: int | None = option(None, "keep the first N judged queries", low=1, high=COUNT)


@dataclass(frozen=True)
class FixturesOptions:
    path: str = option(doc="a fixture folder (one YAML or JSON file per user) or one fixture file", chars=PATH_CHARS)


@dataclass(frozen=True)
class SynthOptions:
    seed: int = option(0, "the generator's seed: the same seed makes the same data", low=0, high=2**32 - 1)
    users: int = option(64, "how many users", low=2, high=10_000)
    max_events: int = option(2000, "the most events of one user", low=1, high=100_000)
    min_events: int = option(5, "the fewest events of one user", low=1, high=100_000)
    near_miss: int = option(1, "the most near-miss no-answer questions per user (0: none)", low=0, high=100_000)

    def check(self, where: str) -> None:
        """A synthetic data set of a billion events is a config error, not an hour of work."""
        if self.users * self.max_events > MAX_SYNTH_EVENTS:
            raise ConfigError(f"{where}: users x max_events = {self.users:,} x {self.max_events:,} = "
                              f"{self.users * self.max_events:,} events, over the limit of {MAX_SYNTH_EVENTS:,}; "
                              "generate fewer users or shorter histories")  # fmt: skip


@dataclass(frozen=True)
class JudgedOptions:
    queries: str = option(doc="the query file (JSON Lines)", chars=PATH_CHARS)
    pool: str = option(doc="the pool file the judgments were made on", chars=PATH_CHARS)
    judgments: str | list[str] = option(doc="the judgments file, or several read as one (a person's and a "
                                            "model's)", chars=PATH_CHARS, min_items=1)  # fmt: skip
    sessions: str | None = option(None, "the sessions the queries were asked against (a memlab JSONL file); or "
                                        "`dsn`/`dsn_env`, or `store`", chars=PATH_CHARS)  # fmt: skip
    dsn: str | None = option(None, "read the sessions from the agent's event memory at this DSN (`default`: "
                                   "MEMLAB_DSN, else the embedded server)", chars=PATH_CHARS, secret=True)  # fmt: skip
    dsn_env: str | None = option(None, "the environment variable holding that DSN")
    app: str | None = option(None, "with a DSN: the app every query must be of")
    layer: str | None = option(None, "with a DSN: the event layer read (default: event)")
    assessor: str | None = option(None, "count only this assessor's judgments")
    store: str | None = option(None, "read the sessions from a table store of the config's stores: (its rows; "
                                     "memlab.lab.datasets.stores)")  # fmt: skip


def _memlab(name: str, options: JsonlOptions, base_dirs: list[Path]) -> Dataset:
    if options.store is not None:
        raise ConfigError(f"data set {name!r} reads its events from store {options.store!r}: it loads in an experiment "
                          "whose config has that store in `stores:` (memlab eval --config FILE)")  # fmt: skip
    return load_jsonl(_path(name, options, base_dirs), name)


def _longmemeval(name: str, options: LongMemEvalOptions, base_dirs: list[Path]) -> Dataset:
    """`per_type: N` keeps the first N questions of each question type, then `limit: N` the first N overall. A
    packaged extract (an installed memlab with no checkout) serves only the selections it was written for."""
    path = _path(name, options, base_dirs)
    problem = extract_problem(path, asdict(options), name)
    if problem is not None:
        raise ConfigError(problem)
    data = load_longmemeval(path, question_types=options.question_types,
                            include_abstention=options.include_abstention)  # fmt: skip
    questions = data.questions
    if options.per_type is not None:
        taken: dict[str, int] = {}
        kept = []
        for q in questions:
            if taken.get(q.qtype, 0) < options.per_type:
                taken[q.qtype] = taken.get(q.qtype, 0) + 1
                kept.append(q)
        questions = kept
    if options.limit is not None:
        questions = questions[: options.limit]
    users = {(q.app_name, q.user_id) for q in questions}
    return Dataset(data.name, [u for u in data.users if (u.app_name, u.user_id) in users], questions,
                   dropped=data.dropped, label_kinds=data.label_kinds, labels_given=data.labels_given)  # fmt: skip


def _locomo(name: str, options: LocomoOptions, base_dirs: list[Path]) -> Dataset:
    return load_locomo(_path(name, options, base_dirs), conversations=options.conversations,
                       per_category=options.per_category)  # fmt: skip


def _beir(name: str, options: BeirOptions, base_dirs: list[Path]) -> Dataset:
    return load_beir(_path(name, options, base_dirs), split=options.split, limit=options.limit)


def _fixtures(name: str, options: FixturesOptions, base_dirs: list[Path]) -> Dataset:
    path = _path(name, options, base_dirs)
    if path.is_dir():
        return load_event_fixtures(path, name)
    user, questions = load_fixture_file(path)
    return Dataset(name, [user], questions)


def _synth(name: str, options: SynthOptions, base_dirs: list[Path]) -> Dataset:
    return generate(options.seed, users=options.users, max_events=options.max_events, min_events=options.min_events,
                    near_miss=options.near_miss)  # fmt: skip


def judged_path(name: str, base_dirs: list[Path], key: str, raw: str, label: str | None = None) -> Path:
    """One file of a judged set resolved, an error naming its key (`judgments[1]` of several)."""
    return resolve_path(raw, base_dirs, f"data set {name!r} `{label or key}`", key)


def judged_files(name: str, options: JudgedOptions, base_dirs: list[Path]) -> tuple[Path, Path | list[Path], Path]:
    """A judged set's query file, judgments (one file or several) and pool file, resolved."""
    given = options.judgments
    judgments: Path | list[Path] = ([judged_path(name, base_dirs, "judgments", raw, f"judgments[{i}]")
                                     for i, raw in enumerate(given)] if isinstance(given, list)
                                    else judged_path(name, base_dirs, "judgments", given))  # fmt: skip
    return (judged_path(name, base_dirs, "queries", options.queries), judgments,
            judged_path(name, base_dirs, "pool", options.pool))  # fmt: skip


def _judged(name: str, options: JudgedOptions, base_dirs: list[Path]) -> Dataset:
    """The judged set's files resolved, each error naming its key (`judgments` may list several), and its
    sessions: a file, or the agent's memory by DSN (memlab.lab.datasets.formats.judged). A set whose sessions
    are a table store's rows loads in its experiment (memlab.lab.datasets.stores)."""
    spec = {key: value for key, value in asdict(options).items() if value is not None}
    store = sessions_source(name, spec)
    if isinstance(store, TableSessions):
        raise ConfigError(f"data set {name!r} reads its sessions from store {store.store!r}: it loads in an "
                          "experiment whose config has that store in `stores:` (memlab eval --config FILE)")
    queries, judgments, pool = judged_files(name, options, base_dirs)
    sessions = store if store is not None else judged_path(name, base_dirs, "sessions", str(options.sessions))
    return load_judged(name, queries, sessions, judgments, pool, assessor=options.assessor)


DATA_FORMATS: Mapping[str, Format] = MappingProxyType({f.name: f for f in (
    Format("memlab", JsonlOptions, _memlab, "memlab's JSON Lines: sessions and labelled questions",
           aliases=("jsonl",)),
    Format("longmemeval", LongMemEvalOptions, _longmemeval, "a LongMemEval file: one user per question"),
    Format("locomo", LocomoOptions, _locomo, "a LoCoMo file: one user per conversation"),
    Format("beir", BeirOptions, _beir, "a BEIR folder: the corpus as one user's memory, its judged queries"),
    Format("fixtures", FixturesOptions, _fixtures, "memlab's fixture files (YAML or JSON), one user each"),
    Format("synth", SynthOptions, _synth, "memlab-synth: labelled data generated offline from a seed"),
    Format("judged", JudgedOptions, _judged, "a judged set: queries, their sessions, a pool and its judgments"),
)})  # fmt: skip


def aliases() -> dict[str, str]:
    """Other names of a format (`jsonl` -> `memlab`)."""
    return {alias: f.name for f in DATA_FORMATS.values() for alias in f.aliases}


def format_of(name: Any, where: str) -> Format:
    """The format an entry names (or an alias of it); an unknown name gets the nearest valid one."""
    other = aliases()
    if not isinstance(name, str) or (name not in DATA_FORMATS and name not in other):
        names = [*DATA_FORMATS, *other]
        known = ", ".join(DATA_FORMATS) + "".join(f" (or {a}, another name for {f})" for a, f in other.items())
        raise ConfigError(f"{where}: format {name!r} is unknown{did_you_mean(name, names)}; use one of {known}")
    return DATA_FORMATS[other.get(name, name)]


def entry_options(spec: dict[str, Any], where: str, *, missing_ok: bool = False) -> tuple[Format, Any]:
    """The format a `datasets:` entry names and its options, checked: every key one that format reads (a key of
    another format says which), each value of its type, the required ones given (`missing_ok`: an entry left
    out of the run may lack them)."""
    fmt = format_of(spec.get("format"), where)
    check_value(f"{where}.optional", spec.get("optional", False), bool)

    def elsewhere(extra: list[str]) -> str:
        readers = {key: [f.name for f in DATA_FORMATS.values() if key in f.options.__dataclass_fields__]
                   for key in extra}  # fmt: skip
        return "".join(f"; {key!r} is read by format(s) {', '.join(names)}, not {fmt.name}"
                       for key, names in readers.items() if names)  # fmt: skip

    options = {k: v for k, v in spec.items() if k not in ENTRY_KEYS}
    return fmt, check_options(fmt.options, options, where, owner=f"format {fmt.name}", also=ENTRY_KEYS,
                              missing_ok=missing_ok, unknown_note=elsewhere)  # fmt: skip


def format_options() -> list[OptionRow]:
    """Every format's options as rows (format, key, type, default, description): the reference of `datasets:`."""
    return [row for f in DATA_FORMATS.values() for row in option_rows(f.options, f.name)]


__all__ = ["DATA_FORMATS", "Format", "JudgedOptions", "aliases", "entry_options", "format_of", "format_options",
           "judged_files"]  # fmt: skip
