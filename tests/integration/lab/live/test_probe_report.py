"""A probe's report is rendered from its run folder alone: `memlab report --run` brings report.md's
probe section (stale labels, alerts, drift, index health) back after report.md was deleted, and report.html shows
it too."""

from __future__ import annotations

import re

from typer.testing import CliRunner

import memlab
from memlab import lab
from memlab.cli import app as cli
from tests.integration.lab.live.test_probe import event_id, live  # noqa: F401  (the module's filled store and labels)


def probe_section(report: str) -> str:
    """report.md from the probe's heading to the first section that is neither the probe's nor index health."""
    start = report.index("## Probe of the live store")
    rest = re.search(r"^## (?!Index health)", report[start + 3:], flags=re.M)
    return report[start:start + 3 + rest.start()] if rest else report[start:]


def test_memlab_report_renders_the_probe_section_from_the_folder(live, store, embedder, tmp_path):  # noqa: F811
    app, labels, dsn = live
    first = lab.run_probe(labels, tmp_path / "first", dsn=dsn, embedder=embedder, health=False)
    memlab.EventMemory(store, embedder).delete_memory(app, "u2", event_id("u2", "s0", 0), session_id="u2-s0")
    run = tmp_path / "run"
    made = CliRunner().invoke(cli, ["probe", "--dsn", dsn, "--labels", str(labels), "--out", str(run), "--against",
                                    str(first.folder), "--alert", "recall@10<1.01", "--alert", "empty_rate>0.5"])
    assert made.exit_code == 3, made.output
    before = probe_section((run / "report.md").read_text())
    for line in ("1 labelled event(s) no longer exist", "| recall@10<1.01 |", "| empty_rate>0.5 |", "drift_p = ",
                 "## Index health"):  # fmt: skip
        assert line in before, line
    (run / "report.md").unlink()
    (run / "report.html").unlink()
    redone = CliRunner().invoke(cli, ["report", "--run", str(run), "--baseline", str(tmp_path / "none.json")])
    assert redone.exit_code == 0, redone.output
    assert probe_section((run / "report.md").read_text()) == before
    page = (run / "report.html").read_text()
    for text in ("Probe of the live store", "recall@10\\u003c1.01", "FIRING", "drift", "Index health"):  # "<" as JSON
        assert text in page, text
