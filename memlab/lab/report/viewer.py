"""From the summary to one question: every system's hits for a question (distance, rendering, relevant or not,
what the recommended cut-off dropped), as a DataFrame for notebooks (`question_hits`) and as `report.html`, one
static page that opens offline: the headline, sortable tables, the plots and a per-question viewer with
filters by data set, question type and memory size, and "found by A, missed by B"."""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

import pandas as pd

from memlab.lab.base.identity import relevant_hits, run_events
from memlab.lab.base.redacted import clean, clean_deep
from memlab.lab.base.tables import format_cell
from memlab.lab.datasets.model import Question
from memlab.lab.metrics.scoring import SIZE_LABELS
from memlab.lab.runs.folder import RunFolder
from memlab.lab.systems.roles import ASKED

TEMPLATE = Path(__file__).with_name("report_page.html")


def viewer_systems(folder: RunFolder, dataset: str) -> list[str]:
    """Systems whose hit lists the viewer shows: every configured and sweep system with a ranked run (not the
    cut-off grid, the filtered-search tenants or fact extractors), by the role each run records."""
    return [s for s, run in folder.runs(dataset).items() if run.role is None or run.role.role in ASKED]


def rendering_of(folder: RunFolder, dataset: str, system: str) -> str:
    """What the system embeds, as the run recorded it (its description in the manifest: memlab.lab.runs.folder's
    `described`); an exact reference embeds what the system it stands beside embeds."""
    info = folder.described(dataset, system)
    return str(info.get("rendering") or (info.get("over") or {}).get("rendering") or "text")


def _cutoffs(folder: RunFolder, dataset: str) -> dict[str, float]:
    s = folder.scores
    rows = s[(s.dataset == dataset) & (s.metric == "recommended_max_distance") & s.value.notna()]  # NaN: none advised
    return dict(zip(rows.system, rows.value.astype(float), strict=True))


def _texts(folder: RunFolder, dataset: str) -> dict[tuple[str, str, str, str], str]:
    """(app, user, session, event id) -> the event's saved text: ids repeat across sessions and users."""
    events = folder.events(dataset)
    keys = zip(events.app_name, events.user_id, events.session_id, events.event_id, strict=True)
    return {k: (f"{a}: {t}" if a else str(t)) for k, a, t in zip(keys, events.author, events.text, strict=True)
            if isinstance(t, str)}  # fmt: skip


def _hit_text(texts: dict, q: Question | None, keys: list) -> str:
    """A hit's text from its events' keys within the question's user (an event whose session is not known has
    none to show)."""
    if q is None:
        return ""
    found = (texts.get((q.app_name, q.user_id, session, event)) for session, event in keys)
    return " / ".join(text for text in found if text)


def question_hits(folder: str | Path | RunFolder, dataset: str, question_id: str | None = None,
                  systems: list[str] | None = None) -> pd.DataFrame:  # fmt: skip
    """The hits (within k) of every viewer system for one question (or all): system, rendering, rank, unit_id,
    event_ids, distance, relevant (holds a labelled event), dropped_by_cutoff (beyond the recommended cut-off of
    that system, where the cut-off sweep ran) and the hit's text where the run saved it."""
    folder = folder if isinstance(folder, RunFolder) else RunFolder(Path(folder))
    questions = {q.id: q for q in folder.questions(dataset)}
    cutoffs, texts, k = _cutoffs(folder, dataset), _texts(folder, dataset), folder.k
    frames = []
    for system, run in folder.runs(dataset).items():
        if system not in (systems or viewer_systems(folder, dataset)):
            continue
        hits = run.frame[(run.frame["rank"] > 0) & (run.frame["rank"] <= k)]
        if question_id is not None:
            hits = hits[hits.question_id == question_id]
        if hits.empty:
            continue
        relevant = relevant_hits(hits, {q.id: q.evidence for q in questions.values()})
        keys = run_events(hits)
        cut = cutoffs.get(system)
        frames.append(pd.DataFrame({
            "dataset": dataset, "system": system, "rendering": rendering_of(folder, dataset, system),
            "question_id": hits.question_id.to_numpy(), "rank": hits["rank"].to_numpy(),
            "unit_id": hits.unit_id.to_numpy(),
            "session_id": hits.session_id.to_numpy(),
            "event_ids": [list(e) for e in hits.event_ids],
            "distance": hits.distance.to_numpy(), "relevant": relevant,
            "dropped_by_cutoff": (hits.distance > cut).to_numpy() if cut is not None else False,
            "text": [_hit_text(texts, questions.get(q), k_) for q, k_ in zip(hits.question_id, keys, strict=True)],
        }))  # fmt: skip
    columns = ["dataset", "system", "rendering", "question_id", "rank", "unit_id", "session_id", "event_ids",
               "distance", "relevant", "dropped_by_cutoff", "text"]  # fmt: skip
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def answers_shown(folder: RunFolder, dataset: str) -> dict[str, dict[str, dict]]:
    """The answer sweep's rows (system -> question id -> answer, abstained, verdict, reason, F1, error) where it
    ran: the viewer shows them beside the hits the reader saw."""
    table = folder.table("answers", dataset)
    if table is None or table.empty:
        return {}
    out: dict[str, dict[str, dict]] = {}
    for r in table.itertuples(index=False):
        verdict = None if pd.isna(r.verdict) else bool(r.verdict)
        out.setdefault(r.system, {})[r.question_id] = {
            "answer": r.answer, "abstained": bool(r.abstained), "verdict": verdict, "reason": r.judge_reason or "",
            "f1": None if pd.isna(r.f1) else round(float(r.f1), 3), "error": r.error or "",
            "read": None if pd.isna(r.hits_read) else int(r.hits_read)}  # fmt: skip
    return out


# -- report.html -------------------------------------------------------------------------------------------------


def _inline(markdown: str) -> str:
    """The little Markdown the headline uses (**bold**, `code`), escaped, as HTML."""
    text = html.escape(markdown)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def _table(frame: pd.DataFrame) -> dict:
    return {"columns": [str(c) for c in frame.columns],
            "rows": [[format_cell(v) for v in row] for row in frame.itertuples(index=False, name=None)]}  # fmt: skip


def page_data(folder: RunFolder, headline: list[str], tables: list[tuple[str, pd.DataFrame]]) -> dict:
    """Everything report.html shows, as one JSON-ready dict (the page itself only draws it)."""
    qs = folder.question_scores
    sizes = {} if qs.empty else {(d, q): b for d, q, b in zip(qs.dataset, qs.question_id, qs.size_bucket,
                                                              strict=True)}  # fmt: skip
    data: dict = {"title": f"memlab run: {folder.manifest.get('config', {}).get('resolved', {}).get('name', '')}",
                  "k": folder.k, "headline": [_inline(line[2:]) for line in headline if line.startswith("- ")],
                  "tables": [{"title": t, **_table(f)} for t, f in tables], "plots": [], "questions": [],
                  "systems": {}, "hits": {}, "texts": {}, "answers": {}, "sizes": SIZE_LABELS}  # fmt: skip
    for png in sorted(folder.path.glob("*.png")):
        data["plots"].append({"title": png.stem.replace("__", " - "),
                              "src": "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()})
    for dataset in folder.datasets:
        systems = viewer_systems(folder, dataset)
        if not systems:
            continue
        hits = question_hits(folder, dataset, systems=systems)
        data["systems"][dataset] = systems
        texts: dict[str, str] = {}
        per: dict[str, dict[str, list]] = {}
        asker = {q.id: (q.app_name, q.user_id) for q in folder.questions(dataset)}
        for row in hits.itertuples(index=False):  # a unit's text is keyed by app, user, session and unit id
            session = None if pd.isna(row.session_id) else row.session_id
            unit = json.dumps([*asker.get(row.question_id, ("", "")), session, row.unit_id])
            per.setdefault(row.system, {}).setdefault(row.question_id, []).append(
                [row.unit_id, round(float(row.distance), 4), int(row.relevant), int(row.dropped_by_cutoff), unit])
            if row.text:
                texts[unit] = row.text[:400]
        data["hits"][dataset] = per
        data["texts"][dataset] = texts
        data["answers"][dataset] = answers_shown(folder, dataset)
        data["renderings"] = {**data.get("renderings", {}), **{s: rendering_of(folder, dataset, s) for s in systems}}
        for q in folder.questions(dataset):
            data["questions"].append({"d": dataset, "id": q.id, "text": q.text, "qtype": q.qtype,
                                      "size": sizes.get((dataset, q.id), ""), "answerable": bool(q.relevant),
                                      "relevant": list(q.relevant), "answer": q.answer or "",
                                      "evidence": [list(e) for e in q.evidence]})  # fmt: skip
    return data


# Inside <script>, the HTML tokenizer looks for "</script", and "<!--" followed by "<script" switches it into a
# state where even "</script>" no longer ends the element (a blank page). JSON may spell any character as \uXXXX,
# so no "<" (nor ">", "&", or the line separators old JavaScript engines refuse) is left in the embedded data.
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(data: object) -> str:
    """`data` as JSON that is inert inside an HTML <script> element whatever its strings hold (and parses back
    to the same value)."""
    text = json.dumps(data, separators=(",", ":"))
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_ESCAPES[m.group(0)], text)


def write_html(folder: str | Path | RunFolder, headline: list[str],
               tables: list[tuple[str, pd.DataFrame]]) -> Path:  # fmt: skip
    """report.html: one self-contained page (data and plots inline, no network) drawn by TEMPLATE's script. Its
    data passes the run folder's redactor (`memlab.lab.base.redacted`) and is escaped for the script element."""
    folder = folder if isinstance(folder, RunFolder) else RunFolder(Path(folder))
    data = page_data(folder, headline, tables)
    plots = data.pop("plots")  # generated images, not text: nothing to redact
    data = {**clean_deep(data), "plots": [{**p, "title": clean(p["title"])} for p in plots]}
    page = TEMPLATE.read_text().replace("/*MEMLAB_DATA*/null", script_json(data))
    path = folder.path / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
