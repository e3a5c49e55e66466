"""Evaluators: judge a candidate answer and say why (see base.Evaluation)."""

from .base import Evaluation, Evaluator

__all__ = ["Evaluation", "Evaluator"]
