"""An experiment shows one overall progress line (steps done of the total, with an ETA), not a bar per step."""

from __future__ import annotations

import io

from rich.console import Console

from memlab import lab
from memlab.lab.experiment.progress import run_progress
from tests.conftest import ROOT


def test_an_experiment_draws_one_overall_progress_line(tmp_path, memlab_home, store, capsys):
    config = lab.parse_config({  # the small jsonl example: what is drawn does not depend on the data's size
        "name": "progress",
        "datasets": [{"name": "mine", "format": "jsonl", "path": str(ROOT / "fixtures" / "jsonl" / "example.jsonl")}],
        "systems": [{"name": "pg-exact", "strategy": "exact"},
                    {"name": "hnsw", "strategy": "hnsw", "ef_search": 40, "iterative_scan": "relaxed_order"}],
        "sweeps": ["ingest", "cutoff"],
        "options": {"ingest": {"repeat": 1}, "cutoff": {"grid": [0.5, 0.9]}},
    }, source="<test>")  # fmt: skip
    screen = io.StringIO()
    display = lab.experiment.RunProgress(Console(file=screen, width=120, force_terminal=False, color_system=None))
    lab.run_experiment(config, tmp_path / "run", progress=display, log=lambda *_: None)

    tasks = display.progress.tasks
    assert len(tasks) == 1, "one overall task, not one per step"
    # two systems on one data set, one measuring sweep (ingest), scores and report; the four cuts of the two
    # systems' saved runs (cutoff sweep) ask nothing and are no steps
    steps = 2 + 1 + 1
    assert len(list((tmp_path / "run" / "runs").glob("*@cut*"))) == 4
    assert tasks[0].total == steps and tasks[0].completed == steps and tasks[0].finished
    drawn = [line for line in screen.getvalue().splitlines() if line.strip()]
    assert len(drawn) == 1 and f"{steps}/{steps} steps" in drawn[0], drawn
    elsewhere = capsys.readouterr()
    bars = [line for line in (elsewhere.out + elsewhere.err).splitlines() if "━" in line or "100%" in line]
    assert not bars, f"per-step bars printed: {bars[:5]}"
    assert "\n\n\n" not in elsewhere.out, "no runs of blank lines"


def test_the_display_counts_steps_and_keeps_quiet_when_off():
    screen = io.StringIO()
    console = Console(file=screen, width=120, force_terminal=False, color_system=None)
    with lab.experiment.RunProgress(console) as display:
        display.plan(4)
        for name in ("a", "b", "c", "d"):
            with display.step(name):
                pass
    assert display.total == display.completed == 4
    assert "4/4 steps" in screen.getvalue()
    quiet = run_progress(False)
    quiet.plan(2)
    with quiet.step("x"):
        pass
    assert (quiet.total, quiet.completed) == (2, 1)
