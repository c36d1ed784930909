"""Corpora for search benchmarks that look like memory, and one that does not (on purpose).

The filtered-search sweep builds big tenants from copies of a few thousand sentence vectors plus Gaussian
jitter of 0.01 per dimension: clusters of near-duplicates. HNSW handles those badly (a graph of twins), so its
numbers say more about the corpus than about the index. Here:

- `real_texts` / `real_questions`: distinct turns and questions of the data in the checkout (LongMemEval-S
  knowledge-update haystacks, the LongMemEval oracle, memlab-synth, the event fixtures), shuffled together.
- `embedded`: their vectors, embedded once and cached as .npy under `$MEMLAB_HOME/bench/vectors/`.
- `matched_vectors`: synthetic rows that grow the real rows into a bigger corpus whose nearest-neighbour
  distances look like real text's at that size (see its docstring for the method; `real_nn_curve` and
  `expected_median` give the real curve it follows).
- `near_duplicate_vectors`: a stress corpus of jittered copies, kept to show how unlike real text it is.
- `corpus(kind, n, real)` builds either, `nn_distances` / `distribution_table` show how alike they are.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
import pandas as pd
from rich.progress import Progress
from scipy.stats import ks_2samp

from memlab.config import memlab_home
from memlab.embedding.base import Embedder
from memlab.lab.datasets.formats.fixtures import load_event_fixtures as load_fixtures
from memlab.lab.datasets.formats.longmemeval import load_longmemeval
from memlab.lab.datasets.loaders import CHECKOUT, load_dataset
from memlab.lab.datasets.synth.vectors import jitter

LONGMEMEVAL_S_KU = Path("datasets/longmemeval/longmemeval_s_knowledge_update.json.gz")
LONGMEMEVAL_ORACLE = Path("datasets/longmemeval/longmemeval_oracle.json.gz")
EVENT_FIXTURES = Path("fixtures/events")
SYNTH = {"name": "synth", "format": "synth", "users": 64, "max_events": 2000, "seed": 0}  # the full suite's
MIN_WORDS = 3
KINDS = ("real", "near_duplicate")
NEAR_DUPLICATE_BASE = 3_000  # distinct real vectors the near-duplicate corpus is copied from
PROGRESS_MIN = 5_000  # texts from which `embedded` shows a progress bar on a terminal
_EMBED_CHUNK = 1_024
_SEARCH_CHUNK = 100_000  # corpus rows per FAISS flat index (1M x 384 float32 is never copied at once)


# -- texts ----------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _sources() -> tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]:
    """(source, turn texts, question texts) of every data set in the checkout, each loaded once per process."""
    sets = [
        ("longmemeval_s_ku", load_longmemeval(CHECKOUT / LONGMEMEVAL_S_KU)),
        ("longmemeval_oracle", load_longmemeval(CHECKOUT / LONGMEMEVAL_ORACLE)),
        ("synth", load_dataset(dict(SYNTH))),
        ("fixtures", load_fixtures(CHECKOUT / EVENT_FIXTURES)),
    ]
    return tuple((name, tuple(data.texts(min_chars=1)), tuple(q.text for q in data.questions)) for name, data in sets)


def _usable(text: str) -> bool:
    return len(text.split()) >= MIN_WORDS


def _shuffled(groups: list[tuple[str, ...]], limit: int | None, seed: int) -> list[str]:
    """Distinct (after strip) usable texts of every group, shuffled together with `seed`, the first `limit`.

    One shuffle over the union keeps each source's share, so a sample looks like the whole (a round robin
    would give the 191 fixture turns the weight of 36,000 LongMemEval turns)."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    distinct = list(dict.fromkeys(t.strip() for group in groups for t in group if _usable(t.strip())))
    order = np.random.default_rng(seed).permutation(len(distinct))
    return [distinct[i] for i in order[:limit]]


def real_texts(limit: int | None = None, *, seed: int = 0) -> list[str]:
    """Distinct turn texts (at least three words) of the data in the checkout, in a deterministic shuffled
    order: `real_texts(n)` is the first n of `real_texts()`, a sample across every source."""
    return _shuffled([texts for _, texts, _ in _sources()], limit, seed)


def real_questions(limit: int | None = None, *, seed: int = 0) -> list[str]:
    """Distinct question texts of the same data sets (query vectors), shuffled like `real_texts`."""
    return _shuffled([questions for _, _, questions in _sources()], limit, seed)


# -- embedding, cached -------------------------------------------------------------------------------------------


def _digest(model_id: str, texts: list[str], query: bool) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([model_id, "query" if query else "document", len(texts)]).encode())
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def cache_dir() -> Path:
    """Where embedded corpora are kept: `$MEMLAB_HOME/bench/vectors`."""
    path = memlab_home() / "bench" / "vectors"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


def embedded(
    embedder: Embedder, texts: list[str], *, name: str, query: bool = False, progress: bool | None = None
) -> np.ndarray:
    """Vectors of `texts` (float32, one row per text), embedded once per model and text list and cached as
    `<name>-<hash>.npy` (+ a JSON naming the model and the texts' hash): the 49,000 turns of the checkout take
    one to two hours to embed on two busy cores (about 5 long turns a second), and every benchmark size reuses
    them. `query=True` embeds with `embed_queries` / `embed_query` (models that prefix questions).
    `progress=None` shows a bar for many texts on a terminal."""
    texts = list(texts)
    digest = _digest(embedder.model_id, texts, query)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80] or "texts"
    path = cache_dir() / f"{stem}-{digest[:16]}.npy"
    meta_path = path.with_suffix(".json")
    if path.exists() and meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
            vectors = np.load(path)
        except (OSError, ValueError):
            meta, vectors = {}, None
        if (
            vectors is not None
            and meta.get("model_id") == embedder.model_id
            and meta.get("texts_sha256") == digest
            and vectors.shape == (len(texts), embedder.dimension)
        ):
            return vectors.astype(np.float32, copy=False)
    vectors = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
    spans = list(_chunks(len(texts), _EMBED_CHUNK))
    show = progress if progress is not None else len(texts) >= PROGRESS_MIN and sys.stderr.isatty()

    def embed(start: int, end: int) -> None:
        part = texts[start:end]
        batched = getattr(embedder, "embed_queries", None)  # one call per chunk where the embedder offers it
        if query and callable(batched):
            vectors[start:end] = batched(part)
        elif query:
            vectors[start:end] = np.vstack([embedder.embed_query(t) for t in part])
        else:
            vectors[start:end] = embedder.embed_documents(part)

    if show:
        with Progress(transient=True) as bar:
            task = bar.add_task(f"embed {stem}", total=len(texts))
            for start, end in spans:
                embed(start, end)
                bar.advance(task, end - start)
    else:
        for start, end in spans:
            embed(start, end)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(path)  # written whole or not at all: a killed run leaves no half file that looks complete
    meta_path.write_text(json.dumps({"name": name, "model_id": embedder.model_id, "texts_sha256": digest,
                                     "rows": len(texts), "query": query}, indent=1))  # fmt: skip
    return vectors


# -- nearest-neighbour distances ------------------------------------------------------------------------------


def _nearest(queries: np.ndarray, corpus: np.ndarray, exclude: np.ndarray | None = None) -> np.ndarray:
    """Cosine distance of each query row to its nearest corpus row (skipping corpus row `exclude[i]` for query
    i), searched chunk by chunk with FAISS flat inner product."""
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    best = np.full(len(queries), -np.inf, dtype=np.float32)
    k = 2 if exclude is not None else 1
    for start, end in _chunks(len(corpus), _SEARCH_CHUNK):
        index = faiss.IndexFlatIP(corpus.shape[1])
        index.add(np.ascontiguousarray(corpus[start:end], dtype=np.float32))
        scores, ids = index.search(queries, min(k, end - start))
        if exclude is not None:
            scores = np.where(ids + start == exclude[:, None], -np.inf, scores)
        best = np.maximum(best, scores.max(axis=1))
    return (1.0 - best).astype(np.float32)


def nn_distances(vectors: np.ndarray, *, sample: int = 1_000, seed: int = 0) -> np.ndarray:
    """Cosine distance from each of `sample` random rows to its nearest other row (never itself; an exact
    duplicate counts, at distance 0)."""
    n = len(vectors)
    if n < 2:
        return np.zeros(0, dtype=np.float32)
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(sample, n), replace=False))
    return _nearest(vectors[rows], vectors, exclude=rows)


# -- synthetic corpora ----------------------------------------------------------------------------------------

CALIBRATION_ROWS = 20_000  # corpus size at which `matched_vectors` tunes its noise against real text
MAX_PARENTS = 5  # a synthetic row mixes 2 .. MAX_PARENTS random real rows
NOISE_SPREAD = 0.4  # log-normal spread of the per-row noise scale: real text has both close pairs and loners


def _synthesize(real: np.ndarray, out: np.ndarray, scale: float, seed: int) -> None:
    """Fill `out` with synthetic unit rows: a random convex mix (Dirichlet(1) weights) of 2 .. MAX_PARENTS random
    real rows, plus Gaussian noise of scale * exp(N(0, NOISE_SPREAD^2)) / sqrt(dim) per dimension, re-normalised.
    Chunked: memory O(chunk x dim) beside `out`."""
    rng = np.random.default_rng(seed)
    dim = real.shape[1]
    for start, end in _chunks(len(out), 20_000):
        m = end - start
        parents = rng.integers(0, len(real), size=(m, MAX_PARENTS))
        weights = rng.dirichlet(np.ones(MAX_PARENTS), size=m).astype(np.float32)
        used = rng.integers(2, MAX_PARENTS + 1, size=m)
        weights[np.arange(MAX_PARENTS)[None, :] >= used[:, None]] = 0.0
        weights /= weights.sum(axis=1, keepdims=True)
        mix = np.einsum("mk,mkd->md", weights, real[parents])
        mix /= np.maximum(np.linalg.norm(mix, axis=1, keepdims=True), 1e-12)
        sigma = np.float32(scale / np.sqrt(dim)) * np.exp(rng.normal(0.0, NOISE_SPREAD, size=m)).astype(np.float32)
        mix += rng.standard_normal((m, dim), dtype=np.float32) * sigma[:, None]
        mix /= np.linalg.norm(mix, axis=1, keepdims=True)
        out[start:end] = mix


def real_nn_curve(real: np.ndarray, *, points: int = 4, sample: int = 1_000, seed: int = 0) -> pd.DataFrame:
    """Median nearest-neighbour distance of real rows among `size` of them, for size = len(real), half of it, a
    quarter, ... (`points` sizes of at least 100 rows), and the power law fitted to them: real text gets denser
    as a corpus grows (10,000 checkout turns: 0.51 at 1,000 rows, 0.44 at 2,500, 0.31 at 10,000)."""
    rng = np.random.default_rng(seed)
    sizes = [s for s in (len(real) >> i for i in range(points)) if s >= 100] or [len(real)]
    medians = []
    for size in sizes:
        rows = np.sort(rng.choice(len(real), size=size, replace=False)) if size < len(real) else slice(None)
        medians.append(float(np.median(nn_distances(real[rows], sample=sample, seed=seed))))
    return pd.DataFrame({"rows": sizes, "p50": medians})


def expected_median(real: np.ndarray, size: int, *, seed: int = 0) -> float:
    """The median NN distance real text would have in a corpus of `size` rows: measured when we hold that many
    real rows, else extrapolated with the power law d = a * rows^b fitted to the three largest sizes of
    `real_nn_curve`. An assumption: the measured curve steepens as it grows, so the extrapolation errs sparse
    (from 2,500 turns it predicts 0.37 at 10,000 rows, where 10,000 real turns give 0.31)."""
    curve = real_nn_curve(real, points=1 if size <= len(real) else 3, seed=seed)
    if size <= len(real):
        if size == len(real):
            return float(curve.p50.iloc[0])
        rows = np.sort(np.random.default_rng(seed).choice(len(real), size=size, replace=False))
        return float(np.median(nn_distances(real[rows], seed=seed)))
    if len(curve) < 2:
        return float(curve.p50.iloc[0])
    slope, intercept = np.polyfit(np.log(curve.rows), np.log(np.maximum(curve.p50, 1e-6)), 1)
    return float(np.exp(intercept + min(slope, 0.0) * np.log(size)))


def calibrate(real: np.ndarray, n: int, *, seed: int = 0, sample: int = 1_000) -> float:
    """The noise scale of `matched_vectors(real, n)`. A synthetic row's NN distance depends on how many synthetic
    rows share its parents (the growth factor), hardly on the corpus size: so a real subset is grown by the same
    factor as `real` + n into G = min(len(real), CALIBRATION_ROWS) rows (at least 500 of them synthetic), and
    the scale bisected until the median distance of its synthetic rows to their nearest other row equals
    `expected_median(real, len(real) + n)`."""
    rng = np.random.default_rng(seed + 1)
    size = min(len(real), CALIBRATION_ROWS)
    seeds = min(max(round(size * len(real) / (len(real) + n)), 3), size - min(500, size // 2))
    parents = real[np.sort(rng.permutation(len(real))[:seeds])]
    target = expected_median(real, len(real) + n, seed=seed)
    grown = np.empty((size, real.shape[1]), dtype=np.float32)
    grown[:seeds] = parents
    rows = seeds + np.sort(rng.choice(size - seeds, size=min(sample, size - seeds), replace=False))

    def median_at(scale: float) -> float:
        _synthesize(parents, grown[seeds:], scale, seed + 2)  # the same draws at every scale: a smooth function
        return float(np.median(_nearest(grown[rows], grown, exclude=rows)))

    low, high = 0.0, 1.0
    if median_at(low) >= target:
        return low
    while median_at(high) < target and high < 64:
        low, high = high, high * 2
    for _ in range(12):
        mid = (low + high) / 2
        low, high = (mid, high) if median_at(mid) < target else (low, mid)
    return (low + high) / 2


def matched_vectors(real: np.ndarray, n: int, *, seed: int = 0) -> np.ndarray:
    """`n` synthetic unit vectors (float32, the dimension of `real`) to grow `real` into a corpus of
    len(real) + n rows whose nearest-neighbour cosine distances look like real text's at that size.

    Each row is a random convex mix of 2 to 5 random real rows plus Gaussian noise (its scale varies from row to
    row), re-normalised. Mixing random rather than neighbouring rows keeps synthetic rows from clustering around
    their parents, as jittered copies (`near_duplicate_vectors`) do; the noise scale is set by `calibrate`.
    Checked on the checkout's real turns (figures in docs/results.md): half of them grown back to the whole give
    the real NN-distance quantiles; grown much larger the rows get denser, as real text does with size, and a
    subsample of the same size as the real set is again like it, where near-duplicates sit far closer.
    Memory stays O(n x dim): no n x n matrix, FAISS searches samples only."""
    real = np.ascontiguousarray(real, dtype=np.float32)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if len(real) < 6:
        raise ValueError(f"matched_vectors needs at least 6 real vectors, got {len(real)}")
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    if n:
        _synthesize(real, out, calibrate(real, n, seed=seed), seed)
    return out


def near_duplicate_vectors(base: np.ndarray, n: int, *, noise: float = 0.01, seed: int = 0) -> np.ndarray:
    """The old stress corpus: `n` copies of rows of `base` plus N(0, noise^2) per dimension, re-normalised
    (clusters of near-twins, on which HNSW graphs do badly)."""
    return jitter(np.ascontiguousarray(base, dtype=np.float32), n, noise=noise, seed=seed)


def corpus(kind: str, n: int, real: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """`n` unit vectors of one kind: "real" = the real rows (the first n) topped up with `matched_vectors`;
    "near_duplicate" = jittered copies of NEAR_DUPLICATE_BASE real rows, as the filtered sweep's corpus."""
    real = np.ascontiguousarray(real, dtype=np.float32)
    if kind == "near_duplicate":
        return near_duplicate_vectors(real[:NEAR_DUPLICATE_BASE], n, seed=seed)
    if kind != "real":
        raise ValueError(f"corpus kind {kind!r} is unknown; use one of {KINDS}")
    if n <= len(real):
        return real[:n].copy()
    out = np.empty((n, real.shape[1]), dtype=np.float32)  # filled in place: one n x dim array at 1M rows
    out[: len(real)] = real
    _synthesize(real, out[len(real) :], calibrate(real, n - len(real), seed=seed), seed)
    return out


def distribution_table(
    corpora: dict[str, np.ndarray], *, size: int | None = None, sample: int = 1_000, seed: int = 0,
    reference: str = "real",
) -> pd.DataFrame:  # fmt: skip
    """Nearest-neighbour cosine distance quantiles (p5 .. p95) per corpus and the Kolmogorov-Smirnov statistic
    against `reference` (default "real", else the first corpus). Every corpus is first subsampled to `size`
    rows (default: the smallest corpus), since NN distances shrink as a corpus grows: compare at equal size."""
    if not corpora:
        return pd.DataFrame(columns=["corpus", "rows", "p5", "p25", "p50", "p75", "p95", "ks", "ks_pvalue"])
    size = size or min(len(v) for v in corpora.values())
    rng = np.random.default_rng(seed)
    dists = {}
    for name, vectors in corpora.items():
        if len(vectors) > size:
            vectors = vectors[np.sort(rng.choice(len(vectors), size=size, replace=False))]
        dists[name] = nn_distances(vectors, sample=sample, seed=seed)
    ref = dists.get(reference, next(iter(dists.values())))
    rows = []
    for name, d in dists.items():
        q = np.percentile(d, [5, 25, 50, 75, 95]) if len(d) else [np.nan] * 5
        ks = ks_2samp(d, ref) if len(d) and len(ref) else None
        rows.append({"corpus": name, "rows": min(size, len(corpora[name])), **dict(zip(
            ("p5", "p25", "p50", "p75", "p95"), map(float, q), strict=True)),
            "ks": float(ks.statistic) if ks else np.nan, "ks_pvalue": float(ks.pvalue) if ks else np.nan})  # fmt: skip
    return pd.DataFrame(rows)
