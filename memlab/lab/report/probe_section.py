"""The probe's part of a run folder's report, rendered from the folder alone: a probe saves what its
section needs first (manifest.json's `probe` entry: what was asked, the stale labels, the alerts judged, the index
health's warnings and policy; tables/probe_*.parquet: the drift test and the index health's tables), and
`write_report` reads it back, so `memlab report --run` redoes report.md and report.html of a probe as of any run.

It lives beside the report, not in memlab.lab.live: the live package runs probes and writes reports, so the report
importing it would be a circle."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from memlab.lab.base.tables import markdown_table
from memlab.lab.runs.folder import RunFolder, save_table

STALE_SHOWN = 50  # stale labels listed in report.md (all of them are in manifest.json)
STALE_ORDER = ["question_id", "app_name", "user_id", "session_id", "event_id", "question_left_out"]
DRIFT_TABLE = "probe_drift"
HEALTH_TABLES = ("probe_health_buckets", "probe_health_indexes", "probe_health_models")
HEALTH_TITLES = ("Strategy per user-size bucket (units)", "HNSW indexes against the table", "Rows per model id")
TABLE_HEALTH_TABLES = ("probe_table_indexes", "probe_table_rows", "probe_table_users")
TABLE_HEALTH_TITLES = ("Vector indexes of the table", "Rows no search can find", "Plan per labelled user")


@dataclass
class ProbeSection:
    """report.md's lines of the probe, the headline lines report.html shows, and its tables (title, frame)."""

    markdown: list[str] = field(default_factory=list)
    headline: list[str] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


def is_probe(folder: RunFolder) -> bool:
    """Whether the run folder holds a probe (its manifest says so)."""
    return isinstance(folder.manifest.get("probe"), dict)


def save_probe_tables(out: Path, dataset: str, *, drift: pd.DataFrame | None = None,
                      health: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None = None) -> None:  # fmt: skip
    """The probe's tables the report reads back: the drift test against the previous probe, and the index
    health's buckets, indexes and models."""
    if drift is not None:
        save_table(out, DRIFT_TABLE, dataset, drift)
    for name, frame in zip(HEALTH_TABLES, health or (), strict=False):
        save_table(out, name, dataset, frame)


def fmt(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.4g}"


def size(n: object) -> str:
    """Bytes as a person reads them."""
    value = float(n)  # type: ignore[arg-type]
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TB"


def health_lines(meta: dict, buckets: pd.DataFrame, indexes: pd.DataFrame, models: pd.DataFrame) -> list[str]:
    """The "## Index health" section: `meta` holds layer, model_id, explain, warnings and the `auto` policy
    (calibrated_on, exact_below, tenant_index_above)."""
    p = meta.get("policy", {})
    lines = ["## Index health", "",
             f"Layer `{meta.get('layer')}`, configured model `{meta.get('model_id')}`. Read-only: the catalog, "
             f"memlab's kept counts and {meta.get('explain')}. `auto` policy ({p.get('calibrated_on')}): exact up to "
             f"{p.get('exact_below')} units, a user's own partial index from {p.get('tenant_index_above')}, else the "
             "shared HNSW index.", ""]  # fmt: skip
    lines += [f"- **Warning:** {w}" for w in meta.get("warnings", [])] or ["No warnings."]
    lines += ["", f"### {HEALTH_TITLES[0]}", "", "The plan is that of the bucket's largest user.", ""]
    lines += [markdown_table(buckets) if len(buckets) else "No users in this layer and model.", ""]
    shown = indexes.assign(index_bytes=indexes.index_bytes.map(size), table_bytes=indexes.table_bytes.map(size))
    lines += [f"### {HEALTH_TITLES[1]}", "", markdown_table(shown) if len(shown) else "No HNSW index.", ""]
    lines += [f"### {HEALTH_TITLES[2]}", "", markdown_table(models), ""]
    return lines


def table_health_lines(meta: dict, indexes: pd.DataFrame, rows: pd.DataFrame, users: pd.DataFrame) -> list[str]:
    """The "## Index health" section of a table probe: `meta` holds the table, the probed system and distance,
    what was explained, the warnings and the users whose plan scanned their rows exactly."""
    exact = meta.get("exact_users", [])
    lines = ["## Index health", "",
             f"Table `{meta.get('table')}`, system `{meta.get('system')}` searching by {meta.get('distance')} "
             f"distance. Read-only: the catalog, one count of the rows by dimension and {meta.get('explain')}.", ""]
    lines += [f"- **Warning:** {w}" for w in meta.get("warnings", [])] or ["No warnings."]
    shown = indexes.assign(index_bytes=indexes.index_bytes.map(size), table_bytes=indexes.table_bytes.map(size))
    lines += ["", f"### {TABLE_HEALTH_TITLES[0]}", "",
              markdown_table(shown) if len(shown) else "No vector index: every search scans the user's rows.", ""]
    lines += [f"### {TABLE_HEALTH_TITLES[1]}", "", "Rows with a NULL embedding, or of another dimension than the "
              "query's, are never compared with a query.", "", markdown_table(rows), ""]  # fmt: skip
    lines += [f"### {TABLE_HEALTH_TITLES[2]}", "",
              f"The plan scanned the rows of {len(exact)} of {len(users)} users exactly (no index walked)"
              + (f": {', '.join(exact)}." if exact else "."), ""]  # fmt: skip
    lines += [markdown_table(users) if len(users) else "No question was asked.", ""]
    return lines


def _timing_lines(probe: dict) -> list[str]:
    """A table probe's time per question against the bare SQL of the same searches."""
    t = probe.get("timing")
    if not t:
        return []
    if "ratio_to_bare_sql" not in t:
        return []
    return ["### Time per question", "",
            f"{fmt(t.get('seconds_per_question'))} s per question through memlab's search, "
            f"{fmt(t.get('bare_sql_seconds_per_question'))} s for the bare SQL of the same searches "
            f"({t.get('bare_sql')}): {fmt(t.get('ratio_to_bare_sql'))}x (p50s: "
            f"{fmt(t.get('p50_seconds_per_question'))} s and {fmt(t.get('bare_sql_p50_seconds_per_question'))} s, "
            f"{fmt(t.get('p50_ratio_to_bare_sql'))}x). Of the search's time, "
            f"{fmt(t.get('rate_limit_seconds_per_question'))} s per question waited for the store's rate limit "
            f"(max_qps {t.get('max_qps')}).", ""]  # fmt: skip


def _stale_lines(probe: dict, stale: pd.DataFrame) -> list[str]:
    lines = ["### Stale labels", ""]
    if not len(stale):
        return [*lines, "None: every labelled event is still in the store.", ""]
    cited = ("the event layer nor the user's fact observations cite" if probe.get("memory") == "facts"
             else "exist in")  # fmt: skip
    metrics = probe.get("metrics", {})
    all_labels = next((f"{key} = {fmt(v)}" for key, v in metrics.items() if key.endswith("_all_labels")), None)
    lines += [f"{len(stale)} labelled event(s) no longer {cited} the store (erased or purged): each is taken out of "
              f"its question's relevant set, never counted as a miss; {int(probe.get('left_out', 0))} question(s) "
              "whose every label was stale left the denominator. stale_rate = "
              f"{fmt(metrics.get('stale_rate'))}.", ""]  # fmt: skip
    if "lost_labels" in metrics:
        lines += [f"Lost labels are a figure of their own, never hidden in recall: lost_labels = "
                  f"{fmt(metrics.get('lost_labels'))} in {fmt(metrics.get('lost_questions'))} question(s), "
                  f"new_lost_labels = {fmt(metrics.get('new_lost_labels'))} (lost since the previous probe, or all "
                  "lost ones without one; the built-in alert `new_lost_labels>0` fires on any). recall@k is over the "
                  "labels the store still holds"
                  + (f"; over every label as given, lost ones as misses: {all_labels}." if all_labels else "."),
                  ""]  # fmt: skip
    lost = pd.DataFrame(probe.get("lost", []), columns=["question_id", "labels", "lost", "left_out"])
    if len(lost):
        lines += ["Questions with lost labels (labels as given, lost, left out of the denominator):", "",
                  markdown_table(lost.head(STALE_SHOWN)), ""]  # fmt: skip
    lines += [markdown_table(stale.head(STALE_SHOWN)), ""]
    if len(stale) > STALE_SHOWN:
        lines += [f"({len(stale) - STALE_SHOWN} more in manifest.json, `probe.stale`.)", ""]
    return lines


def _plan_lines(probe: dict) -> list[str]:
    """The plans the searches ran (each hit is labelled with its own), and where they are not what was asked."""
    plans = probe.get("plans")
    if not plans:
        return []
    ran = ", ".join(f"`{p or 'none'}` for {n} question(s)" for p, n in plans.items())
    return ["### Plans that ran", "", f"{ran}.", "", *[f"- **Note:** {n}" for n in probe.get("plan_notes", [])],
            ""]  # fmt: skip


def _alerts(probe: dict) -> pd.DataFrame:
    return pd.DataFrame([{"alert": a.get("alert"), "value": fmt(a.get("value")),
                          "fired": "FIRING" if a.get("fired") else "no", "reason": a.get("reason")}
                         for a in probe.get("alerts", [])], columns=["alert", "value", "fired", "reason"])  # fmt: skip


def probe_section(folder: RunFolder) -> ProbeSection:
    """The probe's section of report.md (what was asked, stale labels, alerts, drift, index health) and of
    report.html, from the folder alone; empty for a folder that holds no probe."""
    if not is_probe(folder):
        return ProbeSection()
    manifest = folder.manifest
    probe = manifest["probe"]
    dataset = probe.get("dataset", "")
    what = {"facts": "fact memory", "table": f"table `{probe.get('table')}` (store `{probe.get('store')}`)"}.get(
        probe.get("memory"), f"layer `{probe.get('layer')}`")  # fmt: skip
    asked = probe.get("asked", 0)
    lines = ["## Probe of the live store", "",
             f"Read-only probe of {what} with model `{probe.get('model_id')}`, system `{probe.get('system')}`: "
             f"{asked} questions asked of {probe.get('labelled_questions')} labelled, "
             f"{fmt(probe.get('seconds_per_question'))} s per question (search only), {manifest.get('seconds', '?')} "
             "s in all. Nothing was written to the store.", ""]  # fmt: skip
    stale = pd.DataFrame(probe.get("stale", []))
    stale = stale[[c for c in STALE_ORDER if c in stale.columns]]  # the manifest's keys are sorted
    lines += _stale_lines(probe, stale)
    lines += _plan_lines(probe)
    lines += _timing_lines(probe)
    alerts = _alerts(probe)
    fired = int((alerts.fired == "FIRING").sum())
    lines += ["### Alerts", ""]
    lines += ([f"{fired} of {len(alerts)} alert(s) fired.", "", markdown_table(alerts), ""] if len(alerts) else
              ["No alert was given (`--alert 'recall@10<0.80'`).", ""])  # fmt: skip
    drift = folder.table(DRIFT_TABLE, dataset)
    drift_p = probe.get("metrics", {}).get("drift_p")
    lines += ["### Drift against the previous probe", ""]
    if drift is None:
        lines += ["Not measured: no previous probe given (`--against PREVIOUS_RUN`).", ""]
    else:
        lines += [f"drift_p = {fmt(drift_p)}: two-sample KS test of the top hits' distances against "
                  f"`{manifest.get('previous')}` (a small p: the distances moved, as after a silent model or index "
                  "change).", "", markdown_table(drift), ""]  # fmt: skip
    health = [folder.table(name, dataset) for name in HEALTH_TABLES]
    if "health" in probe and all(t is not None for t in health):
        lines += health_lines(probe["health"], *health)  # type: ignore[arg-type]
    table_health = [folder.table(name, dataset) for name in TABLE_HEALTH_TABLES]
    if "table_health" in probe and all(t is not None for t in table_health):
        lines += table_health_lines(probe["table_health"], *table_health)  # type: ignore[arg-type]
    headline = [f"- Probe of the live store ({what}, system `{probe.get('system')}`): {asked} questions asked, "
                f"{len(stale)} stale label(s), {fired} of {len(alerts)} alert(s) fired"
                + (f", drift_p = {fmt(drift_p)}" if drift is not None else "") + "."]  # fmt: skip
    headline += [f"- Plan note: {n}" for n in probe.get("plan_notes", [])]
    headline += [f"- Index health warning: {w}" for w in (probe.get("health") or probe.get("table_health") or {})
                 .get("warnings", [])]  # fmt: skip
    tables = [("Probe of the live store: stale labels", stale), ("Probe of the live store: alerts", alerts)]
    tables += [("Probe of the live store: drift against the previous probe", drift)] if drift is not None else []
    tables += [(f"Index health: {t}", f) for t, f in zip(HEALTH_TITLES, health, strict=True) if f is not None]
    tables += [(f"Index health: {t}", f) for t, f in zip(TABLE_HEALTH_TITLES, table_health, strict=True)
               if f is not None]  # fmt: skip
    return ProbeSection(lines, headline, [(t, f) for t, f in tables if len(f)])


__all__ = ["ProbeSection", "health_lines", "is_probe", "probe_section", "save_probe_tables", "table_health_lines"]
