"""Fusion ablation: which way of mixing lexical and dense scores earns its keep.

Works on full score matrices (queries x corpus) of our lexical index and the dense vectors,
so dozens of variants cost seconds. alpha is tuned once for all sets on the even-numbered
queries (mean nDCG@10 over the sets) and reported on the odd-numbered ones and on all.
"""

from __future__ import annotations

import numpy as np

from ..knowledge.fusion import DEFAULT_ALPHA, RRF_K, zscores
from ..knowledge.lexical import top_k
from .metrics import ndcg_at_k

ALPHAS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
DEPTH = 100


def _ndcg(scores: np.ndarray, doc_ids: list[str], qrels: list[dict[str, int]],
          rows: list[int]) -> float:
    values = [ndcg_at_k([doc_ids[j] for j in top_k(scores[i], 10)], qrels[i], 10) for i in rows]
    return float(np.mean(values)) if values else 0.0


def _rrf(lexical: np.ndarray, dense: np.ndarray, w_dense: float) -> np.ndarray:
    out = np.zeros_like(lexical, dtype=np.float64)
    for i in range(lexical.shape[0]):
        for weight, scores in ((1.0 - w_dense, lexical[i]), (w_dense, dense[i])):
            best = top_k(scores, DEPTH)
            out[i, best] += weight / (RRF_K + np.arange(1, len(best) + 1))
    return out


def _minmax(lexical: np.ndarray, dense: np.ndarray, alpha: float) -> np.ndarray:
    """Min-max over the union of both top-100 pools (the common convex-combination recipe)."""
    out = np.full(lexical.shape, -1.0)
    for i in range(lexical.shape[0]):
        pool = np.union1d(top_k(lexical[i], DEPTH), top_k(dense[i], DEPTH))
        parts = []
        for scores in (lexical[i, pool], dense[i, pool]):
            span = scores.max() - scores.min()
            parts.append((scores - scores.min()) / span if span > 0 else np.zeros_like(scores))
        out[i, pool] = (1 - alpha) * parts[0] + alpha * parts[1]
    return out


def _z(lexical: np.ndarray, dense: np.ndarray, alpha: float) -> np.ndarray:
    lz = np.vstack([zscores(row) for row in lexical])
    dz = np.vstack([zscores(row) for row in dense])
    return (1 - alpha) * lz + alpha * dz


VARIANTS = {
    "RRF weighted (dense weight)": _rrf,
    "convex min-max top-100 (alpha)": _minmax,
    "convex z-score (alpha)": _z,
}


def run_ablation(sets: dict[str, tuple[np.ndarray, np.ndarray, list[str], list[dict]]]) -> dict:
    """sets: name -> (lexical scores, dense scores, doc ids, qrels per query)."""
    rows_by_split = {
        name: {"dev": list(range(0, len(q), 2)), "test": list(range(1, len(q), 2)),
               "all": list(range(len(q)))}
        for name, (_, _, _, q) in sets.items()}
    table: list[dict] = []
    for variant, fn in VARIANTS.items():
        for alpha in ALPHAS:
            entry = {"variant": variant, "alpha": alpha}
            for name, (lexical, dense, doc_ids, qrels) in sets.items():
                fused = fn(lexical, dense, alpha)
                for split, rows in rows_by_split[name].items():
                    entry[f"{name}/{split}"] = _ndcg(fused, doc_ids, qrels, rows)
            entry["dev mean"] = float(np.mean([entry[f"{n}/dev"] for n in sets]))
            table.append(entry)
    best = {}
    for variant in VARIANTS:
        candidates = [e for e in table if e["variant"] == variant]
        best[variant] = max(candidates, key=lambda e: e["dev mean"])["alpha"]
    return {"rows": table, "best_alpha_on_dev": best, "default_alpha": DEFAULT_ALPHA}
