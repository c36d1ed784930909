"""Fit and test the answerability gate (memlab.events.answerability) from saved runs: pure, reads a run folder.

Per question of one system's run: the gate's features (from the hits it returned) and whether the question
is answerable (has relevant events). Fitted on one data set with cross-validation (logistic regression, which
is what the artefact carries, and gradient boosting for comparison), its threshold picked there so that at
most `target` of the no-answer questions get hits, then tested on another data set. Against it: the single
distance cut-off picked by the same rule. Reported: ROC AUC, the false-memory rate on no-answer questions and
the share of the no-cut-off recall kept. A re-ranked system's run (memlab.lab.systems.rerank) adds one feature, the top
hit's re-ranker score (`rerank_top`), which the fitted gate then names in its `features`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from memlab.errors import ConfigError
from memlab.events.answerability import FEATURES, RERANK_FEATURE, AnswerabilityGate, question_features
from memlab.lab.base.identity import relevant_hits
from memlab.lab.metrics.cutoffs import cut as cut_at
from memlab.lab.metrics.distances import per_cutoff
from memlab.lab.metrics.scoring import score

TARGET = 0.2  # at most this share of no-answer questions may get hits (false memories)


def reranked(run: pd.DataFrame) -> bool:
    """Whether a run's hits carry a re-ranker's score (a system with `rerank:`)."""
    return "rerank" in run.columns and bool(run["rerank"].notna().any())


def features_of(table: pd.DataFrame) -> tuple[str, ...]:
    """The features a question table holds: the gate's own, plus the re-ranker's score for a re-ranked run."""
    return (*FEATURES, RERANK_FEATURE) if RERANK_FEATURE in table.columns else FEATURES


def question_table(run: pd.DataFrame, questions, sizes: dict[tuple[str, str], int], k: int) -> pd.DataFrame:
    """One row per question: the features of its top-k hits, `answerable`, its recall@k with no cut-off. A
    re-ranked run adds `rerank_top`, the best re-ranker score within k (0.0 for a question with no hits, or one
    whose re-ranking failed and kept the embedding order)."""
    scored = score(run, questions, k=k).set_index("question_id")
    top = run[(run["rank"] > 0) & (run["rank"] <= k)].sort_values("rank")
    by_q = {qid: g for qid, g in top.groupby("question_id", sort=False)}
    lexical = "lexical" in run.columns
    scored_by_model = reranked(run)
    rows = []
    for q in questions:
        g = by_q.get(q.id)
        dist = list(g.distance) if g is not None else []
        lex = list(g.lexical) if g is not None and lexical else [None] * len(dist)
        cov = list(g.coverage) if g is not None and "coverage" in run.columns else []
        x = question_features(dist, lex, sizes.get((q.app_name, q.user_id), 0), cov)
        recall = float(scored.recall.get(q.id, np.nan)) if q.id in scored.index else np.nan
        row = {"question_id": q.id, "qtype": q.qtype, "answerable": q.answerable,
               "recall": recall if q.answerable else np.nan, **dict(zip(FEATURES, x, strict=True))}  # fmt: skip
        if scored_by_model:
            top_score = g["rerank"].max() if g is not None else np.nan
            row[RERANK_FEATURE] = 0.0 if pd.isna(top_score) else float(top_score)
        rows.append(row)
    return pd.DataFrame(rows)


def pick_threshold(p: np.ndarray, answerable: np.ndarray, recall: np.ndarray, target: float = TARGET) -> float:
    """The lowest probability threshold whose false-memory rate on no-answer questions is <= target (the most
    recall kept under the rule); 0.0 when the data set has no no-answer question."""
    no = p[~answerable]
    if len(no) == 0:
        return 0.0
    for t in np.unique(np.concatenate([p, [1.0 + 1e-9]])):
        if float(np.mean(no >= t)) <= target:
            return float(t)
    return 1.0 + 1e-9


def gated_rates(p: np.ndarray, t: float, answerable: np.ndarray, recall: np.ndarray) -> tuple[float, float]:
    """(false-memory rate on no-answer questions, share of no-cut-off recall kept) when questions with p < t get
    nothing."""
    keep = p >= t
    fm = float(np.mean(keep[~answerable])) if (~answerable).any() else float("nan")
    r = np.nan_to_num(recall[answerable])
    kept = float(r[keep[answerable]].sum() / r.sum()) if r.sum() > 0 else float("nan")
    return fm, kept


def _auc(y: np.ndarray, s: np.ndarray) -> float:
    return float(roc_auc_score(y, s)) if len(np.unique(y)) == 2 else float("nan")


def calibration_error(y: np.ndarray, p: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error: over equal-width probability bins, the gap between the mean predicted
    p(answerable) and the share that were answerable, weighted by the bin's questions. 0 is calibrated: of the
    questions given 0.7, seven in ten have an answer in memory."""
    y, p = np.asarray(y, dtype=float), np.asarray(p, dtype=float)
    if len(y) == 0:
        return float("nan")
    which = np.minimum((p * bins).astype(int), bins - 1)
    return float(sum(abs(p[which == b].mean() - y[which == b].mean()) * (which == b).sum()
                     for b in range(bins) if (which == b).any()) / len(y))  # fmt: skip


def calibration(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    """How far p(answerable) can be read as a probability: Brier score and expected calibration error."""
    y = np.asarray(y, dtype=bool)
    if len(y) == 0:
        return {"brier": float("nan"), "calibration_error": float("nan")}
    brier = float(brier_score_loss(y, np.asarray(p, dtype=float)))
    return {"brier": brier, "calibration_error": calibration_error(y, p)}


@dataclass
class Fitted:
    gate: AnswerabilityGate
    boosting: HistGradientBoostingClassifier | None
    boosting_threshold: float
    cv: dict[str, float]


def fit(train: pd.DataFrame, *, target: float = TARGET, settings: dict | None = None, source: str = "") -> Fitted:
    """Fit the logistic gate (and a boosting model) on one data set's question table, threshold by 5-fold
    out-of-fold probabilities so the rule is not read off the training fit."""
    features = features_of(train)
    x, y = train[list(features)].to_numpy(), train.answerable.to_numpy(bool)
    recall = train.recall.to_numpy(float)
    folds = StratifiedKFold(n_splits=max(2, min(5, int(min(y.sum(), (~y).sum())))), shuffle=True, random_state=0)
    logistic = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
    p_oof = cross_val_predict(logistic, x, y, cv=folds, method="predict_proba")[:, 1]
    t = pick_threshold(p_oof, y, recall, target)
    logistic.fit(x, y)
    scaler, model = logistic[0], logistic[1]
    fm, kept = gated_rates(p_oof, t, y, recall)
    boost = HistGradientBoostingClassifier(max_depth=3, max_iter=150, learning_rate=0.05, random_state=0)
    b_oof = cross_val_predict(boost, x, y, cv=folds, method="predict_proba")[:, 1]
    bt = pick_threshold(b_oof, y, recall, target)
    boost.fit(x, y)
    cv = {"roc_auc": _auc(y, p_oof), "false_memory_rate": fm, "recall_kept": kept, **calibration(y, p_oof),
          "boosting_roc_auc": _auc(y, b_oof)}  # fmt: skip
    gate = AnswerabilityGate(
        coef=tuple(float(c) for c in model.coef_[0]), intercept=float(model.intercept_[0]),
        mean=tuple(float(m) for m in scaler.mean_), scale=tuple(float(s) or 1.0 for s in scaler.scale_),
        threshold=float(min(max(t, 0.0), 1.0)), features=features, settings=settings or {},
        fitted={"data_set": source, "questions": len(train), "no_answer": int((~y).sum()), "target": target,
                "rule": f"lowest threshold with false-memory rate <= {target:.0%} on no-answer questions "
                        "(5-fold out-of-fold probabilities)", **{f"cv_{k}": round(v, 4) for k, v in cv.items()}},
    )  # fmt: skip
    return Fitted(gate, boost, bt, cv)


def evaluate(fitted: Fitted, table: pd.DataFrame) -> dict[str, float]:
    """The fitted gate (and boosting model) on another data set's question table."""
    g = fitted.gate
    x, y = _features(g, table).to_numpy(), table.answerable.to_numpy(bool)
    recall = table.recall.to_numpy(float)
    p = gate_probabilities(g, table)
    fm, kept = gated_rates(p, g.threshold, y, recall)
    out = {"roc_auc": _auc(y, p), "false_memory_rate": fm, "recall_kept": kept, **calibration(y, p)}
    if fitted.boosting is not None:
        b = fitted.boosting.predict_proba(x)[:, 1]
        bfm, bkept = gated_rates(b, fitted.boosting_threshold, y, recall)
        out.update(boosting_roc_auc=_auc(y, b), boosting_false_memory_rate=bfm, boosting_recall_kept=bkept)
    return out


def distance_cut(run: pd.DataFrame, questions, k: int, target: float = TARGET) -> float | None:
    """The single max_distance (per hit) with the most recall whose false-memory rate is <= target. Only the
    false-memory rate picks it, so only that is computed per cut-off (as `cutoff_grid` would give it, without
    scoring recall and the rest on each of the 59 cut runs)."""
    if all(q.answerable for q in questions):
        return None
    nearest = _nearest_no_answer_hits(run, questions, k)
    grid = [float(c) for c in np.arange(0.05, 1.51, 0.025)]
    ok = [c for c in grid if any(1.0 - (d > c).sum() / len(d) <= target for d in nearest if len(d))]
    return float(round(max(ok), 3)) if ok else None


def _nearest_no_answer_hits(run: pd.DataFrame, questions, k: int) -> list[np.ndarray]:
    """Per system of `run`, the nearest hit's distance within k of each no-answer question it holds (inf: no
    hit): a cut-off leaves such a question empty (a correct empty, as `score` counts it) when its nearest hit
    lies beyond it."""
    by_id = {q.id: q for q in questions}
    within = run[run.question_id.isin(by_id) & (run["rank"] <= k)]
    out = []
    for _, g in within.groupby("system", sort=False):
        hits = g[g["rank"] > 0].groupby("question_id").distance.min()  # NaN distances: kept by no cut-off
        asked = [qid for qid in pd.unique(g.question_id) if not by_id[qid].answerable]
        out.append(np.array([hits.get(qid, np.inf) for qid in asked], dtype=float))
    return [np.nan_to_num(d, nan=np.inf) for d in out]


def cut_rates(
    run: pd.DataFrame, questions, k: int, cutoff: float | None, *, full: pd.DataFrame | None = None
) -> dict[str, float]:
    """False-memory rate, recall kept and ROC AUC of the first hit's distance as an answerability score.
    `full` is the run's scores without a cut-off (`score(run, questions, k=k)`), if the caller has them."""
    full = score(run, questions, k=k) if full is None else full
    cut = score(cut_at(run, cutoff, k=k), questions, k=k) if cutoff is not None else full
    ans, no = cut[cut.answerable], cut[~cut.answerable]
    base = float(full[full.answerable].recall.sum())
    firsts = run[run["rank"] == 1].set_index("question_id").distance
    y = np.array([q.answerable for q in questions])
    d = np.array([firsts.get(q.id, 2.0) for q in questions], dtype=float)
    return {"roc_auc": _auc(y, -np.nan_to_num(d, nan=2.0)),
            "false_memory_rate": float(1.0 - no["empty"].mean()) if len(no) else float("nan"),
            "recall_kept": float(ans.recall.sum() / base) if base > 0 else float("nan")}  # fmt: skip


def _features(gate: AnswerabilityGate, table: pd.DataFrame) -> pd.DataFrame:
    missing = [f for f in gate.features if f not in table.columns]
    if missing:
        raise ConfigError(f"the answerability gate reads {missing} and these questions' hits have none: it was "
                          "fitted on a re-ranked system's run; test it on that system (with `rerank:`)")  # fmt: skip
    return table[list(gate.features)]


def gate_probabilities(gate: AnswerabilityGate, table: pd.DataFrame) -> np.ndarray:
    return gate.probabilities(_features(gate, table).to_numpy(float))


def curve(run: pd.DataFrame, questions, table: pd.DataFrame, gate: AnswerabilityGate, k: int) -> pd.DataFrame:
    """The answerability curve: false-memory rate on no-answer questions against the share of no-cut-off
    recall kept, for the gate at every threshold and for one distance cut-off at every max_distance."""
    y, recall = table.answerable.to_numpy(bool), table.recall.to_numpy(float)
    p = gate_probabilities(gate, table)
    rows = []
    for t in np.linspace(0.0, 1.0, 41):
        fm, kept = gated_rates(p, float(t), y, recall)
        rows.append({"method": "gate", "setting": round(float(t), 3), "false_memory_rate": fm, "recall_kept": kept})
    full = score(run, questions, k=k)  # the uncut scores every cut-off is measured against, scored once
    cutoffs = [float(c) for c in np.arange(0.2, 1.31, 0.05)]
    rates = per_cutoff(run, questions, cutoffs, lambda c: cut_rates(run, questions, k, c, full=full))
    for c, r in zip(cutoffs, rates, strict=True):
        rows.append({"method": "distance-cut", "setting": round(float(c), 3),
                     "false_memory_rate": r["false_memory_rate"], "recall_kept": r["recall_kept"]})  # fmt: skip
    return pd.DataFrame(rows)


HIT_FEATURES = ("distance", "rank", "behind_first", "lexical")


def hit_table(run: pd.DataFrame, questions, k: int) -> pd.DataFrame:
    """One row per hit within k: its distance, rank, distance behind the question's first hit, full-text rank,
    and whether it holds a relevant event (every hit of a no-answer question is irrelevant)."""
    relevant = {q.id: q.evidence for q in questions}  # (session, event): ids repeat across sessions
    hits = run[(run["rank"] > 0) & (run["rank"] <= k) & run.question_id.isin(relevant)].copy()
    if hits.empty:
        return pd.DataFrame(columns=[*HIT_FEATURES, "relevant"])
    first = hits.groupby("question_id").distance.transform("min")
    hits["behind_first"] = hits.distance - first
    hits["lexical"] = hits["lexical"].fillna(0.0) if "lexical" in hits else 0.0
    hits["relevant"] = relevant_hits(hits, relevant)
    return hits[["question_id", *HIT_FEATURES, "relevant"]].reset_index(drop=True)


def hit_aucs(train: pd.DataFrame, test: pd.DataFrame) -> dict[str, float]:
    """Per-hit relevance: ROC AUC of the distance alone and of a logistic model over the hit features
    (fitted on `train`, cross-validated when `test` is `train`)."""
    if train.relevant.nunique() < 2 or test.relevant.nunique() < 2:
        return {}
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    x, y = train[list(HIT_FEATURES)].to_numpy(float), train.relevant.to_numpy(bool)
    if test is train:
        p = cross_val_predict(model, x, y, cv=StratifiedKFold(5, shuffle=True, random_state=0),
                              method="predict_proba")[:, 1]  # fmt: skip
    else:
        p = model.fit(x, y).predict_proba(test[list(HIT_FEATURES)].to_numpy(float))[:, 1]
    truth = test.relevant.to_numpy(bool)
    return {"hit_roc_auc": _auc(truth, p), "hit_distance_roc_auc": _auc(truth, -test.distance.to_numpy(float))}


__all__ = [
    "HIT_FEATURES",
    "TARGET",
    "Fitted",
    "calibration",
    "calibration_error",
    "curve",
    "cut_rates",
    "distance_cut",
    "evaluate",
    "features_of",
    "fit",
    "gate_probabilities",
    "gated_rates",
    "hit_aucs",
    "hit_table",
    "pick_threshold",
    "question_table",
    "reranked",
]  # fmt: skip
