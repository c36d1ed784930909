"""Labels pointing at events the data does not hold are never dropped silently: a BEIR qrels row for a document
the corpus lacks, a LoCoMo evidence id the conversation lacks, a judged event the sessions no longer hold. Each is
counted in the run's log, manifest and report; a data set that lost most of its labels is refused (its recall
would read 1.000 where trec_eval on the same labels gives 0.083); memlab JSONL and LongMemEval refuse such a
label outright."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from memlab import MemlabError, lab
from memlab.cli import app
from memlab.errors import FixtureError
from tests.conftest import ROOT
from tests.integration.lab.datasets.test_judged_set import APP, JUDGED, judgment, write_judgments, write_pool
from tests.integration.lab.experiment.test_experiment import write_longmemeval_file
from tests.integration.lab.judging.test_pool import QUERIES, write_queries, write_sessions

BEIR = ROOT / "fixtures" / "beir" / "example"
LOCOMO = ROOT / "fixtures" / "locomo" / "example.json"


def stray_qrels(tmp_path: Path) -> Path:
    """q1 has 12 relevant documents, 11 of them not in the corpus: kept alone, d1 makes recall@3 read 1.000 where
    trec_eval (all 12 labels) gives 1/12 = 0.083."""
    folder = tmp_path / "stray"
    shutil.copytree(BEIR, folder)
    rows = ["query-id\tcorpus-id\tscore", "q1\td1\t1", *[f"q1\tgone{i}\t1" for i in range(11)]]
    (folder / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n")
    return folder


def write_config(tmp_path: Path, datasets: list[dict]) -> Path:
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump({"name": "dropped", "k": 3, "plots": False, "datasets": datasets,
                                    "systems": [{"name": "event", "strategy": "exact"}], "sweeps": []}))  # fmt: skip
    return path


def test_eval_refuses_a_beir_folder_whose_qrels_mostly_point_outside_the_corpus(tmp_path):
    config = write_config(tmp_path, [{"name": "stray", "format": "beir", "path": str(stray_qrels(tmp_path))}])
    result = CliRunner().invoke(app, ["eval", "--config", str(config), "--out", str(tmp_path / "run")])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert lines[-1].startswith("error: ") and sum(line.startswith("error: ") for line in lines) == 1, lines
    assert "11 of 12 labels (92%)" in lines[-1] and "qrels rows naming a document not in corpus.jsonl: 11" in lines[-1]
    assert "line 3: q1 -> gone0" in lines[-1] and "trec_eval" in lines[-1], lines[-1]
    assert not (tmp_path / "run" / "manifest.json").exists()


def test_check_dataset_refuses_it_too(tmp_path):
    result = CliRunner().invoke(app, ["check-dataset", str(stray_qrels(tmp_path)), "--format", "beir"])
    assert result.exit_code == 2 and "11 of 12 labels" in result.output, result.output


def test_eval_counts_every_dropped_label_in_the_log_manifest_and_report(tmp_path, memlab_home, store):
    """The example folder: q3's d9 is not in the corpus (1 of 5 relevant labels), q4 has no qrels row, q5 only
    a score of 0."""
    config = write_config(tmp_path, [{"name": "beir-tiny", "format": "beir", "path": str(BEIR)}])
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--config", str(config), "--out", str(out)])
    assert result.exit_code == 0, result.output
    log = " ".join(result.output.split())
    assert "warning: data set 'beir-tiny': loading dropped 1 of 5 labels (20%)" in log, log
    assert "qrels rows naming a document not in corpus.jsonl: 1 (line 6: q3 -> d9)" in log
    assert "queries without a qrels row: 1 (q4)" in log
    manifest = json.loads((out / "manifest.json").read_text())
    (entry,) = manifest["datasets"]
    assert (entry["labels_given"], entry["labels_dropped"]) == (5, 1)
    assert entry["dropped"] == {"qrels rows naming a document not in corpus.jsonl": 1,
                                "queries without a qrels row": 1,
                                "queries without a relevant document (score > 0) in the corpus": 1}  # fmt: skip
    assert any("dropped 1 of 5 labels" in w for w in manifest["warnings"])
    report = (out / "report.md").read_text()
    assert "## Warnings" in report and "dropped 1 of 5 labels" in report and "labels_dropped" in report


def test_locomo_evidence_ids_outside_the_conversation_are_counted_and_mostly_lost_is_refused(tmp_path):
    data = lab.load_dataset({"name": "locomo", "format": "locomo", "path": str(LOCOMO)})
    lost, given = data.label_loss()
    assert lost == 2 and given > lost  # conv-a/q5's D9:9 and conv-a/q6's D7:1
    assert any("dropped 2 of" in w for w in lab.datasets.dataset_warnings([data], {"systems": [], "sweeps": []}))
    samples = json.loads(LOCOMO.read_text())
    for sample in samples:
        for item in sample["qa"]:
            if item.get("category") != 5:
                item["evidence"] = [*(item.get("evidence") or []), "D90:1", "D91:1", "D92:1"]
    path = tmp_path / "stray.json"
    path.write_text(json.dumps(samples))
    with pytest.raises(FixtureError, match=r"labels \(\d+%\) name events the data does not hold.*evidence ids not in "
                                           r"the conversation"):  # fmt: skip
        lab.load_dataset({"name": "stray", "format": "locomo", "path": str(path)})


@pytest.fixture
def judged(tmp_path) -> dict[str, Path]:
    sessions = write_sessions(tmp_path / "logs.jsonl", APP)
    return {"queries": write_queries(tmp_path / "queries.jsonl", APP, QUERIES), "sessions": tmp_path / "logs.jsonl",
            "pool": write_pool(tmp_path / "pool.json", sessions),
            "judgments": write_judgments(tmp_path / "j.jsonl", [judgment(*row) for row in JUDGED])}  # fmt: skip


def _drop_event(path: Path, event: str) -> None:
    """The sessions file without one event (erased since the pool was made)."""
    lines = []
    for raw in path.read_text().splitlines():
        record = json.loads(raw)
        if record.get("type") == "session":
            record["events"] = [e for e in record["events"] if e["id"] != event]
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")


def load_judged(files: dict[str, Path]) -> lab.Dataset:
    return lab.load_dataset({"name": "mine", "format": "judged", **{k: str(v) for k, v in files.items()}})


def test_a_judged_event_the_sessions_no_longer_hold_is_dropped_and_counted(judged):
    _drop_event(judged["sessions"], "s0-e3")  # one of q-sister's two relevant events
    data = load_judged(judged)
    sister = next(q for q in data.questions if q.id == "q-sister")
    assert sister.evidence == (("s0", "s0-e2"),) and ("s0", "s0-e3") not in sister.judged
    assert data.dropped["relevant judgments of events not in the sessions"] == ["q-sister: s0/s0-e3"]
    assert data.label_loss() == (1, 3)
    result = CliRunner().invoke(app, ["check-dataset", str(judged["queries"]), "--format", "judged", "--pool",
                                      str(judged["pool"]), "--judgments", str(judged["judgments"]), "--sessions",
                                      str(judged["sessions"])])  # fmt: skip
    assert result.exit_code == 0 and "labels dropped (naming events the data does not hold): 1 of 3" in result.output


def test_a_judged_query_whose_relevant_events_are_all_gone_is_dropped_not_made_no_answer(judged):
    _drop_event(judged["sessions"], "s0-e0")  # q-cat's only relevant event
    data = load_judged(judged)
    assert "q-cat" not in {q.id for q in data.questions}
    assert data.dropped["queries whose relevant judged events are all missing from the sessions"] == ["q-cat"]
    _drop_event(judged["sessions"], "s0-e2")
    with pytest.raises(FixtureError, match=r"2 of 3 labels"):
        load_judged(judged)


def test_memlab_jsonl_and_longmemeval_refuse_a_label_outside_the_data(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text((ROOT / "fixtures" / "jsonl" / "example.jsonl").read_text().replace('"relevant": ["',
                                                                                        '"relevant": ["nowhere", "', 1))
    with pytest.raises(MemlabError, match=r"relevant event id.*nowhere"):
        lab.load_dataset({"name": "d", "format": "memlab", "path": str(path)})
    lme = tmp_path / "lme.json"
    write_longmemeval_file(lme)
    records = json.loads(lme.read_text())
    records[0]["answer_session_ids"] = [*records[0]["answer_session_ids"], "not-in-haystack"]
    lme.write_text(json.dumps(records))
    with pytest.raises(FixtureError, match="not-in-haystack"):
        lab.load_dataset({"name": "l", "format": "longmemeval", "path": str(lme)})
