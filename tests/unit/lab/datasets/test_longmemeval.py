"""LongMemEval loader: on the real oracle file the counts match the data set's README, ids follow the benchmark's
turn numbering, labels follow its relevance rule; filters work; malformed files fail naming file and question."""

from __future__ import annotations

import copy
import gzip
import json
from collections import Counter
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from memlab import ConfigError
from memlab.errors import FixtureError
from memlab.lab import Dataset, load_dataset
from memlab.lab.datasets import extract_longmemeval, load_longmemeval, load_summary
from memlab.lab.datasets.formats.longmemeval import longmemeval_type, summarize_longmemeval
from tests.conftest import ROOT

DATA = ROOT / "datasets" / "longmemeval"  # committed with its licence
ORACLE = DATA / "longmemeval_oracle.json.gz"
S_KU = DATA / "longmemeval_s_knowledge_update.json.gz"

README_COUNTS = {  # README.md of the data set: questions per type, abstention included
    "single-session-user": 70,
    "single-session-assistant": 56,
    "single-session-preference": 30,
    "multi-session": 133,
    "knowledge-update": 78,
    "temporal-reasoning": 133,
}


@pytest.fixture(scope="module")
def raw() -> list[dict[str, Any]]:
    with gzip.open(ORACLE, "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def oracle() -> Dataset:
    return load_longmemeval(ORACLE)


def raw_by_id(raw: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {q["question_id"]: q for q in raw}


def expected_session_ids(raw: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    """(question id, haystack position) -> session id: the raw id, prefixed by the question id when several
    questions use it (computed here independently of the loader)."""
    users_of: Counter[str] = Counter()
    for q in raw:
        users_of.update(set(q["haystack_session_ids"]))
    return {
        (q["question_id"], n): f"{q['question_id']}/{sid}" if users_of[sid] > 1 else sid
        for q in raw
        for n, sid in enumerate(q["haystack_session_ids"])
    }


def parse(date: str) -> datetime:
    return datetime.strptime(date[:10] + date[16:], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


# -- the oracle file -------------------------------------------------------------------------------------------


def test_counts_by_type_match_the_readme(oracle: Dataset) -> None:
    assert len(oracle.questions) == 500
    assert Counter(longmemeval_type(q) for q in oracle.questions) == README_COUNTS
    assert sum(q.qtype == "abstention" for q in oracle.questions) == 30
    assert all((q.qtype == "abstention") == q.user_id.endswith("_abs") for q in oracle.questions)
    assert {q.qtype for q in oracle.questions} == set(README_COUNTS) | {"abstention"}
    # one user per question, named by the question id
    assert [u.user_id for u in oracle.users] == [q.user_id for q in oracle.questions]
    assert len({q.user_id for q in oracle.questions}) == 500
    assert all(q.id == f"{longmemeval_type(q)}/{q.user_id}" for q in oracle.questions)
    assert oracle.name == "longmemeval_oracle"
    assert oracle.summary() == {
        "users": 500,
        "sessions": 948,
        "events": 10960,
        "questions": 500,
        "answerable": 470,
        "no_answer": 30,
    }


def test_summary_table(oracle: Dataset) -> None:
    table = summarize_longmemeval(oracle)
    assert list(table.index) == [*sorted((*README_COUNTS, "abstention")), "all"]
    total = table.loc["all"]
    assert total["questions"] == total["users"] == 500
    assert (total["sessions"], total["turns"], total["answerable"]) == (948, 10960, 470)
    assert (table.drop(index="all").sum() == total).all()
    assert table.loc["abstention", "answerable"] == table.loc["abstention", "relevant_turns"] == 0
    assert table.loc["knowledge-update", "questions"] == 72  # 78 less its 6 abstention questions
    assert table.loc["knowledge-update", "relevant_sessions"] == 144
    assert total["sessions_after_question"] > 0  # the data set has these: see the loader's docstring


def test_sessions_and_turns_follow_the_file(oracle: Dataset, raw: list[dict[str, Any]]) -> None:
    session_ids = expected_session_ids(raw)
    for q in raw:
        user = oracle.user("longmemeval", q["question_id"])
        by_id = {s.id: s for s in user.sessions}
        assert len(by_id) == len(q["haystack_sessions"])
        for n, turns in enumerate(q["haystack_sessions"]):
            session = by_id[session_ids[q["question_id"], n]]
            assert [e.id for e in session.events] == [f"{session.id}_{i + 1}" for i in range(len(turns))]
            assert [e.text for e in session.events] == [t["content"] for t in turns]
            assert [e.author for e in session.events] == [
                {"user": "user", "assistant": "model"}[t["role"]] for t in turns
            ]
            assert session.events[0].timestamp == parse(q["haystack_dates"][n])
            assert session.app_name == "longmemeval" and session.user_id == q["question_id"]
    # most sessions keep the benchmark's own id; the few used by two questions are prefixed
    prefixed = [s.id for s in oracle.sessions() if "/" in s.id]
    assert 0 < len(prefixed) < 20
    assert all(s.id.startswith(f"{s.user_id}/") for s in oracle.sessions() if "/" in s.id)


def test_event_ids_unique_within_each_user(oracle: Dataset) -> None:
    for user in oracle.users:
        ids = [e.id for s in user.sessions for e in s.events]
        assert len(ids) == len(set(ids)), user.user_id


def test_timestamps_aware_and_ordered(oracle: Dataset) -> None:
    for user in oracle.users:
        starts = [s.events[0].timestamp for s in user.sessions]
        assert starts == sorted(starts), user.user_id  # sessions listed chronologically
        assert user.replay == [s.id for s in user.sessions]
        for session in user.sessions:
            stamps = [e.timestamp for e in session.events]
            assert all(t.tzinfo is not None and t.utcoffset().total_seconds() == 0 for t in stamps)
            assert all(a < b for a, b in pairwise(stamps)), session.id
    for q in oracle.questions:
        assert q.asked_at is not None and q.asked_at.utcoffset().total_seconds() == 0


def test_relevant_turns_follow_the_benchmark_rule(oracle: Dataset, raw: list[dict[str, Any]]) -> None:
    session_ids = expected_session_ids(raw)
    questions = {q.user_id: q for q in oracle.questions}
    assistant_labelled = 0
    for q in raw:
        qid = q["question_id"]
        if qid.endswith("_abs"):
            continue
        ssa = q["question_type"] == "single-session-assistant"
        expected = {
            f"{session_ids[qid, n]}_{i + 1}"
            for n, (sid, turns) in enumerate(zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True))
            if sid in q["answer_session_ids"]
            for i, t in enumerate(turns)
            if t.get("has_answer") is True and (t["role"] == "user" or ssa)
        }
        question = questions[qid]
        assert set(question.relevant) == expected, qid
        assert question.answerable
        assert set(question.relevant_sessions) == {
            session_ids[qid, n] for n, sid in enumerate(q["haystack_session_ids"]) if sid in q["answer_session_ids"]
        }
        user = oracle.user("longmemeval", qid)
        events = {e.id: (s.id, e) for s in user.sessions for e in s.events}
        for event_id in question.relevant:
            session_id, event = events[event_id]
            assert session_id in question.relevant_sessions
            assert event.author == "user" or ssa
            assistant_labelled += event.author == "model"
        assert question.answer == str(q["answer"])
    assert assistant_labelled >= 51  # single-session-assistant evidence is mostly what the assistant said


def test_abstention_questions_have_no_labels(oracle: Dataset, raw: list[dict[str, Any]]) -> None:
    abstention = [q for q in oracle.questions if q.qtype == "abstention"]
    assert len(abstention) == 30
    assert all(q.relevant == () and q.relevant_sessions == () and not q.answerable for q in abstention)
    # the file does mark has_answer turns in some of their answer sessions: the loader must ignore them
    marked = [
        q["question_id"]
        for q in raw
        if q["question_id"].endswith("_abs")
        and any(
            t.get("has_answer")
            for sid, turns in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True)
            if sid in q["answer_session_ids"]
            for t in turns
        )
    ]
    assert marked
    assert {q.user_id for q in abstention} >= set(marked)


def test_knowledge_updates_have_two_answer_sessions(oracle: Dataset) -> None:
    updates = [q for q in oracle.questions if q.qtype == "knowledge-update"]
    assert len(updates) == 72
    for q in updates:
        assert len(q.relevant_sessions) == 2, q.id
        user = oracle.user(q.app_name, q.user_id)
        old, new = (user.session(s) for s in q.relevant_sessions)
        assert old.events[0].timestamp != new.events[0].timestamp
        assert q.relevant and q.answer


def test_numeric_answers_become_text(oracle: Dataset, raw: list[dict[str, Any]]) -> None:
    numeric = {q["question_id"]: q["answer"] for q in raw if isinstance(q["answer"], int)}
    assert numeric
    for q in oracle.questions:
        if q.user_id in numeric:
            assert q.answer == str(numeric[q.user_id])


# -- filters -----------------------------------------------------------------------------------------------------


def test_type_filter_abstention_and_limit(raw: list[dict[str, Any]]) -> None:
    updates = load_longmemeval(ORACLE, question_types=["knowledge-update"])
    assert len(updates.questions) == 78 and len(updates.users) == 78
    assert {longmemeval_type(q) for q in updates.questions} == {"knowledge-update"}
    answerable = load_longmemeval(ORACLE, question_types=["knowledge-update"], include_abstention=False)
    assert len(answerable.questions) == 72 and all(q.answerable for q in answerable.questions)
    abstention = load_longmemeval(ORACLE, question_types={"abstention"})
    assert len(abstention.questions) == 30 and {q.qtype for q in abstention.questions} == {"abstention"}
    assert load_longmemeval(ORACLE, question_types="abstention").questions == abstention.questions
    two = load_longmemeval(ORACLE, question_types=["multi-session", "single-session-user"], include_abstention=False)
    assert Counter(q.qtype for q in two.questions) == {"multi-session": 121, "single-session-user": 64}

    first = load_longmemeval(ORACLE, limit=5, app_name="lme")
    assert [q.user_id for q in first.questions] == [q["question_id"] for q in raw[:5]]
    assert [u.user_id for u in first.users] == [q.user_id for q in first.questions]
    assert {s.app_name for s in first.sessions()} == {q.app_name for q in first.questions} == {"lme"}
    assert first.questions == load_longmemeval(ORACLE, limit=5, app_name="lme").questions  # deterministic
    limited = load_longmemeval(ORACLE, question_types=["temporal-reasoning"], include_abstention=False, limit=3)
    expected = [q["question_id"] for q in raw if q["question_type"] == "temporal-reasoning"]
    assert [q.user_id for q in limited.questions] == [x for x in expected if not x.endswith("_abs")][:3]
    assert load_longmemeval(ORACLE, limit=0).questions == []


def test_bad_filter_arguments() -> None:
    with pytest.raises(ConfigError, match="knowledge_update"):
        load_longmemeval(ORACLE, question_types=["knowledge_update"])
    with pytest.raises(ConfigError, match="limit"):
        load_longmemeval(ORACLE, limit=-1)


# -- the S file: long haystacks with repeated sessions -------------------------------------------------------------


def test_long_haystacks_keep_ids_unique() -> None:
    s = load_longmemeval(S_KU, include_abstention=False, limit=8)
    assert len(s.questions) == 8
    for q in s.questions:
        user = s.user(q.app_name, q.user_id)
        assert len(user.sessions) >= 39
        ids = [e.id for x in user.sessions for e in x.events]
        assert len(ids) == len(set(ids))
        assert len({x.id for x in user.sessions}) == len(user.sessions)
        assert len(q.relevant_sessions) == 2 and set(q.relevant_sessions) <= {x.id for x in user.sessions}
    # question 18bc8abd holds the same distractor twice, at two dates: the second copy is renamed
    twice = load_longmemeval(S_KU, question_types=["knowledge-update"]).user("longmemeval", "18bc8abd")
    copies = [x for x in twice.sessions if x.id.removeprefix("18bc8abd/").startswith("sharegpt_vyHqfrX_0")]
    assert len(copies) == 2 and copies[0].id + "~2" == copies[1].id
    assert [e.text for e in copies[0].events] == [e.text for e in copies[1].events]
    assert copies[0].events[0].timestamp != copies[1].events[0].timestamp


# -- small files written here --------------------------------------------------------------------------------------


def question(qid: str = "q1", **overrides: Any) -> dict[str, Any]:
    q = {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "Where do I live?",
        "answer": "Lisbon",
        "question_date": "2023/05/20 (Sat) 02:21",
        "haystack_session_ids": ["s1", "answer_1"],
        "haystack_dates": ["2023/05/02 (Tue) 10:00", "2023/05/01 (Mon) 09:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            [
                {"role": "user", "content": "I moved to Lisbon.", "has_answer": True},
                {"role": "assistant", "content": "Nice, Lisbon!", "has_answer": True},
                {"role": "user", "content": "Thanks.", "has_answer": False},
            ],
        ],
        "answer_session_ids": ["answer_1"],
    }
    q.update(overrides)
    return q


def write(tmp_path: Path, data: Any, name: str = "lme.json") -> Path:
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(data, f)
    else:
        path.write_text(json.dumps(data))
    return path


def test_small_file_plain_and_gzipped(tmp_path: Path) -> None:
    shared = question("q2_abs", haystack_session_ids=["s1", "s9"], answer_session_ids=["s9"])
    shared["haystack_sessions"][1][0]["has_answer"] = True
    data = [question(), shared]
    for name in ("lme.json", "lme.json.gz"):
        loaded = load_longmemeval(write(tmp_path, data, name))
        assert loaded.name == "lme"
        q1, q2 = loaded.questions
        assert (q1.relevant, q1.relevant_sessions) == (("answer_1_1",), ("answer_1",))  # user turn only
        assert q1.asked_at == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
        assert (q2.qtype, q2.id, q2.relevant, q2.relevant_sessions) == (
            "abstention",
            "single-session-user/q2_abs",
            (),
            (),
        )
        u1, u2 = loaded.users
        assert [s.id for s in u1.sessions] == ["answer_1", "q1/s1"]  # by date; s1 is used by both questions
        assert [s.id for s in u2.sessions] == ["s9", "q2_abs/s1"]
        assert [e.id for e in u1.sessions[0].events] == ["answer_1_1", "answer_1_2", "answer_1_3"]
        assert [e.author for e in u1.sessions[0].events] == ["user", "model", "user"]


def test_an_extract_loads_to_the_same_data_as_the_whole_files_selection(tmp_path: Path) -> None:
    """The loader names a session id several questions share `question_id/session_id`, counted over the whole
    file: an extract of one question keeps that name, so its ids and checksum are the whole file's."""
    repeated = question("q1", haystack_session_ids=["s1", "answer_1", "s1"],
                        haystack_dates=["2023/05/02 (Tue) 10:00", "2023/05/01 (Mon) 09:00", "2023/05/03 (Wed) 10:00"],
                        haystack_sessions=[*question()["haystack_sessions"], [{"role": "user", "content": "again"}]],
                        answer_session_ids=["answer_1", "s1"])  # fmt: skip
    whole = write(tmp_path, [repeated, question("q2"), question("q3", haystack_session_ids=["s7", "answer_3"],
                                                                    answer_session_ids=["answer_3"])])  # fmt: skip
    for picked in (["q1"], ["q3", "q1"]):
        part = write(tmp_path, extract_longmemeval(whole, picked), "part.json")
        expected = load_longmemeval(whole)
        expected.users = [u for u in expected.users if u.user_id in picked]
        expected.questions = [q for q in expected.questions if q.user_id in picked]
        got = load_longmemeval(part)
        assert [q.id for q in got.questions] == [q.id for q in expected.questions]  # file order
        assert got.checksum() == expected.checksum(), picked
        assert [s.id for s in got.users[0].sessions] == ["q1/answer_1", "q1/s1", "q1/s1~2"]  # shared (q2), repeated
    alone = load_longmemeval(write(tmp_path, extract_longmemeval(whole, ["q3"]), "q3.json"))
    assert {s.id for s in alone.users[0].sessions} == {"answer_3", "s7"}, "an id of one question keeps its name"
    with pytest.raises(FixtureError, match="no question"):
        extract_longmemeval(whole, ["q9"])


def test_single_session_assistant_counts_assistant_turns(tmp_path: Path) -> None:
    loaded = load_longmemeval(write(tmp_path, [question(question_type="single-session-assistant")]))
    assert loaded.questions[0].relevant == ("answer_1_1", "answer_1_2")


def broken(**changes: Any) -> list[dict[str, Any]]:
    q = question("bad_q")
    for key, value in changes.items():
        if value is None:
            del q[key]
        else:
            q[key] = value
    return [question("fine_q"), q]


def with_turn(**turn: Any) -> list[dict[str, Any]]:
    sessions = copy.deepcopy(question()["haystack_sessions"])
    sessions[1][1] = {"role": "assistant", "content": "x", **turn}
    return broken(haystack_sessions=sessions)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (broken(answer=None), "answer"),
        (broken(haystack_sessions=None), "haystack_sessions"),
        (broken(haystack_dates=["2023/05/02 (Tue) 10:00"]), "differ in length"),
        (broken(haystack_session_ids=["s1"]), "differ in length"),
        (broken(haystack_dates=["2023-05-02 10:00", "2023/05/01 (Mon) 09:00"]), "2023-05-02 10:00"),
        (broken(haystack_dates=["2023/05/02 (Wed) 10:00", "2023/05/01 (Mon) 09:00"]), "is a Tue"),
        (broken(question_date="2023/02/30 (Thu) 10:00"), "question_date"),
        (broken(answer_session_ids=["nowhere"]), "nowhere"),
        (broken(question_id="fine_q"), "repeats"),
        (broken(haystack_sessions="no"), "must be a list"),
        (with_turn(role="system"), "role"),
        (with_turn(has_answer="yes"), "has_answer"),
        (with_turn(content=None), "content"),
    ],
)
def test_malformed_questions_name_file_and_question(tmp_path: Path, data: Any, message: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(FixtureError, match=message) as err:
        load_longmemeval(path)
    assert str(path) in str(err.value)
    assert ("'bad_q'" in str(err.value)) or ("'fine_q'" in str(err.value) and "#1" in str(err.value))


def test_malformed_files(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text('[{"question_id": "q1", ')
    with pytest.raises(FixtureError, match="not valid JSON") as err:
        load_longmemeval(path)
    assert str(path) in str(err.value)
    with pytest.raises(FixtureError, match="expected a JSON list"):
        load_longmemeval(write(tmp_path, {"question_id": "q1"}))
    with pytest.raises(FixtureError, match=r"question #0: expected an object"):
        load_longmemeval(write(tmp_path, ["q1"]))


@pytest.mark.parametrize(("path", "per_type", "expected"), [(ORACLE, 3, 3), (S_KU, 1, 1)])
def test_abstention_ids_load_as_no_answer_questions_through_the_config_loader(path: Path, per_type: int,
                                                                               expected: int) -> None:
    """Both packaged files' `_abs` questions reach `memlab eval` (format longmemeval, per_type) as no-answer
    questions: the cut-off and answerability figures use the benchmark's own negatives."""
    data = load_dataset({"name": "lme", "format": "longmemeval", "path": str(path), "per_type": per_type})
    abstention = [q for q in data.questions if q.user_id.endswith("_abs")]
    assert len(abstention) == expected and all(q.qtype == "abstention" for q in abstention)
    assert all(not q.answerable and q.relevant == () and q.relevant_sessions == () for q in abstention)
    assert all(q.answerable for q in data.questions if not q.user_id.endswith("_abs"))
    assert data.summary()["no_answer"] == expected
    assert f"  abstention: {expected} ({expected} no-answer)" in load_summary(data)
