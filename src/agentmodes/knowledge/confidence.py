"""Calibrated confidence: the probability that a hit is relevant, the same scale in every mode.

Each mode has a logistic model over features of a hit that are comparable across queries
and corpora:

- z: the hit's score in standard deviations above this query's corpus average (BM25, cosine
  or the fused score); it separates a clear winner from a crowd of look-alikes.
- margin: how far (in z) the hit stands above the next one.
- coverage: share of the query's terms found in the hit (size-independent).
- cosine: the raw embedding similarity (semantic and hybrid only).
- agree (hybrid only): 1 if the hit is the top hit of both lexical and dense search. On a
  corpus of near-identical documents (Cranfield's aerodynamics abstracts) z and margin look
  "confident" for a wrong hit; two independent methods agreeing on it is what separates
  one clearly right document from many similar ones (measured with a 90% anchor: held-out
  hybrid coverage XQuAD-en 0.41 -> 0.66, Cranfield 0.30 -> 0.40, every set still >= 0.90).
- rank: log(1 + position in the list), so the top hit is calibrated on its own terms.

The coefficients are fitted offline by `agentmodes bench retrieval --fit-confidence` on the
shared benchmark sets (HotpotQA, Cranfield, XQuAD-en; each set weighted equally) and stored
in confidence.json next to this file. Each mode's logistic output is then mapped through a
monotone piecewise-linear rescaling that sends the mode's `anchor` to HIGH_CONFIDENCE (0.9):
the anchor is the lowest raw value at which the top hit was relevant at least 92% of the
time (2 points of room for sampling, bench/calibration.py) on EVERY set, on out-of-fold
predictions (2 folds by query parity: each half scored by a model fitted on the other). So
"confidence >= HIGH_CONFIDENCE" means the same in every mode: the top hit was right at least
90% of the time on each benchmark set's held-out queries. The figures
(held-out precision / coverage per set and mode) are in confidence.json and
benchmarks/results/retrieval.md. Confidence never rises down a result list (a lower-ranked
hit is capped by the one above).

z-scores need a crowd: over a knowledge base of a handful of chunks they say nothing (one
chunk has z = 0 however well it matches). Below SMALL_CORPUS chunks each mode therefore uses
its "/small" model, fitted on the same data with only the size-independent features.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np

FEATURES: dict[str, tuple[str, ...]] = {
    "lexical": ("z", "margin", "coverage", "rank"),
    "semantic": ("z", "margin", "coverage", "cosine", "rank"),
    "hybrid": ("z", "margin", "coverage", "cosine", "agree", "rank"),
    "lexical/small": ("coverage", "rank"),
    "semantic/small": ("coverage", "cosine", "rank"),
    "hybrid/small": ("coverage", "cosine", "rank"),
}
SMALL_CORPUS = 50
MODEL_PATH = Path(__file__).with_name("confidence.json")


@lru_cache(maxsize=1)
def load_model(path: str = str(MODEL_PATH)) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def high_confidence_threshold() -> float:
    return float(load_model()["high_confidence"])


# The documented threshold: a top hit with confidence >= HIGH_CONFIDENCE was relevant at
# least 90% of the time on every benchmark set's held-out queries, in every mode (figures
# in confidence.json and benchmarks/results/retrieval.md).
HIGH_CONFIDENCE: float = high_confidence_threshold()


def design_matrix(mode: str, features: dict[str, np.ndarray]) -> np.ndarray:
    """Columns: intercept, then FEATURES[mode] in order."""
    names = FEATURES[mode]
    n = len(features[names[0]]) if features else 0
    columns = [np.ones(n, dtype=np.float64)]
    columns += [np.asarray(features[name], dtype=np.float64) for name in names]
    return np.column_stack(columns) if n else np.zeros((0, len(names) + 1))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -40, 40)))


@lru_cache(maxsize=8)
def _coefficients(mode: str) -> tuple[float, ...]:
    return tuple(float(c) for c in load_model()["modes"][mode]["coef"])


def _scale(model: dict, mode: str) -> tuple[float, float]:
    """(anchor, target) of a mode's rescaling; a model without anchors is left unscaled."""
    anchor = model["modes"][mode].get("anchor")
    target = float(model.get("high_confidence", 0.9))
    return (target, target) if anchor is None else (float(anchor), target)


def rescale(p: float, anchor: float, target: float) -> float:
    """Monotone piecewise-linear map of [0, 1] onto itself sending `anchor` to `target`.

    It keeps the order of hits (so rankings and the cap below are unaffected) and moves
    only where a mode's probabilities cross the documented threshold. An anchor of 1.0
    means no raw value was safe: the hit then stays below the target."""
    if anchor >= 1.0:
        return p * target * 0.99
    if p < anchor:
        return p * target / anchor
    return target + (p - anchor) * (1.0 - target) / (1.0 - anchor)


def model_name(mode: str, corpus_size: int | None) -> str:
    """Which fitted model scores a result list of `mode` over `corpus_size` chunks."""
    return f"{mode}/small" if corpus_size is not None and corpus_size < SMALL_CORPUS else mode


def confidences(mode: str, features: dict[str, np.ndarray], model: dict | None = None,
                corpus_size: int | None = None) -> list[float]:
    """Calibrated confidence (0..1) of each hit of one ranked list, best first.

    `mode` is a search mode or a FEATURES key; with `corpus_size` below SMALL_CORPUS the
    mode's size-independent model is used.
    """
    if not features:
        return []
    mode = model_name(mode, corpus_size)
    coef = _coefficients(mode) if model is None else tuple(model["modes"][mode]["coef"])
    anchor, target = _scale(load_model() if model is None else model, mode)
    # A result list is a handful of hits: plain floats beat numpy's per-call overhead here,
    # and this runs on every search.
    columns = [features[name].tolist() for name in FEATURES[mode]]
    out, cap = [], 1.0
    for values in zip(*columns):
        logit = coef[0] + sum(w * v for w, v in zip(coef[1:], values))
        p = 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, logit))))
        cap = min(cap, rescale(p, anchor, target))
        out.append(cap)
    return out


def fit_logistic(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
                 l2: float = 1e-3, iterations: int = 50) -> np.ndarray:
    """Weighted logistic regression by Newton's method (IRLS), small ridge for stability.

    A dozen lines of numpy instead of a scikit-learn dependency for one offline fit.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    coef = np.zeros(X.shape[1])
    ridge = l2 * np.eye(X.shape[1])
    ridge[0, 0] = 0.0  # do not shrink the intercept
    for _ in range(iterations):
        p = sigmoid(X @ coef)
        gradient = X.T @ (w * (y - p)) - ridge @ coef
        hessian = (X * (w * p * (1 - p))[:, None]).T @ X + ridge
        step = np.linalg.solve(hessian, gradient)
        coef += step
        if np.max(np.abs(step)) < 1e-8:
            break
    return coef
