"""Write a run folder: the per-question table, the summary, a manifest, and report.md that a person reads first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from memlab.lab.cutoff_advice import CutoffAdvice, advise, cutoff_options
from memlab.lab.cutoff_advice import sentence as cutoff_sentence
from memlab.lab.dataset_checks import warning_lines
from memlab.lab.sweeps.cutoff import DEFAULT_GRID, FALSE_MEMORY_TARGET
from memlab.lab.uncertainty import MIN_QUESTIONS, intervals, tied, too_few

COLUMN_NOTES = (
    "`recall@k`, `precision@k`, `mrr@k`, `ndcg@k`, `hit@k`: against the labelled event ids (ir-measures); "
    "`session_recall@k`: share of the answer sessions a hit comes from (where the data set labels sessions). "
    "`recall_vs_exact`: share of FAISS exact's "
    "top k that the configuration also returned (a short result counts as misses). `context_chars`: characters "
    "handed to the model per question. `correct_empty_rate`: no-answer questions that got no hit (needs a "
    "cut-off). Latencies are per search in ms on a noisy 2-core machine: compare them as ratios. 95% CIs are "
    "percentile bootstraps over questions; differences are paired sign-flip tests on the same questions.\n\n"
    "System names: `event` stores one unit per kept event, `session` one per session, `chunk4o1` windows of 4 "
    "kept events overlapping by 1; `pg-exact`, `planner`, `auto` name the search strategy; `hnsw-ef40-relaxed` is "
    "HNSW with ef_search 40 and relaxed-order iterative scans (`-off`: none); `faiss-exact-*` is the exact "
    "reference; `facts-*` the fact layer by extractor. Retrieval-sweep names read `<rendering>[+facts:<extractor>]"
    "/<mode>[/time-<how>][/q-<query rendering>][/cap-<N>]`, e.g. `speaker_date/hybrid`; `@cut<d>` is a distance "
    "cut-off d."
)


def _counts(values: pd.Series) -> bool:
    """A float column that holds counts (every value whole, some above 1): printed as integers. Rates (0 to 1)
    and measured times are not whole numbers, so they keep their decimals."""
    numbers = pd.to_numeric(values, errors="coerce").dropna()
    return bool(len(numbers)) and bool((numbers == numbers.round()).all()) and bool((numbers.abs() > 1).any())


def format_cell(value: object, floatfmt: str = ".3f", whole: bool = False) -> str:
    """One table cell: integers as integers, floats to `floatfmt` (3 decimals; rates and small figures), floats
    of 100 and more without decimals (thousands separated from 10,000), missing values empty."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float | np.floating) and np.isnan(value):
        return ""
    if isinstance(value, bool | np.bool_):
        return str(bool(value)).lower()
    if isinstance(value, int | np.integer):
        return f"{int(value):,}" if abs(int(value)) >= 10_000 else str(int(value))
    if isinstance(value, float | np.floating):
        if whole or abs(value) >= 100:  # counts, characters, rows/s, long latencies: no decimals
            return f"{value:,.0f}" if abs(value) >= 10_000 else f"{value:.0f}"
        return format(float(value), floatfmt)
    return str(value)


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".3f") -> str:
    """A pipe table without extra dependencies (pandas' to_markdown needs tabulate). Column dtypes are kept
    (counts print as integers, see `format_cell`)."""
    cols = list(frame.columns)
    whole = {col: frame[col].dtype.kind == "f" and _counts(frame[col]) for col in cols}
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in frame.itertuples(index=False, name=None):
        cells = [format_cell(value, floatfmt, whole[col]) for col, value in zip(cols, row, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pivot_scores(scores: pd.DataFrame, systems: list[str], metrics: list[str]) -> pd.DataFrame:
    """Wide table from long scores: one row per system (in the order given), one column per metric present."""
    sub = scores[scores.system.isin(systems) & scores.metric.isin(metrics)]
    if sub.empty:
        return pd.DataFrame({"system": systems})
    wide = sub.pivot_table(index="system", columns="metric", values="value", sort=False)
    questions = scores[scores.system.isin(systems) & (scores.metric == metrics[0])].set_index("system").questions
    wide = wide.reindex([s for s in systems if s in wide.index])
    cols = [m for m in metrics if m in wide.columns]
    # Without a cut-off no system returns nothing, so an all-zero correct-empty rate says nothing: left out.
    cols = [m for m in cols if m != "correct_empty_rate" or wide[m].fillna(0).abs().sum() > 0]
    out = wide[cols].reset_index()
    if len(questions):
        out.insert(1, "questions", out.system.map(questions).fillna(0).astype(int))
    return out


def breakdown(scores: pd.DataFrame, systems: list[str], metric: str, group: str) -> pd.DataFrame | None:
    """`metric[group=value]` rows of `systems` as a table: one row per system, one column per group value
    (None when there is at most one value: nothing to break down)."""
    rows = scores[scores.system.isin(systems) & scores.metric.str.startswith(f"{metric}[{group}=")]
    if rows.metric.nunique() <= 1:
        return None
    wide = rows.assign(group=rows.metric.str.extract(r"=(.*)\]$")[0]).pivot_table(
        index="system", columns="group", values="value", sort=False)
    if group == "size":  # memory-size buckets in size order, not alphabetical
        from memlab.lab.scoring import SIZE_LABELS

        wide = wide[[b for b in SIZE_LABELS if b in wide.columns] + [c for c in wide.columns if c not in SIZE_LABELS]]
    return wide.reindex([s for s in systems if s in wide.index]).reset_index()


def _is_main(system: str) -> bool:
    return "@cut" not in system and not system.startswith(("filtered:", "extractor:", "ingest"))


REFERENCES = ("text/vector", "pg-exact", "event", "auto")  # plain vector search on the raw text, by name


def with_interval(folder, dataset: str, table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """`table` (one row per system) with the 95% bootstrap interval of `metric` over questions beside it."""
    from memlab.lab.scoring import metric_key
    from memlab.lab.uncertainty import intervals

    if metric not in table.columns or folder.question_scores.empty:
        return table
    iv = intervals(folder.question_table, [metric_key(dataset, s, metric) for s in table.system])
    spans = {key.split("/", 1)[1].rsplit("/", 1)[0]: f"{lo:.3f}-{hi:.3f}"
             for key, lo, hi in zip(iv.key, iv.lo, iv.hi, strict=True)}  # fmt: skip
    out = table.copy()
    out.insert(out.columns.get_loc(metric) + 1, f"{metric} 95% CI", out.system.map(spans).fillna(""))
    return out


def against_reference(folder, dataset: str, k: int) -> tuple[str | None, pd.DataFrame]:
    """Every main system's recall@k against plain vector search on the same questions: change, its 95% CI, the
    paired test's p-value, Holm's adjustment over the systems compared, and `real` (adjusted p < 0.05). Computed
    once per data set and folder (the headline and the data set's section both read it)."""
    return folder.memo("against_reference", (dataset, k), lambda: _against_reference(folder, dataset, k))


def _against_reference(folder, dataset: str, k: int) -> tuple[str | None, pd.DataFrame]:
    from memlab.lab.scoring import metric_key
    from memlab.lab.uncertainty import paired_differences

    metric = f"recall@{k}"
    scores = folder.scores
    rows = scores[(scores.dataset == dataset) & (scores.metric == metric) & scores.system.map(_is_main)]
    systems = [s for s in dict.fromkeys(rows.system) if not s.startswith("faiss-exact")]
    reference = next((s for s in REFERENCES if s in systems), None)
    empty = pd.DataFrame(columns=["system", "change", "lo", "hi", "questions", "p", "p_adjusted", "real"])
    if reference is None or folder.question_scores.empty:
        return reference, empty
    table = folder.question_table
    pairs = [(metric_key(dataset, reference, metric), metric_key(dataset, s, metric)) for s in systems
             if s != reference]  # fmt: skip
    diff = paired_differences(table, table, pairs)
    if diff.empty:
        return reference, empty
    diff.insert(0, "system", [after.split("/", 1)[1].rsplit("/", 1)[0] for after in diff["after"]])
    diff["real"] = diff.significant.map({True: "yes", False: ""})
    return reference, diff.drop(columns=["before", "after", "significant"])


INTERVALS_NOTE = (
    "The first interval is where the best system's own recall@{k} would likely fall on other questions like these; "
    "the second is the interval of its per-question difference from plain vector search on the same questions, "
    "which is narrower since what makes a question hard cancels out, and its p-value is Holm-adjusted over every "
    "system compared, so a small data set can show a difference interval clear of zero beside p = 1.000."
)


def headline_lines(folder, k: int, gate: pd.DataFrame | None = None) -> list[str]:
    """The lines a reader needs first: per data set the best system by recall@k (or the systems tied for best)
    with its 95% interval and its difference from plain vector search (paired test), a warning when the data
    set has too few questions to judge, the best system's cut-off with its cost (or why none is advised), and
    the biggest change against the baseline."""
    from memlab.lab.scoring import metric_key

    scores = folder.scores
    if folder.question_scores.empty:
        return []
    table = folder.question_table
    lines = []
    paired = False
    metric = f"recall@{k}"
    for dataset in folder.datasets:
        rows = scores[(scores.dataset == dataset) & (scores.metric == metric) & scores.system.map(_is_main)]
        rows = rows[~rows.system.str.startswith("faiss-exact")]
        if rows.empty:
            continue
        best = rows.loc[rows.value.idxmax()]
        reference = next((s for s in REFERENCES if s in set(rows.system)), None)
        if reference is not None and rows[rows.system == reference].value.max() >= best.value:
            best = rows[rows.system == reference].iloc[0]  # a tie goes to plain vector search
        values = rows.drop_duplicates("system").set_index("system").value
        ties = tied(values, best.system, table, dataset=dataset, metric=metric)
        iv = intervals(table, [metric_key(dataset, best.system, metric)])
        if iv.empty:
            continue
        r = iv.iloc[0]
        named = (f"best `{best.system}`" if len(ties) == 1 else
                 "best (tied: " + ", ".join(f"`{s}`" for s in ties) + ")")  # fmt: skip
        text = (f"- **{dataset}**: {named} recall@{k} {r.value:.3f} (95% CI {r.lo:.3f}-{r.hi:.3f}, "
                f"{int(r.questions)} questions)")  # fmt: skip
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
        advice = _cutoff_advice(folder, dataset, best.system, k)
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


def _cutoff_advice(folder, dataset: str, system: str, k: int) -> CutoffAdvice | None:
    """The cut-off advice for `system` from its saved run, when the run's config applies the cut-off sweep to the
    data set (computed once per folder)."""
    options = cutoff_options(folder.manifest, dataset)
    runs = folder.runs(dataset)
    if options is None or system not in runs:
        return None
    kwargs = {"target": float(options.get("target", FALSE_MEMORY_TARGET)),
              "grid": tuple(float(d) for d in options.get("grid", DEFAULT_GRID))}  # fmt: skip
    return folder.memo("cutoff_advice", (dataset, system, k), lambda: advise(
        runs[system].frame, folder.questions(dataset), k=k, system=system, **kwargs))


def _gate_table(folder, baseline: Path | None) -> pd.DataFrame | None:
    """The run against the baseline (tolerances, then paired tests), or None without a baseline."""
    if baseline is None or not Path(baseline).exists():
        return None
    from memlab.lab.gate import gate_table, metrics_experiment

    base, run = metrics_experiment(baseline), metrics_experiment(folder.path)
    if base is not None and run is not None and base != run:
        return None  # another suite's baseline: nothing compares (report.md says so)
    questions = folder.question_scores
    return gate_table(baseline, folder.path, run_questions=None if questions.empty else questions)


def write_report(folder, *, baseline: Path | None = None) -> Path:
    """report.md from a run folder's saved scores and runs only (and each sweep's section)."""
    from memlab.lab.experiment import applies, sweep_options
    from memlab.lab.sweeps import sweep_module

    manifest = folder.manifest
    cfg = manifest.get("config", {}).get("resolved", {})
    k = folder.k
    scores = folder.scores
    main_metrics = [f"recall@{k}", f"mrr@{k}", f"ndcg@{k}", f"hit@{k}", f"session_recall@{k}", "empty_rate",
                    "correct_empty_rate", "recall_vs_exact", "context_chars", "latency_ms_p50"]  # fmt: skip
    parts = [f"# memlab run: {cfg.get('name', '')}", "",
             f"commit `{manifest.get('git_commit', '?')}`, finished {manifest.get('finished_at', '?')}, k = {k}, "
             "embedders: " + ", ".join(f"`{n}` = {m}" for n, m in manifest.get("embedders", {}).items()),
             ""]  # fmt: skip
    gate = _gate_table(folder, baseline)
    head = headline_lines(folder, k, gate)
    parts += head
    parts += warning_lines(manifest)  # what the data cannot serve in this config
    html_tables: list[tuple[str, pd.DataFrame]] = []
    if manifest.get("datasets"):
        ds = pd.DataFrame(manifest["datasets"])
        ds["checksum"] = ds.checksum.str[:12]
        cols = [c for c in ["name", "format", "users", "sessions", "events", "questions", "answerable", "no_answer",
                            "checksum"] if c in ds.columns]  # fmt: skip
        parts += ["## Data sets", "", markdown_table(ds[cols]), ""]
    mains = [s for s in dict.fromkeys(scores.system) if _is_main(s)]
    across = scores[scores.system.isin(mains) & (scores.metric == f"recall@{k}")]
    if across.dataset.nunique() > 1:
        wide = across.pivot_table(index="system", columns="dataset", values="value", sort=False).reset_index()
        parts += [f"## recall@{k} across data sets", "", markdown_table(wide), ""]
        html_tables.append((f"recall@{k} across data sets", wide))
        typed = scores[scores.system.isin(mains) & scores.metric.str.startswith(f"recall@{k}[qtype=")]
        typed = typed.assign(qtype=typed.metric.str.extract(r"qtype=(.*)\]")[0])
        shared = [t for t, g in typed.groupby("qtype", sort=False) if g.dataset.nunique() > 1]
        for qtype in shared:  # the same kind of question on different haystacks (e.g. oracle vs S)
            g = typed[typed.qtype == qtype]
            wide = g.pivot_table(index="system", columns="dataset", values="value", sort=False).reset_index()
            parts += [f"recall@{k} on `{qtype}` questions, side by side:", "", markdown_table(wide), ""]
    for dataset in folder.datasets:
        sub = scores[scores.dataset == dataset]
        systems = [s for s in dict.fromkeys(sub.system) if _is_main(s)]
        parts += [f"## {dataset}", ""]
        if systems:
            main = with_interval(folder, dataset, pivot_scores(sub, systems, main_metrics), f"recall@{k}")
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
            module = sweep_module(name)
            if hasattr(module, "section"):
                body = module.section(folder, dataset, sweep_options(cfg, name))
                if body:
                    parts += [f"### {name} ({dataset})", "", body, ""]
    parts += ["## Reading the numbers", "", COLUMN_NOTES, ""]
    if gate is None and baseline is not None and Path(baseline).exists():
        parts += ["## Against the committed baseline", "",
                  f"Not gated: `{baseline}` comes from a run of another suite, so its data sets and systems differ "
                  f"from this run's. `memlab report --run {folder.path} --against {baseline}` compares the two "
                  "anyway, paired on the questions both answered.", ""]  # fmt: skip
    if gate is not None:
        changed = gate[gate.verdict.str.startswith(("regression", "improvement", "within noise"))]
        new = int((gate.verdict == "new").sum())
        noise = int((gate.verdict == "within noise").sum())
        parts += ["## Against the committed baseline", "",
                  f"{len(gate)} gated metrics checked against `{baseline}`: {len(changed) - noise} moved beyond "
                  f"tolerance, {noise} more dropped beyond tolerance but not significantly (paired test on the "
                  f"questions, Holm-corrected; `p_adjusted`), {new} are new (not in the baseline).", "",
                  markdown_table(changed) if len(changed) else "", ""]
    from memlab.lab.redacted import write_text

    path = write_text(folder.path / "report.md", "\n".join(parts))  # through the redactor
    from memlab.lab.viewer import write_html

    if gate is not None:
        html_tables.append(("against the baseline", gate[gate.verdict != "ok"]))
    write_html(folder, head, html_tables)
    return path
