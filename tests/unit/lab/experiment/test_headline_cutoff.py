"""The report's headline on doctored run folders: the cut-off it recommends for the best system with its cost, none
when distance does not separate answerable from no-answer questions, its warnings, ties and small data sets.

The folders are built the way a run writes them (labels, one saved run per system, a manifest), scored by
`lab.score_folder` and reported by `lab.write_report`; only the hit lists are made up, so the distances can be
set to separate or to overlap."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

import memlab
from memlab import lab
from memlab.lab.metrics.cutoffs import cut
from memlab.lab.metrics.uncertainty import MIN_QUESTIONS, tied, too_few
from memlab.lab.runs.folder import save_labels  # the writer a run uses for its labels
from memlab.lab.sweeps.cutoff import DEFAULT_GRID, cut_name

APP = "headline"
T0 = datetime(2026, 1, 1, tzinfo=UTC)

# One question's hit list: (distance, relevant?) for ranks 1..10.
HitList = list[tuple[float, bool]]


def _irrelevant(start: float) -> HitList:
    return [(round(start + 0.02 * i, 3), False) for i in range(10)]


def _folder(root: Path, hits: dict[str, Callable[[int, bool], HitList]], *, answerable: int, no_answer: int,
            name: str = "doctored", swept: tuple[str, ...] = ()) -> Path:  # fmt: skip
    """A run folder of one data set (`answerable` + `no_answer` questions, one user each) and one saved run per
    system, whose hits per question come from `hits[system](question number, answerable?)`; the systems in
    `swept` also get the cut-off sweep's runs (cut at every distance of its grid), as a run saves them."""
    users, questions = [], []
    for i in range(answerable + no_answer):
        user = f"u{i:03d}"
        events = [memlab.Event(id=f"{user}-e{j}", author="user", timestamp=T0, text=f"note {j} of {user}")
                  for j in range(12)]  # fmt: skip
        users.append(lab.datasets.UserHistory(APP, user, [memlab.Session(APP, user, f"{user}-s", tuple(events))]))
        relevant = (f"{user}-e0",) if i < answerable else ()
        questions.append(lab.Question(id=f"{user}-q", app_name=APP, user_id=user, text=f"question {i}",
                                      relevant=relevant))  # fmt: skip
    out = root / name
    out.mkdir()
    dataset = lab.Dataset(name, users, questions)
    save_labels(out, dataset)
    by_id = {q.id: i for i, q in enumerate(questions)}
    for system, make in hits.items():

        def search(q: lab.Question, _vector: np.ndarray, make=make) -> list[memlab.Hit]:
            return [memlab.Hit(unit_id=f"{q.user_id}-{rank}", text="x" * 20, distance=distance,
                               session_id=f"{q.user_id}-s", event_ids=(f"{q.user_id}-e{0 if hit else rank + 1}",))
                    for rank, (distance, hit) in enumerate(make(by_id[q.id], q.answerable), start=1)]  # fmt: skip

        frame = lab.runs.collect(system, search, questions, {q.id: np.zeros(1) for q in questions})
        lab.runs.Run(name, system, frame).save(out)
        for distance in DEFAULT_GRID if system in swept else ():
            cut_system = cut_name(system, distance)
            lab.runs.Run(name, cut_system, cut(frame, distance).assign(system=cut_system)).save(out)
    manifest = {"status": "complete", "datasets": [{"name": name, "checksum": dataset.checksum(), **dataset.summary()}],
                "config": {"resolved": {"name": "doctored", "k": 10, "sweeps": ["cutoff"],
                                        "options": {"cutoff": {"systems": list(swept)}}}}}  # fmt: skip
    (out / "manifest.json").write_text(json.dumps(manifest))
    lab.score_folder(out)
    return out


def _headline(folder: Path) -> str:
    """The report's headline line of the data set, as report.md prints it."""
    lab.write_report(folder)
    text = (folder / "report.md").read_text()
    head = text.split("## Headline", 1)[1].split("\n## ", 1)[0]
    return next(line for line in head.splitlines() if line.startswith("- **"))


def separating(i: int, answerable: bool) -> HitList:
    """Answerable questions: the relevant event first at 0.30; no-answer questions: nothing nearer than 0.80."""
    return [(0.30, True), *_irrelevant(0.70)[:9]] if answerable else _irrelevant(0.80)


def overlapping(i: int, answerable: bool) -> HitList:
    """The nearest hit of either kind of question at the same spread of distances (0.30 to 0.75): distance says
    nothing about whether a question has an answer."""
    nearest = 0.30 + 0.05 * (i % 10)
    return [(round(nearest, 3), answerable), *_irrelevant(nearest + 0.01)[:9]]


def near_miss(i: int, answerable: bool) -> HitList:
    """Seven answerable questions in ten have an irrelevant hit at 0.30 and the answer at 0.60, while no-answer
    questions start at 0.52: a cut that spares the no-answer questions loses most answers."""
    if not answerable:
        return _irrelevant(0.52)
    if i % 10 < 7:
        return [(0.30, False), (0.60, True), *_irrelevant(0.70)[:8]]
    return [(0.30, True), *_irrelevant(0.70)[:9]]


def missing_some(i: int, answerable: bool) -> HitList:
    """As `separating`, but every third answerable question's answer is not returned."""
    hits = separating(i, answerable)
    return [(d, False) for d, _ in hits] if answerable and i % 3 == 0 else hits


def test_no_cutoff_is_recommended_when_distance_does_not_separate(tmp_path):
    folder = _folder(tmp_path, {"pg-exact": overlapping}, answerable=40, no_answer=30)
    line = _headline(folder)
    assert "Cut-off for `pg-exact`: none recommended" in line, line
    assert "distance does not separate answerable from no-answer questions" in line
    assert "max_distance" not in line, "no threshold is printed for a reader to paste"
    nearest = [0.30 + 0.05 * (i % 10) for i in range(70)]
    auc = roc_auc_score([i < 40 for i in range(70)], -np.array(nearest))
    assert auc < 0.7
    assert f"ROC AUC {auc:.2f}" in line, f"the AUC is named: {line}"


def test_the_cutoff_is_given_for_the_best_system_with_what_it_keeps_and_reaches(tmp_path):
    folder = _folder(tmp_path, {"pg-exact": separating, "event": separating, "chunk4o1": missing_some},
                     answerable=40, no_answer=25, swept=("chunk4o1",))  # fmt: skip
    stored = lab.RunFolder(folder).scores
    assert (stored.metric == "recommended_max_distance").any(), "the sweep recommended a cut-off for chunk4o1"
    line = _headline(folder)
    match = re.search(r"Recommended cut-off for `pg-exact`: max_distance ([0-9.]+) keeps recall@10 ([0-9.]+) of "
                      r"([0-9.]+) \((\d+)% of the recall without a cut-off\) and leaves false memories on (\d+)% "
                      r"of the 25 no-answer questions", line)  # fmt: skip
    assert match, line
    distance, recall, uncut, kept, false_memory = match.groups()
    assert 0.30 <= float(distance) < 0.80, "between the answers and the nearest no-answer hit"
    assert (recall, uncut, kept, false_memory) == ("1.000", "1.000", "100", "0")
    assert "Warning" not in line, "25 no-answer questions and all the recall kept: nothing to warn about"
    assert "tied: `pg-exact`, `event`)" in line, "two identical systems are tied, not one of them best"
    assert "chunk4o1" not in line, "not the cut-off of a system the headline does not name best"


def test_a_cutoff_keeping_under_half_the_recall_is_flagged(tmp_path):
    folder = _folder(tmp_path, {"pg-exact": near_miss}, answerable=40, no_answer=25)
    line = _headline(folder)
    assert "Recommended cut-off for `pg-exact`" in line, line
    assert "keeps recall@10 0.300 of 1.000 (30% of the recall without a cut-off)" in line, line
    assert "**Warning**: it keeps under half the recall (30%)" in line
    assert "no-answer questions (under 20)" not in line


def test_a_cutoff_resting_on_few_no_answer_questions_is_flagged(tmp_path):
    folder = _folder(tmp_path, {"pg-exact": separating}, answerable=40, no_answer=5)
    line = _headline(folder)
    assert "Recommended cut-off for `pg-exact`" in line, line
    assert "**Warning**: it rests on only 5 no-answer questions (under 20)" in line, line
    assert "keeps under half" not in line


def test_a_small_data_set_is_called_too_small_and_the_two_intervals_are_explained(tmp_path):
    folder = _folder(tmp_path, {"pg-exact": missing_some, "chunk2o0": separating}, answerable=6, no_answer=0)
    lab.write_report(folder)
    head = (folder / "report.md").read_text().split("## Headline", 1)[1].split("\n## ", 1)[0]
    line = next(line for line in head.splitlines() if line.startswith("- **"))
    assert "best `chunk2o0` recall@10 1.000" in line and "over plain vector `pg-exact`" in line, line
    assert "**Too few questions to judge**: 6 answerable questions (under 20)" in line
    assert "none recommended: the data set has no no-answer questions" in line
    assert "The first interval is where the best system's own recall@10" in head, "the two intervals explained"
    section = (folder / "report.md").read_text().split("## doctored", 1)[1]
    assert "**Too few questions to judge**: at most 6 answerable questions" in section, "and in its own section"


def test_ties_are_equal_means_or_the_same_score_on_every_question():
    frame = pd.DataFrame([
        {"dataset": "d", "system": s, "question_id": f"q{i}", "answerable": True, "recall": r}
        for s, scores in {"a": [1, 0, 1, 1], "b": [1, 0, 1, 1], "c": [0, 1, 1, 1], "d": [0, 0, 1, 1],
                          "e": [1, 0, 1, 1, None]}.items()
        for i, r in enumerate(scores)
    ])  # fmt: skip
    means = frame.groupby("system", sort=False).recall.mean()
    means["e"] += 0.25  # a mean over other questions: different, yet the same score on every shared question
    assert tied(means, "a", frame, dataset="d", metric="recall@10") == ["a", "b", "c", "e"]
    assert tied(means, "a") == ["a", "b", "c"], "without the per-question table: equal means only"
    assert tied(means, "d", frame, dataset="d", metric="recall@10") == ["d"]
    assert too_few(MIN_QUESTIONS - 1) and not too_few(MIN_QUESTIONS)


def _section(folder: Path) -> str:
    """The cut-off sweep's section of report.md."""
    text = (folder / "report.md").read_text()
    return text.split("### cutoff (", 1)[1].split("\n## ", 1)[0]


def test_no_reader_advises_a_cutoff_the_headline_refuses(tmp_path):
    """Distance does not separate the questions (per-question AUC about 0.5), yet a cut at 0.35 keeps false
    memories under 20% on the grid: the headline, the sweep's stored advice, its section and `lab.metrics.recommend` all
    say none."""
    folder = _folder(tmp_path, {"pg-exact": overlapping}, answerable=40, no_answer=30, swept=("pg-exact",))
    line = _headline(folder)
    assert "Cut-off for `pg-exact`: none recommended" in line, line
    stored = lab.RunFolder(folder).scores
    mine = stored[stored.system == "pg-exact"].set_index("metric").value
    assert np.isnan(mine["recommended_max_distance"]), "the sweep stores no advised distance"
    assert mine["question_distance_roc_auc"] < 0.7 and "distance_roc_auc" not in mine.index
    section = _section(folder)
    assert "| pg-exact | none |" in section, section
    assert "Cut-off for `pg-exact`: none recommended" in section, "the section gives the headline's reason"
    assert not re.search(r"max_distance [0-9.]+ keeps", section), section
    run = lab.RunFolder(folder).runs("doctored")["pg-exact"].frame
    (advice,) = lab.metrics.recommend(run, lab.RunFolder(folder).questions("doctored"), k=10)
    assert advice.max_distance is None and "does not separate" in advice.reason


def test_the_advised_cutoff_is_the_same_everywhere_and_the_two_aucs_are_named_apart(tmp_path):
    folder = _folder(tmp_path, {"pg-exact": separating}, answerable=40, no_answer=25, swept=("pg-exact",))
    line = _headline(folder)
    distance = float(re.search(r"Recommended cut-off for `pg-exact`: max_distance ([0-9.]+)", line).group(1))
    assert "per-question ROC AUC 1.00 of the nearest hit's distance" in line, line
    stored = lab.RunFolder(folder).scores
    mine = stored[stored.system == "pg-exact"].set_index("metric").value
    assert mine["recommended_max_distance"] == distance
    run = lab.RunFolder(folder).runs("doctored")["pg-exact"].frame
    (advice,) = lab.metrics.recommend(run, lab.RunFolder(folder).questions("doctored"), k=10)
    assert advice.max_distance == distance
    section = _section(folder)
    assert f"| pg-exact | {distance:.3f} |" in section and f"max_distance {distance:.3f} keeps" in section
    header = next(row for row in section.splitlines() if row.startswith("| system |"))
    assert "per-question ROC AUC (nearest hit)" in header and "per-hit ROC AUC (distance)" in header, header
    assert {"question_distance_roc_auc", "hit_distance_roc_auc"} <= set(mine.index)
