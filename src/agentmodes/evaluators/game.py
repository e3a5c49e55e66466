"""Judging a trial in a text game: the game's own verdict, explained by seed 004's heuristic.

A game says whether it was won; that is the pass/fail. When it was not won, Reflexion's
self-reflection needs to know why: the rule heuristic of seed 004 (RuleHeuristic: the same
invalid action at the same place more than 3 times in a row, or more than 30 steps) names
the failure when it applies, and otherwise the game's failure is reported as it happened
(the step limit, the model giving up).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .base import Evaluation
from .heuristics import RuleHeuristic, trajectory_of

_OUTCOMES = {"max_iterations": "the step limit was reached",
             "final_answer": "the agent declared it was done, but the task was not completed",
             "parse_error": "the agent's steps could not be read",
             "llm_error": "the model failed",
             "lost": "the game was lost"}


@dataclass(slots=True)
class GameEvaluator:
    """Passes when the run won its game (`run.won`); the heuristic explains a failure."""

    heuristic: RuleHeuristic = field(default_factory=RuleHeuristic)
    wants_run = True

    def __call__(self, task: Any, candidate: Any) -> Evaluation:
        steps = trajectory_of(candidate)
        if getattr(candidate, "won", False):
            return Evaluation(True, 1.0, f"The task was completed in {len(steps)} steps.",
                              {"rule": "won", "steps": len(steps)})
        verdict = self.heuristic.stuck(steps)
        if verdict is not None:
            return verdict
        outcome = str(getattr(candidate, "outcome", "") or "")
        why = _OUTCOMES.get(outcome, outcome or "the task was not completed")
        return Evaluation(False, 0.0, f"The task was not completed in {len(steps)} steps: "
                          f"{why}.", {"rule": "not_won", "outcome": outcome,
                                      "steps": len(steps)})
