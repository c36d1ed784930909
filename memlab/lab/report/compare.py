"""Compare any two runs: the paired change of every question-averaged metric on the questions both runs answered,
whatever the configs are called, with a list of what differs between the two configs.

The gate (memlab/lab/report/gate.py) judges a run against the baseline of the same suite and refuses anything else; this
is for the question a user asks of two configs on the same data ("did chunking help?"). A question is the same
question in both runs when its data set and question id match; questions only one run answered are counted, not
compared. A change is run minus against, with the 95% bootstrap interval of the paired differences and the
sign-flip test's p-value, Holm-corrected over every row (memlab/lab/metrics/uncertainty.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.base.outputs import claim_file
from memlab.lab.base.redacted import write_text
from memlab.lab.base.tables import markdown_table
from memlab.lab.metrics.keys import ScoreKey, keyed
from memlab.lab.metrics.uncertainty import ALPHA, QuestionTable, averaged, paired_differences
from memlab.lab.report.gate import load_metrics, load_questions, load_roles, metrics_experiment, scope_differences
from memlab.lab.runs.folder import RunFolder
from memlab.lab.systems.roles import CUT, names

TITLE = "# Comparison of two runs"
FILE_NAME = "compare.md"
TABLE_COLUMNS = ["dataset", "system", "metric", "against", "run", "change", "lo", "hi", "questions", "p",
                 "p_adjusted", "significant"]  # fmt: skip
COVERAGE_COLUMNS = ["dataset", "system", "both", "only_run", "only_against"]


@dataclass(frozen=True)
class Source:
    """One side of a comparison: a run folder (metrics.json, question_scores.parquet, manifest.json) or a baseline
    file (its metrics and `<name>.questions.parquet`; no manifest)."""

    path: Path
    metrics: dict[str, float]
    questions: pd.DataFrame
    manifest: dict
    experiment: str | None

    @classmethod
    def load(cls, path: str | Path, flag: str) -> Source:
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"{flag} {path}: no such run folder or baseline file.")
        baseline = path.is_file() and path.name != "metrics.json"
        metrics = load_metrics(path, what="baseline" if baseline else "run")
        questions = load_questions(path, baseline=baseline)
        if questions is None or questions.empty:
            raise ConfigError(f"{flag} {path}: no per-question scores beside its metrics (question_scores.parquet "
                              "of a run, <name>.questions.parquet of a baseline), so no paired comparison can be "
                              "made; give a run folder of a finished `memlab eval`.")  # fmt: skip
        manifest = {} if baseline else RunFolder(path if path.is_dir() else path.parent).manifest
        return cls(path, metrics, questions, manifest, metrics_experiment(path))

    @property
    def config(self) -> dict:
        return self.manifest.get("config", {}).get("resolved", {})


@dataclass
class Comparison:
    """The result: `table` (one row per data set x system pair x metric), `coverage` (questions both runs
    answered and those only one did, per data set x system pair) and `differences` (what differs between the
    two configs and data, one line each)."""

    run: Source
    against: Source
    table: pd.DataFrame
    coverage: pd.DataFrame
    differences: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        significant = int(self.table.significant.sum()) if len(self.table) else 0
        lines = [TITLE, "",
                 f"run `{self.run.path}` ({_named(self.run)}) against `{self.against.path}` ({_named(self.against)}).",
                 "",
                 "Each `change` is run minus against on the questions both runs answered (same data set, same "
                 "question id); `lo`-`hi` is the 95% bootstrap interval of those paired differences, `p` the "
                 "sign-flip test's p-value and `p_adjusted` Holm's correction over all rows. "
                 f"{significant} of {len(self.table)} changes are significant at {ALPHA}.", "",
                 "## What differs", ""]  # fmt: skip
        lines += [f"- {d}" for d in self.differences] or ["- Nothing in the configs, models or data differs."]
        lines += ["", "## Questions", "",
                  markdown_table(self.coverage) if len(self.coverage) else "No data set and system in common.", "",
                  "## Paired differences", "",
                  markdown_table(self.table) if len(self.table) else "No metric in common.", ""]  # fmt: skip
        return "\n".join(lines)


def _named(source: Source) -> str:
    return f"config `{source.experiment}`" if source.experiment else "config not recorded"


def is_comparison_file(path: Path) -> bool:
    """A comparison memlab wrote (so `memlab report --against` may replace it)."""
    try:
        with path.open(encoding="utf-8") as file:
            return file.readline().startswith(TITLE)
    except (OSError, UnicodeDecodeError):
        return False


def _index(metrics: dict[str, float]) -> dict[tuple[str, str], set[str]]:
    """(data set, system) -> the question-averaged headline metrics it has (breakdowns left out)."""
    out: dict[tuple[str, str], set[str]] = {}
    for key in keyed(metrics):
        if not key.group and averaged(key) is not None:
            out.setdefault((key.dataset, key.system), set()).add(key.metric)
    return out


def parse_system_pair(text: str, run_systems: Iterable[str], against_systems: Iterable[str]) -> tuple[str, str]:
    """`RUN_NAME:AGAINST_NAME` -> the two names. System names may hold colons (`facts:rules`), so the split is
    the one whose halves name a system of each run."""
    run_names, against_names = set(run_systems), set(against_systems)
    splits = [(text[:i], text[i + 1:]) for i, ch in enumerate(text) if ch == ":"]
    found = [(a, b) for a, b in splits if a in run_names and b in against_names]
    if len(found) == 1:
        return found[0]
    if not splits:
        raise ConfigError(f"--system {text!r}: give RUN_SYSTEM:AGAINST_SYSTEM, e.g. --system chunk4o1:pg-exact")
    raise ConfigError(f"--system {text!r}: no split names a system of the run and one of the other run; the run "
                      f"has {sorted(run_names)}, the other {sorted(against_names)}")  # fmt: skip


def _pairs(run: Source, against: Source, chosen: Sequence[str]) -> list[tuple[str, str, str]]:
    """(data set, run system, against system): every system both runs hold by name (cut-off grid points left
    out), then each chosen pair, on every data set both runs hold."""
    a, b = _index(run.metrics), _index(against.metrics)
    cuts = names(set(a) | set(b), load_roles(against.path, run.path), CUT)
    datasets = [d for d in dict.fromkeys(d for d, _ in a) if d in {d for d, _ in b}]
    named = [parse_system_pair(text, {s for _, s in a}, {s for _, s in b}) for text in chosen]
    pairs = []
    for dataset in datasets:
        same = [(s, s) for d, s in a if d == dataset and (d, s) in b and (d, s) not in cuts]
        for sa, sb in dict.fromkeys([*same, *named]):
            if (dataset, sa) in a and (dataset, sb) in b:
                pairs.append((dataset, sa, sb))
    return pairs


def compare_runs(run: str | Path, against: str | Path, *, systems: Sequence[str] = (),
                 alpha: float = ALPHA) -> Comparison:  # fmt: skip
    """Compare run folder `run` with `against` (a run folder or a baseline file), whatever their configs are
    called. `systems` adds `RUN_SYSTEM:AGAINST_SYSTEM` pairs to the systems both hold by name."""
    first, second = Source.load(run, "--run"), Source.load(against, "--against")
    run_table, against_table = QuestionTable(first.questions), QuestionTable(second.questions)
    a, b = _index(first.metrics), _index(second.metrics)
    keys, coverage = [], []
    for dataset, sa, sb in _pairs(first, second, systems):
        name = sa if sa == sb else f"{sa} vs {sb}"
        asked_run = _asked(first.questions, dataset, sa)
        asked_against = _asked(second.questions, dataset, sb)
        coverage.append({"dataset": dataset, "system": name, "both": len(asked_run & asked_against),
                         "only_run": len(asked_run - asked_against), "only_against": len(asked_against - asked_run)})
        for metric in sorted(a[(dataset, sa)] & b[(dataset, sb)]):
            keys.append((ScoreKey(dataset, sb, metric), ScoreKey(dataset, sa, metric), dataset, name, metric))
    tests = paired_differences(against_table, run_table, [(kb, ka) for kb, ka, *_ in keys], alpha=alpha)
    by_pair = {(r.before, r.after): r for r in tests.itertuples(index=False)}
    rows = []
    for key_against, key_run, dataset, name, metric in keys:
        test = by_pair.get((str(key_against), str(key_run)))
        if test is None:
            continue
        before = against_table.values_of(key_against)
        after = run_table.values_of(key_run)
        both = before.index.intersection(after.index)
        rows.append({"dataset": dataset, "system": name, "metric": metric,
                     "against": float(before.loc[both].mean()), "run": float(after.loc[both].mean()),
                     "change": test.change, "lo": test.lo, "hi": test.hi, "questions": int(test.questions),
                     "p": test.p, "p_adjusted": test.p_adjusted, "significant": bool(test.significant)})  # fmt: skip
    return Comparison(first, second, pd.DataFrame(rows, columns=TABLE_COLUMNS),
                      pd.DataFrame(coverage, columns=COVERAGE_COLUMNS), config_differences(first, second))


def _asked(questions: pd.DataFrame, dataset: str, system: str) -> set[str]:
    rows = questions[(questions.dataset == dataset) & (questions.system == system)]
    return set(rows.question_id.astype(str))


# -- what differs between two configs ----------------------------------------------------------------------------


def _flatten(value: Any, prefix: str, out: dict[str, str]) -> dict[str, str]:
    """Dotted paths -> JSON values; a list of named entries (systems, data sets) is keyed by name, so a reordered
    or added system shows as itself and not as every later index changing."""
    if isinstance(value, dict):
        for key in sorted(value):
            _flatten(value[key], f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) and "name" in v for v in value):
        for item in value:
            _flatten({k: v for k, v in item.items() if k != "name"} or {"": "present"}, f"{prefix}[{item['name']}]",
                     out)  # fmt: skip
    else:
        out[prefix] = json.dumps(value, sort_keys=True, default=str)
    return out


def _settings(source: Source) -> dict[str, str]:
    config = {k: v for k, v in source.config.items() if k not in ("out", "description")}
    settings = _flatten(config, "", {})
    _flatten(source.manifest.get("embedders", {}), "model", settings)
    return {key.removesuffix("."): value for key, value in settings.items()}


def config_differences(run: Source, against: Source) -> list[str]:
    """One line per setting that differs between the two runs' configs (systems and data sets by name, k, the
    embedding models, sweep options), per data set whose content differs, and the data sets and systems only
    one run measured. A baseline file carries no config: only its metrics' data sets and systems are compared."""
    lines = []
    if run.experiment != against.experiment:
        lines.append(f"config name: run `{run.experiment}`, against `{against.experiment}`")
    if run.manifest and against.manifest:
        mine, theirs = _settings(run), _settings(against)
        for key in sorted(set(mine) | set(theirs)):
            if key == "name" or mine.get(key) == theirs.get(key):
                continue
            lines.append(f"`{key}`: run {_shown(mine.get(key))}, against {_shown(theirs.get(key))}")
        sums_run = {d["name"]: d.get("checksum") for d in run.manifest.get("datasets", [])}
        sums_against = {d["name"]: d.get("checksum") for d in against.manifest.get("datasets", [])}
        for name in sorted(set(sums_run) & set(sums_against)):
            if sums_run[name] != sums_against[name]:
                lines.append(f"data set `{name}`: its content differs (checksum {str(sums_run[name])[:12]} vs "
                             f"{str(sums_against[name])[:12]}); questions are still paired by id")  # fmt: skip
    else:
        lines.append("the against side is a baseline file: it records no config, only its metrics")
    lines += scope_differences(run.metrics, against.metrics, "run", "`--against` side",
                               load_roles(against.path, run.path))  # fmt: skip
    return lines


def _shown(value: str | None) -> str:
    return "(not set)" if value is None else f"`{value}`"


def write_comparison(comparison: Comparison, path: str | Path) -> Path:
    """Write the comparison's Markdown through the redactor, like every file memlab writes beside a run; never
    over a file that is not a comparison memlab wrote."""
    claim_file(path, is_comparison_file, flag="--out", what="comparison")
    return write_text(Path(path), comparison.markdown())
