"""Sentence vectors for the answer composer: the KB's own embedder, cached, failing soft.

The composer embeds the same source sentences again and again (every statement of the
model's answer is judged against them, and the ranking needs them once more), so the
vectors are kept in a bounded LRU cache. The embedder is resolved lazily (a zero-argument
callable is called on first use: loading the model costs seconds that a purely lexical
composition never needs), and any failure turns the composer lexical-only for good rather
than losing the answer.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Optional, Sequence

import numpy as np

_CACHE_SIZE = 4096


class SentenceVectors:
    """Thread-safe enough for reuse: the cache is the only shared state and a lost race
    only embeds a sentence twice."""

    def __init__(self, embedder: Any = None, cache_size: int = _CACHE_SIZE):
        self._embedder = embedder          # an Embedder, a zero-argument callable, or None
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._failed = False

    def model(self) -> Any:
        if self._failed or self._embedder is None:
            return None
        if callable(self._embedder) and not hasattr(self._embedder, "embed_passages"):
            try:
                self._embedder = self._embedder()
            except Exception:      # noqa: BLE001 - no embedder: words and numbers only
                self._failed, self._embedder = True, None
        return self._embedder

    def embed(self, texts: Sequence[str]) -> Optional[np.ndarray]:
        model = self.model()
        if model is None or not texts:
            return None
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            try:
                rows = model.embed_passages(missing)
            except Exception:      # noqa: BLE001 - a failing embedder must not lose the answer
                self._failed = True
                return None
            for text, row in zip(missing, rows):
                self._vectors[text] = np.asarray(row, dtype=np.float32)
            while len(self._vectors) > self._cache_size:
                self._vectors.popitem(last=False)
        return np.vstack([self._vectors[t] for t in texts])

    def embed_query(self, text: str) -> Optional[np.ndarray]:
        model = self.model()
        if model is None:
            return None
        try:
            return np.asarray(model.embed_query(text), dtype=np.float32)
        except Exception:          # noqa: BLE001
            self._failed = True
            return None
