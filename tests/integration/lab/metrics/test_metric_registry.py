"""The metric registry: a metric is one entry. Registered for a block, a new metric is scored per question on a real
run, written to scores and metrics.json under its own name (with its breakdowns), read by the intervals, explained
in report.md and judged by the gate the right way round; gone again after the block. Every per-question column
carries its metric's name (nothing renamed on the way), and per-question tables of older formats are read under
those names.

One real `memlab eval` of a small memlab-format data set: two users, three sessions each, answerable questions
with event and session labels, and a no-answer question per user."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from ir_measures import Success
from typer.testing import CliRunner

from memlab import ConfigError, lab
from memlab.cli import app
from memlab.lab.metrics import MetricDefinition
from tests.conftest import ROOT

K = 10
TOPICS = {
    "trip": ["I am flying to Oslo in March for a conference.", "The hotel near the station costs 120 a night.",
             "My flight leaves at 6 in the morning from gate B.", "I will take the airport train to the city."],
    "food": ["I cook lentil soup every Sunday evening.", "My favourite spice is smoked paprika.",
             "I stopped eating red meat last year.", "The bakery on the corner sells rye bread."],
    "pets": ["My cat Miso is afraid of the vacuum.", "The vet appointment is on Thursday at five.",
             "Miso eats salmon kibble twice a day.", "I bought a scratching post for the hallway."],
}  # fmt: skip
QUESTIONS = [("trip", 2, "When does my flight leave?"), ("food", 2, "Do I eat meat?"),
             ("pets", 1, "When is the vet appointment?"), ("trip", 1, "How much is the hotel?"),
             ("food", 3, "Where do I buy bread?"),
             ("pets", 2, "My cat Miso is afraid of the vacuum.")]  # another event's own words rank that one first


def first_hit_rank(result: lab.metrics.QuestionResult, question: lab.Question) -> float:
    """Rank of the first hit holding a labelled event; k + 1 when no hit does."""
    gold = set(question.evidence)
    return float(next((hit.rank for hit in result.hits if gold & set(hit.events)), result.k + 1))


FIRST = MetricDefinition("first_hit_rank", "lower", 0.5, "rank of the first hit holding a labelled event (k + 1: "
                         "none within k)", question=first_hit_rank)  # fmt: skip
TOP1 = MetricDefinition("top1", "higher", 0.05, "answerable questions whose first hit holds a labelled event",
                        question=Success @ 1)  # fmt: skip
SPILL = MetricDefinition("hits_given_no_answer", "lower", 1.0, "hits returned to a no-answer question",
                         question=lambda result, question: float(len(result.hits)), population="no_answer")


def write_data(path: Path) -> Path:
    lines = []
    for u, user in enumerate(("ana", "ben")):
        for d, (topic, texts) in enumerate(TOPICS.items()):
            events = [{"id": f"{topic}-{i}", "author": "user", "at": f"2026-0{d + 1}-0{u + 1}T10:0{i}:00Z",
                       "text": text} for i, text in enumerate(texts)]  # fmt: skip
            lines.append({"type": "session", "app": "chat", "user": user, "id": topic, "events": events})
        for n, (topic, turn, text) in enumerate(QUESTIONS):
            lines.append({"type": "question", "id": f"{user} q{n}", "app": "chat", "user": user, "text": text,
                          "asked_at": "2026-06-01T12:00:00Z", "relevant": [f"{topic}-{turn}"],
                          "relevant_sessions": [topic]})  # fmt: skip
        lines.append({"type": "question", "id": f"{user} none", "app": "chat", "user": user,
                      "text": "What is my sister's name?", "asked_at": "2026-06-01T12:00:00Z", "relevant": []})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


@pytest.fixture(scope="module")
def made(tmp_path_factory, memlab_home, store) -> Path:
    folder = tmp_path_factory.mktemp("registry")
    config = {"name": "registry", "k": K, "plots": False,
              "datasets": [{"name": "mine", "format": "memlab", "path": str(write_data(folder / "mine.jsonl"))}],
              "systems": [{"name": "event-exact", "strategy": "exact"},
                          {"name": "chunk2", "granularity": "chunk", "chunk_size": 2, "chunk_overlap": 0,
                           "strategy": "exact"}], "sweeps": []}  # fmt: skip
    (folder / "registry.yaml").write_text(yaml.safe_dump(config))
    run = folder / "run"
    result = CliRunner().invoke(app, ["eval", "--config", str(folder / "registry.yaml"), "--out", str(run)])
    assert result.exit_code == 0, result.output
    return run


@pytest.fixture
def run(made, tmp_path) -> Path:
    """A copy of the run to score again."""
    return Path(shutil.copytree(made, tmp_path / "run"))


def _by_hand(frame: pd.DataFrame, questions: list[lab.Question]) -> dict[str, float]:
    """first_hit_rank per answerable question, from the run frame's hits."""
    out = {}
    for q in questions:
        if not q.answerable:
            continue
        hits = frame[(frame.question_id == q.id) & (frame["rank"] > 0) & (frame["rank"] <= K)].sort_values("rank")
        ranks = [int(r) for r, ids in zip(hits["rank"], hits.event_ids, strict=True) if set(ids) & set(q.relevant)]
        out[q.id] = float(ranks[0]) if ranks else float(K + 1)
    return out


def test_one_registered_entry_is_scored_written_explained_and_gated(run, tmp_path):
    folder = lab.RunFolder(run)
    questions = folder.questions("mine")
    runs = folder.runs("mine")
    answerable = sum(q.answerable for q in questions)
    with lab.metrics.registered_metrics(FIRST, TOP1, SPILL):
        # scored per question on the real run, under its own name, NaN outside the questions it averages over
        for system, saved in runs.items():
            scored = lab.metrics.score(saved.frame, questions, k=K).set_index("question_id")
            want = _by_hand(saved.frame, questions)
            assert scored.first_hit_rank.dropna().to_dict() == want, system
            assert scored.first_hit_rank[[q.id for q in questions if not q.answerable]].isna().all()
            if system == "event-exact":  # one event per hit: the first event ranked is the first hit's
                assert scored.top1.dropna().to_dict() == {q: float(r == 1) for q, r in want.items()}
            assert "first_hit_rank" in lab.metrics.summarize(scored.reset_index()).columns
        ranks = [v for saved in runs.values() for v in _by_hand(saved.frame, questions).values()]
        assert min(ranks) == 1 and max(ranks) > 1, "the ranks differ between questions: the mean means something"

        # scores, metrics.json and the per-question table of the folder: same name, breakdowns too (in scores as
        # the group columns, in metrics.json as the flat key's `[group=value]`)
        lab.score_folder(run)
        metrics = json.loads((run / "metrics.json").read_text())
        scores = pd.read_parquet(run / "scores.parquet")
        for system, saved in runs.items():
            key = f"mine/{system}/first_hit_rank"
            assert metrics[key] == pytest.approx(np.mean(list(_by_hand(saved.frame, questions).values())))
            assert f"{key}[qtype=default]" in metrics and f"mine/{system}/top1" in metrics
            mine = scores[(scores.system == system) & (scores.metric == "first_hit_rank")]
            row = mine[mine.group == ""]
            assert row.questions.tolist() == [answerable]
            by_type = mine[mine.group == "qtype"]
            assert by_type.group_value.tolist() == ["default"] and by_type.value.tolist() == row.value.tolist()
            assert set(mine.group) == {"", "qtype", "size"}, "each breakdown of the entry is a row of its own"
        table = pd.read_parquet(run / "question_scores.parquet")
        assert {"first_hit_rank", "top1", "hits_given_no_answer"} <= set(table.columns)
        no_answer = table[(table.system == "chunk2") & ~table.answerable]
        row = scores[(scores.system == "chunk2") & (scores.metric == "hits_given_no_answer") & (scores.group == "")]
        assert row.value.tolist() == [no_answer.returned.mean()] and row.questions.tolist() == [len(no_answer)] == [2]
        interval = lab.metrics.intervals(table, ["mine/event-exact/first_hit_rank"])
        assert interval.value.tolist() == pytest.approx([metrics["mine/event-exact/first_hit_rank"]])

        # the gate: direction and tolerance from the entry, paired tests on its per-question values
        baseline = tmp_path / "baseline.json"
        lab.report.write_baseline(run, baseline)
        base = lab.report.load_metrics(baseline, what="baseline")
        assert "first_hit_rank" in pd.read_parquet(tmp_path / "baseline.questions.parquet").columns
        key = "mine/event-exact/first_hit_rank"
        for step, verdict in ((1.0, "regression"), (-1.0, "improvement"), (0.2, "ok")):
            moved = lab.report.compare(base, {**base, key: base[key] + step}).set_index("metric")
            assert (moved.at[key, "better"], moved.at[key, "verdict"]) == ("lower", verdict), step
        same = lab.report.gate_table(baseline, run).set_index("metric")
        assert same.at[key, "verdict"] == "ok" and same.at[key, "tolerance"] == 0.5
        assert (same.at[f"{key}[qtype=default]", "better"], same.at[f"{key}[qtype=default]", "verdict"]) == \
            ("lower", "ok"), "its breakdowns are gated by the same entry"  # fmt: skip
        bumped = {**base, f"{key}[size=<=50]": base[f"{key}[size=<=50]"] + 1.0}
        worse = lab.report.compare(base, bumped).set_index("metric")
        assert worse.at[f"{key}[size=<=50]", "verdict"] == "regression"
        assert same.at["mine/chunk2/top1", "better"] == "higher"

        # report.md: its note beside the others, and a column of the main table
        lab.write_report(run, baseline=baseline)
        report = (run / "report.md").read_text()
        notes = report.split("## Reading the numbers", 1)[1]
        assert "`first_hit_rank` (lower is better): rank of the first hit holding a labelled event" in notes
        assert "`top1` (higher is better)" in notes and "`recall` (higher is better)" in notes
        header = next(line for line in report.splitlines() if line.startswith("| system") and "recall@10" in line)
        assert "first_hit_rank" in header and "top1" in header

    # gone after the block: not scored, and the gate no longer knows which way it is better
    assert all(d.name not in ("first_hit_rank", "top1", "hits_given_no_answer") for d in lab.metrics.metric_registry())
    assert "first_hit_rank" not in lab.metrics.score(runs["event-exact"].frame, questions, k=K).columns
    after = lab.report.compare(base, base).set_index("metric")
    assert after.at[key, "verdict"] == "ungated (no metric definition)"


def test_every_metric_scored_per_question_is_the_mean_of_its_own_column(run):
    """No renaming on the way: each metric of scores.csv that the registry scores per question is its statistic
    over the per-question column of the same base name (population and count included)."""
    lab.score_folder(run)
    scores = pd.read_parquet(run / "scores.parquet")
    table = pd.read_parquet(run / "question_scores.parquet")
    entries = {d.name: d for d in lab.metrics.metric_registry() if d.summarized}
    plain = scores[scores.group == ""]
    checked = set()
    for r in plain.itertuples(index=False):
        name = r.metric.split("@")[0]
        if name not in entries:
            continue
        d = entries[name]
        assert r.metric == d.metric(K)
        rows = table[(table.dataset == r.dataset) & (table.system == r.system)]
        rows = rows[d.population.rows(rows, d.column)]
        values = pd.to_numeric(rows[d.column], errors="coerce")
        want = {"mean": values.mean(), "median": values.median(), "95th percentile": np.percentile(values, 95),
                "sum": values.sum()}[d.statistic.name]  # fmt: skip
        assert r.value == pytest.approx(want), r
        assert r.questions == len(rows), r
        checked.add(name)
    assert {"recall", "mrr", "hit", "session_recall", "empty_rate", "correct_empty_rate", "context_chars",
            "latency_ms_p95"} <= checked  # fmt: skip
    assert "rr" not in table.columns and "correct_empty" not in table.columns


def test_a_registration_that_cannot_be_read_is_refused_and_leaves_the_registry_as_it_was():
    before = lab.metrics.metric_registry()
    bad = [
        (MetricDefinition("recall", "higher", 0.02, "again", question=first_hit_rank), "already defined"),
        (MetricDefinition("hit@1", "higher", 0.02, "cut", question=first_hit_rank), "letters, digits"),
        (MetricDefinition("vague", None, 0.02, "which way?", question=first_hit_rank), "needs `better`"),
        (MetricDefinition("loose", "higher", None, "not gated, no reason", question=first_hit_rank), "not_gated"),
        (MetricDefinition("empty", "lower", 0.02, "a recorded column's name", question=first_hit_rank),
         "per-question record"),
        (MetricDefinition("top_k1", "higher", 0.02, "cut twice", question=Success @ 1, at_k=True), "already cut"),
        (MetricDefinition("nope", "higher", 0.02, "no function", question="recall"), "function"),
        (MetricDefinition("twice", "higher", 0.02, "both", question=first_hit_rank, of="latency_ms"), "not both"),
        (MetricDefinition("fuzzy", "sideways", 0.02, "direction", question=first_hit_rank), "better="),
        (MetricDefinition("wide", "higher", -1.0, "negative", question=first_hit_rank), "at least 0"),
    ]  # fmt: skip
    for definition, message in bad:
        with pytest.raises(ConfigError, match=message):
            lab.metrics.register_metric(definition)
        assert lab.metrics.metric_registry() == before, definition.name
    with pytest.raises(ConfigError, match="already defined"), lab.metrics.registered_metrics(FIRST, FIRST):
        pass
    assert lab.metrics.metric_registry() == before, "the entry added before the refused one was removed"
    with pytest.raises(RuntimeError), lab.metrics.registered_metrics(FIRST):
        assert lab.metrics.metric_registry()[-1] is FIRST
        raise RuntimeError("the block fails")
    assert lab.metrics.metric_registry() == before
    with pytest.raises(ConfigError, match="memlab's own"):
        lab.metrics.unregister_metric("recall")


def test_per_question_scores_of_an_older_format_are_read_under_the_metric_names(made, tmp_path):
    """A format-2 folder wrote reciprocal rank as `rr` and the correct-empty flag as `correct_empty`, with no
    `empty_rate` column: read, they are the current columns, so intervals, the gate and compare read them."""
    old = Path(shutil.copytree(made, tmp_path / "old"))
    manifest = json.loads((old / "manifest.json").read_text())
    (old / "manifest.json").write_text(json.dumps({**manifest, "format_version": 2}))
    now = pd.read_parquet(made / "question_scores.parquet")
    now.rename(columns={"mrr": "rr", "correct_empty_rate": "correct_empty"}).drop(columns=["empty_rate"])\
        .to_parquet(old / "question_scores.parquet")  # fmt: skip
    read = lab.RunFolder(old).question_scores
    for column in ("mrr", "empty_rate", "correct_empty_rate"):
        assert np.array_equal(read[column].to_numpy(float), now[column].to_numpy(float), equal_nan=True), column
    assert lab.report.load_questions(old)[["mrr", "empty_rate"]].equals(read[["mrr", "empty_rate"]])
    compared = lab.compare_runs(old, made).table.set_index(["system", "metric"])
    assert compared.at[("event-exact", "mrr@10"), "change"] == 0.0
    assert compared.at[("event-exact", "empty_rate"), "questions"] == sum(now[now.system == "event-exact"].answerable)

    committed = ROOT / "reports" / "baseline.json"  # format 1, its questions file under the former names
    questions = lab.report.load_questions(committed, baseline=True)
    assert {"mrr", "empty_rate", "correct_empty_rate"} <= set(questions.columns) and "rr" not in questions.columns
    metrics = lab.report.load_metrics(committed, what="baseline")
    keys = [k for k in metrics if k.endswith(("/mrr@10", "/empty_rate", "/correct_empty_rate")) and "@cut" not in k]
    iv = lab.metrics.intervals(questions, keys)
    assert len(iv) > 100
    assert all(math.isclose(v, metrics[key], abs_tol=1e-12) for key, v in zip(iv.key, iv.value, strict=True))
