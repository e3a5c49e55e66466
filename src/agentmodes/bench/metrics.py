"""Ranking metrics with graded relevance: nDCG@k (BEIR/trec_eval form), Recall@k, MRR@k."""

from __future__ import annotations

import math


def ndcg_at_k(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    """Linear gain (grade / log2(rank + 1)), as BEIR's pytrec_eval 'ndcg_cut' computes it."""
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(grade / math.log2(i + 2) for i, grade in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def mrr_at_k(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    for i, doc in enumerate(ranked[:k]):
        if relevant.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def evaluate(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """Mean nDCG@10, Recall@5, Recall@10 and MRR@10 over the queries in `runs`."""
    names = ("ndcg@10", "recall@5", "recall@10", "mrr@10")
    totals = dict.fromkeys(names, 0.0)
    for qid, ranked in runs.items():
        rel = qrels.get(qid, {})
        totals["ndcg@10"] += ndcg_at_k(ranked, rel, 10)
        totals["recall@5"] += recall_at_k(ranked, rel, 5)
        totals["recall@10"] += recall_at_k(ranked, rel, 10)
        totals["mrr@10"] += mrr_at_k(ranked, rel, 10)
    n = max(len(runs), 1)
    return {name: value / n for name, value in totals.items()}
