"""The regression gate: a run's metrics.json against the committed baseline, with tolerances kept in a
checked-in file. A metric that got worse by more than its tolerance, or disappeared, is a regression."""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from memlab.errors import ConfigError

DEFAULT_TOLERANCES = Path(__file__).with_name("tolerances.yaml")


@dataclass(frozen=True)
class Rule:
    match: str
    direction: str  # higher | lower | ignore
    abs: float = 0.0


def load_rules(path: str | Path = DEFAULT_TOLERANCES) -> list[Rule]:
    data = yaml.safe_load(Path(path).read_text())
    rules = []
    for i, raw in enumerate((data or {}).get("rules", [])):
        if raw.get("direction") not in ("higher", "lower", "ignore"):
            raise ConfigError(f"{path}: rules[{i}].direction must be higher, lower or ignore")
        rules.append(Rule(str(raw["match"]), raw["direction"], float(raw.get("abs", 0.0))))
    if not rules:
        raise ConfigError(f"{path}: no rules")
    return rules


def load_metrics(path: str | Path) -> dict[str, float]:
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.json"
    if not path.exists():
        raise ConfigError(f"{path}: no metrics file. Run `memlab eval` first (it writes metrics.json).")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None
    return {str(k): float(v) for k, v in data.items()}


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
