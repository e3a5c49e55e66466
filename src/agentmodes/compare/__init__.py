"""Compare the reasoning modes on your own questions and documents.

    from agentmodes.compare import Comparison, parse_questions
    rows = Comparison(llm, kb, modes=["act", "react", "reflact"]).run(questions)

Each row's figures (iterations, calls, tokens per step, time, adaptive exits, parse errors,
sources cited) are read off the run's events (figures.py); quality is scored against gold
answers or judged by the Reviewer (scoring.py). `agentmodes compare`, the page's compare
view and `agentmodes bench modes` are built on this.
"""

from .figures import CallUsage, FigureFold, RunFigures, figures_of
from .questions import Question, parse_gold, parse_questions
from .runner import Comparison, RunRecord, parallel_calls, variants
from .scoring import Judge, gold_scores

__all__ = ["CallUsage", "Comparison", "FigureFold", "Judge", "Question", "RunFigures",
           "RunRecord", "figures_of", "gold_scores", "parallel_calls", "parse_gold",
           "parse_questions", "variants"]
