"""The pool file read back and written (memlab.lab.judging.pool makes the pool): a leaf module, so the judged
data set and the report read pools without importing the experiment machinery."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlab.errors import FixtureError
from memlab.lab.base.json_bounds import loads
from memlab.lab.base.redacted import write_json

POOL_KIND = "pool"
POOL_VERSION = 1


@dataclass(frozen=True)
class Pool:
    """A pool file read back: its queries with their pooled hits, and how it was made."""

    path: Path
    data: dict[str, Any]

    @property
    def systems(self) -> list[str]:
        return [s["name"] for s in self.data["systems"]]

    @property
    def depth(self) -> int:
        return int(self.data["depth"])

    @property
    def queries(self) -> list[dict[str, Any]]:
        return self.data["queries"]

    def pooled(self) -> dict[str, dict[str, dict[str, Any]]]:
        """query id -> event id -> the pooled hit."""
        return {q["query_id"]: {h["event_id"]: h for h in q["hits"]} for q in self.queries}

    def describe(self) -> dict[str, Any]:
        """What a run's manifest and report say of the pool."""
        return {"path": str(self.path), "systems": self.systems, "depth": self.depth,
                "config": self.data.get("config"), "created_at": self.data.get("created_at")}  # fmt: skip


def read_pool(path: str | Path) -> Pool:
    """A pool file written by `write_pool`; anything else is refused with the command that makes one."""
    path = Path(path)
    try:
        data = loads(path.read_text(encoding="utf-8"), str(path))
    except FileNotFoundError:
        raise FixtureError(f"{path}: no such pool file; make one with `memlab judge pool`") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise FixtureError(f"{path}: not a pool file ({exc}); make one with `memlab judge pool`") from None
    if not isinstance(data, dict) or data.get("memlab") != POOL_KIND or not isinstance(data.get("queries"), list):
        raise FixtureError(f"{path}: not a memlab pool file; make one with `memlab judge pool`")
    return Pool(path, data)



def write_pool(pool: dict[str, Any], path: str | Path) -> Path:
    """The pool as one JSON file (through the redactor, as every file memlab writes from user data)."""
    return write_json(Path(path), pool, indent=1, ensure_ascii=False, default=str)
