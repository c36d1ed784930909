"""Write a run folder: the per-question table, the summary, a manifest, and report.md that a person reads first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

COLUMN_NOTES = (
    "`recall@k`, `precision@k`, `mrr@k`, `ndcg@k`, `hit@k`: against the labelled event ids (ir-measures); "
    "`session_recall@k`: share of the answer sessions a hit comes from (where the data set labels sessions). "
    "`recall_vs_exact`: share of FAISS exact's "
    "top k that the configuration also returned (a short result counts as misses). `context_chars`: characters "
    "handed to the model per question. `correct_empty_rate`: no-answer questions that got no hit (needs a "
    "cut-off). Latencies are per search in ms on a noisy 2-core machine: compare them as ratios."
)


def _counts(values: pd.Series) -> bool:
    """A float column that holds counts (every value whole, some above 1): printed as integers. Rates (0 to 1)
    and measured times are not whole numbers, so they keep their decimals."""
    numbers = pd.to_numeric(values, errors="coerce").dropna()
    return bool(len(numbers)) and bool((numbers == numbers.round()).all()) and bool((numbers.abs() > 1).any())


def format_cell(value: object, floatfmt: str = ".3f", whole: bool = False) -> str:
    """One table cell: integers as integers, floats to `floatfmt` (3 decimals), big floats with thousands
    separators and no decimals, missing values empty."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float | np.floating) and np.isnan(value):
        return ""
    if isinstance(value, bool | np.bool_):
        return str(bool(value)).lower()
    if isinstance(value, int | np.integer):
        return f"{int(value):,}" if abs(int(value)) >= 10_000 else str(int(value))
    if isinstance(value, float | np.floating):
        if whole or abs(value) >= 10_000:
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
    return wide.reindex([s for s in systems if s in wide.index]).reset_index()


def _is_main(system: str) -> bool:
    return "@cut" not in system and not system.startswith(("filtered:", "extractor:", "ingest"))


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
             f"commit `{manifest.get('git_commit', '?')}`, finished {manifest.get('finished_at', '?')}, "
             f"k = {k}, embedders {manifest.get('embedders', {})}", ""]  # fmt: skip
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
            parts += [markdown_table(pivot_scores(sub, systems, main_metrics)), ""]
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
    if baseline is not None and Path(baseline).exists():
        from memlab.lab.gate import check_same_experiment, compare, judge, load_metrics, load_questions, load_rules

        check_same_experiment(baseline, folder.path)
        table = compare(load_metrics(baseline, what="baseline"), load_metrics(folder.path), load_rules())
        table = judge(table, load_questions(baseline, baseline=True), load_questions(folder.path))
        changed = table[table.verdict.str.startswith(("regression", "improvement", "within noise"))]
        new = int((table.verdict == "new").sum())
        noise = int((table.verdict == "within noise").sum())
        parts += ["## Against the committed baseline", "",
                  f"{len(table)} gated metrics checked against `{baseline}`: {len(changed) - noise} moved beyond "
                  f"tolerance, {noise} more dropped beyond tolerance but not significantly (paired test on the "
                  f"questions, Holm-corrected; `p_adjusted`), {new} are new (not in the baseline).", "",
                  markdown_table(changed) if len(changed) else "", ""]
    path = folder.path / "report.md"
    path.write_text("\n".join(parts))
    return path
