"""YAML read with bounds. A config is a few kilobytes, but YAML aliases let 500 bytes stand for gigabytes once the
shared pieces are written out (a manifest's JSON copy of the config, a report) — the "billion laughs". So a file
is refused above MAX_BYTES, and a document whose expanded size (nodes plus scalar characters, every alias counted
as the copy it becomes) passes MAX_EXPANDED, or that nests deeper than MAX_DEPTH, or that refers to itself, is
refused before anything is built from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from memlab.errors import ConfigError

MAX_BYTES = 1_000_000
MAX_EXPANDED = 1_000_000
MAX_DEPTH = 100


class _Refused(yaml.YAMLError):
    pass


def expanded_size(node: yaml.Node, limit: int = MAX_EXPANDED, depth_limit: int = MAX_DEPTH) -> int:
    """The size `node` has once every alias is copied out; raises _Refused past `limit`, `depth_limit` or on a
    node that contains itself. Shared nodes are measured once (memo), so this is linear in the file."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(n: yaml.Node, depth: int) -> int:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise _Refused("an alias refers to a node that contains it (a recursive structure)")
        if depth > depth_limit:
            raise _Refused(f"nested deeper than {depth_limit} levels")
        open_nodes.add(key)
        if isinstance(n, yaml.ScalarNode):
            total = 1 + len(n.value)
        elif isinstance(n, yaml.SequenceNode):
            total = 1 + sum(size(c, depth + 1) for c in n.value)
        else:
            total = 1 + sum(size(k, depth + 1) + size(v, depth + 1) for k, v in n.value)
        open_nodes.discard(key)
        if total > limit:
            raise _Refused(f"aliases expand it past {limit:,} nodes and characters")
        sizes[key] = total
        return total

    return size(node, 0)


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader that measures each document's expanded size before constructing it, and refuses flow nesting
    deeper than MAX_DEPTH as each bracket is scanned: PyYAML's scanner walks every open bracket per token, so a
    file of 5,000 brackets costs it seconds to minutes before any later check could run."""

    def fetch_flow_collection_start(self, TokenClass: type) -> None:
        if self.flow_level >= MAX_DEPTH:
            raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
        super().fetch_flow_collection_start(TokenClass)

    def construct_document(self, node: yaml.Node) -> Any:
        expanded_size(node)
        return super().construct_document(node)


def load_yaml_text(text: str, source: str, *, loader: type[BoundedLoader] = BoundedLoader) -> Any:
    """Parse YAML text within the bounds; any problem is a ConfigError naming `source`."""
    if len(text) > MAX_BYTES:
        raise ConfigError(f"{source}: {len(text):,} characters; a config is at most {MAX_BYTES:,}")
    try:
        return yaml.load(text, Loader=loader)  # a SafeLoader subclass
    except _Refused as exc:
        raise ConfigError(f"{source}: refused: {exc}; write the values out instead of nesting aliases") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML ({exc})") from None
    except RecursionError:
        raise ConfigError(f"{source}: refused: nested too deeply to read") from None


def load_yaml_file(path: str | Path, *, loader: type[BoundedLoader] = BoundedLoader) -> Any:
    """Read a YAML file of at most MAX_BYTES (read no further, so a device or a huge file is refused quickly)."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            data = file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a folder; give a YAML file") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_BYTES:,} bytes; a config is a few kilobytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return load_yaml_text(text, str(path), loader=loader)
