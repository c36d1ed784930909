"""Fact extractors compared. On data sets that state the facts expected at the end (fact fixtures): candidates
against the gold ones, the consolidated state against the expected one. On any other data set: what each
extractor yields (facts per session, candidates dropped and why) and how much of the questions' evidence it
turns into facts (`evidence_coverage`: share of relevant events that some accepted fact cites). Both report
what fact search serves at question time (memlab.lab.systems.facts): `stale_served`, how many served facts were stale
(under the confirm heading), and `stale_recall`, the share of questions about a key the user had given a newer
value for by then that were served the replaced value. Fixtures ask about every key of their gold history when
their last session ends, plus their `serving` checks; other data sets ask their questions that name a
`fact_key`. Options: FactsOptions."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from memlab.facts.extractors.base import Extractor
from memlab.facts.memory import FactMemory
from memlab.facts.types import DOMAIN_USER
from memlab.lab.base.options import option
from memlab.lab.base.tables import markdown_table
from memlab.lab.datasets.model import Dataset
from memlab.lab.metrics.scoring import SCORE_COLUMNS
from memlab.lab.runs.folder import RunFolder, save_table
from memlab.lab.sweeps.base import Sweep, SweepContext, distinct
from memlab.lab.systems.facts import StaleCounts, ask_keys, run_fact_eval, summarize_facts
from memlab.lab.systems.kinds import EXTRACTORS, Env, make_extractor

METRICS = ("key_accuracy", "state_exact", "candidate_recall", "candidate_precision", "dropped", "seconds_per_session",
           "stale_served", "stale_recall")  # fmt: skip
YIELD_METRICS = ("facts_per_session", "dropped", "evidence_coverage", "stale_served", "stale_recall")


@dataclass(frozen=True)
class FactsOptions:
    extractors: list[str] = option(["labelled", "rules"], "the extractors compared (labelled only where the data "
                                   "set has gold candidates; llm needs an endpoint configured)",
                                   choices=EXTRACTORS)  # fmt: skip


def _yield(env: Env, dataset: Dataset, extractor: Extractor) -> dict:
    """Ingest every session with `extractor` under a throw-away app; count what came out."""
    facts = FactMemory(env.store, env.embedder("default"), extractor=extractor)
    app = f"facts-yield-{uuid.uuid4().hex[:8]}"
    cited: set[tuple[str, str, str]] = set()  # (user, session, event): the app is this throw-away one
    dropped: Counter[str] = Counter()
    accepted = sessions = 0
    users = set()
    for session in dataset.sessions():
        ingest = facts.add_domain_session if session.user_id == DOMAIN_USER else facts.add_session
        report = ingest(replace(session, app_name=app))
        users.add(session.user_id)
        sessions += 1
        accepted += len(report.accepted)
        dropped.update(report.dropped)
        cited.update((session.user_id, c.session_id or session.id, c.event_id) for c in report.accepted)
    relevant = {(q.user_id, s, e) for q in dataset.questions for s, e in q.evidence}  # ids repeat across sessions
    counts = StaleCounts()
    for q in dataset.questions:  # a question about a key, asked when it was asked (sessions are all in by then)
        if q.fact_key and "/" in q.fact_key and q.asked_at is not None and q.user_id in users:
            subject, _, predicate = q.fact_key.rpartition("/")
            ask_keys(facts, app, dataset.user(q.app_name, q.user_id), q.asked_at, [(subject, predicate)], counts)
    for user in users:
        facts.forget_user(app, user)
    return {"extractor": extractor.name, "sessions": sessions, "facts_per_session": accepted / max(sessions, 1),
            "dropped": sum(dropped.values()), "dropped_by_reason": str(dict(dropped)),
            "evidence_coverage": len(relevant & cited) / len(relevant) if relevant else float("nan"),
            "key_questions": counts.questions, "stale_served": counts.stale_served,
            "replaced_questions": counts.replaced_questions, "stale_recall": counts.stale_recall}  # fmt: skip


STALE_METRICS = ("stale_served", "stale_recall")


def _measured(metrics: tuple[str, ...], row) -> list[str]:
    """The metrics a summary row has figures for: the stale ones only where the questions about keys were asked
    (`key_questions` is NaN in a folder of an older format, which did not ask them)."""
    asked = not pd.isna(row.key_questions)
    return [m for m in metrics if asked or m not in STALE_METRICS]


STALE_NOTE = ("`stale_served`: facts served under the confirm heading (\"possibly out of date\") to the questions "
              "about keys, at their time. `stale_recall`: share of those questions whose key had a newer value by "
              "then (`replaced_questions`) that were served the replaced one; lower is better.")


def _fact_text(subject: str, predicate: str, value: str, negated: bool) -> str:
    """A missed fact as a reader writes it: `user savings_goal: not 20,000 in two years`."""
    return f"{subject} {predicate}: {'not ' if negated else ''}{value}"


class FactsSweep(Sweep):
    """Fact extractors compared on gold facts, or by what they yield."""

    name = "facts"
    measures = True
    options_type = FactsOptions

    def planned(self, options: dict[str, Any], config: dict[str, Any]) -> int:
        return distinct(options.get("extractors", FactsOptions().extractors))

    def measure(self, env: Env, dataset: Dataset, options: dict[str, Any], context: SweepContext,
                out: Path) -> None:  # fmt: skip
        extractors = self.typed(options).extractors
        if not any(u.expected_facts is not None for u in dataset.users):
            has_gold = any(u.gold_candidates for u in dataset.users)
            names = [n for n in extractors if n != "labelled" or has_gold]
            rows = [_yield(env, dataset, make_extractor(n, dataset, env.extractor_options)) for n in names]
            save_table(out, "fact_yield", dataset.name, pd.DataFrame(rows))
            return
        frames = []
        for name in extractors:
            extractor = make_extractor(name, dataset, env.extractor_options)
            frames.append(run_fact_eval(env.store, env.embedder("default"), dataset, extractor,
                                        progress=env.progress))  # fmt: skip
        frame = pd.concat(frames, ignore_index=True)
        frame["dropped_by_reason"] = frame.dropped_by_reason.map(
            lambda d: ", ".join(f"{reason} {count}" for reason, count in sorted(dict(d).items())))
        frame["missed"] = frame.missed.map(lambda m: "; ".join(_fact_text(*fact) for fact in m))
        save_table(out, "facts", dataset.name, frame)

    def scores(self, folder: RunFolder, dataset: str, options: dict[str, Any], base: pd.DataFrame) -> pd.DataFrame:
        frame = folder.table("facts", dataset)
        rows = []
        yields = folder.table("fact_yield", dataset)
        if yields is not None:
            for r in yields.itertuples(index=False):
                rows += [(dataset, f"extractor:{r.extractor}", m, float(getattr(r, m)), int(r.sessions))
                         for m in _measured(YIELD_METRICS, r)]  # fmt: skip
        if frame is not None:
            for r in summarize_facts(frame).itertuples(index=False):
                rows += [(dataset, f"extractor:{r.extractor}", m, float(getattr(r, m)), int(r.fixtures))
                         for m in _measured(METRICS, r)]  # fmt: skip
        return pd.DataFrame(rows, columns=SCORE_COLUMNS)

    def section(self, folder: RunFolder, dataset: str, options: dict[str, Any]) -> str | None:
        frame = folder.table("facts", dataset)
        if frame is None:
            yields = folder.table("fact_yield", dataset)
            if yields is None:
                return None
            return (markdown_table(yields) + "\n\nNo expected facts in this data set: `evidence_coverage` is the "
                    "share of the questions' relevant events that some accepted fact cites. " + STALE_NOTE)
        missed = frame[(frame.extractor != "labelled") & (frame.missed != "")][["extractor", "fixture", "missed"]]
        failed = frame[frame.serving_failed != ""][["extractor", "fixture", "serving_failed"]]
        return (markdown_table(summarize_facts(frame)) + "\n\n`key_accuracy`: share of keys whose current values "
                "equal the expected ones. `candidate_recall`/`precision`: against the gold candidates after the quote "
                "and registry checks. " + STALE_NOTE + "\n\n"
                + (markdown_table(missed) if len(missed) else "No gold candidate missed.") + "\n\n"
                + (markdown_table(failed) if len(failed) else "Every serving check of the fixtures held."))


__all__ = ["METRICS", "FactsSweep"]
