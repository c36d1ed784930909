"""Checks of a loaded data set against what the config will do with it, said before the run rather than read
off a zero afterwards.

Some features read the event author `user` as "the person this memory belongs to": the rule fact extractor
records facts only from that author's turns (others count as the agent or a tool), first-person query rendering
rewrites "the user" as "I" to match that author's own words, and `prefer_author` favours one named author. A
conversation between two people converted as one user per conversation with each speaker as the author (Alice,
Bob) has no author `user`: those features then find nothing, and the run reports 0 facts or recall 0.000. Each
such pairing becomes a warning that names the data set, the feature and the fix; the run log prints it,
manifest.json keeps it (`warnings`) and report.md shows it. What loading dropped (labels pointing outside the data
above all: memlab.lab.datasets.label_loss) is warned of the same way, first."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from memlab.lab.datasets.label_loss import dropped_warning, label_line
from memlab.lab.datasets.model import Dataset

USER = "user"  # the author the rule extractor and first-person queries read as the memory's owner
_FIX = ("Fix: if the agent serves one of the speakers, write that speaker's events with author 'user' (the other "
        "as 'model' or by name); otherwise use author-neutral settings")  # fmt: skip


def _sweeps_on(config: dict[str, Any], dataset: str) -> dict[str, dict[str, Any]]:
    """The sweeps that run on `dataset`, each with its options (a sweep whose `datasets` omit it does not)."""
    options = config.get("options") or {}
    out = {}
    for name in config.get("sweeps") or []:
        settings = options.get(name) or {}
        if settings.get("datasets") is None or dataset in settings["datasets"]:
            out[name] = settings
    return out


def _users_of(config: dict[str, Any], dataset: str) -> dict[str, list[str]]:
    """Feature -> where the config uses it on `dataset` ("system 'x'", "sweep granularity"), for the features
    that read author 'user'; and `prefer:<author>` for every author a setting prefers."""
    uses: dict[str, list[str]] = {}

    def add(feature: str, where: str) -> None:
        uses.setdefault(feature, []).append(where)

    for entry in config.get("systems") or []:
        where = f"system {entry.get('name')!r}"
        fact_system = "extractor" in entry or entry.get("granularity") == "facts"
        if (fact_system and entry.get("extractor", "rules") == "rules") or entry.get("fact_keys") == "rules":
            add("rules", where)
        if entry.get("query_rendering") == "first_person":
            add("first_person", where)
        if isinstance(entry.get("prefer_author"), str):
            add(f"prefer:{entry['prefer_author']}", where)
    sweeps = _sweeps_on(config, dataset)
    defaults = {"granularity": ("extractors", ["rules"]), "facts": ("extractors", ["labelled", "rules"]),
                "retrieval": ("fact_keys", ["rules", "labelled"])}  # fmt: skip
    for sweep, (key, default) in defaults.items():
        if sweep in sweeps and "rules" in (sweeps[sweep].get(key) or default):
            add("rules", f"sweep {sweep}")
    if "retrieval" in sweeps:
        if "first_person" in (sweeps["retrieval"].get("query_renderings") or ["first_person"]):
            add("first_person", "sweep retrieval")
        for author in sweeps["retrieval"].get("authors") or []:
            add(f"prefer:{author}", "sweep retrieval (authors)")
    return uses


def _lacking(dataset: Dataset, author: str) -> int:
    """How many of the data set's users have no event by `author`."""
    return sum(not any(e.author == author for s in u.sessions for e in s.events) for u in dataset.users)


def _authors_seen(dataset: Dataset) -> str:
    """The most frequent authors with their event counts: `'Alice' 3, 'Bob' 3`."""
    authors = Counter(e.author for s in dataset.sessions() for e in s.events)
    return ", ".join(f"{a!r} {n}" for a, n in authors.most_common(5)) + (", ..." if len(authors) > 5 else "")


def author_warnings(dataset: Dataset, config: dict[str, Any]) -> list[str]:
    """One warning per feature the config uses on `dataset` that needs an author the data lacks."""
    uses = _users_of(config, dataset.name)
    if not uses or not dataset.users:
        return []
    seen = _authors_seen(dataset)
    users = len(dataset.users)
    out = []

    def head(author: str) -> str:
        return (f"data set {dataset.name!r}: no event has author {author!r} in {_lacking(dataset, author)} of "
                f"{users} user(s) (authors: {seen}), ")  # fmt: skip

    if "rules" in uses and _lacking(dataset, USER):
        out.append(head(USER) + f"but the rule fact extractor ({', '.join(uses['rules'])}) records facts only from "
                   "the turns of author 'user' (other authors count as the agent or a tool), so expect few or no facts "
                   f"and recall near 0. {_FIX} (the labelled extractor with gold facts, no rules extractor).")
    if "first_person" in uses and _lacking(dataset, USER):
        out.append(head(USER) + f"but first-person query rendering ({', '.join(uses['first_person'])}) rewrites "
                   "'the user' as 'I' to match the own words of author 'user', which this data does not have. "
                   f"{_FIX} (query_rendering as_is; the retrieval sweep's query_renderings set to as_is only).")
    for feature, where in uses.items():
        author = feature.partition("prefer:")[2]
        if feature.startswith("prefer:") and _lacking(dataset, author):
            out.append(head(author) + f"but prefer_author {author!r} ({', '.join(where)}) favours that author's "
                       f"units, and where there are none it changes nothing. {_FIX} (no prefer_author, or an "
                       "author the data has); a preferred author other than 'user' must be one of the authors "
                       "above.")  # fmt: skip
    return out


def author_note(dataset: Dataset) -> str | None:
    """For `memlab check-dataset` (no config yet): which features will find nothing when users lack author
    'user'; None when every user has it."""
    lacking = _lacking(dataset, USER)
    if not lacking or not dataset.users:
        return None
    seen = _authors_seen(dataset)
    return (f"no event has author 'user' in {lacking} of {len(dataset.users)} user(s) (authors: {seen}): the rule "
            "fact extractor, first-person query rendering and prefer_author 'user' will find nothing there. If the "
            "agent serves one of the speakers, write that speaker's events with author 'user'; otherwise use "
            "author-neutral settings (docs/tutorials/your-own-data.md: Conversations between two people)")  # fmt: skip


def dataset_warnings(datasets: Iterable[Dataset], config: dict[str, Any],
                     log: Callable[[str], object] | None = None) -> list[str]:  # fmt: skip
    """Every data set's warnings, each also passed to `log` (the run log) as `warning: ...`: what loading dropped
    (labels pointing outside the data first), then features the data cannot serve."""
    datasets = list(datasets)
    out = [w for d in datasets if (w := dropped_warning(d)) is not None]
    out += [w for d in datasets for w in author_warnings(d, config)]
    for warning in out:
        if log is not None:
            log(f"warning: {warning}")
    return out


def warning_lines(manifest: dict[str, Any]) -> list[str]:
    """report.md's `## Warnings` section from the manifest's `warnings` (nothing when there are none)."""
    warnings = manifest.get("warnings") or []
    return ["## Warnings", "", *[f"- {w}" for w in warnings], ""] if warnings else []


def load_summary(dataset: Dataset, examples: int = 5) -> list[str]:
    """`memlab check-dataset`'s summary of any format: users, sessions, events, questions by type (with how many
    are no-answer questions), and each kind of reference loading dropped, counted, with the first few named."""
    counts = dataset.summary()
    lines = [f"users {counts['users']}, sessions {counts['sessions']}, events {counts['events']}",
             f"questions {counts['questions']} ({counts['answerable']} answerable, {counts['no_answer']} no-answer)"]
    by_type = Counter(q.qtype for q in dataset.questions)
    no_answer = Counter(q.qtype for q in dataset.questions if not q.answerable)
    for qtype, n in sorted(by_type.items()):
        lines.append(f"  {qtype}: {n}" + (f" ({no_answer[qtype]} no-answer)" if no_answer[qtype] else ""))
    lost = label_line(dataset)
    if lost is not None:
        lines.append(lost)
    if not dataset.dropped:
        lines.append("dropped references: none")
    for kind, items in dataset.dropped.items():
        shown = ", ".join(items[:examples]) + (", ..." if len(items) > examples else "")
        lines.append(f"dropped {kind}: {len(items)} ({shown})")
    return lines
