"""The notebook judging widget (ipywidgets) writes the same judgments file as judge.html: three queries judged by
its buttons load as a judged data set with exactly those judgments, and a new widget on the file resumes them."""

from __future__ import annotations

import json

from memlab import lab
from tests.integration.lab.datasets.test_judged_set import APP, write_pool
from tests.integration.lab.judging.test_pool import QUERIES, write_queries, write_sessions


def test_three_queries_judged_with_the_widget_load_as_a_judged_set(tmp_path):
    sessions = write_sessions(tmp_path / "logs.jsonl", APP)
    files = {"queries": write_queries(tmp_path / "queries.jsonl", APP, QUERIES), "sessions": tmp_path / "logs.jsonl",
             "pool": write_pool(tmp_path / "pool.json", sessions, systems=("event", "chunk3"))}  # fmt: skip
    out = tmp_path / "judgments.jsonl"
    widget = lab.judging.judge_widget(lab.datasets.read_pool(files["pool"]), out, "ana")
    assert "chunk3" not in widget.view.children[2].value  # which system found a hit is not shown
    expected = {}
    plan = {"q-cat": ["relevant", "not relevant", "skip", "relevant"], "q-sister": ["not relevant", "relevant"],
            "q-car": ["not relevant", "next", "relevant"]}  # fmt: skip
    for qid, clicks in plan.items():
        assert widget.queries[widget.q]["query_id"] == qid
        for click in clicks:
            hit = widget.current
            widget.buttons[click].click()
            if click in ("relevant", "not relevant"):
                expected[(qid, hit["session"], hit["event_id"])] = int(click == "relevant")
        widget.buttons["next query"].click()
    assert widget.progress.value.startswith(f"query 3 of 3; {len(expected)} of 20 hits judged")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == len(expected) and {line["assessor"] for line in lines} == {"ana"}
    data = lab.load_dataset({"name": "w", "format": "judged", "judgments": str(out),
                             **{k: str(v) for k, v in files.items()}})  # fmt: skip
    assert {(q.id, s, e): int((s, e) in q.evidence) for q in data.questions for s, e in q.judged} == expected
    again = lab.judging.judge_widget(lab.datasets.read_pool(files["pool"]), out, "ana")  # resumes from the file
    assert {k: v["relevance"] for k, v in again.verdicts.items()} == expected
