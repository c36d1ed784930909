"""The predicate registry: which keys fact memory accepts, their cardinality and sensitivity, and how
values are normalised. It is data (`registry.yaml`), loaded and checked here."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from memlab.errors import ConfigError
from memlab.facts.types import Cardinality, Impact, Sensitivity

DEFAULT_REGISTRY = Path(__file__).with_name("registry.yaml")
_NORMALIZERS = ("lower", "title", "as_is")
_IMPACTS = ("high", "normal")
NEVER = "never"  # confirm_after_days of a fact that no clock makes stale (an allergy)
_SPACES = re.compile(r"\s+")


class UnknownPredicateError(ConfigError):
    """A predicate that is not in the registry."""


@dataclass(frozen=True)
class Predicate:
    name: str
    meaning: str
    cardinality: Cardinality
    sensitivity: Sensitivity
    half_life_days: float
    normalize: str = "lower"
    aliases: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    synonyms: tuple[str, ...] = ()
    impact: Impact = "normal"
    confirm_after_days: float | None = None  # None: never stale by age alone

    def normalize_value(self, value: str) -> str:
        """Trim, collapse spaces, map aliases (case-insensitively), then apply the case rule."""
        text = _SPACES.sub(" ", str(value)).strip().strip(".,;:!?\"'").strip()
        alias = self.aliases.get(text.lower())
        if alias is not None:
            return alias
        if self.normalize == "lower":
            return text.lower()
        if self.normalize == "title":
            return " ".join(w if any(c.isupper() for c in w[1:]) else w[:1].upper() + w[1:] for w in text.split())
        return text


def _confirm_after(raw: object, where: str) -> float | None:
    """`confirm_after_days`: a positive number of days, or `never` (also left out or null)."""
    if raw is None or raw == NEVER:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not raw > 0 or raw == float("inf"):
        raise ConfigError(f"{where}.confirm_after_days must be a number of days > 0 or 'never', got {raw!r}")
    return float(raw)


class PredicateRegistry:
    """Predicates by name. `get` raises with the nearest registered name when a name is unknown."""

    def __init__(self, predicates: dict[str, Predicate]) -> None:
        self.predicates = dict(predicates)

    @classmethod
    def load(cls, path: str | Path = DEFAULT_REGISTRY) -> PredicateRegistry:
        path = Path(path)
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        raw = (data or {}).get("predicates")
        if not isinstance(raw, dict) or not raw:
            raise ConfigError(f"{path}: expected a 'predicates' mapping of name -> definition")
        predicates = {}
        for name, spec in raw.items():
            where = f"{path}: predicates.{name}"
            if not re.fullmatch(r"[a-z][a-z0-9_]*", str(name)):
                raise ConfigError(f"{where}: predicate names are lower_snake_case")
            if spec.get("cardinality") not in ("one", "many"):
                raise ConfigError(f"{where}.cardinality must be 'one' or 'many'")
            if spec.get("sensitivity") not in ("normal", "personal", "health"):
                raise ConfigError(f"{where}.sensitivity must be normal, personal or health")
            if spec.get("normalize", "lower") not in _NORMALIZERS:
                raise ConfigError(f"{where}.normalize must be one of {_NORMALIZERS}")
            half_life = float(spec.get("half_life_days", 365))
            if half_life <= 0:
                raise ConfigError(f"{where}.half_life_days must be > 0")
            impact = spec.get("impact", "normal")
            if impact not in _IMPACTS:
                raise ConfigError(f"{where}.impact must be 'high' or 'normal', got {impact!r}")
            confirm_after = _confirm_after(spec.get("confirm_after_days", NEVER), where)
            aliases = {str(k).lower(): str(v) for k, v in (spec.get("aliases") or {}).items()}
            predicates[name] = Predicate(
                name=name,
                meaning=str(spec.get("meaning", "")),
                cardinality=spec["cardinality"],
                sensitivity=spec["sensitivity"],
                half_life_days=half_life,
                normalize=spec.get("normalize", "lower"),
                aliases=aliases,
                synonyms=tuple(str(x) for x in spec.get("synonyms") or ()),
                impact=impact,
                confirm_after_days=confirm_after,
            )
        return cls(predicates)

    def knows(self, name: str) -> bool:
        return name in self.predicates

    def nearest(self, name: str) -> str | None:
        """The registered name closest to `name`: a declared synonym first, then by spelling."""
        lowered = name.lower()
        for predicate in self.predicates.values():
            if lowered in predicate.synonyms:
                return predicate.name
        match = difflib.get_close_matches(name, list(self.predicates), n=1, cutoff=0.0)
        return match[0] if match else None

    def get(self, name: str) -> Predicate:
        try:
            return self.predicates[name]
        except KeyError:
            hint = self.nearest(name)
            raise UnknownPredicateError(
                f"Unknown predicate {name!r}: it is not in the registry. Nearest registered name: {hint!r}. "
                "Fix: use a registered predicate, or add it to the registry with its cardinality and sensitivity."
            ) from None

    def normalize(self, predicate: str, value: str) -> str:
        return self.get(predicate).normalize_value(value)

    def names(self) -> list[str]:
        return sorted(self.predicates)

    def describe(self) -> str:
        """One line per predicate, for extractor prompts."""
        return "\n".join(
            f"- {p.name} ({p.cardinality}-valued, {p.sensitivity}): {p.meaning}" for p in self.predicates.values()
        )


@lru_cache(maxsize=1)
def default_registry() -> PredicateRegistry:
    return PredicateRegistry.load()
