"""What to embed and how to search: renderings x search mode x fact keys x time handling, on the same questions
with the same k, by question type and memory size, with the context each configuration hands the model (a gain
bought with more text shows as one). Answerability (when to return nothing) is fitted from these runs in
`memlab.lab.metrics.answerability` and reported here.

Options (all optional): RetrievalOptions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

import memlab.lab.metrics.answerability as answerability
from memlab.errors import ConfigError
from memlab.events.answerability import AnswerabilityGate
from memlab.events.renderings import QUERY_RENDERINGS, RENDERINGS
from memlab.lab.base.options import option
from memlab.lab.base.plots import answerability_curves
from memlab.lab.base.redacted import write_csv
from memlab.lab.base.tables import breakdown, markdown_table, pivot_scores
from memlab.lab.datasets.model import Dataset
from memlab.lab.metrics.cutoffs import HIT_AUC, QUESTION_AUC
from memlab.lab.metrics.keys import by_group, overall
from memlab.lab.metrics.scoring import SCORE_COLUMNS
from memlab.lab.runs.folder import RunFolder
from memlab.lab.runs.records import slug
from memlab.lab.sweeps.base import Sweep, SweepContext, distinct
from memlab.lab.systems.kinds import EXTRACTORS, GRANULARITIES, EventSystem
from memlab.lab.systems.roles import MEASURE, SWEEP
from memlab.types import SEARCH_MODES, STRATEGIES, SearchSettings

BASELINE = "text/vector"  # plain vector search on the raw text: what every gain is measured against
TIMED = ("boost", "filter")  # the time handlings a cell may add (`off` is every other cell)


@dataclass(frozen=True)
class AnswerabilityOptions:
    train: str = option("synth", "the data set the answerability gate is fitted on (cross-validated there)")
    system: str | None = option(None, "the system whose hits the gate reads (default: the first hybrid system on a "
                                      "rendered text, else the baseline)")  # fmt: skip


@dataclass(frozen=True)
class RetrievalOptions:
    renderings: list[str] = option(list(RENDERINGS), "what is embedded of each event", choices=RENDERINGS)
    modes: list[str] = option(list(SEARCH_MODES), "how each rendering is searched", choices=SEARCH_MODES)
    fact_keys: list[str] = option(["rules", "labelled"], "extractors whose fact keys are added to the rendered text "
                                  "(labelled only where the data set has gold candidates)",
                                  choices=EXTRACTORS)  # fmt: skip
    fact_rendering: str = option("speaker_date", "the rendering the fact keys are added to", choices=RENDERINGS)
    time: list[str] = option(list(TIMED), "time handling cells (on text and time_rendering)", choices=TIMED)
    time_rendering: str = option("speaker_date", "the rendering the time cells search besides text",
                                 choices=RENDERINGS)  # fmt: skip
    query_renderings: list[str] = option(["first_person"], "the question re-rendered (first_person: in the "
                                         "memory's person), on text and fact_rendering",
                                         choices=QUERY_RENDERINGS)  # fmt: skip
    per_session: list[int] = option([], "caps on the hits one session may hold in the top k, on every rendering "
                                    "with vector and hybrid search", low=1, high=1000)  # fmt: skip
    authors: list[str] = option([], "authors whose units count as nearer (e.g. user), on every rendering with vector "
                                "and hybrid search, alone and under every cap", blank=False)  # fmt: skip
    granularity: str = option("event", "the unit every cell remembers", choices=GRANULARITIES)
    strategy: str = option("exact", "the search strategy (exact: quality without index approximation)",
                           choices=STRATEGIES)  # fmt: skip
    answerability: AnswerabilityOptions = option(AnswerabilityOptions(), "where the answerability gate is fitted "
                                                 "and which system's hits it reads")  # fmt: skip


@dataclass(frozen=True)
class Cell:
    """One configuration of the grid: what is embedded (rendering, fact keys) and how it is searched."""

    rendering: str
    mode: str
    fact_keys: str | None = None
    time: str = "off"
    query: str = "as_is"
    per_session: int | None = None
    author: str | None = None

    @property
    def name(self) -> str:
        """`<rendering>[+facts:<extractor>]/<mode>[/time-<how>][/q-<query rendering>][/cap-<N>][/author-<who>]`,
        e.g. `speaker_date/hybrid/time-boost`, `text/vector/q-first_person` or `speaker/hybrid/cap-2/author-user`."""
        name = self.rendering + (f"+facts:{self.fact_keys}" if self.fact_keys else "") + f"/{self.mode}"
        name += f"/time-{self.time}" if self.time != "off" else ""
        name += f"/q-{self.query}" if self.query != "as_is" else ""
        name += f"/cap-{self.per_session}" if self.per_session is not None else ""
        return name + (f"/author-{self.author}" if self.author is not None else "")

    @classmethod
    def parse(cls, system: str) -> Cell:
        """The cell a system name stands for (the inverse of `name`)."""
        head, mode, *rest = system.split("/")
        rendering, _, fact_keys = head.partition("+facts:")
        tagged = {part.partition("-")[0]: part.partition("-")[2] for part in rest}
        cap = tagged.get("cap")
        return cls(rendering, mode, fact_keys or None, tagged.get("time", "off"), tagged.get("q", "as_is"),
                   int(cap) if cap else None, tagged.get("author"))  # fmt: skip

    def search(self) -> dict[str, Any]:
        """The `SearchSettings` fields this cell sets (what a gate fitted on its hits carries to an agent)."""
        return {"mode": self.mode, "time": self.time, "query_rendering": self.query, "per_session": self.per_session,
                "prefer_author": self.author}  # fmt: skip


def _whole_numbers(values: list, option: str) -> list[int]:
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"retrieval sweep: {option} takes whole numbers >= 1, got {value!r}.")
    return values


def _grid(dataset: Dataset, options: dict[str, Any]) -> list[Cell]:
    renderings = list(options.get("renderings", RENDERINGS))
    modes = list(options.get("modes", SEARCH_MODES))
    ranked = [m for m in ("vector", "hybrid") if m in modes]  # the modes with a vector list
    grid = [Cell(r, m) for r in renderings for m in modes]
    fact_rendering = options.get("fact_rendering", "speaker_date")
    has_gold = any(u.gold_candidates for u in dataset.users)
    for extractor in options.get("fact_keys", ["rules", "labelled"]):
        if extractor == "labelled" and not has_gold:
            continue  # nothing to replay: this data set has no gold candidates
        grid += [Cell(fact_rendering, m, extractor) for m in ranked]
    time_rendering = options.get("time_rendering", "speaker_date")
    timed_mode = "hybrid" if "hybrid" in modes else modes[0]
    for how in options.get("time", ["boost", "filter"]):
        grid += [Cell("text", "vector", time=how), Cell(time_rendering, timed_mode, time=how)]
    for query in options.get("query_renderings", ["first_person"]):  # the question in the memory's person
        grid += [Cell(r, m, query=query) for r in ("text", fact_rendering) if r in renderings for m in ranked]
    caps = _whole_numbers(list(options.get("per_session", [])), "per_session")
    grid += [Cell(r, m, per_session=cap) for cap in caps for r in renderings for m in ranked]
    for author in options.get("authors", []):  # each rendering and mode, alone and under every cap
        if not isinstance(author, str) or not author:
            raise ConfigError(f"retrieval sweep: authors takes author names such as 'user', got {author!r}.")
        grid += [Cell(r, m, per_session=cap, author=author) for cap in [None, *caps] for r in renderings
                 for m in ranked]  # fmt: skip
    return list(dict.fromkeys(grid))


def grid_size(options: dict[str, Any]) -> int:
    """At most how many cells `_grid` makes, from the lengths of the option lists alone (no cell is built: a
    grid of authors x caps x renderings x modes multiplies to millions from a few kilobytes of config)."""
    modes = list(options.get("modes", SEARCH_MODES))
    renderings, ranked = distinct(list(options.get("renderings", RENDERINGS))), distinct([m for m in modes if m in
                                                                                         ("vector", "hybrid")])
    caps = distinct(options.get("per_session", []))
    return (renderings * distinct(modes) + distinct(options.get("fact_keys", ["rules", "labelled"])) * ranked
            + 2 * distinct(options.get("time", ["boost", "filter"]))
            + distinct(options.get("query_renderings", ["first_person"])) * 2 * ranked
            + caps * renderings * ranked + distinct(options.get("authors", [])) * (caps + 1) * renderings * ranked)


def names(dataset: Dataset, options: dict[str, Any]) -> list[str]:
    return [cell.name for cell in _grid(dataset, options)]


def _settings_of(system: str) -> dict[str, Any]:
    """The search settings a retrieval system name stands for (what the gate expects its hits from); a configured
    system's name (`answerability.system`, e.g. one with `rerank:`) is no grid cell and stands for itself."""
    if "/" not in system:
        return {"system": system}
    cell = Cell.parse(system)
    return {"system": system, "rendering": cell.rendering, **cell.search()}


def gate_system(folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
    """The system whose hits the answerability gate reads: `answerability.system`, else the first hybrid
    system on a rendered text, else the baseline."""
    runs = folder.runs(dataset)
    wanted = (options.get("answerability") or {}).get("system")
    if wanted:
        return wanted if wanted in runs else None
    for name in ("speaker_date/hybrid", "speaker/hybrid", "text/hybrid", BASELINE):
        if name in runs:
            return name
    return None


def _table(folder: RunFolder, dataset: str, system: str) -> pd.DataFrame:
    events = folder.events(dataset)
    sizes = events.groupby(["app_name", "user_id"]).size().to_dict()
    return answerability.question_table(folder.runs(dataset)[system].frame, folder.questions(dataset), sizes, folder.k)


def _trained(folder: RunFolder, train: str, system: str):
    """(fitted gate, distance cut-off, hit table) from the train data set, computed once per run folder and
    shared by every data set the gate is tested on; None when the train set has no no-answer question."""
    return folder.memo("answerability", (train, system), lambda: _train(folder, train, system))


def _train(folder: RunFolder, train: str, system: str):
    table = _table(folder, train, system)
    if table.answerable.all() or not table.answerable.any():
        return None
    run, questions = folder.runs(train)[system].frame, folder.questions(train)
    return (
        answerability.fit(table, settings=_settings_of(system), source=train),
        answerability.distance_cut(run, questions, folder.k),
        answerability.hit_table(run, questions, folder.k),
    )


def _curve_plot(folder: RunFolder, dataset: str, options: dict[str, Any]) -> list[str]:
    """The answerability curve of this data set (the gate fitted on the train set at every threshold, one
    distance cut-off at every max_distance), saved as a table and a figure (`RunFolder.figure`); the report lines
    linking the figure."""
    path = folder.path / "answerability.json"
    system = gate_system(folder, dataset, options)
    if not path.exists() or system is None:
        return []
    gate = AnswerabilityGate.load(path)
    if gate.settings.get("system") != system:
        return []
    run = folder.runs(dataset)[system].frame
    frame = answerability.curve(run, folder.questions(dataset), _table(folder, dataset, system), gate, folder.k)
    frame = frame.assign(dataset=dataset)
    write_csv(frame, folder.path / f"answerability_curve__{slug(dataset)}.csv")
    return folder.figure(f"answerability__{slug(dataset)}.png", "answerability",
                         lambda png: answerability_curves(frame, png, k=folder.k))


HIT_SYSTEMS = ("answerability:hit-model", "answerability:hit-distance")  # the per-hit AUCs' rows


def _grid_rows(scores: pd.DataFrame) -> pd.Series:
    """Rows of the systems this sweep ran (its grid, baseline included), by their recorded role and sweep."""
    return ((scores.role == SWEEP) & (scores.sweep == "retrieval")) | (scores.system == BASELINE)


def gains(scores: pd.DataFrame, k: int) -> pd.DataFrame:
    """recall@k of every retrieval system against plain vector on raw text, per data set: the best system,
    its gain, and the question types it made worse by more than 2 points (pure, from long-form scores)."""
    rows = []
    metric = f"recall@{k}"
    for dataset, s in scores.groupby("dataset", sort=False):
        own = s[_grid_rows(s)]
        over_all = own[(own.metric == metric) & overall(own)].set_index("system").value
        if BASELINE not in over_all or len(over_all) < 2:
            continue
        best = over_all.drop(BASELINE).idxmax()
        worse = []
        by_type = own[(own.metric == metric) & by_group(own, "qtype")]
        for qtype, g in by_type.groupby("group_value"):
            values = g.set_index("system").value
            if best in values and BASELINE in values and values[best] < values[BASELINE] - 0.02:
                worse.append(f"{qtype} ({values[BASELINE]:.3f} -> {values[best]:.3f})")
        rows.append({"dataset": dataset, "baseline": round(float(over_all[BASELINE]), 3), "best": best,
                     "best_recall": round(float(over_all[best]), 3),
                     "gain_points": round(100 * float(over_all[best] - over_all[BASELINE]), 1),
                     "worse_types": "; ".join(worse) or "none"})  # fmt: skip
    return pd.DataFrame(rows)


class RetrievalSweep(Sweep):
    """Renderings x search modes x fact keys x time handling, and the answerability gate fitted on their hits."""

    name = "retrieval"
    options_type = RetrievalOptions

    def planned(self, options: dict[str, Any], config: dict[str, Any]) -> int:
        return grid_size(options)

    def systems(self, dataset: Dataset, options: dict[str, Any],
                context: SweepContext) -> list[EventSystem]:  # fmt: skip
        granularity = options.get("granularity", "event")
        strategy = options.get("strategy", "exact")
        return [EventSystem(cell.name, granularity, settings=SearchSettings(strategy=strategy, **cell.search()),
                            rendering=cell.rendering, fact_keys=cell.fact_keys)
                for cell in _grid(dataset, options)]  # fmt: skip

    def scores(self, folder: RunFolder, dataset: str, options: dict[str, Any], base: pd.DataFrame) -> pd.DataFrame:
        """Answerability on this data set: the gate fitted on `answerability.train` (default synth; cross-validated
        when this is that data set) and the single distance cut-off picked there, as long-form rows of systems
        `answerability:gate`, `answerability:boosting`, `answerability:distance-cut`. The gate fitted on the train
        set is saved as `answerability.json` in the run folder."""
        train = (options.get("answerability") or {}).get("train", "synth")
        system = gate_system(folder, dataset, options)
        if system is None or train not in folder.datasets or gate_system(folder, train, options) != system:
            return pd.DataFrame(columns=SCORE_COLUMNS)
        trained = _trained(folder, train, system)
        if trained is None:
            return pd.DataFrame(columns=SCORE_COLUMNS)
        fitted, cutoff, train_hits = trained
        k = folder.k
        if dataset == train:
            fitted.gate.save(folder.path / "answerability.json")
            gate = {m: fitted.cv[m] for m in ("roc_auc", "false_memory_rate", "recall_kept", "brier",
                                              "calibration_error")}  # fmt: skip
            boosting = {"roc_auc": fitted.cv["boosting_roc_auc"]}
        else:
            table = _table(folder, dataset, system)
            found = answerability.evaluate(fitted, table)
            gate = {m: found[m] for m in ("roc_auc", "false_memory_rate", "recall_kept", "brier", "calibration_error")}
            boosting = {m: found[f"boosting_{m}"] for m in ("roc_auc", "false_memory_rate", "recall_kept")}
        run = folder.runs(dataset)[system].frame
        cut = answerability.cut_rates(run, folder.questions(dataset), k, cutoff)
        test_hits = train_hits if dataset == train else answerability.hit_table(run, folder.questions(dataset), k)
        per_hit = answerability.hit_aucs(train_hits, test_hits)
        n = len(folder.questions(dataset))
        rows = []
        for method, values in (("gate", gate), ("boosting", boosting), ("distance-cut", cut)):
            rows += [(dataset, f"answerability:{method}", metric, float(v), n) for metric, v in values.items()]
        rows.append((dataset, "answerability:distance-cut", "max_distance", float("nan") if cutoff is None else cutoff,
                     n))  # fmt: skip
        rows.append((dataset, "answerability:gate", "threshold", fitted.gate.threshold, n))
        if per_hit:
            rows.append((dataset, HIT_SYSTEMS[0], "roc_auc", per_hit["hit_roc_auc"], len(test_hits)))
            rows.append((dataset, HIT_SYSTEMS[1], "roc_auc", per_hit["hit_distance_roc_auc"], len(test_hits)))
        return pd.DataFrame(rows, columns=SCORE_COLUMNS)

    def section(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
        k = folder.k
        scores = folder.scores[folder.scores.dataset == dataset]
        wanted = list(dict.fromkeys(scores[_grid_rows(scores)].system))
        if BASELINE not in wanted:
            return None
        metrics = [f"recall@{k}", f"mrr@{k}", f"ndcg@{k}", f"session_recall@{k}", "context_chars", "empty_rate"]
        table = pivot_scores(scores, wanted, metrics)
        parts = ["System names read `<rendering>[+facts:<extractor>]/<mode>[/time-<how>][/q-<query rendering>]"
                 "[/cap-<N>][/author-<who>]`; `q-first_person` puts a question about \"the user\" in the memory's "
                 "first person; `cap-N` keeps at most N hits of one conversation in the top k; `author-user` ranks "
                 "the user's own turns as if 0.05 nearer in the vector list; the baseline is "
                 f"`{BASELINE}` (plain vector search on the raw text).", "", markdown_table(table)]  # fmt: skip
        summary = gains(scores, k)
        if len(summary):
            parts += ["", "Best configuration against the baseline:", "", markdown_table(summary)]
        wide = breakdown(scores, wanted, f"recall@{k}", "qtype")
        if wide is not None:
            parts += ["", f"recall@{k} by question type:", "", markdown_table(wide)]
        gate = scores[(scores.role == MEASURE) & (scores.sweep == "retrieval")]
        parts += _curve_plot(folder, dataset, options)
        if len(gate):
            wide = gate.pivot_table(index="system", columns="metric", values="value", sort=False).reset_index()
            parts += ["", f"When to return nothing (at most {answerability.TARGET:.0%} false memories on no-answer "
                      "questions; gate and boosting read the hits' distances, gaps, full-text ranks and coverage and "
                      "the memory size; distance-cut is the one max_distance picked on the train data set to compare "
                      "the gate with, not the cut-off advice; thresholds picked on the train data set; "
                      f"roc_auc is the {QUESTION_AUC} telling answerable from no-answer questions on the rows of "
                      f"gate, boosting and distance-cut, and the {HIT_AUC} telling hits holding a labelled event "
                      "from the rest on the rows of hit-model and hit-distance; brier and calibration_error "
                      "(expected, 10 bins) say how far the gate's p(answerable) reads as a probability, 0 = "
                      "calibrated):", "", markdown_table(wide)]  # fmt: skip
        return "\n".join(parts)


__all__ = ["BASELINE", "Cell", "RetrievalSweep", "gains", "gate_system", "grid_size", "names"]
