"""The gate_direction family: does the regression gate judge every metric the right way round, and does the cut-off
advice say one thing? Pure: it needs no store or model (the `db` and `embedder` it is given are not used).

Every metric the definitions know (each in a plain, a rank-cut and a breakdown key) and every key of the committed
baseline is worsened in its bad direction, improved, and left alone, and the gate's own comparison must call it a
regression, an improvement and ok (`wrong_verdicts`). A key that was gated while no definition covers it is a
guessed direction (`guessed_directions`); an invented key must come out ungated. The cut-off advice is checked on
hand-made runs whose right answer is known: the advice, `lab.metrics.recommend`, the sweep's stored figures and the
headline's sentence must agree with each other and with the rule's guards (`contradicting_cutoff_advice`)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

import memlab
from memlab.lab.datasets.model import Question
from memlab.lab.metrics.cutoffs import MIN_AUC, CutoffAdvice, advice_metrics, advise, recommend, sentence
from memlab.lab.metrics.definitions import definition_of, definitions, ungated_system
from memlab.lab.metrics.distances import DEFAULT_GRID, FALSE_MEMORY_TARGET
from memlab.lab.reliability.probes.family import Family
from memlab.lab.report.gate import UNGATED, compare, gating, load_metrics, load_rules
from memlab.lab.runs.format import baseline_roles
from memlab.lab.systems.roles import SystemRole

BASELINE = Path(__file__).resolve().parents[4] / "reports" / "baseline.json"
UNKNOWN_KEY = "probe/probe/mystery_quality"
MUST_BE_ZERO = ["wrong_verdicts", "guessed_directions", "shadowed_definitions", "contradicting_cutoff_advice"]


def definition_keys() -> list[str]:
    """A plain, a rank-cut and a breakdown key for every metric definition (registered ones too), on a system of
    the sweep it defines a figure of (one named after it: the committed baseline's roles are derived so)."""
    keys = []
    for d in definitions():
        system = d.sweep or "probe"
        keys += [f"probe/{system}/{d.name}", f"probe/{system}/{d.name}@10", f"probe/{system}/{d.name}@10[qtype=x]"]
    return keys


def _baseline_keys() -> dict[str, float]:
    """The committed baseline's metrics as the gate reads them (in the current format: memlab.lab.runs.format)."""
    return load_metrics(BASELINE, what="baseline") if BASELINE.exists() else {}


def _role(key: str) -> SystemRole:
    """The role the gate gives the key's system when no run recorded one (derived once, memlab.lab.runs.format)."""
    return next(iter(baseline_roles([key]).values()), SystemRole())


def check_directions(family: Family, values: dict[str, float]) -> None:
    """Every key worsened, then improved, then moved both ways by a not-gated key's step, through the gate's own
    `compare`: a gated key must come out regression, improvement and ok (unchanged); a key defined as not gated
    must be left out, and a key no definition covers listed ungated. The gate judges each key on its own, so all
    keys move at once."""
    rules = load_rules()
    hows = {key: gating(key, rules) for key in values}
    moves: list[tuple[dict[str, float], dict[str, str | None]]] = []
    for sign, verdict in ((-1, "regression"), (1, "improvement"), (0, "ok")):
        moved, want = {}, {}
        for key, how in hows.items():
            base = values[key]
            if how.gated:
                step = 2 * how.allowed(base) + 0.05 + 0.1 * abs(base)
                moved[key] = base + sign * step * (1 if how.better == "higher" else -1)
                want[key] = verdict
            else:
                moved[key] = base + 0.3 * (sign or 1)
                want[key] = UNGATED if how.definition is None and ungated_system(key) is None else None
        moves.append((moved, want))
    family.figures["gated_keys"] = sum(how.gated for how in hows.values())
    family.figures["not_gated_keys"] = sum(not how.gated for how in hows.values())
    for moved, want in moves:
        got = dict(zip(*(compare(values, moved, rules)[c] for c in ("metric", "verdict")), strict=True))
        for key, expected in want.items():
            if got.get(key) != expected:
                family.problem("wrong_verdicts", f"{key}: {values[key]} -> {moved[key]} gave {got.get(key)}, "
                                                 f"expected {expected}")  # fmt: skip
        for key, verdict in got.items():
            if verdict != UNGATED and definition_of(key, _role(key)) is None:
                family.problem("guessed_directions", f"{key} compared ({verdict}) without a metric definition")


def check_definitions(family: Family) -> None:
    """Every definition is reachable (no earlier one shadows it) and an invented key is ungated."""
    for d in definitions():
        key = f"probe/{d.sweep or 'probe'}/{d.name}"
        if definition_of(key, _role(key)) is not d:
            family.problem("shadowed_definitions", f"{key} resolves to {definition_of(key, _role(key))}")
    verdicts = compare({UNKNOWN_KEY: 0.5}, {UNKNOWN_KEY: 0.1}).verdict.tolist()
    if verdicts != [UNGATED]:
        family.problem("guessed_directions", f"{UNKNOWN_KEY} gave {verdicts}, not {UNGATED!r}")


# -- the cut-off advice on hand-made runs ----------------------------------------------------------------------

Hits = list[tuple[float, bool]]  # (distance, holds the question's labelled event?) by rank


def _case(make: Callable[[int, bool], Hits], answerable: int, no_answer: int) -> tuple[pd.DataFrame, list[Question]]:
    """A one-system run of `answerable` + `no_answer` questions whose hit lists come from `make`."""
    questions, rows = [], []
    for i in range(answerable + no_answer):
        yes = i < answerable
        q = Question(f"q{i}", "probe", f"u{i}", f"question {i}", (f"u{i}-e0",) if yes else ())
        questions.append(q)
        for rank, (distance, hit) in enumerate(make(i, yes), start=1):
            rows.append(("s", q.id, rank, f"u{i}-{rank}", [f"u{i}-e0" if hit else f"u{i}-x{rank}"], distance, 10,
                         1.0, ""))  # fmt: skip
    run = pd.DataFrame(rows, columns=["system", "question_id", "rank", "unit_id", "event_ids", "distance", "chars",
                                      "latency_ms", "plan"])  # fmt: skip
    return run, questions


def _spread(start: float, n: int = 5) -> Hits:
    return [(round(start + 0.02 * j, 3), False) for j in range(n)]


# name -> (hit lists, answerable, no-answer, whether a cut-off must be advised)
CUTOFF_CASES: dict[str, tuple[Callable[[int, bool], Hits], int, int, bool]] = {
    "separating": (lambda i, yes: [(0.3, True), *_spread(0.7, 4)] if yes else _spread(0.8), 30, 25, True),
    "overlapping": (lambda i, yes: [(round(0.3 + 0.05 * (i % 10), 3), yes), *_spread(0.9, 4)], 30, 30, False),
    "no_no_answer": (lambda i, yes: [(0.3, True), *_spread(0.7, 4)], 20, 0, False),
    "nothing_meets_target": (lambda i, yes: [(0.1, True), *_spread(0.7, 4)] if yes
                             else _spread(0.15 if i % 2 else 0.9), 20, 20, False),
    "no_recall_kept": (lambda i, yes: [(0.1, False), (0.6, True), *_spread(0.7, 3)] if yes else _spread(0.3),
                       20, 20, False),
    "few_no_answer": (lambda i, yes: [(0.3, True), *_spread(0.7, 4)] if yes else _spread(0.8), 30, 5, True),
}  # fmt: skip


def advice_contradictions(advice: CutoffAdvice, others: list[CutoffAdvice], k: int) -> list[str]:
    """Where the advice disagrees with the rule's guards, with `lab.metrics.recommend`, with what the sweep stores or
    with the headline's sentence (empty when it is consistent)."""
    out = []
    d = advice.max_distance
    if [o.max_distance for o in others] != [d]:
        out.append(f"recommend gives {[o.max_distance for o in others]}, advise {d}")
    stored = advice_metrics(advice)["recommended_max_distance"]
    if (d is None) != math.isnan(stored) or (d is not None and stored != d):
        out.append(f"the sweep stores {stored} for advice {d}")
    text = sentence(advice, k)
    if d is None and ("none recommended" not in text or re.search(r"max_distance \d", text)):
        out.append(f"sentence for no advice: {text}")
    if d is not None and f"max_distance {d:.3f}" not in text:
        out.append(f"sentence for {d}: {text}")
    guarded = advice.no_answer == 0 or not advice.question_auc >= MIN_AUC
    if d is not None and (guarded or advice.false_memory_rate > advice.target or not advice.recall > 0):
        out.append(f"advised {d} past a guard (AUC {advice.question_auc}, no-answer {advice.no_answer}, false "
                   f"memories {advice.false_memory_rate}, recall {advice.recall})")  # fmt: skip
    if d is not None and not any(abs(d - g) < 1e-9 for g in DEFAULT_GRID):
        out.append(f"advised {d} is not a point of the grid")
    return out


def check_cutoff_advice(family: Family, k: int = 10) -> None:
    for name, (make, answerable, no_answer, advised) in CUTOFF_CASES.items():
        run, questions = _case(make, answerable, no_answer)
        advice = advise(run, questions, k=k, target=FALSE_MEMORY_TARGET)
        problems = advice_contradictions(advice, recommend(run, questions, k=k), k)
        if (advice.max_distance is not None) != advised:
            problems.append(f"advised {advice.max_distance} ({advice.reason or 'no reason'}), expected "
                            f"{'a cut-off' if advised else 'none'}")  # fmt: skip
        family.add("cutoff_cases")
        for problem in problems:
            family.problem("contradicting_cutoff_advice", f"{name}: {problem}")


def gate_direction_family(db: memlab.Store | None, embedder: memlab.Embedder | None, work: Path) -> Family:
    """The family (module docstring); `db`, `embedder` and `work` are not used."""
    family = Family("gate_direction", {name: 0 for name in MUST_BE_ZERO}, must_be_zero=list(MUST_BE_ZERO))
    check_definitions(family)
    probe_values = {key: 0.5 for key in definition_keys()}
    baseline = _baseline_keys()
    if not baseline:
        family.notes.append(f"no committed baseline at {BASELINE}: checked the definitions' keys only")
    check_directions(family, {**probe_values, **baseline})
    family.figures["keys_checked"] = len(probe_values) + len(baseline)
    family.figures["baseline_keys"] = len(baseline)
    check_cutoff_advice(family)
    return family


__all__ = ["CUTOFF_CASES", "MUST_BE_ZERO", "advice_contradictions", "definition_keys", "gate_direction_family"]
