"""Derived runs: a run made from another system's saved run without asking a question again (a cut-off of its
parent, say), and the registry of their kinds.

A sweep yields a derived run beside the systems it asks; the run loop (memlab.lab.experiment.run) asks this
registry whether what it holds is derived (`derivation`), and if so saves `derive(parent's frame)` under the
derived run's name with the role it states (its kind's role, the sweep that made it and its parent). Nothing
else tells derived runs apart, so a new kind is one class registered here (`derived_kind`)."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

import pandas as pd

from memlab.errors import ConfigError
from memlab.lab.systems.roles import ROLES, SystemRole


@runtime_checkable
class DerivedRun(Protocol):
    """What the run loop needs of a derived run: its name, the system whose saved run it derives from, its
    kind's role and how it is derived (a pure function of the parent's run frame)."""

    kind: ClassVar[str]
    role_name: ClassVar[str]
    name: str
    parent: str

    def derive(self, parent: pd.DataFrame) -> pd.DataFrame: ...

    def describe(self) -> dict[str, Any]: ...


_KINDS: dict[str, type] = {}


def derived_kind(cls: type) -> type:
    """Register a class of derived runs (a class decorator): its instances are derived from here on."""
    kind, role = getattr(cls, "kind", None), getattr(cls, "role_name", None)
    if not isinstance(kind, str) or not kind or role not in ROLES:
        raise ConfigError(f"derived run class {cls.__name__}: give a `kind` name and a `role_name` of {ROLES}")
    taken = _KINDS.get(kind)
    if taken is not None and taken is not cls:
        raise ConfigError(f"derived run kind {kind!r} is taken by {taken.__name__}; name {cls.__name__}'s another")
    _KINDS[kind] = cls
    return cls


def derived_kinds() -> dict[str, type]:
    """The registered kinds of derived runs by name."""
    return dict(_KINDS)


def derivation(system: object) -> DerivedRun | None:
    """`system` when it is a derived run (of a registered kind), else None: a system that asks the questions."""
    kind = getattr(type(system), "kind", None)
    return system if isinstance(kind, str) and _KINDS.get(kind) is type(system) else None  # type: ignore[return-value]


def role_of_derived(run: DerivedRun, sweep: str | None) -> SystemRole:
    """The role a derived run is recorded with: its kind's, the sweep that made it and its parent."""
    return SystemRole(run.role_name, sweep, run.parent)


__all__ = ["DerivedRun", "derivation", "derived_kind", "derived_kinds", "role_of_derived"]
