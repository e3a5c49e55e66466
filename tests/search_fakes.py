"""A deterministic stand-in embedder for search tests: hashed bag of stemmed words.

Texts sharing words get similar vectors, so semantic and hybrid search behave like search
(not like noise) without loading a model.
"""

from __future__ import annotations

import zlib

import numpy as np

from agentmodes.knowledge.analysis import Analyzer


class HashingEmbedder:
    name = "test:hashing-64"
    dim = 64

    def __init__(self) -> None:
        self._analyzer = Analyzer("auto")
        self.passage_calls = 0

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for term in self._analyzer.terms(text):
            v[zlib.crc32(term.encode()) % self.dim] += 1.0
        v[0] += 0.1  # never a zero vector
        return v / np.linalg.norm(v)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.passage_calls += 1
        return np.vstack([self._vector(t) for t in texts]) if texts else \
            np.zeros((0, self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


class RecordingGraph:
    """A stand-in for one HNSW graph of a GraphSet: `size` vectors; records each search."""

    def __init__(self, size: int) -> None:
        self.size, self.asked = size, []

    def __len__(self) -> int:
        return self.size

    def search(self, query, count: int, expansion: int) -> np.ndarray:
        self.asked.append((count, expansion))
        return np.arange(count)
