"""report.md, the page a person reads first, and report.html beside it: written once per run, from the run
folder's saved scores and runs only (the headline, the data sets, each data set's tables, each sweep's section,
the comparison with the baseline)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from memlab.lab.base.redacted import write_text
from memlab.lab.base.tables import breakdown, markdown_table, pivot_scores
from memlab.lab.datasets.checks import warning_lines
from memlab.lab.datasets.judged.origins import headline_note
from memlab.lab.metrics.cutoffs import CutoffAdvice, cutoff_options, folder_advice
from memlab.lab.metrics.cutoffs import sentence as cutoff_sentence
from memlab.lab.metrics.definitions import reading_note, summarized
from memlab.lab.metrics.keys import ScoreKey, by_group, metric_name, overall
from memlab.lab.metrics.uncertainty import MIN_QUESTIONS, intervals, paired_differences, tied, too_few
from memlab.lab.report.gate import gate_table, gated, metrics_experiment, ungated
from memlab.lab.report.judged_lines import pool_lines
from memlab.lab.report.probe_section import probe_section
from memlab.lab.report.viewer import write_html
from memlab.lab.runs.folder import RunFolder
from memlab.lab.sweeps import applies, get_sweep, sweep_options
from memlab.lab.systems.roles import ASKED, CUT, MAIN, SWEEP

COLUMN_PROSE = (
    " The `@k` metrics are cut at k; labels are event ids (ir-measures). Latencies are per search in ms on a "
    "noisy 2-core machine: compare them as ratios. 95% CIs are percentile bootstraps over questions; differences "
    "are paired sign-flip tests on the same questions. Which way each metric is better is what the baseline gate "
    "reads too (memlab/lab/metrics/definitions.py).\n\n"
    "System names: `event` stores one unit per kept event, `session` one per session, `chunk4o1` windows of 4 "
    "kept events overlapping by 1; `pg-exact`, `planner`, `auto` name the search strategy; `hnsw-ef40-relaxed` is "
    "HNSW with ef_search 40 and relaxed-order iterative scans (`-off`: none); `faiss-exact-*` is the exact "
    "reference; `facts-*` the fact layer by extractor. Retrieval-sweep names read `<rendering>[+facts:<extractor>]"
    "/<mode>[/time-<how>][/q-<query rendering>][/cap-<N>]`, e.g. `speaker_date/hybrid`; `@cut<d>` is a distance "
    "cut-off d."
)


def column_notes(metrics: Iterable[str]) -> str:
    """What each metric scored per question means and which way is better, for those among `metrics` (a run's
    metric names), read from the metric registry the gate reads too, then how to read the tables."""
    present = {metric_name(str(m)) for m in metrics}
    return (reading_note([d.name for d in summarized() if d.name in present]) + COLUMN_PROSE).lstrip()


def main_metrics(k: int) -> list[str]:
    """The columns of each data set's main table: the registry's metrics marked for it, in registry order."""
    return [d.metric(k) for d in summarized() if d.main_table]


def _compared(scores: pd.DataFrame) -> pd.Series:
    """Rows of the systems the report compares: those that answered the questions (main, reference, a sweep's),
    by their recorded role (cut-offs and a sweep's own figures have sections of their own)."""
    return scores.role.isin(ASKED)


def _ranked(scores: pd.DataFrame) -> pd.Series:
    """Rows of the systems ranked against plain vector search: compared ones but the exact reference."""
    return scores.role.isin([MAIN, SWEEP])


REFERENCES = ("text/vector", "pg-exact", "event", "auto")  # plain vector search on the raw text, by name


def with_interval(folder, dataset: str, table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """`table` (one row per system) with the 95% bootstrap interval of `metric` over questions beside it."""
    if metric not in table.columns or folder.question_scores.empty:
        return table
    keys = {str(ScoreKey(dataset, s, metric)): s for s in table.system}
    iv = intervals(folder.question_table, list(keys))
    spans = {keys[key]: f"{lo:.3f}-{hi:.3f}" for key, lo, hi in zip(iv.key, iv.lo, iv.hi, strict=True)}
    out = table.copy()
    out.insert(out.columns.get_loc(metric) + 1, f"{metric} 95% CI", out.system.map(spans).fillna(""))
    return out


def against_reference(folder, dataset: str, k: int) -> tuple[str | None, pd.DataFrame]:
    """Every main system's recall@k against plain vector search on the same questions: change, its 95% CI, the
    paired test's p-value, Holm's adjustment over the systems compared, and `real` (adjusted p < 0.05). Computed
    once per data set and folder (the headline and the data set's section both read it)."""
    return folder.memo("against_reference", (dataset, k), lambda: _against_reference(folder, dataset, k))


def _against_reference(folder, dataset: str, k: int) -> tuple[str | None, pd.DataFrame]:
    metric = f"recall@{k}"
    scores = folder.scores
    rows = scores[(scores.dataset == dataset) & (scores.metric == metric) & overall(scores) & _ranked(scores)]
    systems = list(dict.fromkeys(rows.system))
    reference = next((s for s in REFERENCES if s in systems), None)
    empty = pd.DataFrame(columns=["system", "change", "lo", "hi", "questions", "p", "p_adjusted", "real"])
    if reference is None or folder.question_scores.empty:
        return reference, empty
    table = folder.question_table
    pairs = [(ScoreKey(dataset, reference, metric), ScoreKey(dataset, s, metric)) for s in systems if s != reference]
    diff = paired_differences(table, table, pairs)
    if diff.empty:
        return reference, empty
    compared = {str(after): after.system for _, after in pairs}
    diff.insert(0, "system", diff["after"].map(compared))
    diff["real"] = diff.significant.map({True: "yes", False: ""})
    return reference, diff.drop(columns=["before", "after", "significant"])


INTERVALS_NOTE = (
    "The first interval is where the best system's own recall@{k} would likely fall on other questions like these; "
    "the second is the interval of its per-question difference from plain vector search on the same questions, "
    "which is narrower since what makes a question hard cancels out, and its p-value is Holm-adjusted over every "
    "system compared, so a small data set can show a difference interval clear of zero beside p = 1.000."
)


def _pool(folder, dataset: str) -> dict | None:
    """A judged set's pool as the manifest records it (None for other data sets)."""
    return next((d.get("pool") for d in folder.manifest.get("datasets", []) if d.get("name") == dataset), None)


def headline_lines(folder, k: int, gate: pd.DataFrame | None = None) -> list[str]:
    """The lines a reader needs first: per data set the best system by recall@k (or the systems tied for best)
    with its 95% interval and its difference from plain vector search (paired test), a warning when the data
    set has too few questions to judge, the best system's cut-off with its cost (or why none is advised), and
    the biggest change against the baseline."""
    scores = folder.scores
    if folder.question_scores.empty:
        return []
    table = folder.question_table
    lines = []
    paired = False
    metric = f"recall@{k}"
    for dataset in folder.datasets:
        rows = scores[(scores.dataset == dataset) & (scores.metric == metric) & overall(scores) & _ranked(scores)]
        if rows.empty:
            continue
        best = rows.loc[rows.value.idxmax()]
        reference = next((s for s in REFERENCES if s in set(rows.system)), None)
        if reference is not None and rows[rows.system == reference].value.max() >= best.value:
            best = rows[rows.system == reference].iloc[0]  # a tie goes to plain vector search
        values = rows.drop_duplicates("system").set_index("system").value
        ties = tied(values, best.system, table, dataset=dataset, metric=metric)
        iv = intervals(table, [ScoreKey(dataset, best.system, metric)])
        if iv.empty:
            continue
        r = iv.iloc[0]
        named = (f"best `{best.system}`" if len(ties) == 1 else
                 "best (tied: " + ", ".join(f"`{s}`" for s in ties) + ")")  # fmt: skip
        text = (f"- **{dataset}**: {named} recall@{k} {r.value:.3f} (95% CI {r.lo:.3f}-{r.hi:.3f}, "
                f"{int(r.questions)} questions)")  # fmt: skip
        # generated questions, alone or mixed with real ones: said with the figure
        text += headline_note(_pool(folder, dataset))
        if reference is not None and reference not in ties:
            _, diff = against_reference(folder, dataset, k)
            diff = diff[diff.system == best.system]
            if len(diff):
                d = diff.iloc[0]
                verdict = "a real difference" if d.real else "not significant"
                p_text = "< 0.001" if d.p_adjusted < 0.001 else f"= {d.p_adjusted:.3f}"
                text += (f"; {d.change:+.3f} over plain vector `{reference}` (95% CI {d.lo:+.3f} to {d.hi:+.3f}, "
                         f"paired test, Holm-adjusted p {p_text}: {verdict})")  # fmt: skip
                paired = True
        text += "."
        if too_few(int(r.questions)):
            text += (f" **Too few questions to judge**: {int(r.questions)} answerable questions (under "
                     f"{MIN_QUESTIONS}) make an interval or a paired test unreliable; read these figures as "
                     "examples, not measurements.")  # fmt: skip
        advice = _cutoff_advice(folder, dataset, best.system)
        if advice is not None:
            text += " " + cutoff_sentence(advice, k)
        lines.append(text)
    if paired:
        lines.append("- " + INTERVALS_NOTE.format(k=k))
    if gate is not None and len(gate):
        moved = gate[gate.verdict.isin(["regression", "improvement", "within noise"])]
        if len(moved):
            m = moved.loc[moved.change.abs().idxmax()]
            lines.append(f"- Biggest change against the baseline: `{m.metric}` {m.baseline:.3f} -> {m.run:.3f} "
                         f"({m.verdict}).")  # fmt: skip
        else:
            lines.append("- Against the baseline: no gated metric moved beyond its tolerance.")
    return ["## Headline", "", *lines, ""] if lines else []


def _cutoff_advice(folder, dataset: str, system: str) -> CutoffAdvice | None:
    """The cut-off advice for `system` (memlab.lab.metrics.cutoffs, the rule the cut-off sweep stores too), when the
    run's config applies the cut-off sweep to the data set."""
    options = cutoff_options(folder.manifest, dataset)
    return None if options is None else folder_advice(folder, dataset, system, options)


def _gate_table(folder, baseline: Path | None) -> pd.DataFrame | None:
    """The run against the baseline (tolerances, then paired tests), or None without a baseline."""
    if baseline is None or not Path(baseline).exists():
        return None
    base, run = metrics_experiment(baseline), metrics_experiment(folder.path)
    if base is not None and run is not None and base != run:
        return None  # another suite's baseline: nothing compares (report.md says so)
    questions = folder.question_scores
    return gate_table(baseline, folder.path, run_questions=None if questions.empty else questions)


def write_report(folder: str | Path | RunFolder, *, baseline: Path | None = None) -> Path:
    """report.md (and report.html) from a run folder's saved scores and runs only (and each sweep's section),
    compared with `baseline` when given. `run_experiment` calls it once at the end of a run; call it again only
    to redo the report of a saved run."""
    folder = folder if isinstance(folder, RunFolder) else RunFolder(Path(folder))
    manifest = folder.manifest
    cfg = manifest.get("config", {}).get("resolved", {})
    k = folder.k
    scores = folder.scores
    parts = [f"# memlab run: {cfg.get('name', '')}", "",
             f"commit `{manifest.get('git_commit', '?')}`, finished {manifest.get('finished_at', '?')}, k = {k}, "
             "embedders: " + ", ".join(f"`{n}` = {m}" for n, m in manifest.get("embedders", {}).items()),
             ""]  # fmt: skip
    probe = probe_section(folder)  # a probe's stale labels, alerts, drift and index health, from its folder
    parts += probe.markdown
    gate = _gate_table(folder, baseline)
    head = headline_lines(folder, k, gate)
    parts += head
    parts += warning_lines(manifest)  # what the data cannot serve in this config
    html_tables: list[tuple[str, pd.DataFrame]] = []
    if manifest.get("datasets"):
        ds = pd.DataFrame(manifest["datasets"])
        ds["checksum"] = ds.checksum.str[:12]
        cols = [c for c in ["name", "format", "users", "sessions", "events", "questions", "answerable", "no_answer",
                            "labels_given", "labels_dropped", "checksum"] if c in ds.columns]  # fmt: skip
        parts += ["## Data sets", "", markdown_table(ds[cols]), ""]
    mains = list(dict.fromkeys(scores[_compared(scores)].system))
    recall = scores[scores.system.isin(mains) & (scores.metric == f"recall@{k}")]
    across = recall[overall(recall)]
    if across.dataset.nunique() > 1:
        wide = across.pivot_table(index="system", columns="dataset", values="value", sort=False).reset_index()
        parts += [f"## recall@{k} across data sets", "", markdown_table(wide), ""]
        html_tables.append((f"recall@{k} across data sets", wide))
        typed = recall[by_group(recall, "qtype")]
        shared = [t for t, g in typed.groupby("group_value", sort=False) if g.dataset.nunique() > 1]
        for qtype in shared:  # the same kind of question on different haystacks (e.g. oracle vs S)
            g = typed[typed.group_value == qtype]
            wide = g.pivot_table(index="system", columns="dataset", values="value", sort=False).reset_index()
            parts += [f"recall@{k} on `{qtype}` questions, side by side:", "", markdown_table(wide), ""]
    for dataset in folder.datasets:
        sub = scores[scores.dataset == dataset]
        systems = list(dict.fromkeys(sub[_compared(sub)].system))
        parts += [f"## {dataset}", ""]
        cuts = sub[sub.role == CUT]
        parents = dict(zip(cuts.system, cuts.parent, strict=True))
        parts += pool_lines(_pool(folder, dataset), list(dict.fromkeys(sub.system)), k, parents)  # pool, unpooled
        if systems:
            main = with_interval(folder, dataset, pivot_scores(sub, systems, main_metrics(k)), f"recall@{k}")
            parts += [markdown_table(main), ""]
            answered = int(main["questions"].max()) if "questions" in main and len(main) else 0
            if answered and too_few(answered):
                parts += [f"**Too few questions to judge**: at most {answered} answerable questions (under "
                          f"{MIN_QUESTIONS}); the intervals and tests below are unreliable.", ""]  # fmt: skip
            html_tables.append((f"{dataset}: main metrics", main))
            reference, diff = against_reference(folder, dataset, k)
            if len(diff):
                real = diff[diff.real == "yes"]
                parts += [f"recall@{k} against plain vector `{reference}` on the same questions (paired sign-flip "
                          f"test, Holm-adjusted over the {len(diff)} systems; `real`: adjusted p < 0.05): "
                          f"{len(real)} of {len(diff)} differences are real.", "",
                          markdown_table(diff[diff.change != 0] if (diff.change != 0).any() else diff), ""]
                html_tables.append((f"{dataset}: recall@{k} against {reference}", diff))
            wide = breakdown(sub, systems, f"recall@{k}", "qtype")
            if wide is not None:
                parts += [f"recall@{k} by question type:", "", markdown_table(wide), ""]
        for name in applies(cfg, dataset):
            body = get_sweep(name).section(folder, dataset, sweep_options(cfg, name))
            if body:
                parts += [f"### {name} ({dataset})", "", body, ""]
    parts += ["## Reading the numbers", "", column_notes(scores.metric), ""]
    if gate is None and baseline is not None and Path(baseline).exists():
        parts += ["## Against the committed baseline", "",
                  f"Not gated: `{baseline}` comes from a run of another suite, so its data sets and systems differ "
                  f"from this run's. `memlab report --run {folder.path} --against {baseline}` compares the two "
                  "anyway, paired on the questions both answered.", ""]  # fmt: skip
    if gate is not None:
        changed = gate[gate.verdict.str.startswith(("regression", "improvement", "within noise"))]
        new = int((gate.verdict == "new").sum())
        noise = int((gate.verdict == "within noise").sum())
        unknown = ungated(gate)
        parts += ["## Against the committed baseline", "",
                  f"{len(gated(gate))} gated metrics checked against `{baseline}`: {len(changed) - noise} moved "
                  f"beyond tolerance, {noise} more dropped beyond tolerance but not significantly (paired test on "
                  f"the questions, Holm-corrected; `p_adjusted`), {new} are new (not in the baseline).", "",
                  markdown_table(changed) if len(changed) else "", ""]
        if len(unknown):
            parts += [f"Ungated: {len(unknown)} metric(s) no metric definition covers, so the gate cannot tell which "
                      "way is better and did not compare them: " + ", ".join(f"`{m}`" for m in unknown.metric), ""]
    path = write_text(folder.path / "report.md", "\n".join(parts))  # through the redactor
    if gate is not None:
        html_tables.append(("against the baseline", gate[gate.verdict != "ok"]))
    write_html(folder, head + probe.headline, probe.tables + html_tables)
    return path
