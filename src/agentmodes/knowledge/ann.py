"""Approximate nearest neighbours for large knowledge bases: an HNSW graph from usearch.

Exact search reads every vector per query: 1.5 GB at 1M chunks x 384 dims, about 100-200 ms
here, twice for hybrid search's feedback pass. Above ANN_MIN vectors the dense index asks
this graph for candidates instead, and rescores them from a float16 copy of the vectors
(dense.DenseIndex.use_half: cosines within ~3e-4 of float32; which chunks are considered
is approximate anyway). `agentmodes bench scale` reports recall@10 against exact search.

Why usearch (measured against hnswlib, faiss and sqlite-vec, benchmarks/results/
index_candidates.md): a saved index opens as a memory map (`view=True`), so opening a 1M-chunk
KB does not read the graph; it stores vectors as float16 (half the memory of hnswlib, which
keeps float32 copies); it adds and removes keys incrementally; and it ships wheels with SIMD
kernels for this CPU. sqlite-vec 0.1 has no approximate index (it scans), faiss's HNSW cannot
remove keys.

A KB's graph is a `GraphSet`: one or a few graphs over disjoint rows, like the lexical
segments. Growing one graph means loading and rewriting all of it (O(KB) per save: a 1M-chunk
ingest could then save its index only at the very end, and a kill lost everything since);
a new batch of vectors instead gets a graph of its own, and the smallest graphs are merged
when there are more than MAX_GRAPHS (index_save.py), so a save costs what was added.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

# Vectors below this are searched exactly. At 100k x 384 one exact pass reads 150 MB, about
# 15 ms of CPU here: the whole budget of a hybrid query (benchmarks/results/scale.md reports
# that and the graph's recall@10). AGENTMODES_ANN_MIN moves the threshold.
ANN_MIN = int(os.environ.get("AGENTMODES_ANN_MIN") or 50_000)
CONNECTIVITY = 16      # graph degree (M): recall vs memory and build time
EXPANSION_ADD = 128    # ef_construction
EXPANSION_SEARCH = 256  # least ef at query time (>= the candidates asked for)
# A fixed ef finds a smaller share of the true neighbours as the graph grows, and that was
# where hybrid search lost its recall@10 against exact (bench scale KBs, 2026-12-02, 400
# queries: the bench's first 100 + 300 more): at 1M chunks 233 of 4,000 exact hits were
# missed, all first-pass graph misses or the different feedback hit they cause; none came
# from the lexical cut (no missed chunk ranked within its 600) and 2 from float16 rescoring.
# At 1M, ef 256 / 512 / 768 / 1024 / 1536 gave 0.942 / 0.951 / 0.962 / 0.967 / 0.972 at
# 19.0 / 21.4 / 23.5 / 28.0 / 32.3 ms CPU p50 per hybrid query; at 100k ef 256 / 320 / 384 /
# 512 gave 0.980 / 0.981 / 0.982 / 0.985 (the bench's 100: 0.968 / 0.971 / 0.972 / 0.979)
# at 8.5 / 9.0 / 10.8 / 12.0 ms. So ef = EXPANSION_AT_1M * sqrt(vectors / 1M), at least
# EXPANSION_SEARCH, rounded up to 64: 100k -> 384, 1M -> 1024, up to 62,500 vectors 256.
EXPANSION_AT_1M = 1024
# AGENTMODES_ANN_EF: one fixed ef for every graph (measuring the curve above)
FIXED_EXPANSION = int(os.environ.get("AGENTMODES_ANN_EF") or 0)
MAX_GRAPHS = 4         # more graphs than this: the two smallest are merged
MIN_PER_GRAPH = 32     # candidates asked of even the smallest graph


def expansion_for(vectors: int) -> int:
    """The query-time ef for a graph of this many vectors (the comment at
    EXPANSION_AT_1M says why it grows as the square root of the size)."""
    if FIXED_EXPANSION:
        return FIXED_EXPANSION
    grown = EXPANSION_AT_1M * (max(vectors, 0) / 1_000_000) ** 0.5
    return max(EXPANSION_SEARCH, int(-(-grown // 64) * 64))


class ApproximateIndex:
    """HNSW over rows (keys are row numbers), inner product on float16 vectors."""

    def __init__(self, index) -> None:
        self._index = index

    @classmethod
    def create(cls, dim: int) -> "ApproximateIndex":
        from usearch.index import Index

        return cls(Index(ndim=dim, metric="ip", dtype="f16", connectivity=CONNECTIVITY,
                         expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH))

    @classmethod
    def open(cls, path: Path, writable: bool = False) -> "ApproximateIndex":
        """A saved graph: memory-mapped read-only (view), or loaded to be changed."""
        from usearch.index import Index

        index = Index.restore(str(path), view=not writable)
        if index is None:
            raise OSError(f"not a usearch index: {path}")
        index.expansion_search = EXPANSION_SEARCH
        return cls(index)

    def __len__(self) -> int:
        return len(self._index)

    def add(self, rows: np.ndarray, vectors: np.ndarray, threads: int = 0) -> None:
        if len(rows):
            self._index.add(np.asarray(rows, dtype=np.uint64),
                            np.ascontiguousarray(vectors, dtype=np.float32), threads=threads)

    def remove(self, rows: np.ndarray) -> None:
        rows = [int(r) for r in rows if int(r) in self._index]
        if rows:
            self._index.remove(np.asarray(rows, dtype=np.uint64))

    def save(self, path: Path) -> None:
        self._index.save(str(path))

    def rows(self) -> np.ndarray:
        """The rows (keys) in this graph."""
        return np.asarray(self._index.keys, dtype=np.int64)

    def search(self, query: np.ndarray, count: int, expansion: int | None = None
               ) -> np.ndarray:
        """Rows of (about) the `count` nearest vectors, exploring `expansion` (ef) of them
        (default: expansion_for this graph's size)."""
        if not len(self._index):
            return np.zeros(0, dtype=np.int64)
        if expansion is None:
            expansion = expansion_for(len(self._index))
        if self._index.expansion_search != expansion:
            self._index.expansion_search = expansion
        matches = self._index.search(np.asarray(query, dtype=np.float32), count, threads=1)
        return np.asarray(matches.keys, dtype=np.int64)


class GraphSet:
    """The approximate index of a KB: graphs over disjoint rows, searched together.

    Each graph is asked for a share of the candidates by its size (at least MIN_PER_GRAPH,
    at most `count`), so a few small recent graphs add little rescoring work; without an
    explicit `expansion` each explores expansion_for its own size (how well a graph is
    searched depends on that graph's size, not the KB's)."""

    def __init__(self, graphs: list[ApproximateIndex]) -> None:
        self.graphs = graphs

    def __len__(self) -> int:
        return sum(len(g) for g in self.graphs)

    def search(self, query: np.ndarray, count: int, expansion: int | None = None
               ) -> np.ndarray:
        total = len(self)
        if not total:
            return np.zeros(0, dtype=np.int64)
        if len(self.graphs) == 1:
            graph = self.graphs[0]
            return graph.search(query, count, expansion or expansion_for(len(graph)))
        parts = [g.search(query, min(count, max(MIN_PER_GRAPH, -(-2 * count * len(g) // total))),
                          expansion or expansion_for(len(g)))
                 for g in self.graphs if len(g)]
        return np.concatenate(parts)
