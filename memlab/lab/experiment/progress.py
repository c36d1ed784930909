"""One progress line for an experiment: the steps done of the total, what runs now, and an ETA.

An experiment is many small steps (each system on each data set, each sweep's measurement). A bar per step
prints dozens of lines that all read "100% 0:00:00"; one overall line says how far the run is and how long is
left. Inside a run the per-step bars (ingest, questions, fact extraction, the filtered grid) stay off: the
experiment passes `progress=False` to them and advances this display instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

Item = TypeVar("Item")


class RunProgress:
    """The overall display: one rich task whose total is the experiment's step count. `total` may be set
    later (`plan`) once the data sets are loaded and the steps can be counted."""

    def __init__(self, console: Console | None = None, *, title: str = "eval") -> None:
        self.title = title
        self.progress = Progress(
            TextColumn("[bold]{task.fields[title]}[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("steps"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=console,
            transient=False,
            speed_estimate_period=600,  # steps are minutes apart: rich's 30 s default would forget the rate
        )
        self.task: TaskID = self.progress.add_task("", total=None, title=title, start=False)

    def __enter__(self) -> RunProgress:
        self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.progress.update(self.task, description="done")
        self.progress.stop()

    def plan(self, steps: int) -> None:
        """Set the step count and start the clock (the ETA is the rate of finished steps so far)."""
        self.progress.update(self.task, total=max(int(steps), 0))
        self.progress.start_task(self.task)

    @contextmanager
    def step(self, label: str, weight: int = 1) -> Iterator[None]:
        """One step: its label shows while it runs, and the count moves by `weight` when it ends."""
        self.progress.update(self.task, description=label)
        yield
        self.progress.advance(self.task, weight)

    def each(self, items: Iterable[Item], label: Callable[[Item], str],
             counts: Callable[[Item], bool] = lambda item: True) -> Iterator[Item]:  # fmt: skip
        """Each item as a step (a loop's `continue` ends its step too; an error leaves it unfinished). An item
        that `counts` rejects is shown but not counted: work too small to move the ETA (a cut of a saved run)."""
        for item in items:
            with self.step(label(item), int(counts(item))):
                yield item

    @property
    def total(self) -> float | None:
        return self.progress.tasks[0].total

    @property
    def completed(self) -> float:
        return self.progress.tasks[0].completed


class NoProgress(RunProgress):
    """The same interface with nothing shown (library calls, tests, `progress=False`)."""

    def __init__(self) -> None:
        self.title = ""
        self.steps = 0
        self.done = 0

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        return None

    def plan(self, steps: int) -> None:
        self.steps = steps

    @contextmanager
    def step(self, label: str, weight: int = 1) -> Iterator[None]:
        yield
        self.done += weight

    @property
    def total(self) -> float | None:
        return self.steps

    @property
    def completed(self) -> float:
        return self.done


def run_progress(progress: bool | RunProgress) -> RunProgress:
    """The display for `run_experiment(progress=...)`: True draws one on the terminal, False none, and a
    RunProgress (e.g. on a captured console) is used as given."""
    if isinstance(progress, RunProgress):
        return progress
    return RunProgress() if progress else NoProgress()


__all__ = ["NoProgress", "RunProgress", "run_progress"]
