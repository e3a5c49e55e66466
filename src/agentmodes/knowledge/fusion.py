"""Combining lexical and dense rankings.

Two fusions live here:

- `reciprocal_rank_fusion`: RRF (Cormack et al. 2009), sum of w / (k + rank), k = 60. It
  needs only ranks, so it fuses anything, but it throws away how *much* better one hit is
  than the next; on HotpotQA plain RRF scored below dense alone.
- `zscore_fusion` (what hybrid search uses): each method's scores are standardised over the
  whole corpus (z-scores: how many standard deviations a chunk stands above the average
  chunk for this query), then mixed as (1 - alpha) * z_lexical + alpha * z_dense. Unlike
  min-max over a top-N pool it does not depend on N and is not stretched by one outlier;
  the corpus mean/std cost O(n) on score vectors we already have. alpha (DEFAULT_ALPHA) was
  chosen once for all sets on the even-numbered queries of the three benchmark sets and is
  reported on the odd ones too (benchmarks/results/retrieval.md, "fusion ablation").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

RRF_K = 60
# Weight of the dense z-score in hybrid search; see the module docstring for how it was set.
DEFAULT_ALPHA = 0.6


def reciprocal_rank_fusion(rankings: Sequence[Iterable[int]], k: int = RRF_K,
                           weights: Sequence[float] | None = None) -> list[tuple[int, float]]:
    """Fuse ranked id lists (best first) into (id, score) pairs, best first.

    score(d) = sum over lists of weight / (k + rank of d in that list), ranks from 1.
    Ties keep the order in which ids were first met.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return sorted(fused.items(), key=lambda pair: -pair[1])


def zscores(scores: np.ndarray) -> np.ndarray:
    """(x - mean) / std over one query's score vector; all zeros if the vector is constant."""
    scores = np.asarray(scores, dtype=np.float32)
    if scores.size == 0:
        return scores
    std = float(scores.std())
    if std <= 1e-12:
        return np.zeros_like(scores)
    return (scores - float(scores.mean())) / std


def standardise(scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """z-scores of the given rows only (same as zscores(scores)[rows], without the full
    vector: the lexical and semantic paths need z just for their top hits)."""
    std = float(scores.std()) if scores.size else 0.0
    if std <= 1e-12:
        return np.zeros(len(rows), dtype=np.float32)
    return ((scores[rows] - float(scores.mean())) / std).astype(np.float32)


def zscore_fusion(lexical_z: np.ndarray, dense_z: np.ndarray,
                  alpha: float = DEFAULT_ALPHA) -> np.ndarray:
    """(1 - alpha) * lexical z + alpha * dense z, element-wise over aligned chunks.

    A chunk that has no vector yet gets dense z = 0 (the average chunk), so it competes on
    its lexical evidence alone instead of being dropped.
    """
    return (1.0 - alpha) * lexical_z + alpha * dense_z
