"""BM25 lexical index over chunks, scored by bm25s.

Why bm25s: it precomputes every (term, document) BM25 weight into a sparse matrix at index
time, so a query is a sum over a few posting lists in numpy, about 0.1 ms on our benchmark
corpora; it needs only numpy and is well kept. Tantivy and SQLite FTS5 would add a second
store to keep in sync with the chunks table and neither offers our German/English analysis.
We feed bm25s our own terms (analysis.py: per-language Snowball stemming, stop words,
case and diacritics folding) and read the score vector directly (get_scores_from_ids plus
an argpartition) instead of `retrieve`, which is what keeps a single query at or below plain
bm25s's latency. Measured (benchmarks/results/retrieval.md, same run, same machine):
nDCG@10 equal to bm25s+stemming on HotpotQA 0.774, Cranfield 0.365, XQuAD-en 0.968 (same
Snowball stemmer, stop words and BM25 parameters k1=1.5, b=0.75, left at bm25s's defaults
rather than tuned on the test queries), and a single `Searcher.search` p50 of 0.69-0.89x
bm25s's tokenize + retrieve (timed interleaved), confidence included; rank-bm25: 1.8-20x.

bm25s indexes are immutable, so additions and removals mark the index stale and the next
search rebuilds it from the cached term lists (analysis, the slow part, never runs twice for
the same chunk).
"""

from __future__ import annotations

import logging
from collections import Counter

import bm25s
import numpy as np

from .analysis import Analyzer, Language

# bm25s logs progress bars and debug lines at INFO; an index rebuild should be silent.
logging.getLogger("bm25s").setLevel(logging.WARNING)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first (argpartition: O(n) not O(n log n))."""
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if k < n:
        idx = np.argpartition(-scores, k - 1)[:k]
    else:
        idx = np.arange(n)
    return idx[np.argsort(-scores[idx], kind="stable")]


class LexicalIndex:
    """BM25 (Lucene variant) over chunk ids with incremental add/remove."""

    def __init__(self, analyzer: Analyzer | None = None, k1: float = 1.5, b: float = 0.75) -> None:
        self.analyzer = analyzer or Analyzer()
        self.k1, self.b = k1, b
        self._terms: dict[int, list[str]] = {}
        self._languages: Counter[Language] = Counter()
        self._chunk_language: dict[int, Language] = {}
        self._bm25: bm25s.BM25 | None = None
        self._row_ids = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._terms)

    def add(self, ids: list[int], texts: list[str]) -> None:
        for chunk_id, text in zip(ids, texts):
            self.remove([chunk_id])
            lang, self._terms[chunk_id] = self.analyzer.analyse(text)
            self._chunk_language[chunk_id] = lang
            self._languages[lang] += 1
        self._bm25 = None

    def remove(self, ids: list[int]) -> None:
        for chunk_id in ids:
            if self._terms.pop(chunk_id, None) is not None:
                self._languages[self._chunk_language.pop(chunk_id)] -= 1
                self._bm25 = None

    @property
    def majority_language(self) -> Language:
        """The corpus's main language: the fallback for queries without evidence."""
        if not self._languages or not any(self._languages.values()):
            return self.analyzer.fallback
        return self._languages.most_common(1)[0][0]

    def query_terms(self, query: str) -> list[str]:
        return self.analyzer.analyse(query, fallback=self.majority_language)[1]

    def _build(self) -> bm25s.BM25:
        self._row_ids = np.fromiter(self._terms.keys(), dtype=np.int64, count=len(self._terms))
        model = bm25s.BM25(k1=self.k1, b=self.b)
        model.index(list(self._terms.values()), show_progress=False)
        self._bm25 = model
        return model

    def scores(self, query: str, terms: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, BM25 score per chunk) for every indexed chunk; zeros if no term hits.

        `terms` are the query's analysed terms when the caller already has them.
        """
        if not self._terms:
            return self._row_ids[:0], np.zeros(0, dtype=np.float32)
        model = self._bm25 or self._build()
        token_ids = self._token_ids(self.query_terms(query) if terms is None else terms)
        if not token_ids:
            return self._row_ids, np.zeros(len(self._row_ids), dtype=np.float32)
        return self._row_ids, model.get_scores_from_ids(token_ids)

    def row_ids(self) -> np.ndarray:
        """Chunk id of each row of the current index (building it if stale)."""
        if self._terms and self._bm25 is None:
            self._build()
        return self._row_ids

    def _token_ids(self, terms: list[str]) -> list[int]:
        vocab = (self._bm25 or self._build()).vocab_dict
        return [vocab[t] for t in terms if t in vocab]

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top-k (chunk id, score) with score > 0, best first."""
        ids, scores = self.scores(query)
        best = top_k(scores, k)
        return [(int(ids[i]), float(scores[i])) for i in best if scores[i] > 0]

    def expansion_terms(self, chunk_id: int, n: int) -> list[str]:
        """The chunk's n rarest distinct terms (lowest document frequency first).

        Used for pseudo-relevance feedback: the rare words of the best hit (names, the
        bridge entity of a multi-hop question) are what a second lexical pass should look
        for; capping them keeps that pass as cheap as a normal query.
        """
        terms = self._terms.get(chunk_id)
        if not terms or n <= 0:
            return []
        model = self._bm25 or self._build()
        vocab, indptr = model.vocab_dict, model.scores["indptr"]
        distinct = [t for t in dict.fromkeys(terms) if t in vocab]
        distinct.sort(key=lambda t: indptr[vocab[t] + 1] - indptr[vocab[t]])
        return distinct[:n]

    def coverage(self, terms: list[str], chunk_ids: list[int]) -> np.ndarray:
        """Share of the distinct query terms that occur in each given chunk (0..1).

        Unlike a BM25 score this does not depend on corpus size, which makes it a useful
        confidence feature in a knowledge base of five chunks as in one of 100k. (A set
        intersection per hit measured 3-5x faster than probing bm25s's posting lists.)
        """
        distinct = set(terms)
        if not distinct:
            return np.zeros(len(chunk_ids), dtype=np.float32)
        return np.array([len(distinct.intersection(self._terms.get(int(c), ()))) / len(distinct)
                         for c in chunk_ids], dtype=np.float32)
