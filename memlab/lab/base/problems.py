"""Many problems of one data file in one error: a user fixing references wants the whole list and its size,
not one per run of `memlab check-dataset`."""

from __future__ import annotations

from pathlib import Path

from memlab.errors import FixtureError

SHOWN_PROBLEMS = 20  # problems listed one by one; the rest are counted


def listed(path: Path, problems: list[tuple[int, str]], what: str, fix: str) -> FixtureError:
    """One problem as `path:line: message`; several as their count, the first SHOWN_PROBLEMS with their lines
    and `and N more`, then the fix."""
    if len(problems) == 1:
        return FixtureError(f"{path}:{problems[0][0]}: {problems[0][1]}")
    shown = "; ".join(f"line {number}: {message}" for number, message in problems[:SHOWN_PROBLEMS])
    more = f"; and {len(problems) - SHOWN_PROBLEMS} more" if len(problems) > SHOWN_PROBLEMS else ""
    return FixtureError(f"{path}: {len(problems)} {what} ({shown}{more}). {fix}")
