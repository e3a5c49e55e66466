"""Exact match and token F1, the HotpotQA/SQuAD answer metrics (seed 004: "精确匹配").

The normalisation is the one the official SQuAD and HotpotQA scripts use (lower case, drop
punctuation and the articles a/an/the, collapse white space), so our numbers are comparable
to published ones. HotpotQA's F1 has one twist kept here: a yes/no/noanswer prediction only
scores if it equals the gold answer exactly.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from .base import Evaluation

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CITATION = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")
_PUNCT = set(string.punctuation)
_SPECIAL = {"yes", "no", "noanswer"}


def normalize_answer(text: str) -> str:
    text = str(text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def strip_citations(answer: str) -> str:
    """Drop the agents' source markers ("Bern [1]", "[1, 2]"): they are not part of the
    answer, and the normalisation would otherwise keep their digits."""
    return _CITATION.sub("", answer or "").strip()


def exact_match(prediction: str, gold: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(gold)


def f1_score(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    common = Counter(pred_tokens) & Counter(ref_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def gold_answers(task: Any) -> list[str]:
    """The accepted answers of a task: a plain string, a mapping with "answer"/"answers",
    or an object with such an attribute."""
    if isinstance(task, str):
        return [task]
    value = None
    for key in ("answers", "answer", "gold"):
        value = task.get(key) if isinstance(task, dict) else getattr(task, key, None)
        if value is not None:
            break
    if value is None:
        raise ValueError("the task has no gold answer (expected 'answer' or 'answers')")
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _best(prediction: str, golds: Iterable[str]) -> tuple[bool, float, str]:
    best = (False, 0.0, "")
    for gold in golds:
        cand = (exact_match(prediction, gold), f1_score(prediction, gold), gold)
        if (cand[0], cand[1]) > (best[0], best[1]):
            best = cand
    return best


@dataclass(slots=True)
class ExactMatchEvaluator:
    """Passes when the normalised answer equals a gold answer; score is token F1 so a
    benchmark can report both from one call."""

    def __call__(self, task: Any, candidate: str) -> Evaluation:
        candidate = strip_citations(candidate)
        em, f1, _ = _best(candidate, gold_answers(task))
        feedback = ("The answer is correct." if em else
                    f"The answer {candidate.strip()!r} is not correct (token overlap F1 {f1:.2f}).")
        return Evaluation(passed=em, score=1.0 if em else 0.0, feedback=feedback,
                          details={"em": em, "f1": f1, "normalized": normalize_answer(candidate)})


@dataclass(slots=True)
class F1Evaluator:
    """Passes when token F1 reaches `threshold` (softer than exact match for long answers)."""

    threshold: float = 0.8

    def __call__(self, task: Any, candidate: str) -> Evaluation:
        candidate = strip_citations(candidate)
        em, f1, _ = _best(candidate, gold_answers(task))
        passed = em or f1 >= self.threshold
        feedback = ("The answer matches the expected one." if passed else
                    f"The answer {candidate.strip()!r} overlaps the expected one only partly "
                    f"(token F1 {f1:.2f} < {self.threshold:.2f}).")
        return Evaluation(passed=passed, score=f1, feedback=feedback, details={"em": em, "f1": f1})
