"""Combining lexical and dense rankings.

- `reciprocal_rank_fusion`: RRF (Cormack et al. 2009), sum of w / (k + rank), k = 60. It
  needs only ranks, so it fuses anything, but it throws away how *much* better one hit is
  than the next; on HotpotQA plain RRF scored below dense alone.
- z-score fusion: each method's scores are standardised over the whole corpus (how many
  standard deviations a chunk stands above the average chunk for this query) and mixed
  linearly. Unlike min-max over a top-N pool it does not depend on N and is not stretched by
  one outlier; mean and std cost O(n) on score vectors we already have.
- Hybrid search (`HybridWeights`) is two-stage: stage 1 is z-score fusion; then the best
  stage-1 hit is fed back (pseudo-relevance feedback, Rocchio style) into both retrievers,
  the dense query as q + beta * v(top hit), the lexical query extended by the top hit's
  rarest terms, and the final score mixes the z-scores of the original and the feedback
  runs. Feedback is what finds the second, "bridge" paragraph of a multi-hop question
  that the question itself does not name. The weights were chosen once for all sets on the
  even-numbered queries of the benchmark sets and are reported on the odd ones
  (benchmarks/results/retrieval.md, "fusion ablation").

nDCG@10 (all queries; HotpotQA / Cranfield / XQuAD-en): lexical 0.774 / 0.365 / 0.968,
dense 0.851 / 0.363 / 0.970, plain RRF 0.830 / 0.386 / 0.979, z-score fusion alone
0.850 / 0.397 / 0.987, two-stage hybrid 0.874 / 0.419 / 0.987. On the held-out halves the
hybrid gains over z-score fusion alone are HotpotQA +0.02, Cranfield +0.03.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from dataclasses import dataclass

RRF_K = 60


@dataclass(frozen=True)
class HybridWeights:
    """How hybrid search mixes its four score vectors (all as z-scores)."""

    alpha: float = 0.7            # stage 1: dense weight in (1 - alpha) * lexical + alpha * dense
    lexical: float = 0.0          # final mix: original lexical run
    lexical_feedback: float = 0.2  # lexical run with the top hit's rare terms added
    dense: float = 0.4            # original dense run
    dense_feedback: float = 0.6   # dense run with q + beta * v(top hit)
    beta: float = 0.3
    feedback_terms: int = 16

    @property
    def uses_feedback(self) -> bool:
        return bool(self.lexical_feedback or self.dense_feedback)


DEFAULT_WEIGHTS = HybridWeights()
STAGE_ONE_ONLY = HybridWeights(lexical=0.3, lexical_feedback=0.0, dense=0.7, dense_feedback=0.0)


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
    n = scores.size
    if n == 0:
        return np.zeros(len(rows), dtype=np.float32)
    mean = float(scores.sum()) / n
    variance = float(np.dot(scores, scores)) / n - mean * mean  # one pass each, no temporaries
    if variance <= 1e-12:
        return np.zeros(len(rows), dtype=np.float32)
    return ((scores[rows] - mean) / variance ** 0.5).astype(np.float32)


def zscore_fusion(lexical_z: np.ndarray, dense_z: np.ndarray,
                  alpha: float = DEFAULT_WEIGHTS.alpha) -> np.ndarray:
    """(1 - alpha) * lexical z + alpha * dense z, element-wise over aligned chunks.

    A chunk that has no vector yet gets dense z = 0 (the average chunk), so it competes on
    its lexical evidence alone instead of being dropped.
    """
    return (1.0 - alpha) * lexical_z + alpha * dense_z


@dataclass(frozen=True, slots=True)
class Moments:
    """Mean and standard deviation of one query's scores over a corpus of `n` chunks.

    Computed from a score vector (rows outside the corpus hold 0: they add nothing to the
    sums) or in closed form (dense.DenseIndex.moments_of), so that z-scores can be taken for
    candidate rows only while still meaning "standard deviations above the corpus average"."""

    mean: float
    std: float

    @classmethod
    def of(cls, scores: np.ndarray, n: int) -> "Moments":
        if n <= 0:
            return cls(0.0, 0.0)
        # float64: float32 sums lose the variance of cosines around 0.8. No BLAS dot: a
        # ddot this long is handed to OpenBLAS's threads, and waking them on a busy
        # machine cost 38 ms per call at 10k chunks against 0.03 ms for this.
        wide = scores.astype(np.float64)
        total = float(wide.sum())
        return cls.from_sums(total, float(np.square(wide, out=wide).sum()), n)

    @classmethod
    def from_sums(cls, total: float, squares: float, n: int) -> "Moments":
        """From the sum and the sum of squares of the scores of `n` chunks (a database
        computes those where the scores are)."""
        if n <= 0:
            return cls(0.0, 0.0)
        mean = total / n
        variance = squares / n - mean * mean
        return cls(mean, max(variance, 0.0) ** 0.5)

    def z(self, values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, dtype=np.float32)
        if self.std <= 1e-6 * max(1.0, abs(self.mean)) or self.std <= 1e-12:
            return np.zeros_like(values)
        return ((values - self.mean) / self.std).astype(np.float32)
