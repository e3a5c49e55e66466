"""Search over chunks held in memory: the lexical and dense indexes of one process.

A Searcher holds a lexical index and a dense index over the same rows (one row per chunk).
It is built in memory (Searcher(ids, texts, vectors)) or opened from saved indexes
(backends/sqlite_index.py) and kept in step with ingest (add / add_vectors / remove).
Chunks are searchable lexically as soon as their text is added; hybrid search uses whatever
vectors exist, so a folder is useful before its embeddings are done.

The ranking itself (modes, fusion, feedback, confidence) is retriever.py's, shared with the
PostgreSQL backend; this module answers its hooks from numpy arrays. Up to EXACT_ROWS chunks
(and no approximate graph) every chunk is scored in every pass; above, hybrid fuses
candidates (retriever.py), and above ann.ANN_MIN vectors the HNSW graph proposes the dense
ones, rescored from a float16 copy of the vectors (dense.DenseIndex.use_half), explored
more widely in larger graphs (ann.expansion_for: ef 384 at 100k vectors, 1024 at 1M). Above
lexical.LARGE_ROWS (= ANN_MIN) a few shortcuts apply that may round or break ties
differently (see LARGE_LEXICAL_CANDIDATES, FEEDBACK_CANDIDATES, _row_scores, top_k), so
smaller knowledge bases keep exactly the results the benchmarks and calibration measured.
"""

from __future__ import annotations

import os

import numpy as np

from .analysis import Analyzer, LanguageSetting
from .dense import DenseIndex
from .embedders import Embedder
from .fusion import DEFAULT_WEIGHTS, HybridWeights, Moments
from .lexical import LARGE_ROWS, LexicalIndex, top_k
from .retriever import (CANDIDATES, SEARCH_MODES, SEMANTIC_CANDIDATES, Ranking, Retriever,
                        ScoredChunk)

__all__ = ["Searcher", "ScoredChunk", "Ranking", "SEARCH_MODES", "EXACT_ROWS", "CANDIDATES",
           "SEMANTIC_CANDIDATES"]

EXACT_ROWS = 20_000   # up to here hybrid search scores every row in every pass
# Rows the graph proposes for hybrid's feedback query (q + beta * v(top hit)), explored
# with the same ef: that query lies next to the first pass's and the lexical feedback run
# covers the top hit's neighbourhood, so half the first pass's candidates suffice (100k
# chunks: recall@10 vs exact 0.985 -> FEEDBACK_RECALL, 2.3 -> 1.2 ms CPU for this search).
# It stays 128 / ef 128 at every size: at 1M chunks (first pass at ef 1024, ann.py) ef 256
# here gave recall@10 0.968 against 0.967 for 2.1 ms more CPU per query.
FEEDBACK_CANDIDATES = int(os.environ.get("AGENTMODES_FEEDBACK_CANDIDATES") or 128)
# Rows each lexical run proposes to hybrid's fusion above LARGE_ROWS (CANDIDATES below).
# Every proposed row is rescored from its vector, a scattered read: at 100k chunks 600
# instead of 1,000 cut hybrid from 15.1 to 11.5 ms CPU at recall@10 vs exact 0.983 -> 0.973.
# At 1M chunks none of hybrid's misses against exact came from this cut (every missed chunk
# ranked beyond 700 lexically); 400 instead lost recall (0.967 -> 0.954 at ef 1024), so 600.
LARGE_LEXICAL_CANDIDATES = int(os.environ.get("AGENTMODES_LEXICAL_CANDIDATES") or 600)


class Searcher(Retriever):
    def __init__(self, ids: list[int], texts: list[str], vectors: np.ndarray | None = None,
                 vector_ids: list[int] | None = None, embedder: Embedder | None = None,
                 language: LanguageSetting = "auto",
                 weights: HybridWeights = DEFAULT_WEIGHTS) -> None:
        self.embedder = embedder
        self.weights = weights
        self.lexical = LexicalIndex(Analyzer(language))
        self.dense = DenseIndex()
        self._last_run: tuple | None = None  # (index state, terms, scores): _row_scores
        self.add(ids, texts)
        if vectors is not None:
            self.add_vectors(list(ids) if vector_ids is None else list(vector_ids), vectors)

    def __len__(self) -> int:
        return len(self.lexical)

    # -- keeping in step with the store -------------------------------------------------

    def add(self, ids: list[int], texts: list[str]) -> None:
        """Index chunk texts lexically (replacing chunks with the same ids)."""
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        self.remove(ids)
        self.lexical.add(list(ids), list(texts))

    def add_analysed(self, ids: list[int], key_lists: list[list[int]],
                     languages: list[str]) -> None:
        """Index chunks whose terms are already analysed (Analyzer.analyse_keys)."""
        self.remove(ids)
        self.lexical.add_analysed(list(ids), key_lists, languages)

    def add_vectors(self, ids: list[int], vectors: np.ndarray) -> None:
        """Add or replace the dense vectors of indexed chunks (rows L2-normalised)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        rows = self.lexical.rows_of(ids)
        keep = rows >= 0
        if keep.any():
            self.dense.add(rows[keep], vectors[keep])

    def remove(self, ids: list[int]) -> None:
        self.dense.remove(self.lexical.remove(list(ids)))

    # -- the Retriever's hooks ----------------------------------------------------------

    @property
    def vector_count(self) -> int:
        return len(self.dense)

    @property
    def exact(self) -> bool:
        return self.dense.ann is None and self.lexical.n_rows <= EXACT_ROWS

    @property
    def lexical_candidates(self) -> int:
        return LARGE_LEXICAL_CANDIDATES if self.lexical.n_rows > LARGE_ROWS else CANDIDATES

    def all_rows(self) -> np.ndarray:
        return self.lexical.alive_rows()

    def query_terms(self, query: str) -> list[int]:
        return self.lexical.query_terms(query)

    def lexical_run(self, terms: list[int]) -> "_LexicalScores":
        return _LexicalScores(self._row_scores(terms), len(self.lexical))

    def _row_scores(self, terms: list[int]) -> np.ndarray:
        """BM25 of every row. Hybrid's feedback run asks for the query's terms plus the top
        hit's rare ones; BM25 is a sum over query terms (a repeat adds its term again), so
        above LARGE_ROWS that run adds the new terms' scores to the first run's instead of
        reading the query's long posting lists a second time (0.5 ms at 100k chunks). The
        sum is rounded once more than a fresh run, so smaller indexes keep the fresh run."""
        lexical = self.lexical
        state = (lexical.n_rows, len(lexical), id(lexical))
        last = self._last_run
        if last is not None and last[0] == state and len(terms) > len(last[1]) and \
                terms[:len(last[1])] == last[1]:
            scores = last[2] + lexical.row_scores(terms[len(last[1]):])
        else:
            scores = lexical.row_scores(terms)
        self._last_run = (state, list(terms), scores) if lexical.n_rows > LARGE_ROWS else None
        return scores

    def dense_run(self, vector: np.ndarray) -> "_DenseScores":
        return _DenseScores(self.dense, vector, self.lexical.n_rows, self.exact)

    def dense_moments(self, vector: np.ndarray) -> Moments:
        return Moments(*self.dense.moments_of(vector))

    def feedback_proposals(self, vector: np.ndarray) -> np.ndarray | None:
        # Without a graph the first pass already proposed the CANDIDATES best of all rows.
        if self.dense.ann is None:
            return None
        return self.dense.candidates(vector, FEEDBACK_CANDIDATES, self.lexical.n_rows,
                                     expansion=FEEDBACK_CANDIDATES)

    def vector(self, row: int) -> np.ndarray | None:
        return self.dense.vector(row)

    def dots(self, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
        return self.dense.rescore(rows, vector)[:, 0]

    def expansion_terms(self, row: int, n: int) -> list[int]:
        return self.lexical.expansion_terms(row, n)

    def coverage(self, terms: list[int], rows: np.ndarray) -> np.ndarray:
        return self.lexical.coverage(terms, rows)

    def chunk_ids(self, rows: np.ndarray) -> np.ndarray:
        return self.lexical.row_ids()[rows]


class _LexicalScores:
    """A LexicalRun over the full BM25 vector of every row."""

    def __init__(self, scores: np.ndarray, live: int) -> None:
        self.scores = scores
        self.moments = Moments.of(scores, live)

    def at(self, rows: np.ndarray) -> np.ndarray:
        return self.scores[rows]

    def candidates(self, count: int) -> np.ndarray:
        best = top_k(self.scores, count)
        return best[self.scores[best] > 0]

    def top(self) -> int:
        return int(np.argmax(self.scores))


class _DenseScores:
    """A DenseRun: every row's cosine when there is no graph, else graph candidates rescored
    (DenseIndex.rescore: from the float16 copy) and closed-form moments (dense.py)."""

    def __init__(self, dense: DenseIndex, vector: np.ndarray, n_rows: int, exact: bool) -> None:
        self.dense, self.vector, self.n_rows, self.exact = dense, vector, n_rows, exact
        if dense.ann is None:
            self.scores: np.ndarray | None = dense.row_scores(vector, n_rows)
            self.moments = Moments.of(self.scores, len(dense))
        else:
            self.scores = None
            self.moments = Moments(*dense.moments_of(vector))
        self._proposed: np.ndarray | None = None

    def at(self, rows: np.ndarray) -> np.ndarray:
        if self.scores is not None:
            return self.scores[rows]
        return self.dense.rescore(rows, self.vector)[:, 0]

    def has(self, rows: np.ndarray) -> np.ndarray:
        return self.dense.has_vector(self.n_rows)[rows]

    def best(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        if self.scores is not None:
            rows = self.dense.best_rows(self.scores, count)
            return rows, self.scores[rows]
        found = self.dense.candidates(self.vector, max(count, SEMANTIC_CANDIDATES), self.n_rows)
        found_cosine = self.dense.rescore(found, self.vector)[:, 0]
        order = top_k(found_cosine, count)
        return found[order], found_cosine[order]

    def proposals(self) -> np.ndarray:
        if self._proposed is None:
            self._proposed = self.dense.candidates(
                self.vector, SEMANTIC_CANDIDATES, self.n_rows) if self.scores is None \
                else self.dense.best_rows(self.scores, CANDIDATES)
        return self._proposed

    def top(self) -> int:
        if self.exact:
            has = self.dense.has_vector(self.n_rows)
            return int(np.argmax(np.where(has, self.scores, -np.inf)))
        proposed = self.proposals()
        return int(proposed[np.argmax(self.at(proposed))])
