"""A judged set is a data set (`format: judged`): queries, the sessions they were asked against, the pool and the
judgments made on it become the usual Dataset. A query's gold evidence is the events judged relevant; every
judged event (relevant or not) is kept on the question (`Question.judged`), so scoring adds judged@k and bpref,
which count unjudged hits as unknown rather than wrong. A query nobody judged is left out; a query whose pooled
hits were all judged not relevant is a no-answer question (by the pooling assumption nothing else answers it).

    {name: mine, format: judged, queries: queries.jsonl, sessions: logs.jsonl, pool: pool.json,
     judgments: judgments.jsonl}       (optional `assessor: ana`: only that assessor's judgments count)

The sessions are a memlab JSONL file (reading them from a database by DSN is not there yet)."""

from __future__ import annotations

from pathlib import Path

from memlab.errors import FixtureError
from memlab.lab.dataset import Dataset, Question, UserHistory
from memlab.lab.jsonl import load_jsonl
from memlab.lab.judging.judgments import read_judgments
from memlab.lab.judging.model_assessor import agreement
from memlab.lab.judging.pool_file import read_pool
from memlab.lab.judging.query_file import read_queries

OPTIONS = {"queries", "sessions", "judgments", "pool", "assessor"}
PATHS = ("queries", "sessions", "judgments", "pool")


def load_judged(name: str, queries: Path, sessions: Path, judgments: Path, pool: Path, *,
                assessor: str | None = None) -> Dataset:  # fmt: skip
    """The judged set as a Dataset whose `pool` names the systems and depth its labels come from."""
    asked = {q.query_id: q for q in read_queries(queries)}
    made = read_pool(pool)
    outside = [q["query_id"] for q in made.queries if q["query_id"] not in asked]
    if outside:
        raise FixtureError(f"data set {name!r}: the pool {pool} holds queries {outside[:5]} that {queries} does not; "
                           "give the query file the pool was made from")  # fmt: skip
    pooled: dict[str, dict[str, list[str | None]]] = {}
    for q in made.queries:
        for hit in q["hits"]:
            pooled.setdefault(q["query_id"], {}).setdefault(hit["event_id"], []).append(hit["session"])
    judged = read_judgments(judgments, pooled, assessor=assessor)
    source = load_jsonl(sessions, name)
    users = {(u.app_name, u.user_id): u for u in source.users}
    questions = []
    for qid, verdicts in judged.items():
        q = asked[qid]
        if (q.app, q.user) not in users:
            raise FixtureError(f"data set {name!r}: {sessions} has no sessions of {q.app}/{q.user}, who asked "
                               f"query {qid!r}; give the sessions file the pool was made from")  # fmt: skip
        relevant = tuple(key for key, j in verdicts.items() if j.relevance == 1)
        questions.append(Question(qid, q.app, q.user, q.text, tuple(e for _, e in relevant), asked_at=q.asked_at,
                                  qtype=q.origin, evidence=relevant, judged=tuple(verdicts)))  # fmt: skip
    kept = list(dict.fromkeys((q.app_name, q.user_id) for q in questions))
    pool_info = made.describe()
    pairs = agreement(judgments)  # a person and the model (or two people) on the same events: Cohen's kappa
    if pairs:
        pool_info["agreement"] = pairs
    return Dataset(name, [UserHistory(a, u, users[(a, u)].sessions) for a, u in kept], questions, pool=pool_info)
