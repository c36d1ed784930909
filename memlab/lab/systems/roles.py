"""What a system is in a run, recorded as data beside its runs and scores: never read back from its name.

A system is `main` (configured by the user), `reference` (the exact search another system is compared with),
`cut` (a cut-off variant of its `parent`'s saved run, made by a sweep), `sweep` (another system a sweep added and
ran) or `measure` (figures a sweep computed from its own tables under a name of its own, no run behind them).
Each run file and a run folder's systems.parquet (read with the scores: RunFolder.scores) carry ROLE_COLUMNS;
readers decide by them, so a user's system may be named anything."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

MAIN, REFERENCE, CUT, SWEEP, MEASURE = "main", "reference", "cut", "sweep", "measure"
ROLES = (MAIN, REFERENCE, CUT, SWEEP, MEASURE)
ASKED = (MAIN, REFERENCE, SWEEP)  # systems that answered the questions themselves and are compared as systems
ROLE_COLUMNS = ["role", "sweep", "parent"]  # the sweep that made a system and the system it was cut from ("": none)
SYSTEMS_FILE = "systems.parquet"  # a run folder's table of its systems: one row per data set x system
SYSTEM_COLUMNS = ["dataset", "system", *ROLE_COLUMNS]


@dataclass(frozen=True)
class SystemRole:
    """What a system is, the sweep that made it and the system it derives from (None: none)."""

    role: str = MAIN
    sweep: str | None = None
    parent: str | None = None


def role_frame(frame: pd.DataFrame, role: SystemRole) -> pd.DataFrame:
    """`frame` with ROLE_COLUMNS holding `role` (a missing sweep or parent as "")."""
    return frame.assign(role=role.role, sweep=role.sweep or "", parent=role.parent or "")


def role_of_row(row: Any) -> SystemRole:
    """The SystemRole a row of a frame with ROLE_COLUMNS records."""
    return SystemRole(str(row.role), str(row.sweep) or None, str(row.parent) or None)


def roles_in(frame: pd.DataFrame) -> dict[tuple[str, str], SystemRole]:
    """{(dataset, system): SystemRole} as a scores frame (or any frame with dataset, system, ROLE_COLUMNS) records."""
    if frame.empty or not set(ROLE_COLUMNS) <= set(frame.columns):
        return {}
    rows = frame.drop_duplicates(["dataset", "system"])
    return {(str(r.dataset), str(r.system)): role_of_row(r) for r in rows.itertuples(index=False)}


def with_roles(scores: pd.DataFrame, systems: pd.DataFrame | None) -> pd.DataFrame:
    """Long-form scores with ROLE_COLUMNS from a systems table (SYSTEM_COLUMNS); a system it lacks is main."""
    scores = scores.drop(columns=[c for c in ROLE_COLUMNS if c in scores.columns])
    if systems is not None and len(systems):
        scores = scores.merge(systems[SYSTEM_COLUMNS].drop_duplicates(["dataset", "system"]), how="left",
                              on=["dataset", "system"])  # fmt: skip
    for column in ROLE_COLUMNS:
        scores[column] = scores[column].fillna(MAIN if column == "role" else "") if column in scores else \
            (MAIN if column == "role" else "")  # fmt: skip
    return scores


def cut_parents(frame: pd.DataFrame) -> list[str]:
    """The systems cut-off variants were made from, sorted."""
    return sorted({p for p in frame[frame.role == CUT].parent if p})


def names(pairs: Iterable[tuple[str, str]], roles: dict[tuple[str, str], SystemRole], *kept: str) -> set:
    """The (dataset, system) pairs whose recorded role is one of `kept`; a pair of no recorded role counts as main
    (a system named in a baseline the run did not make)."""
    return {p for p in pairs if roles.get(p, SystemRole()).role in kept}


__all__ = ["ASKED", "CUT", "MAIN", "MEASURE", "REFERENCE", "ROLES", "ROLE_COLUMNS", "SWEEP", "SYSTEMS_FILE",
           "SYSTEM_COLUMNS", "SystemRole", "cut_parents", "names", "role_frame", "role_of_row", "roles_in",
           "with_roles"]
