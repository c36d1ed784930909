"""What every metric of metrics.json means and which way is better: the one table the regression gate
(memlab.lab.gate) and the report (memlab.lab.report) read. A metric's direction lives here, beside its
meaning, so a lower-is-better rate can never be judged by a key pattern's guess; tolerances.yaml only widens
or narrows the noise allowance of keys.

A key is `dataset/system/metric`; its metric is a base name, an optional rank cut `@k` and an optional breakdown
`[group=value]` (`recall@10[qtype=multi-session]`). A key is looked up by its base name (and, where a name means
different things on different systems, by the system too). A key no definition covers is reported as ungated by
the gate, never compared. Settings a rule picks (a recommended cut-off, a fitted threshold), timings and counts
have definitions that say why they are not gated."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

HIGHER, LOWER = "higher", "lower"

# Reasons a defined metric is not gated, named once.
SETTING = "a setting a rule picks (a distance or threshold to use), not a quality: it may move either way"
TIMING = "a timing on a shared machine: compare timings as ratios in benchmarks (`memlab bench`)"
COUNT = "a count the data and config set; neither more nor less is better"
ADVICE = ("a figure at the advised cut-off, which moves to another grid point (or to none) when the advice does: "
          "the distance's own power is gated through its ROC AUCs")
SIGNED = "a signed change whose best value is zero, which a one-sided tolerance cannot judge"
INTERVAL = "a bound of another metric's 95% interval; the metric itself is gated"
COST_BY_CONFIG = ("characters handed to the model follow k and granularity, and move with every HNSW build; read "
                  "them in the report")


@dataclass(frozen=True)
class MetricDefinition:
    """One metric: its base `name`, which way is `better` (None: neither), the change in the bad direction the
    gate allows by default (`tolerance`, plus `relative` times the baseline value for counts that scale; None:
    not gated, `not_gated` says why) and what it measures. `systems` is a glob over the system part, for a name
    whose meaning depends on the system that reports it."""

    name: str
    better: str | None
    tolerance: float | None
    description: str
    systems: str = "*"
    relative: float = 0.0
    not_gated: str = ""

    @property
    def gated(self) -> bool:
        return self.tolerance is not None


def _q(name: str, better: str, tolerance: float, description: str, **kw) -> MetricDefinition:
    return MetricDefinition(name, better, tolerance, description, **kw)


def _off(name: str, better: str | None, why: str, description: str, **kw) -> MetricDefinition:
    return MetricDefinition(name, better, None, description, not_gated=why, **kw)


# First match wins: a definition restricted to some systems comes before the general one of the same name.
DEFINITIONS: tuple[MetricDefinition, ...] = (
    # label metrics, averaged over answerable questions (memlab.lab.scoring, ir-measures)
    _q("recall", HIGHER, 0.02, "share of a question's labelled events found in the top k (answerable questions)"),
    _q("precision", HIGHER, 0.02, "share of the top k holding a labelled event (answerable questions)"),
    _q("mrr", HIGHER, 0.02, "reciprocal rank of the first hit holding a labelled event (answerable questions)"),
    _q("ndcg", HIGHER, 0.02, "discounted gain of the labelled events by rank, over the ideal ranking"),
    _q("hit", HIGHER, 0.02, "answerable questions with a labelled event in the top k"),
    _q("session_recall", HIGHER, 0.02, "share of a question's answer sessions a hit within k comes from"),
    _q("judged", HIGHER, 0.02, "share of the hits within k someone judged (a judged set): an unjudged hit counts "
       "as a miss"),
    _q("bpref", HIGHER, 0.02, "judged relevant hits ranked above judged non-relevant ones (a judged set)"),
    _q("recall_vs_exact", HIGHER, 0.03, "share of FAISS exact's top k that the configuration also returned (a "
       "short result counts as misses)"),
    _q("empty_rate", LOWER, 0.03, "answerable questions (or filtered-search queries) given no hit at all: "
       "memories lost"),
    _q("correct_empty_rate", HIGHER, 0.05, "no-answer questions given no hit (needs a cut-off)"),
    _off("context_chars", LOWER, COST_BY_CONFIG, "characters handed to the model per question"),
    _off("latency_ms_p50", LOWER, TIMING, "median search latency in ms"),
    _off("latency_ms_p95", LOWER, TIMING, "95th-percentile search latency in ms"),
    # the re-rank stage (memlab.lab.rerank)
    _off("rerank_seconds", LOWER, TIMING, "a re-ranked system's model seconds per question"),
    _q("rerank_tokens", LOWER, 0.0, "a re-ranked system's model tokens per question", relative=0.10),
    _q("rerank_errors", LOWER, 0.0, "questions whose re-ranking failed and kept the embedding order"),
    # the answer sweep (memlab.lab.sweeps.answer)
    _q("answer_accuracy", HIGHER, 0.02, "share of graded answers the judge called correct"),
    _off("answer_accuracy_ci_low", HIGHER, INTERVAL, "lower bound of answer_accuracy's 95% bootstrap interval"),
    _off("answer_accuracy_ci_high", HIGHER, INTERVAL, "upper bound of answer_accuracy's 95% bootstrap interval"),
    _q("answer_f1", HIGHER, 0.02, "token F1 of the reader's answer against the gold answer"),
    _q("answer_errors", LOWER, 0.0, "questions whose reader or judge call failed"),
    _q("answer_tokens_per_question", LOWER, 0.0, "reader and judge tokens spent per question", relative=0.10),
    _off("answer_seconds_per_question", LOWER, TIMING, "reader and judge seconds per question"),
    # the labels sweep (memlab.lab.sweeps.labels)
    _q("pool_capture", HIGHER, 0.02, "share of the labelled evidence a pool of systems' hits captures"),
    _q("pool_capture_mean", HIGHER, 0.02, "per-question mean share of the evidence the pool captures"),
    _q("pool_tau", HIGHER, 0.05, "Kendall's tau of the systems ranked on pooled against full labels"),
    _q("pool_tests_agree", HIGHER, 0.05, "share of paired system tests pooled labels decide as full labels do"),
    _q("pooled_recall", HIGHER, 0.02, "a system's recall@k on a pool's labels"),
    _q("loo_recall", HIGHER, 0.02, "a system's pooled recall@k with itself left out of the pool"),
    _off("loo_bias", None, SIGNED, "pooled recall without the system minus with it"),
    _off("loo_gap_change", None, SIGNED, "how far the system's gap to the others moves without it in the pool"),
    _q("generated_recall", HIGHER, 0.02, "recall@k on generated questions"),
    # fact extraction (memlab.lab.fact_run, memlab.lab.sweeps.facts)
    _q("key_accuracy", HIGHER, 0.02, "share of the expected current facts the extractor's state holds"),
    _q("state_exact", HIGHER, 0.02, "share of fixtures whose final fact state is exactly the expected one"),
    _q("candidate_recall", HIGHER, 0.02, "share of the gold candidate facts extracted"),
    _q("candidate_precision", HIGHER, 0.02, "share of the extracted candidates that are gold"),
    _q("evidence_coverage", HIGHER, 0.02, "share of the labelled evidence events some fact cites"),
    _q("stale_recall", LOWER, 0.02, "questions about a replaced key that were served the replaced value"),
    _off("stale_served", None, COUNT, "facts served under the confirm heading, set by the fixtures' dates"),
    _off("dropped", None, COUNT, "candidate facts the extractor's checks dropped"),
    _off("facts_per_session", None, COUNT, "facts accepted per session"),
    _off("seconds_per_session", LOWER, TIMING, "extraction seconds per session"),
    # the ingest sweep (memlab.lab.sweeps.ingest)
    _off("ingest_units_per_s", HIGHER, TIMING, "units ingested per second", systems="ingest"),
    _off("raw_encode_per_s", HIGHER, TIMING, "texts the model encodes per second on its own", systems="ingest"),
    _off("ratio", HIGHER, TIMING, "ingest rate over the model's raw encode rate", systems="ingest"),
    _off("texts", None, COUNT, "texts ingested", systems="ingest"),
    # the cut-off sweep's advice (memlab.lab.cutoff_advice)
    _off("recommended_max_distance", None, SETTING, "the advised max_distance (NaN: none advised)"),
    _off("recall_at_recommended", HIGHER, ADVICE, "recall@k at the advised cut-off (without one when none is "
         "advised)"),
    _off("false_memory_at_recommended", LOWER, ADVICE, "share of no-answer questions still given hits at the "
         "advised cut-off (without one when none is advised)"),
    _q("question_distance_roc_auc", HIGHER, 0.02, "per-question ROC AUC: the nearest hit's distance as a score "
       "telling answerable from no-answer questions (0.5 is chance)"),
    _q("hit_distance_roc_auc", HIGHER, 0.02, "per-hit ROC AUC: a hit's distance as a score telling hits holding "
       "a labelled event from the rest (0.5 is chance)"),
    _off("best_f1_distance", None, SETTING, "best-F1 distance of the per-hit precision-recall curve (folders and "
         "baselines of format 1 only)"),
    _off("max_distance", None, SETTING, "the max_distance a system was cut at"),
    # the answerability gate (memlab.lab.answerability, the retrieval sweep)
    _q("roc_auc", HIGHER, 0.02, "per-hit ROC AUC of the hit model's score (or the distance) for hits holding a "
       "labelled event", systems="answerability:hit-*"),
    _q("roc_auc", HIGHER, 0.02, "per-question ROC AUC of p(answerable) (the first hit's distance for distance-cut) "
       "telling answerable from no-answer questions"),
    _q("false_memory_rate", LOWER, 0.02, "share of no-answer questions still given hits"),
    _q("recall_kept", HIGHER, 0.02, "share of the no-cut-off recall kept"),
    _q("brier", LOWER, 0.02, "Brier score of p(answerable) (0 is perfect)"),
    _q("calibration_error", LOWER, 0.02, "expected calibration error of p(answerable), 10 bins (0 is calibrated)"),
    _off("threshold", None, SETTING, "the fitted gate's probability threshold"),
)  # fmt: skip

# Systems whose metrics are not gated, with why (checked before any definition).
UNGATED_SYSTEMS: tuple[tuple[str, str], ...] = (
    ("*@cut*", "a point of the cut-off grid (or a cut carried over from another data set): the grid is read "
               "through its advice, each point is in scores.csv"),
)  # fmt: skip

# Metric names memlab has renamed (former -> current): a run folder or baseline of an older format is read with
# its metrics under the current name (memlab.lab.run_format's upgrade step), so nothing else knows former names.
FORMER_NAMES = {"distance_roc_auc": "hit_distance_roc_auc"}

_METRIC = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<at>@\d+)?(?P<group>\[.*\])?$")


@dataclass(frozen=True)
class MetricKey:
    """A metrics.json key in parts; `name` is the base name definitions are looked up by."""

    dataset: str
    system: str
    metric: str
    name: str


def parse_key(key: str) -> MetricKey | None:
    """`dataset/system/metric` in parts (a system may hold slashes, a breakdown's value too), or None for a key
    not of that form."""
    head, bracket, tag = key.partition("[")
    if head.count("/") < 2:
        return None
    dataset, rest = head.split("/", 1)
    system, metric = rest.rsplit("/", 1)
    metric += bracket + tag
    match = _METRIC.match(metric)
    if not dataset or not system or match is None:
        return None
    return MetricKey(dataset, system, metric, match["name"])


def definition_of(key: str) -> MetricDefinition | None:
    """The definition covering a metrics key, or None when none does (the gate then reports it ungated)."""
    parts = parse_key(key)
    if parts is None:
        return None
    return next((d for d in DEFINITIONS if d.name == parts.name and fnmatch.fnmatchcase(parts.system, d.systems)), None)


def ungated_system(key: str) -> str | None:
    """Why the key's system is left out of the gate, or None."""
    parts = parse_key(key)
    if parts is None:
        return None
    return next((why for pattern, why in UNGATED_SYSTEMS if fnmatch.fnmatchcase(parts.system, pattern)), None)


def reading_note(names: list[str]) -> str:
    """`name`: what it measures (higher/lower is better) for each base metric name, as the report explains its
    columns: from the same definitions the gate reads."""
    out = []
    for name in dict.fromkeys(names):
        found = next((d for d in DEFINITIONS if d.name == name and d.systems == "*"), None)
        if found is None:
            continue
        way = f" ({found.better} is better)" if found.better else ""
        out.append(f"`{name}`{way}: {found.description}")
    return "; ".join(out) + "." if out else ""


__all__ = ["DEFINITIONS", "FORMER_NAMES", "HIGHER", "LOWER", "UNGATED_SYSTEMS", "MetricDefinition", "MetricKey",
           "definition_of", "parse_key", "reading_note", "ungated_system"]
