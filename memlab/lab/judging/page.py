"""judge.html: one self-contained page (no network) for judging a pool by keyboard or mouse. Each query shows its
pooled hits (text, session, time, author) in a shuffled order, seeded so two assessors see the same order, and
never says which system found a hit (an assessor who knows would judge the system, not the hit). The page saves
as it goes in the browser's localStorage and exports the judgments file (memlab.lab.datasets.judged.judgments)."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from pathlib import Path
from typing import Any

from memlab.lab.base.redacted import clean_deep
from memlab.lab.datasets.judged.pools import Pool
from memlab.lab.report.viewer import script_json

TEMPLATE = Path(__file__).with_name("judge_page.html")


def page_data(pool: Pool, seed: int = 0) -> dict[str, Any]:
    """What the page embeds: per query its hits without `found_by`, shuffled by (seed, query id); a hit whose
    event id the query's pool holds from two sessions is marked, so its judgment names the session."""
    queries = []
    for q in pool.queries:
        shown = [{key: h.get(key) for key in ("event_id", "session", "text", "at", "author")} for h in q["hits"]]
        random.Random(f"{seed}/{q['query_id']}").shuffle(shown)
        repeats = Counter(h["event_id"] for h in shown)
        for hit in shown:
            hit["ambiguous"] = repeats[hit["event_id"]] > 1
        queries.append({"query_id": q["query_id"], "text": q["text"], "user": q.get("user"),
                        "asked_at": q.get("asked_at"), "hits": shown})  # fmt: skip
    made = f"{pool.data.get('config')}/{pool.data.get('created_at')}/{[q['query_id'] for q in pool.queries]}"
    return {"pool": {"config": pool.data.get("config"), "dataset": pool.data.get("dataset"), "depth": pool.depth,
                     "created_at": pool.data.get("created_at"), "file": pool.path.name,
                     "key": hashlib.sha1(made.encode()).hexdigest()[:16]},  # the browser storage's key
            "queries": queries}  # fmt: skip


def write_judge_page(pool: Pool, out: str | Path, *, seed: int = 0) -> Path:
    """Write judge.html for `pool`: its data passes the redactor and is escaped for the script element as
    report.html's is."""
    page = TEMPLATE.read_text().replace("/*MEMLAB_DATA*/null", script_json(clean_deep(page_data(pool, seed))))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
