"""Data sets by format, from a config entry: memlab JSONL, LongMemEval's, LoCoMo's and BEIR's own layouts, fixture
YAML, memlab-synth, judged sets.

    {name: mydata, format: memlab, path: conversations.jsonl}     (format: jsonl is the same)
    {name: lme-s, format: longmemeval, path: longmemeval_s_knowledge_update.json.gz, limit: 20}
    {name: locomo, format: locomo, path: locomo10.json, conversations: 2, per_category: 20}
    {name: scifact, format: beir, path: scifact, split: test, limit: 100}   (a folder: corpus, queries, qrels/)
    {name: fixtures, format: fixtures, path: fixtures/events}
    {name: synth, format: synth, users: 16, max_events: 300, seed: 0}
    {name: mine, format: judged, queries: queries.jsonl, sessions: logs.jsonl, pool: pool.json, judgments: j.jsonl}
    {name: mine, format: judged, queries: q.jsonl, dsn_env: AGENT_DSN, app: my-agent, pool: p.json, judgments: j.jsonl}

The name given in the config is the name every output uses. An entry with `optional: true` and no `path` is
left out of the run (memlab.lab.config.parse), so a suite can name a data set the user brings with `--set`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memlab.errors import ConfigError, FixtureError
from memlab.lab.base.suggest import did_you_mean, unknown_keys
from memlab.lab.datasets.formats.beir import load_beir
from memlab.lab.datasets.formats.fixtures import load_event_fixtures, load_fixture_file
from memlab.lab.datasets.formats.jsonl import load_jsonl
from memlab.lab.datasets.formats.judged import OPTIONS as JUDGED_OPTIONS
from memlab.lab.datasets.formats.judged import load_judged
from memlab.lab.datasets.formats.judged import sessions_source as judged_sessions_source
from memlab.lab.datasets.formats.locomo import load_locomo
from memlab.lab.datasets.formats.longmemeval import load_longmemeval
from memlab.lab.datasets.label_loss import refuse_lost_labels
from memlab.lab.datasets.model import Dataset
from memlab.lab.datasets.synth import generate

FORMATS = ("memlab", "longmemeval", "locomo", "beir", "fixtures", "synth", "judged")
ALIASES = {"jsonl": "memlab"}  # `format: jsonl` reads memlab's JSON Lines, as `format: memlab` does
_OPTIONS: dict[str, set[str]] = {
    "memlab": {"path", "store"},  # store: a table store's rows are the events (memlab.lab.datasets.stores)
    "longmemeval": {"path", "limit", "per_type", "question_types", "include_abstention"},
    "locomo": {"path", "conversations", "per_category"},
    "beir": {"path", "split", "limit"},
    "fixtures": {"path"},
    "synth": {"users", "max_events", "min_events", "seed", "near_miss"},
    "judged": JUDGED_OPTIONS,
}
CHECKOUT = Path(__file__).resolve().parents[3]  # the memlab checkout (an editable install)


def resolve_path(raw: str | Path, base_dirs: list[Path], what: str, key: str = "path") -> Path:
    """An absolute path as given; a relative one against the config's folder, then the memlab checkout.
    A path that is nowhere raises a ConfigError naming every place looked at and the key (`key`) to fix."""
    path = Path(raw).expanduser()
    if path.is_absolute():
        if not path.exists():
            raise ConfigError(f"{what}: {path} does not exist; fix `{key}` in the config")
        return path
    tried = []
    for base in [*base_dirs, CHECKOUT]:
        candidate = (base / path).resolve()
        tried.append(str(candidate))
        if candidate.exists():
            return candidate
    raise ConfigError(f"{what}: {raw} not found (looked in {', '.join(dict.fromkeys(tried))}); fix `{key}`: give an "
                      "absolute path or one relative to the config file")  # fmt: skip


def check_spec(spec: dict[str, Any], where: str) -> str:
    """The format a data set entry names (`jsonl` is another name for `memlab`), after checking that it is known
    and that every key is one that format reads; a typo gets the nearest valid name."""
    fmt = spec.get("format")
    if fmt not in FORMATS and fmt not in ALIASES:
        raise ConfigError(f"{where}: format {fmt!r} is unknown{did_you_mean(fmt, [*FORMATS, *ALIASES])}; use one "
                          f"of {', '.join(FORMATS)} (or jsonl, another name for memlab)")  # fmt: skip
    fmt = ALIASES.get(fmt, fmt)
    allowed = {"name", "format", "optional"} | _OPTIONS[fmt]
    extra = set(spec) - allowed
    if extra:
        elsewhere = [f"{key!r} is read by format(s) {', '.join(f for f in FORMATS if key in _OPTIONS[f])}, not {fmt}"
                     for key in sorted(map(str, extra)) if any(key in keys for keys in _OPTIONS.values())]
        raise ConfigError(f"{where}: {unknown_keys(extra, allowed)} for format {fmt}; allowed: "
                          f"{sorted(_OPTIONS[fmt])}{''.join(f'; {e}' for e in elsewhere)}")  # fmt: skip
    return fmt


def load_dataset(spec: dict[str, Any], base_dirs: list[Path] | None = None) -> Dataset:
    """Load one configured data set; every error names the data set and the fix."""
    if not isinstance(spec, dict) or not spec.get("name"):
        raise ConfigError(f"every data set needs a `name` and a `format`; got {spec!r}")
    try:
        return _load(spec, base_dirs)
    except RecursionError:  # the readers bound nesting where they parse; this names any depth they missed
        raise FixtureError(f"data set {spec['name']!r}: refused: {spec.get('path') or 'a file of it'} is nested too "
                           "deeply to read; write the values out flat") from None  # fmt: skip


def _load(spec: dict[str, Any], base_dirs: list[Path] | None) -> Dataset:
    name = str(spec["name"])
    fmt = check_spec(spec, f"data set {name!r}")
    base_dirs = base_dirs or []
    if fmt == "judged":  # a judged set names its files (or a DSN for its sessions), not one path
        files = _judged_files(name, spec, base_dirs)
    elif fmt != "synth":
        if not spec.get("path"):
            raise ConfigError(f"data set {name!r}: `path` is required for format {fmt}")
        path = resolve_path(spec["path"], base_dirs, f"data set {name!r}")
    if fmt == "memlab" and spec.get("store") is not None:
        raise ConfigError(f"data set {name!r} reads its events from store {spec['store']!r}: it loads in an experiment "
                          "whose config has that store in `stores:` (memlab eval --config FILE)")  # fmt: skip
    if fmt == "memlab":
        data = load_jsonl(path, name)
    elif fmt == "fixtures":
        if path.is_dir():
            data = load_event_fixtures(path, name)
        else:
            user, questions = load_fixture_file(path)
            data = Dataset(name, [user], questions)
    elif fmt == "longmemeval":
        data = _longmemeval(path, spec)
    elif fmt == "locomo":
        data = load_locomo(path, **{k: int(spec[k]) for k in ("conversations", "per_category") if k in spec})
    elif fmt == "beir":
        data = load_beir(path, split=str(spec.get("split", "test")),
                         limit=int(spec["limit"]) if spec.get("limit") is not None else None)
    elif fmt == "judged":
        data = load_judged(name, **files, assessor=spec.get("assessor"))
    else:
        options = {k: int(spec[k]) for k in ("users", "max_events", "min_events", "near_miss") if k in spec}
        data = generate(int(spec.get("seed", 0)), **options)
    data.name = name
    refuse_lost_labels(data)  # most labels pointing outside the data: its scores would measure the loader
    if not data.questions and not any(u.expected_facts is not None for u in data.users):
        raise ConfigError(f"data set {name!r}: no questions after loading (check `limit` and the file)")
    return data


def _judged_files(name: str, spec: dict[str, Any], base_dirs: list[Path]) -> dict[str, Any]:
    """The judged set's files resolved, each error naming its key (`judgments` may list several), and its
    sessions: a file, or the agent's memory by DSN (memlab.lab.datasets.formats.judged)."""
    missing = [key for key in ("queries", "pool", "judgments") if not spec.get(key)]
    if missing:
        raise ConfigError(f"data set {name!r}: format judged needs {', '.join(f'`{m}`' for m in missing)} (the "
                          "query file, the pool file and the judgments file(s)), and `sessions` or `dsn`")  # fmt: skip
    store = judged_sessions_source(name, spec)

    def one(key: str, raw: Any, label: str) -> Path:
        return resolve_path(raw, base_dirs, f"data set {name!r} `{label}`", key)

    files: dict[str, Any] = {key: one(key, spec[key], key) for key in ("queries", "pool")}
    given = spec["judgments"]
    files["judgments"] = ([one("judgments", raw, f"judgments[{i}]") for i, raw in enumerate(given)]
                          if isinstance(given, list) else one("judgments", given, "judgments"))  # fmt: skip
    files["sessions"] = store if store is not None else one("sessions", spec["sessions"], "sessions")
    return files


def _longmemeval(path: Path, spec: dict[str, Any]) -> Dataset:
    """A LongMemEval file; `per_type: N` keeps the first N questions of each question type (abstention counts as
    a type), `limit: N` the first N overall, `question_types` a subset."""
    data = load_longmemeval(path, question_types=spec.get("question_types"),
                            include_abstention=bool(spec.get("include_abstention", True)))  # fmt: skip
    questions = data.questions
    if spec.get("per_type") is not None:
        taken: dict[str, int] = {}
        kept = []
        for q in questions:
            if taken.get(q.qtype, 0) < int(spec["per_type"]):
                taken[q.qtype] = taken.get(q.qtype, 0) + 1
                kept.append(q)
        questions = kept
    if spec.get("limit") is not None:
        questions = questions[: int(spec["limit"])]
    users = {(q.app_name, q.user_id) for q in questions}
    return Dataset(data.name, [u for u in data.users if (u.app_name, u.user_id) in users], questions,
                   dropped=data.dropped, label_kinds=data.label_kinds, labels_given=data.labels_given)  # fmt: skip
