"""The regression gate: a run's metrics.json against the committed baseline. Which way each metric is better
comes from its definition (memlab.lab.metrics.definitions); how far it may move comes from the definition's
default or a rule of the checked-in tolerances file (noise allowances per key pattern). A metric that got worse
by more than its tolerance, or disappeared, is a regression; a key no definition covers is listed as ungated."""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.base.json_bounds import loads
from memlab.lab.base.outputs import claim_file, is_baseline_file
from memlab.lab.base.tables import markdown_table
from memlab.lab.base.yaml_bounds import load_yaml_file
from memlab.lab.config.parse import suite_names
from memlab.lab.metrics.definitions import HIGHER, MetricDefinition, definition_of, ungated_system
from memlab.lab.metrics.keys import ScoreKey, keyed, parse_key
from memlab.lab.metrics.uncertainty import ALPHA, keep_questions, paired_differences
from memlab.lab.runs.folder import RunFolder
from memlab.lab.runs.format import (
    FORMAT_VERSION,
    VERSION_KEY,
    baseline_roles,
    baseline_version,
    current_metrics,
    read_baseline,
    upgrade_question_scores,
)
from memlab.lab.systems.roles import CUT, SystemRole, names, roles_in

DEFAULT_TOLERANCES = Path(__file__).with_name("tolerances.yaml")


@dataclass(frozen=True)
class Rule:
    """A noise allowance for the keys matching `match`: the change in a metric's bad direction allowed before it
    is a regression (`abs`, or `rel` times the baseline value, whichever is larger), or `gate: false` to leave
    those keys out (`why` says why). Which direction is bad comes from the metric's definition, never from here."""

    match: str
    abs: float | None = None
    rel: float | None = None
    gate: bool = True
    why: str = ""


RULE_KEYS = {"match", "abs", "rel", "gate", "why"}


def load_rules(path: str | Path = DEFAULT_TOLERANCES) -> list[Rule]:
    """The tolerance rules of a tolerances file (memlab's own by default), checked: a rule that names a
    direction is refused, since directions come from the metric definitions (memlab.lab.metrics.definitions)."""
    data = load_yaml_file(path)  # bounded like a config: a tolerances file is the user's too
    if not isinstance(data, dict | None):
        raise ConfigError(f"{path}: a tolerances file is a mapping with `rules:`")
    raw_rules = (data or {}).get("rules") or []
    if not isinstance(raw_rules, list):
        raise ConfigError(f"{path}: `rules:` must be a list of {{match: <glob>, abs: <number>}} entries")
    rules = []
    for i, raw in enumerate(raw_rules):
        where = f"{path}: rules[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("match"), str):
            raise ConfigError(f"{where} needs `match` (a glob over dataset/system/metric keys)")
        if "direction" in raw:
            raise ConfigError(f"{where} ({raw['match']!r}) sets `direction`, which the gate no longer reads: which "
                              "way a metric is better comes from its definition (memlab/lab/metrics/definitions.py). "
                              "Keep `match` with `abs` (or `rel`) for a noise allowance, or `gate: false` to leave "
                              "the keys out.")  # fmt: skip
        unknown = sorted(set(raw) - RULE_KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {unknown}; a rule takes {sorted(RULE_KEYS)}")
        try:
            tol = {k: None if raw.get(k) is None else float(raw[k]) for k in ("abs", "rel")}
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: `abs` and `rel` must be numbers") from None
        if any(v is not None and not (v >= 0 and math.isfinite(v)) for v in tol.values()):
            raise ConfigError(f"{where}: `abs` and `rel` must be finite and at least 0")
        gate = raw.get("gate", True)
        if not isinstance(gate, bool):
            raise ConfigError(f"{where}: `gate` must be true or false")
        if gate and tol["abs"] is None and tol["rel"] is None:
            raise ConfigError(f"{where} sets no tolerance: give `abs` (or `rel`), or `gate: false`")
        rules.append(Rule(raw["match"], tol["abs"], tol["rel"], gate, str(raw.get("why") or "")))
    return rules


def _metrics_file(path: str | Path) -> Path:
    path = Path(path)
    return path / "metrics.json" if path.is_dir() else path


def _read_json(path: Path, what: str) -> object:
    if not path.exists():
        if what == "baseline":
            raise ConfigError(f"no baseline at {path}: make one from a finished run with "
                              "`memlab baseline --run <run folder>` (and commit it).")  # fmt: skip
        raise ConfigError(f"{path}: no metrics file; give the folder of a finished `memlab eval` run (it writes "
                          "metrics.json), or run one.")  # fmt: skip
    try:
        return loads(path.read_text(), str(path), ConfigError)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None


def read_baseline_file(path: str | Path) -> dict:
    """A baseline file in the current shape, {"format_version", "experiment", "metrics"}, whatever memlab
    version wrote it (memlab.lab.runs.format); one of a newer format is refused."""
    path = Path(path)
    return read_baseline(_read_json(path, "baseline"), path)


def load_metrics(path: str | Path, *, what: str = "run") -> dict[str, float]:
    """The metrics of a run folder (its metrics.json), a metrics.json, or a baseline file, in the current shape
    (memlab.lab.runs.format). `what` ("run" or "baseline") picks the advice given when the file is missing; a
    file is read as a baseline when it has a baseline's shape or `what` says so."""
    path = _metrics_file(path)
    data = _read_json(path, what)
    ran = (path.parent / "manifest.json").exists()  # a run folder's metrics.json: in the folder's format
    if (isinstance(data, dict) and isinstance(data.get("metrics"), dict)) or (what == "baseline" and not ran):
        data = read_baseline(data, path)["metrics"]
    elif isinstance(data, dict):
        data = current_metrics(data, RunFolder(path.parent).version)
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


def load_roles(*paths: str | Path) -> dict[tuple[str, str], SystemRole]:
    """{(dataset, system): role} of the systems metrics files name: as a run folder records them, else (a
    baseline, which records none) derived once by memlab.lab.runs.format; a later path's recorded roles win."""
    roles: dict[tuple[str, str], SystemRole] = {}
    for path in paths:
        file = _metrics_file(path)
        scores = file.parent / "scores.parquet"
        if (file.parent / "manifest.json").exists() and scores.exists():
            roles.update(roles_in(RunFolder(file.parent).scores))
        elif file.exists():
            data = _read_json(file, "baseline")
            metrics = data.get("metrics") if isinstance(data, dict) and isinstance(data.get("metrics"), dict) \
                else data  # fmt: skip
            found = baseline_roles(metrics) if isinstance(metrics, dict) else {}
            roles.update({k: v for k, v in found.items() if k not in roles})
    return roles


def scope_differences(first: dict[str, float], second: dict[str, float], name_first: str, name_second: str,
                      roles: dict[tuple[str, str], SystemRole] | None = None) -> list[str]:  # fmt: skip
    """The data sets, and systems of shared data sets, that only one of two metrics files holds (the cut-off
    grid's points, by their recorded `roles`, left out): what makes two suites' metrics incomparable, named."""
    roles = roles or {}
    a = {(key.dataset, key.system) for key in keyed(first)}
    b = {(key.dataset, key.system) for key in keyed(second)}
    a, b = a - names(a, roles, CUT), b - names(b, roles, CUT)
    lines = []
    da, db = {d for d, _ in a}, {d for d, _ in b}
    for only, here in ((sorted(da - db), name_first), (sorted(db - da), name_second)):
        if only:
            lines.append(f"data sets only in the {here}: {', '.join(f'`{d}`' for d in only)}")
    for dataset in sorted(da & db):
        sa = {s for d, s in a if d == dataset}
        sb = {s for d, s in b if d == dataset}
        for only, here in ((sorted(sa - sb), name_first), (sorted(sb - sa), name_second)):
            if only:
                lines.append(f"systems on `{dataset}` only in the {here}: {', '.join(f'`{s}`' for s in only)}")
    return lines


def check_same_experiment(baseline: str | Path, run: str | Path) -> None:
    """Refuse to gate a run against another suite's baseline: their metrics differ by design, not by regression.
    The refusal names what differs and the command that compares the two anyway (`memlab report --against`)."""
    base, now = metrics_experiment(baseline), metrics_experiment(run)
    if base is not None and now is not None and base != now:
        what = scope_differences(load_metrics(baseline, what="baseline"), load_metrics(run), "baseline", "run",
                                 load_roles(baseline, run))  # fmt: skip
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
    """The per-question scores beside a run or baseline, or None where there are none (an old baseline), in the
    current shape whatever format wrote them (memlab.lab.runs.format)."""
    file = questions_path(path, baseline=baseline)
    if not file.exists():
        return None
    if not baseline:
        return RunFolder(file.parent).question_scores
    return upgrade_question_scores(pd.read_parquet(file), baseline_version(_read_json(Path(path), "baseline"), path))


def write_baseline(run: str | Path, out: str | Path) -> dict[str, float]:
    """Make a run's metrics a baseline file that records the experiment they come from, with the run's
    per-question scores beside it (`<name>.questions.parquet`, what the gate's paired tests compare with)."""
    claim_file(out, is_baseline_file, flag="--out", what="baseline")  # never over a file memlab did not write
    if not Path(out).exists():  # a new baseline: its question scores beside it must be new too
        claim_file(questions_path(out, baseline=True), lambda _: False, flag="--out", what="baseline's scores")
    metrics = load_metrics(run)
    payload = {VERSION_KEY: FORMAT_VERSION, "experiment": metrics_experiment(run),
               "metrics": dict(sorted(metrics.items()))}  # fmt: skip
    Path(out).write_text(json.dumps(payload, indent=2) + "\n")
    questions = load_questions(run)
    if questions is not None:
        keep_questions(questions).to_parquet(questions_path(out, baseline=True), index=False)
    return metrics


@dataclass(frozen=True)
class Gating:
    """How the gate treats one key: `better` and the allowed change from the metric's definition (and the
    tolerance rules), or why it is not gated. `definition` None: no definition covers it (reported ungated)."""

    key: str
    definition: MetricDefinition | None
    gated: bool
    better: str | None = None
    abs: float = 0.0
    rel: float = 0.0
    why: str = ""

    def allowed(self, base: float) -> float:
        """The change in the bad direction allowed from `base`."""
        return max(self.abs, self.rel * abs(base)) if math.isfinite(base) else self.abs


def gating(key: str | ScoreKey, rules: list[Rule] | None = None, role: SystemRole | None = None) -> Gating:
    """Whether and how the gate compares `key` (of a system of the recorded `role`; none given: derived from the
    key as for a metrics file that records none): its direction only from its metric definition; its allowance from
    the first tolerance rule whose glob matches, each of `abs` and `rel` the rule leaves unset from the
    definition's default."""
    if role is None:
        role = next(iter(baseline_roles([str(key)]).values()), SystemRole())
    definition = definition_of(key, role)
    off = ungated_system(key, role)
    key = str(key)
    if off is not None:
        return Gating(key, definition, False, why=off)
    if definition is None:
        return Gating(key, None, False, why="no metric definition covers it, so the gate cannot tell which way is "
                                            "better (add it to memlab/lab/metrics/definitions.py)")  # fmt: skip
    if not definition.gated:
        return Gating(key, definition, False, definition.better, why=definition.not_gated)
    rule = next((r for r in rules or () if fnmatch.fnmatchcase(key, r.match)), None)
    if rule is not None and not rule.gate:
        return Gating(key, definition, False, definition.better, why=rule.why or f"tolerances: {rule.match}")
    absolute = rule.abs if rule is not None and rule.abs is not None else definition.tolerance or 0.0
    relative = rule.rel if rule is not None and rule.rel is not None else definition.relative
    return Gating(key, definition, True, definition.better, absolute, relative)


GATE_COLUMNS = ["metric", "better", "baseline", "run", "change", "tolerance", "verdict"]
UNGATED = "ungated (no metric definition)"  # the verdict of a key listed, never compared


def compare(baseline: dict[str, float], run: dict[str, float], rules: list[Rule] | None = None,
            roles: dict[tuple[str, str], SystemRole] | None = None) -> pd.DataFrame:  # fmt: skip
    """One row per gated metric: which way is better, baseline, run, change, allowed change and verdict; and one
    row per key no metric definition covers, verdict `ungated` (listed, never compared). Keys whose definition
    says they are not gated (settings, timings, counts), or whose system's role is not gated (`roles` as recorded;
    none given: derived once from the keys, as for files that record none), are left out."""
    rules = load_rules() if rules is None else rules
    roles = baseline_roles([*baseline, *run]) if roles is None else roles
    rows = []
    for key in sorted(set(baseline) | set(run)):
        parts = parse_key(key)
        role = roles.get((parts.dataset, parts.system), SystemRole()) if parts is not None else SystemRole()
        how = gating(parts or key, rules, role)
        base, now = baseline.get(key, math.nan), run.get(key, math.nan)
        row = {"metric": key, "better": how.better or "", "baseline": base, "run": now, "change": math.nan,
               "tolerance": math.nan}  # fmt: skip
        if not how.gated:
            if how.definition is None and ungated_system(key, role) is None:
                rows.append({**row, "verdict": UNGATED})
            continue
        allowed = how.allowed(base)
        row["tolerance"] = allowed
        if key not in baseline or (math.isnan(base) and not math.isnan(now)):
            rows.append({**row, "verdict": "new"})
            continue
        if key not in run or (math.isnan(now) and not math.isnan(base)):
            rows.append({**row, "verdict": "regression (missing)"})
            continue
        if math.isnan(base) and math.isnan(now):
            continue
        change = now - base
        worse = -change if how.better == HIGHER else change
        verdict = "regression" if worse > allowed + 1e-12 else ("improvement" if worse < -allowed - 1e-12 else "ok")
        rows.append({**row, "change": change, "verdict": verdict})
    return pd.DataFrame(rows, columns=GATE_COLUMNS)


def ungated(table: pd.DataFrame) -> pd.DataFrame:
    """The keys the gate listed without comparing: no metric definition says which way is better."""
    return table[table.verdict == UNGATED]


def gated(table: pd.DataFrame) -> pd.DataFrame:
    """The rows the gate compared."""
    return table[table.verdict != UNGATED]


def gate_markdown(table: pd.DataFrame) -> str:
    """gate.md: the changes beyond tolerance, then the keys listed ungated (no metric definition)."""
    checked, unknown = gated(table), ungated(table)
    changed = checked[checked.verdict != "ok"]
    parts = ["# Against the baseline", "",
             markdown_table(changed) if len(changed) else "No change beyond tolerance.", "",
             f"{len(checked)} gated metrics checked; which way each is better comes from its metric definition."]
    if len(unknown):
        parts += ["", f"## Ungated ({len(unknown)})", "",
                  "No metric definition covers these keys, so the gate cannot tell which way is better and did not "
                  "compare them; add them to memlab/lab/metrics/definitions.py.", "",
                  markdown_table(unknown[["metric", "baseline", "run"]])]  # fmt: skip
    return "\n".join(parts) + "\n"


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
    table = compare(load_metrics(baseline, what="baseline"), run_metrics, load_rules() if rules is None else rules,
                    load_roles(baseline, run))  # fmt: skip
    questions = run_questions if run_questions is not None else load_questions(run)
    return judge(table, load_questions(baseline, baseline=True), questions)
