"""Extractors compared on the fact fixtures: candidates against the gold ones, and the consolidated state
against the expected one, per fixture, with drops and time per session; and what fact search serves as time
passes: stale facts served (under the confirm heading) and stale recall (a question about a key served a value
the user had since replaced), with the fixtures' `serving` checks."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

import pandas as pd
from rich.progress import track

from memlab.embedding.base import Embedder
from memlab.embedding.cache import warm_transient
from memlab.facts.decide import observe, resolve
from memlab.facts.extractors.base import Extractor
from memlab.facts.memory import FactHit, FactMemory, state_of
from memlab.facts.registry import PredicateRegistry
from memlab.facts.types import DOMAIN_USER
from memlab.lab.datasets.model import Dataset, ServingCheck, UserHistory
from memlab.storage.store import Store


def key_accuracy(state: set[tuple], expected: set[tuple]) -> float:
    """Share of keys (subject, predicate) - expected or produced - whose set of current values is exactly
    the expected one (basis ignored). Spurious keys count against it."""

    def by_key(items):
        out: dict[tuple, set] = {}
        for subject, predicate, value, *_ in items:
            out.setdefault((subject, predicate), set()).add(value)
        return out

    got, want = by_key(state), by_key(expected)
    keys = set(got) | set(want)
    return 1.0 if not keys else sum(got.get(k) == want.get(k) for k in keys) / len(keys)


ALL_SENSITIVITIES = ("personal", "health")


@dataclass
class StaleCounts:
    """What questions about keys were served: facts served in all, those under the confirm heading, questions
    whose key had a value the user since replaced (`replaced_questions`) and those that got such a value."""

    questions: int = 0
    served: int = 0
    stale_served: int = 0
    replaced_questions: int = 0
    stale_answers: int = 0
    serving_checks: int = 0
    serving_failed: list[str] | None = None

    @property
    def stale_recall(self) -> float:
        return self.stale_answers / self.replaced_questions if self.replaced_questions else float("nan")


def served_as(hits: list[FactHit], subject: str, predicate: str, value: str) -> str:
    """How `value` of the key was served: current, stale (under the confirm heading) or hidden (not at all)."""
    hit = next((h for h in hits if (h.fact.subject, h.fact.predicate, h.fact.value) == (subject, predicate, value)),
               None)  # fmt: skip
    return "hidden" if hit is None else "stale" if hit.stale else "current"


def gold_history(user: UserHistory, registry: PredicateRegistry, at: datetime) -> dict[tuple[str, str], tuple]:
    """(subject, predicate) -> (values current at `at`, values asserted by then and no longer current), from the
    gold candidates said at or before `at`, folded by the consolidation rules."""
    rows: dict[tuple[str, str], list] = {}
    for cands in user.gold_candidates.values():
        for c in cands:
            if c.event_time is not None and c.event_time <= at and registry.knows(c.predicate):
                if c.negated and c.basis == "inferred":
                    continue
                cardinality = registry.get(c.predicate).cardinality
                rows[c.key] = observe(rows.get(c.key, []), c, cardinality=cardinality)
    out = {}
    for key, key_rows in rows.items():
        resolved = resolve(key_rows, registry.get(key[1]).cardinality)
        current = {r.value for r in resolved if r.status == "current"}
        asserted = {r.value for r in resolved if r.last_stated_at or r.last_inferred_at}
        out[key] = (current, asserted - current)
    return out


def ask_keys(facts: FactMemory, app: str, user: UserHistory, at: datetime, keys: list[tuple[str, str]],
             counts: StaleCounts) -> list[list[FactHit]]:  # fmt: skip
    """Ask about each key at `at` as an agent would (the default cap, every sensitivity) and count what is
    served: stale facts among them, and values the user had replaced by then (per the gold history)."""
    history = gold_history(user, facts.registry, at)
    answers = []
    questions = [f"{subject} {predicate.replace('_', ' ')}" for subject, predicate in keys]
    warm_transient(facts.embedder, questions)  # one model call for the questions, not one per search
    for (subject, predicate), question in zip(keys, questions, strict=True):
        hits = facts.search(app, user.user_id, question, allow=ALL_SENSITIVITIES, now=at)
        counts.questions += 1
        counts.served += len(hits)
        counts.stale_served += sum(h.stale for h in hits)
        current, replaced = history.get((subject, predicate), (set(), set()))
        if current and replaced:
            counts.replaced_questions += 1
            served = {h.fact.value for h in hits if (h.fact.subject, h.fact.predicate) == (subject, predicate)}
            counts.stale_answers += bool(served & replaced)
        answers.append(hits)
    return answers


def check_serving(facts: FactMemory, user: UserHistory, ingest: Callable, counts: StaleCounts) -> None:
    """Each `serving` check of a fixture, against the memory as it stood then: the replay cut at the check's
    time (sessions, and events within them, said later are left out), in a throw-away app."""
    by_time: dict[datetime, list[ServingCheck]] = {}
    for check in user.serving:
        by_time.setdefault(check.at, []).append(check)
    failed = counts.serving_failed if counts.serving_failed is not None else []
    for at, checks in sorted(by_time.items()):
        app = f"serving-{uuid.uuid4().hex[:8]}"
        for sid in user.replay:
            session = user.session(sid)
            events = [e for e in session.events if e.timestamp <= at]
            if events:
                ingest(replace(session, app_name=app, events=events))
        keys = [(c.subject, c.predicate) for c in checks]
        for check, hits in zip(checks, ask_keys(facts, app, user, at, keys, counts), strict=True):
            counts.serving_checks += 1
            got = served_as(hits, check.subject, check.predicate, check.value)
            if got != check.served:
                failed.append(f"{check.subject} {check.predicate} = {check.value} at {at:%Y-%m-%d}: {got}, "
                              f"expected {check.served}")  # fmt: skip
        facts.forget_user(app, user.user_id)
    counts.serving_failed = failed


def run_fact_eval(
    store: Store, embedder: Embedder, labelled: Dataset, extractor: Extractor, *, progress: bool = False
) -> pd.DataFrame:
    """Replay every fact fixture (in its `replay` order) through FactMemory with `extractor`; one row each."""
    facts = FactMemory(store, embedder, extractor=extractor)
    rows = []
    users = [u for u in labelled.users if u.expected_facts is not None]
    if progress:
        users = track(users, description=f"facts ({extractor.name})")
    for user in users:
        app = f"eval-{extractor.name}-{uuid.uuid4().hex[:8]}"
        gold = {
            (c.subject, c.predicate, facts.registry.normalize(c.predicate, c.value) if facts.registry.knows(c.predicate)
             else c.value, c.negated)
            for cands in user.gold_candidates.values() for c in cands
        }  # fmt: skip
        extracted: set[tuple] = set()
        dropped: Counter[str] = Counter()
        seconds, sessions = 0.0, 0
        ingest = facts.add_domain_session if user.user_id == DOMAIN_USER else facts.add_session
        for sid in user.replay:
            started = time.perf_counter()
            report = ingest(replace(user.session(sid), app_name=app))
            seconds += time.perf_counter() - started
            sessions += 1
            dropped.update(report.dropped)
            extracted |= {(c.subject, c.predicate, c.value, c.negated) for c in report.accepted}
        state = state_of(facts.current(app, user.user_id))
        expected = set(user.expected_facts)
        hit = len(extracted & gold)
        counts = StaleCounts()
        end = max((e.timestamp for s in user.sessions for e in s.events), default=None)
        if end is not None:  # every key of the gold history, asked when the last session ends
            ask_keys(facts, app, user, end, sorted({c.key for cs in user.gold_candidates.values() for c in cs}), counts)
        check_serving(facts, user, ingest, counts)
        rows.append(
            {
                "extractor": extractor.name,
                "fixture": user.source.rsplit("/", 1)[-1],
                "key_accuracy": key_accuracy(state, expected),
                "state_exact": state == expected,
                "candidate_recall": hit / len(gold) if gold else 1.0,
                "candidate_precision": hit / len(extracted) if extracted else 1.0,
                "dropped": sum(dropped.values()),
                "dropped_by_reason": dict(dropped),
                "missed": sorted(gold - extracted),
                "seconds_per_session": seconds / max(sessions, 1),
                "key_questions": counts.questions,
                "stale_served": counts.stale_served,
                "replaced_questions": counts.replaced_questions,
                "stale_answers": counts.stale_answers,
                "serving_checks": counts.serving_checks,
                "serving_failed": "; ".join(counts.serving_failed or []),
            }
        )
        facts.forget_user(app, user.user_id)
    return pd.DataFrame(rows)


def _measured_sum(values: pd.Series) -> float:
    """A count's sum over fixtures: NaN, not 0, where none measured it."""
    return values.sum(min_count=1)


def summarize_facts(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per extractor: means of the per-fixture figures, sums of the counts, and `stale_recall` over all
    questions whose key had a replaced value (NaN where the stale figures were not measured)."""
    aggs = {"fixtures": ("fixture", "count"), "key_accuracy": ("key_accuracy", "mean"),
            "state_exact": ("state_exact", "mean"), "candidate_recall": ("candidate_recall", "mean"),
            "candidate_precision": ("candidate_precision", "mean"), "dropped": ("dropped", "sum"),
            "seconds_per_session": ("seconds_per_session", "mean"),
            **{c: (c, _measured_sum) for c in ("key_questions", "stale_served", "replaced_questions", "stale_answers")}}
    out = frame.groupby("extractor", sort=False).agg(**aggs).reset_index()  # fmt: skip
    out["stale_recall"] = out.stale_answers / out.replaced_questions.where(out.replaced_questions > 0)
    return out
