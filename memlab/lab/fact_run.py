"""Extractors compared on the fact fixtures: candidates against the gold ones, and the consolidated state
against the expected one, per fixture, with drops and time per session."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import replace

import pandas as pd
from rich.progress import track

from memlab.embedding.base import Embedder
from memlab.facts.extractors.base import Extractor
from memlab.facts.memory import FactMemory, state_of
from memlab.facts.types import DOMAIN_USER
from memlab.lab.dataset import Dataset
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
            }
        )
        facts.forget_user(app, user.user_id)
    return pd.DataFrame(rows)


def summarize_facts(frame: pd.DataFrame) -> pd.DataFrame:
    return (
        frame.groupby("extractor", sort=False)
        .agg(
            fixtures=("fixture", "count"),
            key_accuracy=("key_accuracy", "mean"),
            state_exact=("state_exact", "mean"),
            candidate_recall=("candidate_recall", "mean"),
            candidate_precision=("candidate_precision", "mean"),
            dropped=("dropped", "sum"),
            seconds_per_session=("seconds_per_session", "mean"),
        )
        .reset_index()
    )
