"""A notebook widget for judging a pool (ipywidgets, the `lab` extra): the same queries, the same seeded shuffled
order and the same hidden systems as judge.html, and the same judgments file, rewritten after every verdict so a
closed notebook loses nothing. Reopened on an existing file, it resumes with that assessor's verdicts."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError
from memlab.lab.datasets.judged.judgments import write_judgments
from memlab.lab.datasets.judged.pools import Pool
from memlab.lab.datasets.judged.queries import json_lines
from memlab.lab.judging.page import page_data

try:  # optional: the `lab` extra installs it
    import ipywidgets
except ImportError:  # pragma: no cover - the test venv has it
    ipywidgets = None

ACTIONS = ("relevant", "not relevant", "skip", "previous", "next", "previous query", "next query")


class JudgeWidget:
    """Buttons for relevant, not relevant, skip and moving between hits and queries; `view` is the widget."""

    def __init__(self, pool: Pool, out: str | Path, assessor: str, *, seed: int = 0) -> None:
        if ipywidgets is None:
            raise ConfigError("the judging widget needs ipywidgets: pip install 'memlab[lab]' (or use judge.html)")
        if not isinstance(assessor, str) or not assessor.strip():
            raise ConfigError("give the assessor's name: judge_widget(pool, out, assessor='ana')")
        self.queries = page_data(pool, seed)["queries"]
        self.out, self.assessor = Path(out), assessor.strip()
        self.q = self.h = 0
        self.verdicts: dict[tuple[str, str | None, str], dict[str, Any]] = {}
        if self.out.exists():  # resume: this assessor's earlier verdicts
            for _, raw in json_lines(self.out):
                if isinstance(raw, dict) and raw.get("assessor") == self.assessor:
                    session = raw.get("session") or self._session(raw["query"], raw["event_id"])
                    self.verdicts[(raw["query"], session, raw["event_id"])] = raw
        self.query_box, self.hit_box, self.progress = ipywidgets.HTML(), ipywidgets.HTML(), ipywidgets.Label()
        self.buttons = {name: ipywidgets.Button(description=name) for name in ACTIONS}
        steps = {"relevant": lambda: self.judge(1), "not relevant": lambda: self.judge(0),
                 "skip": lambda: self.judge(None), "previous": lambda: self.move(-1), "next": lambda: self.move(1),
                 "previous query": lambda: self.query(-1), "next query": lambda: self.query(1)}  # fmt: skip
        for name, button in self.buttons.items():
            button.on_click(lambda _, act=steps[name]: (act(), self.draw()))
        self.view = ipywidgets.VBox([self.progress, self.query_box, self.hit_box,
                                     ipywidgets.HBox(list(self.buttons.values()))])  # fmt: skip
        self.draw()

    def _session(self, query: str, event_id: str) -> str | None:
        q = next((q for q in self.queries if q["query_id"] == query), None)
        return next((h["session"] for h in (q["hits"] if q else []) if h["event_id"] == event_id), None)

    @property
    def current(self) -> dict[str, Any] | None:
        hits = self.queries[self.q]["hits"] if self.queries else []
        return hits[self.h] if hits else None

    def move(self, step: int) -> None:
        """To the next or previous hit, across queries."""
        h = self.h + step
        if h >= len(self.queries[self.q]["hits"]) and self.q < len(self.queries) - 1:
            self.q, h = self.q + 1, 0
        elif h < 0 and self.q > 0:
            self.q -= 1
            h = len(self.queries[self.q]["hits"]) - 1
        self.h = max(0, min(h, len(self.queries[self.q]["hits"]) - 1))

    def query(self, step: int) -> None:
        self.q, self.h = max(0, min(self.q + step, len(self.queries) - 1)), 0

    def judge(self, relevance: int | None) -> None:
        """Record (or, skipped, drop) the current hit's verdict, save the file, and go to the next hit."""
        hit = self.current
        if hit is None:
            return
        query = self.queries[self.q]["query_id"]
        key = (query, hit["session"], hit["event_id"])
        if relevance is None:
            self.verdicts.pop(key, None)
        else:
            line = {"query": query, "event_id": hit["event_id"], "relevance": relevance, "assessor": self.assessor,
                    "time": datetime.now(UTC).isoformat(timespec="seconds")}  # fmt: skip
            if hit["ambiguous"]:
                line["session"] = hit["session"]
            self.verdicts[key] = line
        self.save()
        self.move(1)

    def save(self) -> Path:
        return write_judgments(list(self.verdicts.values()), self.out)

    def draw(self) -> None:
        total = sum(len(q["hits"]) for q in self.queries)
        self.progress.value = (f"query {self.q + 1} of {len(self.queries)}; {len(self.verdicts)} of {total} hits "
                               f"judged; saved to {self.out}")  # fmt: skip
        if not self.queries:
            return
        q, hit = self.queries[self.q], self.current
        self.query_box.value = f"<b>{html.escape(q['text'])}</b> <small>({html.escape(str(q.get('asked_at')))})</small>"
        if hit is not None:
            verdict = self.verdicts.get((q["query_id"], hit["session"], hit["event_id"]))
            said = {None: "not judged", 1: "relevant", 0: "not relevant"}[verdict and verdict["relevance"]]
            self.hit_box.value = (f"<small>hit {self.h + 1} of {len(q['hits'])}: {html.escape(str(hit['author']))},"
                                  f" {html.escape(str(hit['at']))}, session {html.escape(str(hit['session']))} "
                                  f"({said})</small><br>{html.escape(hit['text'] or '')}")  # fmt: skip

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:  # a notebook cell ending in the widget shows its view
        return self.view._repr_mimebundle_(**kwargs)


def judge_widget(pool: Pool, out: str | Path, assessor: str, *, seed: int = 0) -> JudgeWidget:
    """A judging widget for a notebook:
    `lab.judging.judge_widget(lab.datasets.read_pool("pool.json"), "judgments.jsonl", "ana")`."""
    return JudgeWidget(pool, out, assessor, seed=seed)
