"""Fitting and checking the confidence model (knowledge/confidence.py) on the shared sets.

Fit: one logistic model per mode on the top-10 hits of the even-numbered queries of every
set, each set weighted equally (XQuAD's 1,190 queries would otherwise drown HotpotQA's 100).
Threshold: the smallest value at which, on those same fitting queries, the top hit was
relevant at least 90% of the time for every set and mode. Check: the same figures on the
odd-numbered queries, which the fit never saw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..knowledge.confidence import FEATURES, MODEL_PATH, confidences, design_matrix, fit_logistic
from ..knowledge.searcher import Searcher

TARGET_PRECISION = 0.9
THRESHOLDS = np.round(np.arange(0.50, 0.991, 0.01), 2)


@dataclass
class HitTable:
    """Per (set, mode): features and labels of the top-10 hits of every query."""

    rows: dict[tuple[str, str], list[tuple[int, dict[str, np.ndarray], np.ndarray]]] = \
        field(default_factory=dict)

    def add(self, dataset: str, mode: str, query_index: int, features: dict[str, np.ndarray],
            labels: np.ndarray) -> None:
        self.rows.setdefault((dataset, mode), []).append((query_index, features, labels))


def collect(table: HitTable, dataset: str, searcher: Searcher, queries: list[str],
            relevant: list[set[int]], modes: tuple[str, ...]) -> None:
    for mode in modes:
        for qi, query in enumerate(queries):
            ranking = searcher.rank(query, mode, 10)
            labels = np.array([int(i) in relevant[qi] for i in ranking.ids], dtype=np.float64)
            table.add(dataset, mode, qi, ranking.features, labels)


def _split(rows, parity: int):
    return [r for r in rows if r[0] % 2 == parity and len(r[2])]


def fit(table: HitTable) -> dict:
    """Fit per-mode coefficients on even queries and choose HIGH_CONFIDENCE."""
    modes = sorted({mode for _, mode in table.rows})
    model: dict = {"modes": {}, "target_precision": TARGET_PRECISION}
    for mode in modes:
        blocks, labels, weights = [], [], []
        for (dataset, m), rows in table.rows.items():
            if m != mode:
                continue
            train = _split(rows, 0)
            if not train:
                continue
            X = np.vstack([design_matrix(mode, f) for _, f, _ in train])
            blocks.append(X)
            labels.append(np.concatenate([y for _, _, y in train]))
            weights.append(np.full(len(X), 1.0 / len(X)))
        coef = fit_logistic(np.vstack(blocks), np.concatenate(labels), np.concatenate(weights))
        model["modes"][mode] = {"features": list(FEATURES[mode]), "coef": coef.tolist()}
    model["high_confidence"] = choose_threshold(table, model)
    return model


def top_hit_points(rows, mode: str, model: dict) -> tuple[np.ndarray, np.ndarray]:
    """(confidence of the top hit, whether it is relevant) per query with any hit."""
    conf = [confidences(mode, f, model)[0] for _, f, y in rows if len(y)]
    good = [y[0] for _, f, y in rows if len(y)]
    return np.asarray(conf), np.asarray(good)


def precision_coverage(conf: np.ndarray, good: np.ndarray, threshold: float,
                       total: int) -> tuple[float | None, float, int]:
    above = conf >= threshold
    n = int(above.sum())
    precision = float(good[above].mean()) if n else None
    return precision, n / max(total, 1), n


def choose_threshold(table: HitTable, model: dict) -> float:
    for threshold in THRESHOLDS:
        ok = True
        for (dataset, mode), rows in table.rows.items():
            conf, good = top_hit_points(_split(rows, 0), mode, model)
            precision, _, n = precision_coverage(conf, good, threshold, len(conf))
            if precision is not None and precision < TARGET_PRECISION:
                ok = False
                break
        if ok:
            return float(threshold)
    return float(THRESHOLDS[-1])


def report(table: HitTable, model: dict) -> list[dict]:
    """Held-out (odd queries) and all-queries figures at the model's threshold."""
    threshold = float(model["high_confidence"])
    out = []
    for (dataset, mode), rows in sorted(table.rows.items()):
        for split, subset in (("held-out", _split(rows, 1)),
                              ("all", [r for r in rows if len(r[2])])):
            conf, good = top_hit_points(subset, mode, model)
            total = len([r for r in rows if split == "all" or r[0] % 2 == 1])
            precision, coverage, n = precision_coverage(conf, good, threshold, total)
            out.append({"dataset": dataset, "mode": mode, "split": split,
                        "threshold": threshold, "precision": precision, "coverage": coverage,
                        "confident_queries": n, "queries": total,
                        "top1_relevant": float(good.mean()) if len(good) else None,
                        "brier_top1": float(np.mean((conf - good) ** 2)) if len(good) else None})
    return out


def save(model: dict, figures: list[dict], path: Path = MODEL_PATH) -> None:
    model = dict(model, figures=[f for f in figures if f["split"] == "held-out"])
    Path(path).write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
