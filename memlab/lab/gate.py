"""The regression gate: a run's metrics.json against the committed baseline, with tolerances kept in a
checked-in file. A metric that got worse by more than its tolerance, or disappeared, is a regression."""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.config import suite_names
from memlab.lab.json_bounds import loads
from memlab.lab.outputs import claim_file, is_baseline_file
from memlab.lab.uncertainty import ALPHA, keep_questions, paired_differences, split_key
from memlab.lab.yaml_bounds import load_yaml_file

DEFAULT_TOLERANCES = Path(__file__).with_name("tolerances.yaml")


@dataclass(frozen=True)
class Rule:
    match: str
    direction: str  # higher | lower | ignore
    abs: float = 0.0


def load_rules(path: str | Path = DEFAULT_TOLERANCES) -> list[Rule]:
    data = load_yaml_file(path)  # bounded like a config: a tolerances file is the user's too
    if not isinstance(data, dict | None):
        raise ConfigError(f"{path}: a tolerances file is a mapping with `rules:`")
    rules = []
    for i, raw in enumerate((data or {}).get("rules") or []):
        if not isinstance(raw, dict) or raw.get("direction") not in ("higher", "lower", "ignore"):
            raise ConfigError(f"{path}: rules[{i}].direction must be higher, lower or ignore")
        try:
            rules.append(Rule(str(raw["match"]), raw["direction"], float(raw.get("abs", 0.0))))
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{path}: rules[{i}] needs `match` (a glob) and a numeric `abs`") from None
    if not rules:
        raise ConfigError(f"{path}: no rules")
    return rules


def _metrics_file(path: str | Path) -> Path:
    path = Path(path)
    return path / "metrics.json" if path.is_dir() else path


def load_metrics(path: str | Path, *, what: str = "run") -> dict[str, float]:
    """The metrics of a run folder (its metrics.json), a metrics.json, or a baseline file. `what` ("run" or
    "baseline") picks the advice given when the file is missing."""
    path = _metrics_file(path)
    if not path.exists():
        if what == "baseline":
            raise ConfigError(f"no baseline at {path}: make one from a finished run with "
                              "`memlab baseline --run <run folder>` (and commit it).")  # fmt: skip
        raise ConfigError(f"{path}: no metrics file; give the folder of a finished `memlab eval` run (it writes "
                          "metrics.json), or run one.")  # fmt: skip
    try:
        data = loads(path.read_text(), str(path), ConfigError)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("metrics"), dict):
        data = data["metrics"]  # a baseline file: {"experiment": ..., "metrics": {...}}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a metrics file (expected a JSON object of metric -> number).")
    try:
        return {str(k): float(v) for k, v in data.items()}
    except (TypeError, ValueError):
        raise ConfigError(f"{path}: not a metrics file (every value must be a number).") from None


def metrics_experiment(path: str | Path) -> str | None:
    """The experiment (suite) whose run the metrics come from, or None where the file does not say (an old
    baseline): a run folder's manifest names it, a baseline file records it."""
    path = Path(path)
    manifest = (path if path.is_dir() else path.parent) / "manifest.json"
    if manifest.exists():
        try:
            return loads(manifest.read_text(), str(manifest), ConfigError)["config"]["resolved"].get("name")
        except (json.JSONDecodeError, ConfigError, KeyError, TypeError, AttributeError):
            return None
    file = _metrics_file(path)
    try:
        data = loads(file.read_text(), str(file), ConfigError) if file.exists() else None
    except (json.JSONDecodeError, ConfigError):
        return None
    return data.get("experiment") if isinstance(data, dict) and isinstance(data.get("metrics"), dict) else None


def scope_differences(first: dict[str, float], second: dict[str, float], name_first: str,
                      name_second: str) -> list[str]:  # fmt: skip
    """The data sets, and systems of shared data sets, that only one of two metrics files holds (the cut-off
    grid's points left out): what makes two suites' metrics incomparable, named."""
    a = {split_key(key)[:2] for key in first if key.count("/") >= 2}
    b = {split_key(key)[:2] for key in second if key.count("/") >= 2}
    lines = []
    da, db = {d for d, _ in a}, {d for d, _ in b}
    for only, here in ((sorted(da - db), name_first), (sorted(db - da), name_second)):
        if only:
            lines.append(f"data sets only in the {here}: {', '.join(f'`{d}`' for d in only)}")
    for dataset in sorted(da & db):
        sa = {s for d, s in a if d == dataset and "@cut" not in s}
        sb = {s for d, s in b if d == dataset and "@cut" not in s}
        for only, here in ((sorted(sa - sb), name_first), (sorted(sb - sa), name_second)):
            if only:
                lines.append(f"systems on `{dataset}` only in the {here}: {', '.join(f'`{s}`' for s in only)}")
    return lines


def check_same_experiment(baseline: str | Path, run: str | Path) -> None:
    """Refuse to gate a run against another suite's baseline: their metrics differ by design, not by regression.
    The refusal names what differs and the command that compares the two anyway (`memlab report --against`)."""
    base, now = metrics_experiment(baseline), metrics_experiment(run)
    if base is not None and now is not None and base != now:
        what = scope_differences(load_metrics(baseline, what="baseline"), load_metrics(run), "baseline", "run")
        rerun = f", or run {base!r} again with `memlab eval --suite {base}`" if base in suite_names() else ""
        raise ConfigError(
            f"the gate only judges a run against a baseline of the same suite: the baseline {baseline} comes from "
            f"{base!r} and {run} is a run of {now!r} ({'; '.join(what) or 'the same data sets and systems by name'})."
            f" To compare the two anyway, paired on the questions both answered: `memlab report --run {run} "
            f"--against {baseline}`. To gate this run, make a baseline of {now!r} with `memlab baseline --run {run} "
            f"--out <file>`{rerun}."
        )


def questions_path(path: str | Path, *, baseline: bool = False) -> Path:
    """Where the per-question scores beside a metrics file live: a run's question_scores.parquet, or a
    baseline's `<name>.questions.parquet`."""
    path = Path(path)
    if baseline:
        return path.with_name(path.stem + ".questions.parquet")
    return (path if path.is_dir() else path.parent) / "question_scores.parquet"


def load_questions(path: str | Path, *, baseline: bool = False) -> pd.DataFrame | None:
    """The per-question scores beside a run or baseline, or None where there are none (an old baseline)."""
    file = questions_path(path, baseline=baseline)
    return pd.read_parquet(file) if file.exists() else None


def write_baseline(run: str | Path, out: str | Path) -> dict[str, float]:
    """Make a run's metrics a baseline file that records the experiment they come from, with the run's
    per-question scores beside it (`<name>.questions.parquet`, what the gate's paired tests compare with)."""
    claim_file(out, is_baseline_file, flag="--out", what="baseline")  # never over a file memlab did not write
    if not Path(out).exists():  # a new baseline: its question scores beside it must be new too
        claim_file(questions_path(out, baseline=True), lambda _: False, flag="--out", what="baseline's scores")
    metrics = load_metrics(run)
    payload = {"experiment": metrics_experiment(run), "metrics": dict(sorted(metrics.items()))}
    Path(out).write_text(json.dumps(payload, indent=2) + "\n")
    questions = load_questions(run)
    if questions is not None:
        keep_questions(questions).to_parquet(questions_path(out, baseline=True), index=False)
    return metrics


def rule_for(key: str, rules: list[Rule]) -> Rule:
    return next(r for r in rules if fnmatch.fnmatchcase(key, r.match))


def compare(baseline: dict[str, float], run: dict[str, float], rules: list[Rule]) -> pd.DataFrame:
    """One row per gated metric: baseline, run, change, allowed change and verdict."""
    rows = []
    for key in sorted(set(baseline) | set(run)):
        rule = rule_for(key, rules)
        if rule.direction == "ignore":
            continue
        base, now = baseline.get(key), run.get(key)
        if base is None:
            rows.append({"metric": key, "baseline": math.nan, "run": now, "change": math.nan,
                         "tolerance": rule.abs, "verdict": "new"})  # fmt: skip
            continue
        if now is None or (math.isnan(now) and not math.isnan(base)):
            rows.append({"metric": key, "baseline": base, "run": now, "change": math.nan,
                         "tolerance": rule.abs, "verdict": "regression (missing)"})  # fmt: skip
            continue
        if math.isnan(base) and math.isnan(now):
            continue
        change = now - base
        worse = -change if rule.direction == "higher" else change
        verdict = "regression" if worse > rule.abs + 1e-12 else ("improvement" if worse < -rule.abs else "ok")
        rows.append({"metric": key, "baseline": base, "run": now, "change": change, "tolerance": rule.abs,
                     "verdict": verdict})  # fmt: skip
    return pd.DataFrame(rows, columns=["metric", "baseline", "run", "change", "tolerance", "verdict"])


def regressions(table: pd.DataFrame) -> pd.DataFrame:
    return table[table.verdict.str.startswith("regression")]


def judge(
    table: pd.DataFrame, baseline_questions: pd.DataFrame | None, run_questions: pd.DataFrame | None,
    *, alpha: float = ALPHA,
) -> pd.DataFrame:
    """Keep a drop beyond tolerance as a regression only when it is also significant: for every such metric that
    averages questions, a paired randomization test on the questions both runs answered, Holm-corrected over
    the drops tested. A drop that is not significant becomes `within noise`; metrics without per-question scores
    (fact figures, recommendations) keep their tolerance as the only rule. Adds `p_adjusted`."""
    out = table.copy()
    out["p_adjusted"] = math.nan
    if baseline_questions is None or run_questions is None:
        return out
    drops = out.index[out.verdict == "regression"]
    tests = paired_differences(baseline_questions, run_questions, [(out.at[i, "metric"],) * 2 for i in drops],
                               alpha=alpha)  # fmt: skip
    verdicts = {row.before: (row.p_adjusted, bool(row.significant)) for row in tests.itertuples()}
    for i in drops:
        key = out.at[i, "metric"]
        if key in verdicts:
            out.at[i, "p_adjusted"] = verdicts[key][0]
            if not verdicts[key][1]:
                out.at[i, "verdict"] = "within noise"
    return out


def gate_table(
    baseline: str | Path, run: str | Path, rules: list[Rule] | None = None,
    *, run_questions: pd.DataFrame | None = None,
) -> pd.DataFrame:  # fmt: skip
    """A run against a baseline, as `memlab report` and report.md judge it: refused across suites, then the
    tolerances (`compare`), then paired tests on the questions (`judge`). `run_questions` spares re-reading the
    run's per-question scores when the caller holds them."""
    run_metrics = load_metrics(run)
    check_same_experiment(baseline, run)
    table = compare(load_metrics(baseline, what="baseline"), run_metrics, rules or load_rules())
    questions = run_questions if run_questions is not None else load_questions(run)
    return judge(table, load_questions(baseline, baseline=True), questions)
