"""Labels the live store lost between probes are a figure of their own: counted, alerted by the built-in
`new_lost_labels>0`, shown beside recall (never hidden in it); a probe whose every label is lost finishes and
says so; and a probe that fails leaves its Prometheus textfile saying it failed, never the previous numbers."""

from __future__ import annotations

import json
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app as cli
from tests.conftest import make_session
from tests.integration.lab.live.test_probe_store import select_only_role

TEXTS = ["I moved to Lyon last spring.", "Lyon has a lovely old town by the river.",
         "Our flat in Lyon is near the Croix-Rousse hill.", "My sister Ana plays the cello in an orchestra.",
         "I am allergic to peanuts.", "Our dog Rex is a border collie."]  # fmt: skip


def _samples(path) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(path.read_text()) for s in f.samples}  # fmt: skip


@pytest.fixture
def filled(store, embedder, tmp_path):
    """A user whose question q1 has three labels and q2 one, the labels file and a SELECT-only DSN."""
    app = f"lost-{uuid.uuid4().hex[:8]}"
    memlab.EventMemory(store, embedder).add_session(make_session(app, "u1", "s0", TEXTS))
    labels = tmp_path / "labels.jsonl"
    questions = [("q1", "Which city do I live in?", ["s0-e0", "s0-e1", "s0-e2"]),
                 ("q2", "What does my sister play?", ["s0-e3"])]  # fmt: skip
    labels.write_text("".join(json.dumps({"type": "question", "id": qid, "app": app, "user": "u1", "text": text,
                                          "relevant": relevant}) + "\n" for qid, text, relevant in questions))
    return app, labels, select_only_role(store)


def probe(*args: str):
    return CliRunner().invoke(cli, ["probe", *args])


def test_labels_lost_between_probes_are_counted_and_alerted(filled, store, embedder, tmp_path):
    app, labels, dsn = filled
    first = probe("--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "first"))
    assert first.exit_code == 0, first.output  # nothing lost: the built-in alert holds
    memory = memlab.EventMemory(store, embedder)
    for event in ("s0-e1", "s0-e2"):  # two of q1's three labels
        memory.delete_memory(app, "u1", event, session_id="s0")
    prom = tmp_path / "memlab.prom"
    second = probe("--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "second"), "--against",
                   str(tmp_path / "first"), "--textfile", str(prom))  # fmt: skip
    assert second.exit_code == 3, second.output
    manifest = lab.RunFolder(tmp_path / "second").manifest["probe"]
    assert manifest["metrics"]["lost_labels"] == 2 and manifest["metrics"]["new_lost_labels"] == 2
    assert manifest["metrics"]["lost_questions"] == 1
    assert manifest["lost"] == [{"question_id": "q1", "labels": 3, "lost": 2, "left_out": False}]
    fired = {a["alert"]: a["fired"] for a in manifest["alerts"]}
    assert fired == {"new_lost_labels>0": True}
    recall = manifest["metrics"]["recall@10_all_labels"]
    assert recall == pytest.approx((1 / 3 + 1) / 2)  # q1 finds its one label left, of three
    samples = _samples(prom)
    assert samples[("memlab_probe_new_lost_labels", ())] == 2
    assert samples[("memlab_probe_metric", (("app", app), ("metric", "lost_labels")))] == 2
    assert samples[("memlab_probe_alert_firing", (("alert", "new_lost_labels>0"),))] == 1
    report = (tmp_path / "second" / "report.md").read_text()
    assert "lost_labels = 2" in report and "| q1 " in report and "recall@10_all_labels = 0.6667" in report
    third = probe("--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "third"), "--against",
                  str(tmp_path / "second"))  # fmt: skip
    assert third.exit_code == 0, third.output  # the loss was seen by the previous probe: acknowledged


def test_a_probe_whose_every_label_is_lost_finishes_and_says_so(filled, store, embedder, tmp_path):
    app, labels, dsn = filled
    prom = tmp_path / "memlab.prom"
    assert probe("--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "before"), "--textfile",
                 str(prom)).exit_code == 0  # fmt: skip
    assert _samples(prom)[("memlab_probe_metric", (("app", app), ("metric", "recall@10")))] == 1.0
    memory = memlab.EventMemory(store, embedder)
    for event in ("s0-e0", "s0-e1", "s0-e2", "s0-e3"):
        memory.delete_memory(app, "u1", event, session_id="s0")
    result = probe("--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "after"), "--textfile", str(prom),
                   "--alert", "recall@10<0.8")  # fmt: skip
    assert result.exit_code == 3, result.output
    folder = lab.RunFolder(tmp_path / "after")
    assert folder.manifest["status"] == "complete" and folder.manifest["probe"]["asked"] == 0
    assert folder.manifest["probe"]["metrics"]["lost_labels"] == 4
    samples = _samples(prom)
    assert samples[("memlab_probe_success", ())] == 1 and samples[("memlab_probe_questions", ())] == 0
    assert ("memlab_probe_metric", (("app", app), ("metric", "recall@10"))) not in samples  # no stale 1.0
    assert samples[("memlab_probe_metric", (("app", app), ("metric", "lost_labels")))] == 4
    assert folder.manifest["probe"]["metrics"]["recall@10_all_labels"] == 0.0  # every label lost: all misses


def test_a_failed_probe_marks_its_textfile_failed(filled, tmp_path):
    _, labels, dsn = filled
    prom = tmp_path / "memlab.prom"
    ok = probe("--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "ok"), "--textfile", str(prom))
    assert ok.exit_code == 0, ok.output
    assert _samples(prom)[("memlab_probe_success", ())] == 1
    typo = probe("--dsn", dsn, "--labels", str(labels), "--out", str(tmp_path / "typo"), "--textfile", str(prom),
                 "--alert", "recal@10<0.8")  # fmt: skip
    assert typo.exit_code == 2 and "recal@10" in typo.output
    samples = _samples(prom)
    assert samples[("memlab_probe_success", ())] == 0
    assert not any(name == "memlab_probe_metric" for name, _ in samples)  # yesterday's recall is gone
    assert lab.RunFolder(tmp_path / "typo").manifest["status"] == "failed"
    down = probe("--dsn", "postgresql://probe:@127.0.0.1:1/memlab", "--labels", str(labels), "--out",
                 str(tmp_path / "down"), "--textfile", str(prom))  # fmt: skip
    assert down.exit_code == 2 and "Traceback" not in down.output, down.output
    assert _samples(prom)[("memlab_probe_success", ())] == 0
