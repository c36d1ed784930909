"""The metric registry: one entry per metric of metrics.json, saying what it means, which way is better, the
regression gate's default allowance and, for a metric scored per question, how it is scored. The scorer
(memlab.lab.metrics.scoring), the gate (memlab.lab.report.gate), the intervals and paired tests
(memlab.lab.metrics.uncertainty) and the
report's notes (memlab.lab.report.writer) all read these entries, so adding a metric is adding one entry, here or with
`register` (`registered` adds entries for a block and removes them after).

An entry scored per question names its per-question function (`question`: a pure function of the question's
hits and labels, or an ir-measures measure), whether its metric takes `@k`, the questions it averages over
(`population`) and what a data set or run must hold for it to be scored (`needs`). Its name is the name of the
per-question column, of the summary column and of the metric key (`mrr` -> `mrr@10`): nothing is renamed on the
way. tolerances.yaml only widens or narrows the noise allowance of keys.

A figure is named by a ScoreKey (memlab.lab.metrics.keys: dataset, system, metric, breakdown), its metric being a
base name and an optional rank cut `@k`. A figure is looked up by its base name (and, where a name means a figure
of one sweep's, by the sweep its system's recorded role names). A key no definition covers is reported as ungated
by the gate, never compared. Settings a rule picks (a recommended cut-off, a fitted threshold), timings and counts
have definitions that say why they are not gated."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pandas as pd
from ir_measures import RR, Bpref, Judged, Measure, P, R, Success, nDCG

from memlab.errors import ConfigError
from memlab.lab.datasets.model import Question
from memlab.lab.metrics.keys import ScoreKey, parse_key
from memlab.lab.metrics.per_question import (
    RECORD_COLUMNS,
    IrMeasure,
    QuestionFunction,
    answer_sessions_found,
    context_size,
    exact_overlap,
    no_hit,
    recorded,
    rerank_failed,
    unmatched_share,
)
from memlab.lab.systems.roles import CUT, SystemRole

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


def _answerable(frame: pd.DataFrame) -> pd.Series:
    return frame["answerable"].astype(bool)


@dataclass(frozen=True)
class Population:
    """The questions a metric averages over. `holds(question)` decides at scoring (a question outside gets NaN);
    `rows(scores, column)` picks a per-question table's rows that make the mean and the count of questions given
    beside it (`questions` in scores.csv), so a summary and an interval read the same questions."""

    name: str
    description: str
    holds: Callable[[Question], bool]
    rows: Callable[[pd.DataFrame, str], pd.Series]


ANSWERABLE = Population("answerable", "answerable questions", lambda q: q.answerable, lambda f, c: _answerable(f))
NO_ANSWER = Population("no_answer", "no-answer questions", lambda q: not q.answerable, lambda f, c: ~_answerable(f))
ALL = Population("all", "all questions", lambda q: True, lambda f, c: pd.Series(True, index=f.index))
SESSION_LABELLED = Population("session_labelled", "answerable questions with answer-session labels",
                              lambda q: q.answerable and bool(q.relevant_sessions),
                              lambda f, c: _answerable(f) & f[c].notna())  # fmt: skip
POPULATIONS = {p.name: p for p in (ANSWERABLE, NO_ANSWER, ALL, SESSION_LABELLED)}


def as_numbers(column: pd.Series) -> pd.Series:
    """A per-question column as numbers (a column read back holding True/False and NaN is of object type)."""
    return pd.to_numeric(column, errors="coerce") if column.dtype == object else column


def _numbers(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """`rows` with `column` as numbers (`as_numbers`)."""
    return rows.assign(**{column: as_numbers(rows[column])}) if rows[column].dtype == object else rows


def _mean(rows: pd.DataFrame, by: list[str], column: str) -> pd.Series:
    return _numbers(rows, column).groupby(by, sort=False)[column].mean()


def _median(rows: pd.DataFrame, by: list[str], column: str) -> pd.Series:
    return _numbers(rows, column).groupby(by, sort=False)[column].median()


def _p95(rows: pd.DataFrame, by: list[str], column: str) -> pd.Series:
    """np.percentile's linear 95th, vectorised, and NaN where a group holds a NaN, as np.percentile gives (pandas'
    quantile would skip it)."""
    rows = _numbers(rows, column)
    p95 = rows.groupby(by, sort=False)[column].quantile(0.95)
    return p95.mask(rows[column].isna().groupby([rows[b] for b in by], sort=False).any())


def _sum(rows: pd.DataFrame, by: list[str], column: str) -> pd.Series:
    return _numbers(rows, column).groupby(by, sort=False)[column].sum(min_count=1)


@dataclass(frozen=True)
class Statistic:
    """How a group's per-question values become the metric: `compute(rows, by, column)`, one value per group."""

    name: str
    compute: Callable[[pd.DataFrame, list[str], str], pd.Series]


MEAN = Statistic("mean", _mean)
MEDIAN = Statistic("median", _median)
P95 = Statistic("95th percentile", _p95)
SUM = Statistic("sum", _sum)
STATISTICS = {"mean": MEAN, "median": MEDIAN, "p95": P95, "sum": SUM}


@dataclass(frozen=True)
class Requirement:
    """What a run and its questions must hold for a metric to be scored at all: without it the per-question column
    is left out (not NaN), so no metric key is written."""

    description: str
    met: Callable[[pd.DataFrame, Sequence[Question]], bool]


SESSION_LABELS = Requirement("answer-session labels", lambda run, qs: any(q.relevant_sessions for q in qs))
JUDGED_SET = Requirement("a judged set (judged non-relevant events beside the relevant ones)",
                         lambda run, qs: any(q.judged for q in qs))  # fmt: skip
RERANKED = Requirement("a re-ranked run", lambda run, qs: "rerank_seconds" in run.columns)
BLACK_BOX = Requirement("a black box's run (memlab.lab.systems.services)",
                        lambda run, qs: "unmatched" in run.columns)  # fmt: skip


@dataclass(frozen=True)
class MetricDefinition:
    """One metric: its base `name`, which way is `better` (None: neither), the change in the bad direction the
    gate allows by default (`tolerance`, plus `relative` times the baseline value for counts that scale; None:
    not gated, `not_gated` says why) and what it measures. `sweep` names the sweep whose figures it defines, for a
    name that means that sweep's figure (its systems' recorded role names the sweep); "" defines it for all.

    Summarized per data set and system by memlab.lab.metrics.scoring when it has a per-question function (`question`, an
    ir-measures measure taken as `IrMeasure(measure, cut=at_k)`) or names a per-question column the search
    recorded (`of`, e.g. `latency_ms`): `statistic` of the values over `population`, where `needs` holds; `at_k`
    writes it as `name@k`. `paired`: the 95% intervals and paired tests (report, compare, the gate) read its
    per-question values (a mean only). `main_table`: a column of each data set's main table in report.md. A
    population or statistic may be given by name (`"no_answer"`, `"median"`: POPULATIONS, STATISTICS)."""

    name: str
    better: str | None
    tolerance: float | None
    description: str
    sweep: str = ""
    relative: float = 0.0
    not_gated: str = ""
    question: QuestionFunction | IrMeasure | Measure | None = None
    of: str = ""
    at_k: bool = False
    population: Population = ANSWERABLE
    statistic: Statistic = MEAN
    needs: Requirement | None = None
    paired: bool = True
    main_table: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.question, Measure):
            object.__setattr__(self, "question", IrMeasure(self.question, cut=self.at_k))
        for field, named in (("population", POPULATIONS), ("statistic", STATISTICS)):
            value = getattr(self, field)
            if isinstance(value, str):
                key = value.replace("-", "_")
                if key not in named:
                    raise ConfigError(f"metric {self.name!r}: {field}={value!r} is not one of {sorted(named)}")
                object.__setattr__(self, field, named[key])

    @property
    def gated(self) -> bool:
        return self.tolerance is not None

    @property
    def scored(self) -> bool:
        """Whether memlab.lab.metrics.scoring computes it per question (a column of the per-question scores)."""
        return self.question is not None

    @property
    def summarized(self) -> bool:
        """Whether memlab.lab.metrics.scoring writes it per data set and system (and breakdown) from per-question
        values."""
        return self.scored or bool(self.of)

    @property
    def column(self) -> str:
        """The per-question column its statistic reads: its own, or the recorded one it summarizes."""
        return self.of or self.name

    @property
    def averaged(self) -> bool:
        """A mean over questions that the intervals and paired tests read per question."""
        return self.scored and self.statistic is MEAN and self.paired

    def metric(self, k: int) -> str:
        """Its name in scores and metrics.json: `name@k` for a metric cut at k."""
        return f"{self.name}@{k}" if self.at_k else self.name

    def applies(self, run: pd.DataFrame, questions: Sequence[Question]) -> bool:
        """Whether a run and its questions hold what it needs to be scored."""
        return self.needs is None or self.needs.met(run, questions)


def _q(name: str, better: str, tolerance: float, description: str, **kw) -> MetricDefinition:
    return MetricDefinition(name, better, tolerance, description, **kw)


def _off(name: str, better: str | None, why: str, description: str, **kw) -> MetricDefinition:
    return MetricDefinition(name, better, None, description, not_gated=why, **kw)


# First match wins: a definition restricted to one sweep's figures comes before the general one of the same name. The
# metrics scored per question come first, in the order scores.csv lists them.
DEFINITIONS: tuple[MetricDefinition, ...] = (
    # scored per question from each run's hits and the labels (memlab.lab.metrics.scoring; ir-measures where named)
    _q("recall", HIGHER, 0.02, "share of a question's labelled events found in the top k (answerable questions)",
       question=R, at_k=True),
    _q("precision", HIGHER, 0.02, "share of the top k holding a labelled event (answerable questions)",
       question=P, at_k=True, main_table=False),
    _q("mrr", HIGHER, 0.02, "reciprocal rank of the first hit holding a labelled event (answerable questions)",
       question=IrMeasure(RR, cut=False), at_k=True),
    _q("ndcg", HIGHER, 0.02, "discounted gain of the labelled events by rank, over the ideal ranking",
       question=nDCG, at_k=True),
    _q("hit", HIGHER, 0.02, "answerable questions with a labelled event in the top k", question=Success, at_k=True),
    _q("session_recall", HIGHER, 0.02, "share of a question's answer sessions a hit within k comes from",
       question=answer_sessions_found, at_k=True, population=SESSION_LABELLED, needs=SESSION_LABELS),
    _q("judged", HIGHER, 0.02, "share of the hits within k someone judged (a judged set): an unjudged hit counts "
       "as a miss", question=IrMeasure(Judged, no_hits=math.nan), at_k=True, population=ALL, needs=JUDGED_SET,
       paired=False),
    _q("empty_rate", LOWER, 0.03, "answerable questions (or filtered-search queries) given no hit at all: "
       "memories lost", question=no_hit),
    _q("recall_vs_exact", HIGHER, 0.03, "share of FAISS exact's top k that the configuration also returned (a "
       "short result counts as misses)", question=exact_overlap),
    _q("correct_empty_rate", HIGHER, 0.05, "no-answer questions given no hit (needs a cut-off)", question=no_hit,
       population=NO_ANSWER),
    _off("context_chars", LOWER, COST_BY_CONFIG, "characters handed to the model per question",
         question=context_size, population=ALL, paired=False),
    _off("latency_ms_p50", LOWER, TIMING, "median search latency in ms", of="latency_ms", population=ALL,
         statistic=MEDIAN),
    _off("latency_ms_p95", LOWER, TIMING, "95th-percentile search latency in ms", of="latency_ms", population=ALL,
         statistic=P95, main_table=False),
    _q("bpref", HIGHER, 0.02, "judged relevant hits ranked above judged non-relevant ones (a judged set)",
       question=Bpref, needs=JUDGED_SET, paired=False),
    # the re-rank stage (memlab.lab.systems.rerank): what re-ranking a question cost, as the run recorded it
    _off("rerank_seconds", LOWER, TIMING, "a re-ranked system's model seconds per question",
         question=recorded("rerank_seconds"), population=ALL, needs=RERANKED, paired=False),
    _q("rerank_tokens", LOWER, 0.0, "a re-ranked system's model tokens per question", relative=0.10,
       question=recorded("rerank_tokens"), population=ALL, needs=RERANKED, paired=False, main_table=False),
    _q("rerank_errors", LOWER, 0.0, "questions whose re-ranking failed and kept the embedding order",
       question=rerank_failed, population=ALL, statistic=SUM, needs=RERANKED),
    # black boxes (memlab.lab.systems.services): what matching their entries to labelled events left over
    _q("unmatched_hits", LOWER, 0.02, "share of a black box's hits within k that match no labelled event (it "
       "rewrote or merged what it was given): they count as misses, never dropped", question=unmatched_share,
       population=ALL, needs=BLACK_BOX),
    _off("service_returned", None, COUNT, "entries a black box returned per question before the cut to k",
         question=recorded("service_returned"), population=ALL, needs=BLACK_BOX, paired=False, main_table=False),
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
    # fact extraction (memlab.lab.systems.facts, memlab.lab.sweeps.facts)
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
    _off("ingest_units_per_s", HIGHER, TIMING, "units ingested per second", sweep="ingest"),
    _off("raw_encode_per_s", HIGHER, TIMING, "texts the model encodes per second on its own", sweep="ingest"),
    _off("ratio", HIGHER, TIMING, "ingest rate over the model's raw encode rate", sweep="ingest"),
    _off("texts", None, COUNT, "texts ingested", sweep="ingest"),
    # the cut-off sweep's advice (memlab.lab.metrics.cutoffs)
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
    # the answerability gate (memlab.lab.metrics.answerability, the retrieval sweep)
    _q("roc_auc", HIGHER, 0.02, "ROC AUC of the answerability gate's scores: per question, p(answerable) (the "
       "first hit's distance for distance-cut) telling answerable from no-answer questions; per hit (hit-model, "
       "hit-distance), the hit model's score (or the distance) telling hits holding a labelled event from the rest"),
    _q("false_memory_rate", LOWER, 0.02, "share of no-answer questions still given hits"),
    _q("recall_kept", HIGHER, 0.02, "share of the no-cut-off recall kept"),
    _q("brier", LOWER, 0.02, "Brier score of p(answerable) (0 is perfect)"),
    _q("calibration_error", LOWER, 0.02, "expected calibration error of p(answerable), 10 bins (0 is calibrated)"),
    _off("threshold", None, SETTING, "the fitted gate's probability threshold"),
)  # fmt: skip

# Roles (memlab.lab.systems.roles) of the systems whose metrics are not gated, with why (checked before any definition).
UNGATED_ROLES: tuple[tuple[str, str], ...] = (
    (CUT, "a point of the cut-off grid (or a cut carried over from another data set): the grid is read through "
          "its advice, each point is in scores.csv"),
)  # fmt: skip

# Metric names memlab has renamed (former -> current): a run folder or baseline of an older format is read with
# its metrics under the current name (memlab.lab.runs.format's upgrade step), so nothing else knows former names.
FORMER_NAMES = {"distance_roc_auc": "hit_distance_roc_auc"}
# Per-question score columns format 2 and before wrote under another name than their metric's (former -> current);
# those folders' `empty_rate` is their `empty` column on answerable questions (memlab.lab.runs.format).
FORMER_COLUMNS = {"rr": "mrr", "correct_empty": "correct_empty_rate"}

_registered: list[MetricDefinition] = []


def definitions() -> tuple[MetricDefinition, ...]:
    """Every metric definition: memlab's own (`DEFINITIONS`), then those registered, in that order."""
    return (*DEFINITIONS, *_registered)


def _check(definition: MetricDefinition) -> None:
    """Refuse an entry the scorer, the gate or the report could not read, naming the field and the fix."""
    if not isinstance(definition, MetricDefinition):
        raise ConfigError(f"register takes a MetricDefinition, not {type(definition).__name__}")
    where = f"metric {definition.name!r}"
    if not isinstance(definition.name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", definition.name):
        raise ConfigError(f"{where}: a name is letters, digits and underscores, not starting with a digit (it becomes "
                          "a metrics.json key such as `name@10[qtype=x]`)")  # fmt: skip
    taken = next((d for d in definitions() if d.name == definition.name), None)
    if taken is not None:
        raise ConfigError(f"{where} is already defined ({taken.description!r}): pick another name, or leave the "
                          "`registered` block that added it first")  # fmt: skip
    if definition.better not in (HIGHER, LOWER, None):
        raise ConfigError(f"{where}: better={definition.better!r}; use {HIGHER!r}, {LOWER!r} or None")
    if definition.gated:
        if definition.better is None:
            raise ConfigError(f"{where}: a gated metric needs `better` ({HIGHER!r} or {LOWER!r}); or set "
                              "tolerance=None with `not_gated` saying why")  # fmt: skip
        if not all(isinstance(v, int | float) and math.isfinite(v) and v >= 0
                   for v in (definition.tolerance, definition.relative)):  # fmt: skip
            raise ConfigError(f"{where}: tolerance and relative must be finite numbers of at least 0")
    elif not definition.not_gated:
        raise ConfigError(f"{where}: tolerance=None leaves it out of the gate; say why in `not_gated`")
    if not isinstance(definition.description, str) or not definition.description.strip() \
            or "\n" in definition.description:  # fmt: skip
        raise ConfigError(f"{where}: give a one-line `description` of what it measures (the report prints it)")
    if definition.question is not None and not (isinstance(definition.question, IrMeasure) or
                                                callable(definition.question)):  # fmt: skip
        raise ConfigError(f"{where}: `question` is a function (QuestionResult, Question) -> float or an ir-measures "
                          "measure")  # fmt: skip
    if definition.question is not None and definition.of:
        raise ConfigError(f"{where}: give `question` (scored per question) or `of` (a recorded column), not both")
    if definition.scored and definition.name in RECORD_COLUMNS:
        raise ConfigError(f"{where}: {definition.name!r} names a column of the per-question record "
                          f"({', '.join(RECORD_COLUMNS)}); a metric scored per question needs a name of its own")
    measure = definition.question.measure if isinstance(definition.question, IrMeasure) else None
    if measure is not None and definition.at_k and definition.question.cut and measure.params.get("cutoff"):
        raise ConfigError(f"{where}: {measure} is already cut at {measure.params['cutoff']}, and at_k=True cuts it at "
                          f"the run's k: give {type(measure).__name__.lstrip('_')} uncut, or at_k=False")
    if not isinstance(definition.population, Population) or not isinstance(definition.statistic, Statistic) or \
            not isinstance(definition.needs, Requirement | None):  # fmt: skip
        raise ConfigError(f"{where}: population, statistic and needs take a Population, a Statistic and a "
                          f"Requirement (or None) of memlab.lab.metrics.definitions, or a population "
                          f"{sorted(POPULATIONS)} or statistic {sorted(STATISTICS)} by name")  # fmt: skip
    if definition.summarized and definition.sweep:
        raise ConfigError(f"{where}: a metric scored per question applies to every system (sweep='')")


def register(definition: MetricDefinition) -> MetricDefinition:
    """Add a metric to the registry: scored from then on (when it has a per-question function), gated and
    explained in reports. Refused when an entry of that name exists or a field cannot be read."""
    _check(definition)
    _registered.append(definition)
    return definition


def unregister(name: str) -> None:
    """Remove a registered metric (memlab's own cannot be removed)."""
    found = [d for d in _registered if d.name == name]
    if not found:
        own = any(d.name == name for d in DEFINITIONS)
        raise ConfigError(f"metric {name!r} is " + ("memlab's own and cannot be removed" if own else "not registered"))
    _registered.remove(found[0])


@contextmanager
def registered(*added: MetricDefinition) -> Iterator[tuple[MetricDefinition, ...]]:
    """The registry with `added` for the block, as it was after (also when the block raises)."""
    done: list[str] = []
    try:
        for definition in added:
            register(definition)
            done.append(definition.name)
        yield added
    finally:
        for name in reversed(done):
            unregister(name)


def summarized() -> list[MetricDefinition]:
    """The entries memlab.lab.metrics.scoring writes per data set and system, in the order scores list them."""
    return [d for d in definitions() if d.summarized]


def question_averages() -> dict[str, MetricDefinition]:
    """Base name -> entry, for every mean over questions the intervals and paired tests read per question."""
    return {d.name: d for d in definitions() if d.averaged}


def definition_of(key: str | ScoreKey, role: SystemRole | None = None) -> MetricDefinition | None:
    """The definition covering a figure (a ScoreKey, or a flat metrics key) of a system of the recorded `role`,
    or None when none does (the gate then reports it ungated). A definition of one sweep's figures covers it only
    when `role` names that sweep."""
    parts = parse_key(key)
    if parts is None or parts.name is None:
        return None
    sweep = role.sweep if role is not None else None
    return next((d for d in definitions() if d.name == parts.name and d.sweep in ("", sweep)), None)


def ungated_system(key: str | ScoreKey, role: SystemRole | str | None = None) -> str | None:
    """Why the key's system, of the recorded `role`, is left out of the gate, or None."""
    if parse_key(key) is None:
        return None
    role = role.role if isinstance(role, SystemRole) else role
    return next((why for ungated, why in UNGATED_ROLES if ungated == role), None)


def reading_note(names: Sequence[str]) -> str:
    """`name`: what it measures (higher/lower is better) for each base metric name, as the report explains its
    columns: from the same definitions the gate reads."""
    out = []
    for name in dict.fromkeys(names):
        found = next((d for d in definitions() if d.name == name and not d.sweep), None)
        if found is None:
            continue
        way = f" ({found.better} is better)" if found.better else ""
        out.append(f"`{name}`{way}: {found.description}")
    return "; ".join(out) + "." if out else ""


__all__ = ["ALL", "ANSWERABLE", "DEFINITIONS", "FORMER_COLUMNS", "FORMER_NAMES", "HIGHER", "JUDGED_SET", "LOWER",
           "MEAN", "MEDIAN", "NO_ANSWER", "P95", "POPULATIONS", "RERANKED", "SESSION_LABELLED", "SESSION_LABELS",
           "STATISTICS", "SUM",
           "UNGATED_ROLES", "MetricDefinition", "Population", "Requirement", "Statistic", "definition_of",
           "definitions", "question_averages", "reading_note", "register", "registered", "summarized",
           "ungated_system", "unregister"]
