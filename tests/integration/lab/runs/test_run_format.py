"""The run folder's format version: a run writes it into manifest.json; a folder written before the version
(format 1: hits, labels and event texts saved without their sessions, metrics under former names) is brought to
the current shape by one upgrade step when read, and scores as it did when it was made; a folder of a newer
format, or one missing what every format held, is refused with one line (exit 2 from the CLI).

One real `memlab eval` of two data sets: `unique`, whose event ids are unique within each user (a format-1
folder loses nothing: every session can be told again), and `turns`, whose turn ids repeat in every session (a
format-1 run was scored on the event id alone, and still is)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import ir_measures
import pandas as pd
import pytest
import yaml
from ir_measures import R
from typer.testing import CliRunner

from memlab import ConfigError, lab
from memlab.cli import app

TOPICS = {
    "trip": ["I am flying to Oslo in March for a conference.", "The hotel near the station costs 120 a night.",
             "My flight leaves at 6 in the morning from gate B.", "I will take the airport train to the city."],
    "food": ["I cook lentil soup every Sunday evening.", "My favourite spice is smoked paprika.",
             "I stopped eating red meat last year.", "The bakery on the corner sells rye bread."],
    "pets": ["My cat Miso is afraid of the vacuum.", "The vet appointment is on Thursday at five.",
             "Miso eats salmon kibble twice a day.", "I bought a scratching post for the hallway."],
}  # fmt: skip
QUESTIONS = [("trip", 2, "When does my flight leave?"), ("food", 2, "Do I eat meat?"),
             ("pets", 1, "When is the vet appointment?"), ("trip", 1, "How much is the hotel?")]  # fmt: skip
GRID = (0.4, 0.7, 1.0)  # the cut-off sweep's points: three derived runs per system
SCORED = ["returned", "empty", "context_chars", "recall_vs_exact", "recall", "precision", "mrr", "ndcg", "hit",
          "empty_rate", "correct_empty_rate"]  # fmt: skip


def write_data(path: Path, *, repeat: bool) -> Path:
    """Two users, three sessions each; with `repeat` every session numbers its turns D1:0..D1:3 (an id names one
    event per session), else each turn's id names its topic. Labels name their event by id and session label."""
    lines = []
    for u, user in enumerate(("ana", "ben")):
        for d, (topic, texts) in enumerate(TOPICS.items()):
            events = [{"id": f"D1:{i}" if repeat else f"{topic}-{i}", "author": "user",
                       "at": f"2026-0{d + 1}-0{u + 1}T10:0{i}:00Z", "text": text} for i, text in enumerate(texts)]
            lines.append({"type": "session", "app": "chat", "user": user, "id": topic, "events": events})
        for n, (topic, turn, text) in enumerate(QUESTIONS):
            lines.append({"type": "question", "id": f"{user} q{n}", "app": "chat", "user": user, "text": text,
                          "asked_at": "2026-06-01T12:00:00Z", "relevant": [f"D1:{turn}" if repeat else
                                                                            f"{topic}-{turn}"],
                          "relevant_sessions": [topic]})  # fmt: skip
        lines.append({"type": "question", "id": f"{user} none", "app": "chat", "user": user,
                      "text": "What is my sister's name?", "asked_at": "2026-06-01T12:00:00Z", "relevant": []})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


@pytest.fixture(scope="module")
def made(tmp_path_factory, memlab_home, store) -> Path:
    folder = tmp_path_factory.mktemp("format")
    config = {"name": "format", "k": 10, "plots": False,
              "datasets": [{"name": name, "format": "memlab", "path": str(write_data(folder / f"{name}.jsonl",
                                                                                     repeat=name == "turns"))}
                           for name in ("unique", "turns")],
              "systems": [{"name": "event-exact", "strategy": "exact"},
                          {"name": "chunk2", "granularity": "chunk", "chunk_size": 2, "chunk_overlap": 0,
                           "strategy": "exact"}], "sweeps": ["cutoff"],
              "options": {"cutoff": {"grid": list(GRID)}}}  # fmt: skip
    (folder / "format.yaml").write_text(yaml.safe_dump(config))
    run = folder / "run"
    result = CliRunner().invoke(app, ["eval", "--config", str(folder / "format.yaml"), "--out", str(run)])
    assert result.exit_code == 0, result.output
    return run


def format_1(run: Path, old: Path) -> Path:
    """A copy of `run` as memlab wrote folders before the format version: no version in the manifest, hits and
    labels without their sessions, events without author and text, the per-hit AUC under its former name."""
    shutil.copytree(run, old)
    manifest = json.loads((old / "manifest.json").read_text())
    del manifest["format_version"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    for path in (old / "runs").glob("*.parquet"):
        pd.read_parquet(path).drop(columns=["session_id", "event_sessions"]).to_parquet(path)
    for path in (old / "labels").glob("*.questions.parquet"):
        frame = pd.read_parquet(path)
        frame.drop(columns=[c for c in frame.columns if c.startswith(("evidence_", "judged_"))]).to_parquet(path)
    for path in (old / "labels").glob("*.events.parquet"):
        pd.read_parquet(path).drop(columns=["author", "text"]).to_parquet(path)
    scores = format_4_scores(pd.read_parquet(old / "scores.parquet"))
    scores.assign(metric=scores.metric.replace("hit_distance_roc_auc", "distance_roc_auc")).to_parquet(
        old / "scores.parquet")  # fmt: skip
    metrics = json.loads((old / "metrics.json").read_text())
    (old / "metrics.json").write_text(json.dumps({k.replace("/hit_distance_roc_auc", "/distance_roc_auc"): v
                                                  for k, v in metrics.items()}))  # fmt: skip
    return old


def format_4_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Long-form scores as formats 1 to 4 wrote them: a breakdown written into the metric, no group columns."""
    labels = [m if not g else f"{m}[{g}={v}]" for m, g, v in zip(scores.metric, scores.group, scores.group_value,
                                                                  strict=True)]  # fmt: skip
    return scores.assign(metric=labels).drop(columns=["group", "group_value"])


def format_4(run: Path, old: Path) -> Path:
    """A copy of `run` as format 4 wrote it: everything as now but the scores' breakdowns, in the metric."""
    shutil.copytree(run, old)
    manifest = json.loads((old / "manifest.json").read_text())
    (old / "manifest.json").write_text(json.dumps({**manifest, "format_version": 4}))
    format_4_scores(pd.read_parquet(old / "scores.parquet")).to_parquet(old / "scores.parquet")
    return old


@pytest.fixture
def old(made, tmp_path) -> Path:
    return format_1(made, tmp_path / "old")


def _rescored(folder: Path) -> pd.DataFrame:
    lab.score_folder(folder)
    return pd.read_parquet(folder / "question_scores.parquet").set_index(["dataset", "system", "question_id"])\
        .sort_index()  # fmt: skip


def test_a_run_writes_its_format_version(made):
    assert json.loads((made / "manifest.json").read_text())["format_version"] == lab.runs.FORMAT_VERSION
    assert lab.RunFolder(made).version == lab.runs.FORMAT_VERSION
    assert "event_sessions" in pd.read_parquet(next((made / "runs").glob("unique__*.parquet"))).columns


def test_a_format_1_folder_is_read_in_the_current_shape(old):
    folder = lab.RunFolder(old)
    assert folder.version == 1
    known: dict[str, set] = {"unique": set(), "turns": set()}
    for run in lab.runs.load_runs(old):
        frame = run.frame
        assert {"session_id", "event_sessions", "lexical", "coverage", "score"} <= set(frame.columns), run.system
        assert all(len(s) == len(e) for s, e in zip(frame.event_sessions, frame.event_ids, strict=True))
        known[run.dataset].update(s for sessions in frame.event_sessions for s in sessions)
    assert known["unique"] == set(TOPICS), "each id is held by one session: every session is known again"
    assert known["turns"] == {None}, "D1:0 is in every session: which one a hit came from cannot be told"
    for dataset in ("unique", "turns"):
        assert all(s in TOPICS for q in folder.questions(dataset) for s, _ in q.evidence), "labels placed again"
        assert {"author", "text"} <= set(folder.events(dataset).columns)
    assert "hit_distance_roc_auc" in set(folder.scores.metric) and "distance_roc_auc" not in set(folder.scores.metric)
    metrics = lab.report.load_metrics(old)
    assert any(k.endswith("/hit_distance_roc_auc") for k in metrics)
    assert not any(k.endswith("/distance_roc_auc") and "hit_" not in k for k in metrics)


def test_a_format_1_folder_scores_as_it_did_when_it_was_made(made, old, tmp_path):
    """Where every session can be told again, the old folder scores exactly as the current one, session recall
    and the viewer's relevant marks included; where ids repeat, the hits are matched on the event id, as
    `score` matches a run frame without sessions (how such runs were scored when they were made)."""
    now, then = _rescored(made), _rescored(old)
    unique = then.loc["unique"]
    pd.testing.assert_frame_equal(unique, now.loc["unique"][unique.columns], check_like=True)
    assert unique.session_recall.notna().any() and (unique.session_recall > 0).any()
    current = lab.RunFolder(made)
    for system, run in current.runs("turns").items():
        bare = run.frame.drop(columns=["session_id", "event_sessions"])
        exact = current.runs("turns").get(run.reference) if run.reference else None
        exact_bare = exact.frame.drop(columns=["session_id", "event_sessions"]) if exact is not None else None
        expected = lab.metrics.score(bare, current.questions("turns"), k=10, exact=exact_bare).set_index("question_id")
        got = then.loc[("turns", system)]
        for column in SCORED:
            want = expected.loc[got.index, column].astype(float).tolist()
            assert got[column].astype(float).tolist() == pytest.approx(want, nan_ok=True), (system, column)
    assert (then.loc["turns"].session_recall < now.loc["turns"].session_recall).any(), \
        "a hit of a repeated id gives no session: the folder did not record which one"  # fmt: skip
    shown_now, shown_then = lab.question_hits(made, "unique"), lab.question_hits(old, "unique")
    assert shown_then.relevant.tolist() == shown_now.relevant.tolist() and shown_then.relevant.any()
    assert (lab.question_hits(old, "turns").text == "").all(), "format 1 kept no texts"


def test_a_format_1_folder_exports_what_memlab_scores(old, tmp_path):
    """The TREC export of an old folder names each event as scoring did: ir-measures gives memlab's recall@10."""
    out = tmp_path / "trec"
    result = CliRunner().invoke(app, ["export", "--run", str(old), "--out", str(out)])
    assert result.exit_code == 0, result.output
    scores = _rescored(old)
    for entry in json.loads((out / "export.json").read_text())["files"]:
        if entry["system"] not in ("event-exact", "chunk2"):
            continue
        qrels = list(ir_measures.read_trec_qrels(str(out / entry["qrels"])))
        ranked = list(ir_measures.read_trec_run(str(out / entry["run"])))
        theirs = {m.query_id: m.value for m in ir_measures.iter_calc([R @ 10], qrels, ranked)}
        mine = scores.loc[(entry["dataset"], entry["system"])]
        mine = mine[mine.answerable]
        assert theirs == pytest.approx({q.replace(" ", "%20"): v for q, v in mine.recall.items()}), entry


def test_a_format_4_folder_reads_its_breakdowns_into_the_group_columns(made, tmp_path):
    """Format 4 wrote `recall@10[qtype=default]` as a metric of scores.parquet: read, it is `recall@10` with group
    `qtype` and value `default`, as a current folder holds it, and the report reads its breakdowns so."""
    old = format_4(made, tmp_path / "v4")
    assert "recall@10[qtype=default]" in set(pd.read_parquet(old / "scores.parquet").metric), "the old shape on disk"
    now, then = lab.RunFolder(made).scores, lab.RunFolder(old).scores
    assert lab.RunFolder(old).version == 4 < lab.runs.FORMAT_VERSION
    columns = ["dataset", "system", "metric", "group", "group_value", "value", "questions", "role", "sweep", "parent"]
    pd.testing.assert_frame_equal(then[columns], now[columns])
    typed = then[(then.metric == "recall@10") & (then.group == "qtype")]
    asked = then[(then.metric == "recall@10") & (then.group == "") & (then.role != "cut")]  # cuts: no breakdowns
    assert set(typed.group_value) == {"default"} and sorted(typed.system) == sorted(asked.system)
    same = lab.report.load_metrics(old) == lab.report.load_metrics(made)
    assert same, "metrics.json's flat keys are the same in every format"
    lab.write_report(old)
    assert "## Reading the numbers" in (old / "report.md").read_text()


def test_a_format_4_scores_file_missing_what_every_format_held_is_refused_with_one_line(made, tmp_path):
    old = format_4(made, tmp_path / "v4")
    pd.read_parquet(old / "scores.parquet").drop(columns=["metric"]).to_parquet(old / "scores.parquet")
    with pytest.raises(ConfigError, match=r"scores\.parquet lacks metric"):
        lab.RunFolder(old).scores  # noqa: B018  (reading it is the test)
    result = CliRunner().invoke(app, ["report", "--run", str(old)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "scores.parquet" in result.output and "metric" in result.output and "memlab eval" in result.output


def test_cut_offs_are_saved_as_runs_derived_from_their_parent(made):
    """The cut-off sweep's grid points are derived runs: each saved with role `cut`, the sweep and its parent
    recorded, and holding exactly its parent's saved run cut at its distance (no question asked again)."""
    folder = lab.RunFolder(made)
    runs = folder.runs("unique")
    cuts = {name: run for name, run in runs.items() if run.role is not None and run.role.role == "cut"}
    assert cuts and {r.role.sweep for r in cuts.values()} == {"cutoff"}
    assert {r.role.parent for r in cuts.values()} == {"event-exact", "chunk2"}
    recorded = folder.manifest["systems"]["unique"]  # what each system is, as the run recorded it
    assert {recorded[n]["role"] for n in ("event-exact", "chunk2", "faiss-exact-event")} == {"main", "reference"}
    assert sorted(recorded[name]["max_distance"] for name in cuts if cuts[name].role.parent == "chunk2") == \
        sorted(GRID)  # fmt: skip
    for name, run in cuts.items():
        info = recorded[name]
        assert (info["kind"], info["role"], info["sweep"], info["parent"]) == ("cutoff", "cut", "cutoff",
                                                                              run.role.parent), name  # fmt: skip
        grid = [lab.metrics.CutRun(name, info["parent"], info["max_distance"])]
        derived = grid[0].derive(runs[run.role.parent].frame)
        same = ["system", "question_id", "rank", "distance", "chars", "latency_ms"]
        pd.testing.assert_frame_equal(run.frame[same].reset_index(drop=True), derived[same].reset_index(drop=True),
                                      check_dtype=False)  # fmt: skip
        assert run.frame.unit_id.fillna("").tolist() == derived.unit_id.fillna("").tolist(), name
        assert not run.frame.distance.max() > grid[0].max_distance, name
    recorded = folder.scores.drop_duplicates(["dataset", "system"]).set_index(["dataset", "system"]).parent
    assert all(recorded[("unique", name)] == run.role.parent for name, run in cuts.items())


def test_a_folder_of_a_newer_format_is_refused_with_one_line(made, tmp_path):
    new = tmp_path / "new"
    shutil.copytree(made, new)
    manifest = json.loads((new / "manifest.json").read_text())
    (new / "manifest.json").write_text(json.dumps({**manifest, "format_version": lab.runs.FORMAT_VERSION + 1}))
    newer = lab.runs.FORMAT_VERSION + 1
    with pytest.raises(ConfigError, match=rf"format version {newer}.*newer memlab.*upgrade memlab"):
        lab.RunFolder(new).runs("unique")
    with pytest.raises(ConfigError, match="newer memlab"):
        lab.report.load_metrics(new)
    for args in (["report", "--run", str(new)], ["export", "--run", str(new), "--out", str(tmp_path / "trec")],
                 ["report", "--run", str(made), "--against", str(new)]):  # fmt: skip
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert len(result.output.strip().splitlines()) == 1, result.output
        assert str(new) in result.output and "upgrade memlab" in result.output and "memlab eval" in result.output
    assert not (tmp_path / "trec").exists(), "nothing written"


def test_a_format_1_folder_missing_what_every_format_held_is_refused(old, tmp_path):
    path = next((old / "runs").glob("unique__event-exact.parquet"))
    pd.read_parquet(path).drop(columns=["event_ids"]).to_parquet(path)
    result = CliRunner().invoke(app, ["export", "--run", str(old), "--out", str(tmp_path / "trec")])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "event_ids" in result.output and path.name in result.output and "memlab eval" in result.output


def test_format_1_sweep_tables_are_read_with_their_figures_marked_not_measured(old):
    """A facts table from before the stale and serving figures, and an answers table from before `hits_read`:
    the figures they lack read as not measured, never as 0 (no stale metric is scored, no check said to fail)."""
    facts = pd.DataFrame({"extractor": ["rules", "rules"], "fixture": ["a", "b"], "key_accuracy": [1.0, 0.5],
                          "state_exact": [1.0, 0.0], "candidate_recall": [1.0, 0.5], "candidate_precision": 1.0,
                          "dropped": [0, 2], "seconds_per_session": 0.1, "missed": ["", "user diet: vegan"]})
    answers = pd.DataFrame({"system": ["event-exact"], "question_id": ["ana q0"], "answer": ["at 6"],
                            "abstained": [False], "verdict": [True], "judge_reason": [""], "f1": [1.0],
                            "error": [""]})  # fmt: skip
    (old / "tables").mkdir(exist_ok=True)
    facts.to_parquet(old / "tables" / "facts__unique.parquet")
    answers.to_parquet(old / "tables" / "answers__unique.parquet")
    read = lab.RunFolder(old).table("facts", "unique")
    assert read.serving_failed.tolist() == ["", ""] and read.key_questions.isna().all()
    sweep = lab.SWEEPS["facts"]
    scored = sweep.scores(lab.RunFolder(old), "unique", {}, pd.DataFrame())
    assert set(scored.metric) == {"key_accuracy", "state_exact", "candidate_recall", "candidate_precision", "dropped",
                                  "seconds_per_session"}, "no stale figure was measured"  # fmt: skip
    assert "Every serving check of the fixtures held." in sweep.section(lab.RunFolder(old), "unique", {})
    shown = lab.report.write_html(old, [], []).read_text()
    assert '"read":null' in shown, "how many hits the reader read was not recorded"
