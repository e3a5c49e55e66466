"""The Evaluator contract shared by the text, heuristic and code evaluators.

Reflexion (seed 004) needs one shape for every kind of judgement: a pass/fail that stops the
trials, a score for benchmarks, and feedback text the Self-Reflection call can read. Code
evaluators (evaluators/code.py) run tests in the sandbox; text evaluators (exact match, F1)
and heuristics live next to them and return the same Evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(slots=True)
class Evaluation:
    """One judgement of one candidate answer.

    passed: the candidate is good enough to stop (Reflexion's success signal).
    score: 0..1 (1.0 passed; fraction of unit tests passed; token F1; ...).
    feedback: text shown to the model in the self-reflection prompt (why it failed).
    details: machine-readable extras (per-test results, timings, sandbox verdicts).
    """

    passed: bool
    score: float
    feedback: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "score": self.score,
                "feedback": self.feedback, "details": dict(self.details)}


@runtime_checkable
class Evaluator(Protocol):
    """Judges a candidate for a task. `task` is whatever the caller's task object is (a
    question with its gold answer, a code problem with its tests); the evaluator documents
    which attributes/keys it reads."""

    def __call__(self, task: Any, candidate: str) -> Evaluation:
        ...
