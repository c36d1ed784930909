"""Where a data set's files are: a path in a config is absolute, or relative to the config's folder, then to the
memlab checkout (so a suite names the checkout's `datasets/` and `fixtures/` wherever it runs from)."""

from __future__ import annotations

from pathlib import Path

from memlab.errors import ConfigError

CHECKOUT = Path(__file__).resolve().parents[3]  # the memlab checkout (an editable install)


def resolve_path(raw: str | Path, base_dirs: list[Path], what: str, key: str = "path") -> Path:
    """An absolute path as given; a relative one against the config's folder, then the memlab checkout.
    A path that is nowhere raises a ConfigError naming every place looked at and the key (`key`) to fix."""
    path = Path(raw).expanduser()
    if path.is_absolute():
        if not path.exists():
            raise ConfigError(f"{what}: {path} does not exist; fix `{key}` in the config")
        return path
    tried = []
    for base in [*base_dirs, CHECKOUT]:
        candidate = (base / path).resolve()
        tried.append(str(candidate))
        if candidate.exists():
            return candidate
    raise ConfigError(f"{what}: {raw} not found (looked in {', '.join(dict.fromkeys(tried))}); fix `{key}`: give an "
                      "absolute path or one relative to the config file")  # fmt: skip


__all__ = ["CHECKOUT", "resolve_path"]
