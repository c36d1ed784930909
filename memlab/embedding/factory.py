"""One way to name an embedder in settings, fixtures and the CLI, so every kind is built, batched and cached alike.

A spec is None, a string or a dict:

- None, "default", "packaged" or {"kind": "packaged"}: the packaged all-MiniLM-L6-v2, exactly `default_embedder()`.
- {"kind": "sentence-transformers", "path": <local folder, all-MiniLM-L6-v2 or all-mpnet-base-v2>}, optional
  "model_id", "batch_size", "truncate_dim", "device". Any other string is shorthand for this kind with that path.
- {"kind": "openai", "base_url": "http://127.0.0.1:8000/v1", "model": <name>}, optional "api_key_env",
  "batch_size", "dimension", "timeout", "normalize", "retries", "model_id", "deadline", "max_reply_bytes".
- A string that starts with "{" is read as the JSON of a dict spec (handy on a command line).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memlab.config import memlab_home
from memlab.embedding.base import Embedder
from memlab.embedding.cache import CachedEmbedder, shared_cache
from memlab.embedding.models import MPNET, MPNET_ID, embedder_for
from memlab.embedding.openai_compat import OpenAICompatibleEmbedder
from memlab.embedding.sentence_transformer import DEFAULT_MODEL_ID, SentenceTransformerEmbedder, packaged_minilm_path
from memlab.errors import ConfigError

DEFAULT_NAMES = frozenset({"default", "packaged"})
KNOWN_MODEL_NAMES = frozenset({"all-MiniLM-L6-v2", DEFAULT_MODEL_ID, MPNET, MPNET_ID})

# kind -> (required keys, optional keys); "kind" itself is always allowed
SPEC_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "packaged": (frozenset(), frozenset()),
    "sentence-transformers": (frozenset({"path"}), frozenset({"model_id", "batch_size", "truncate_dim", "device"})),
    "openai": (
        frozenset({"base_url", "model"}),
        frozenset({"api_key_env", "batch_size", "dimension", "timeout", "normalize", "retries", "model_id", "deadline",
                   "max_reply_bytes"}),
    ),
}

_DEFAULT: dict[Path, CachedEmbedder] = {}


def default_embedder(*, home: str | Path | None = None, cache: bool = True) -> Embedder:
    """all-MiniLM-L6-v2 (384-d) from the packaged model, cached under `$MEMLAB_HOME/cache/` (shared per home)."""
    base = SentenceTransformerEmbedder(packaged_minilm_path(), model_id=DEFAULT_MODEL_ID)
    if not cache:
        return base
    cache_path = memlab_home(home) / "cache" / "embeddings.sqlite"
    if cache_path not in _DEFAULT:
        _DEFAULT[cache_path] = CachedEmbedder(base, shared_cache(home))
    return _DEFAULT[cache_path]


def make_embedder(
    spec: Mapping[str, Any] | str | None = None, *, home: str | Path | None = None, cache: bool = True
) -> Embedder:
    """The embedder a spec names (see the module docstring). With `cache=True` it goes through the persistent
    `$MEMLAB_HOME/cache/embeddings.sqlite` cache, so no kind ever embeds the same text twice."""
    spec = normalize_spec(spec)
    kind = spec["kind"]
    if kind == "packaged":
        return default_embedder(home=home, cache=cache)
    options = {k: v for k, v in spec.items() if k != "kind"}
    base: Embedder
    if kind == "sentence-transformers":
        base = _sentence_transformer(options.pop("path"), home=home, **options)
    else:
        base = OpenAICompatibleEmbedder(options.pop("base_url"), options.pop("model"), **options)
    return CachedEmbedder(base, shared_cache(home)) if cache else base


def normalize_spec(spec: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """The dict form of a spec, with its kind and keys checked; raises ConfigError naming what is wrong."""
    if spec is None:
        return {"kind": "packaged"}
    if isinstance(spec, str):
        text = spec.strip()
        if text.startswith("{"):
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"embedder spec is not valid JSON ({exc.msg}): {text[:200]!r}") from None
            except RecursionError:
                raise ConfigError(f"embedder spec is nested too deeply to read: {text[:200]!r}") from None
        elif text.lower() in DEFAULT_NAMES:
            return {"kind": "packaged"}
        elif text:
            return {"kind": "sentence-transformers", "path": text}
        else:
            raise ConfigError("embedder spec is an empty string: use 'default', a model folder or a dict spec.")
    if not isinstance(spec, Mapping):
        raise ConfigError(f"embedder spec must be None, a string or a dict, not {type(spec).__name__}: {spec!r:.200}")
    kinds = ", ".join(sorted(SPEC_KEYS))
    if "kind" not in spec:
        raise ConfigError(f"embedder spec {dict(spec)!r:.200} has no 'kind': one of {kinds}.")
    kind = spec["kind"]
    if kind not in SPEC_KEYS:
        raise ConfigError(f"embedder spec: unknown kind {kind!r}; allowed kinds: {kinds}.")
    required, optional = SPEC_KEYS[kind]
    allowed = ", ".join(sorted({"kind"} | required | optional))
    unknown = sorted(set(spec) - {"kind"} - required - optional)
    if unknown:
        raise ConfigError(
            f"embedder spec of kind {kind!r}: unknown key {', '.join(map(repr, unknown))}; allowed keys: {allowed}."
        )
    missing = sorted(k for k in required if spec.get(k) in (None, ""))
    if missing:
        raise ConfigError(
            f"embedder spec of kind {kind!r}: missing {', '.join(map(repr, missing))}; allowed keys: {allowed}."
        )
    return dict(spec)


def _sentence_transformer(path: str | Path, *, home: str | Path | None, **options: Any) -> SentenceTransformerEmbedder:
    """A known model name through `embedder_for` (it knows where each lives), otherwise a local folder."""
    if isinstance(path, str) and path in KNOWN_MODEL_NAMES:
        known = embedder_for(path, home=home)
        if not options:
            return known
        return SentenceTransformerEmbedder(known.path, model_id=options.pop("model_id", known.model_id), **options)
    folder = Path(path).expanduser()
    if not folder.exists():
        raise ConfigError(
            f"sentence-transformers model folder {str(folder)!r} does not exist (embedder spec key 'path'): give a "
            f"local folder, all-MiniLM-L6-v2 or {MPNET} (memlab never downloads from a model hub at run time)."
        )
    if not folder.is_dir():
        raise ConfigError(f"{folder} is a file, not a sentence-transformers model folder (embedder spec key 'path').")
    return SentenceTransformerEmbedder(folder, **options)
