"""A reliability family's figures and its verdict: shared by `memlab check reliability` and the probes of
`memlab/lab/reliability/probes/` (one module per class of hole found by the hostile probes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Family:
    """One family's figures; `must_be_zero` and `goals` name the figures that decide the verdict."""

    name: str
    figures: dict[str, Any] = field(default_factory=dict)
    must_be_zero: list[str] = field(default_factory=list)
    goals: dict[str, tuple[str, float]] = field(default_factory=dict)
    found: list[str] = field(default_factory=list)  # what broke, precisely (first few)
    notes: list[str] = field(default_factory=list)
    known_issues: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, name: str, value: int = 1) -> None:
        self.figures[name] = self.figures.get(name, 0) + value

    def problem(self, figure: str, detail: str) -> None:
        self.add(figure)
        if len(self.found) < 20:
            self.found.append(f"{figure}: {detail}")

    def failures(self) -> list[str]:
        out = [f"{self.name}.{k} = {self.figures.get(k, 0)} (must be 0)" for k in self.must_be_zero
               if self.figures.get(k, 0)]  # fmt: skip
        for key, (op, bound) in self.goals.items():
            value = self.figures.get(key)
            if value is None or not (value >= bound if op == ">=" else value <= bound):
                out.append(f"{self.name}.{key} = {value} (goal {op} {bound})")
        return out
