"""A judged set is a data set: `format: judged` loads queries, sessions, a pool and judgments into a
Dataset whose gold evidence is the events judged relevant; bad judgments fail naming the line and the fix;
judged@k and bpref come from ir-measures beside recall@k; a run on a judged set (with the cut-off sweep) names the
pool in its report and flags a system that was not in it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import memlab
from memlab import lab
from tests.integration.lab.judging.test_pool import QUERIES, write_config, write_queries, write_sessions

APP = "judged-test"
AT = "2026-12-01T10:05:00+00:00"


def write_pool(path: Path, sessions: list[memlab.Session], systems=("event",)) -> Path:
    """A pool by hand (what `memlab judge pool` writes): every event of the asking user is pooled."""
    queries = []
    for qid, user, text in QUERIES:
        hits = [{"event_id": e.id, "session": s.id, "text": e.text, "at": e.timestamp.isoformat(),
                 "author": e.author, "found_by": [{"system": systems[0], "rank": 1}]}
                for s in sessions if s.user_id == user for e in s.events]  # fmt: skip
        queries.append({"query_id": qid, "app": APP, "user": user, "text": text, "asked_at": AT, "origin": "file",
                        "hits": hits})  # fmt: skip
    path.write_text(json.dumps({"memlab": "pool", "version": 1, "config": "tiny-pool", "dataset": "logs", "depth": 3,
                                "created_at": AT, "systems": [{"name": s} for s in systems], "queries": queries}))
    return path


JUDGED = [("q-cat", "s0-e0", 1), ("q-cat", "s0-e1", 0), ("q-cat", "s1-e0", 0),
          ("q-sister", "s0-e2", 1), ("q-sister", "s0-e3", 1), ("q-sister", "s0-e0", 0)]  # fmt: skip


def judgment(query: str, event: str, relevance, assessor: str = "ana") -> dict:
    return {"query": query, "event_id": event, "relevance": relevance, "assessor": assessor, "time": AT}


def write_judgments(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    sessions = write_sessions(tmp_path / "logs.jsonl", APP)
    return {"queries": write_queries(tmp_path / "queries.jsonl", APP, QUERIES), "sessions": tmp_path / "logs.jsonl",
            "pool": write_pool(tmp_path / "pool.json", sessions),
            "judgments": write_judgments(tmp_path / "j.jsonl", [judgment(*row) for row in JUDGED])}  # fmt: skip


def load(files: dict[str, Path], **extra) -> lab.Dataset:
    return lab.load_dataset({"name": "mine", "format": "judged", **{k: str(v) for k, v in files.items()}, **extra})


def test_a_judged_set_loads_with_the_judged_relevant_events_as_evidence(files):
    data = load(files)
    assert data.name == "mine" and data.pool["systems"] == ["event"] and data.pool["depth"] == 3
    by_id = {q.id: q for q in data.questions}
    assert sorted(by_id) == ["q-cat", "q-sister"]  # q-car: nobody judged it, so it is not a question
    assert by_id["q-cat"].evidence == (("s0", "s0-e0"),)
    assert set(by_id["q-sister"].evidence) == {("s0", "s0-e2"), ("s0", "s0-e3")}
    assert set(by_id["q-cat"].judged) == {("s0", "s0-e0"), ("s0", "s0-e1"), ("s1", "s1-e0")}
    assert by_id["q-cat"].qtype == "file" and by_id["q-cat"].asked_at.isoformat() == "2026-12-01T10:00:00+00:00"
    assert [u.user_id for u in data.users] == ["u1"]


def test_a_query_judged_all_not_relevant_is_a_no_answer_question(files):
    write_judgments(files["judgments"], [judgment("q-car", "s9-e0", 0), judgment("q-car", "s9-e2", 0)])
    (question,) = load(files).questions
    assert not question.answerable and len(question.judged) == 2


@pytest.mark.parametrize(("row", "message"), [
    (judgment("q-nope", "s0-e0", 1), r"j.jsonl:2: query 'q-nope' is not in the query file.*fix `query`"),
    (judgment("q-cat", "s9-e0", 1), r"j.jsonl:2: event 's9-e0' was not pooled for query 'q-cat'.*judge only"),
    (judgment("q-cat", "s0-e2", 2), r"j.jsonl:2: `relevance` must be 0 \(not relevant\) or 1"),
    (judgment("q-cat", "s0-e2", True), r"j.jsonl:2: `relevance` must be 0"),
    ({**judgment("q-cat", "s0-e2", 1), "grade": 3}, r"j.jsonl:2: unknown key.*'grade'"),
    (judgment("q-cat", "s0-e0", 0, assessor="bo"), r"j.jsonl:2: 'bo' judged.*'ana' judged it 1 on line 1.*assessor"),
])  # fmt: skip
def test_a_bad_judgment_names_its_line_and_the_fix(files, row, message):
    write_judgments(files["judgments"], [judgment("q-cat", "s0-e0", 1), row])
    with pytest.raises(memlab.MemlabError, match=message):
        load(files)


def test_the_assessor_key_chooses_whose_judgments_count(files):
    write_judgments(files["judgments"], [judgment("q-cat", "s0-e0", 1), judgment("q-cat", "s0-e0", 0, "bo")])
    assert load(files, assessor="bo").questions[0].evidence == ()
    with pytest.raises(memlab.MemlabError, match="no judgments by assessor 'cy'"):
        load(files, assessor="cy")


def test_a_judged_entry_missing_a_file_key_is_a_config_error(files):
    with pytest.raises(memlab.ConfigError, match="format judged needs `pool`"):
        load({k: v for k, v in files.items() if k != "pool"})


def _scored(ranking: list[str], evidence: set[str], judged: set[str], k: int):
    """One question, a run ranking the given event ids, scored by memlab's scorer."""
    keys = lambda ids: tuple(("s", e) for e in sorted(ids))  # noqa: E731
    q = lab.Question("q", "a", "u", "?", (), evidence=keys(evidence), judged=keys(judged | evidence))
    hits = [memlab.Hit(e, e, 0.1 * i, session_id="s", event_ids=(e,)) for i, e in enumerate(ranking)]
    run = lab.runs.collect("sys", lambda question, vector: hits, [q], {"q": np.zeros(1)})
    return lab.metrics.score(run, [q], k=k).iloc[0]


def test_judged_at_k_and_bpref_match_hand_computed_values():
    """Relevant a, c; judged not relevant b, d; x unjudged. Ranking b x a d c: judged@5 = 4 of 5 hits judged;
    judged@2 = 1 of 2; bpref = (1/R) sum over retrieved relevant of 1 - (judged non-relevant above)/min(R, N)
    = ((1 - 1/2) + (1 - 2/2)) / 2 = 0.25; recall@5 = 1.0 (both judged relevant found)."""
    row = _scored(["b", "x", "a", "d", "c"], {"a", "c"}, {"b", "d"}, k=5)
    assert (row.judged, row.bpref, row.recall) == (pytest.approx(0.8), pytest.approx(0.25), 1.0)
    row = _scored(["b", "x", "a", "d", "c"], {"a", "c"}, {"b", "d"}, k=2)
    assert row.judged == pytest.approx(0.5) and row.recall == 0.0
    row = _scored(["a", "c", "b"], {"a", "c"}, {"b"}, k=5)  # relevant first: bpref 1, every hit judged
    assert (row.judged, row.bpref) == (1.0, 1.0)


def test_data_with_complete_labels_gets_no_judged_or_bpref_column():
    q = lab.Question("q", "a", "u", "?", ("a",))
    hits = [memlab.Hit("a", "a", 0.1, session_id="s", event_ids=("a",))]
    run = lab.runs.collect("sys", lambda question, vector: hits, [q], {"q": np.zeros(1)})
    scored = lab.metrics.score(run, [q], k=5)
    assert "judged" not in scored.columns and "bpref" not in scored.columns


def test_a_run_on_a_judged_set_with_the_cutoff_sweep_names_the_pool_and_flags_the_unpooled_system(
        files, tmp_path, memlab_home):  # fmt: skip
    """The experiment's `event` system made the pool; `chunk3` did not: the report says so."""
    config = json.loads(write_config(tmp_path / "exp.yaml", files["sessions"]).read_text())
    config.update(name="on-judged", sweeps=["cutoff"], options={"cutoff": {"systems": ["event"]}}, k=5,
                  datasets=[{"name": "mine", "format": "judged", **{k: str(v) for k, v in files.items()}}])
    out = lab.run_experiment(lab.parse_config(config, source="on-judged"), tmp_path / "run", home=memlab_home,
                             log=lambda *a: None)  # fmt: skip
    scores = lab.RunFolder(out).scores
    mine = scores[scores.dataset == "mine"]
    assert {"judged@5", "bpref", "recall@5"} <= set(mine[mine.system == "event"].metric)
    assert mine.system.str.startswith("event@cut").any()  # the cut-off sweep ran on the judged set
    assert "recommended_max_distance" in set(mine.metric)
    report = (out / "report.md").read_text()
    assert "**Judged set**" in report and str(files["pool"]) in report and "`event` at depth 3" in report
    flagged = report.split("**Not in the pool**: ", 1)[1].split(".", 1)[0]
    assert "`chunk3`" in flagged and "`event`" not in flagged and "event@cut" not in flagged
